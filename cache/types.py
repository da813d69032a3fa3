"""Domain types of the cache: the action record, lookup results, build outputs and reports.

All records cross process and machine boundaries as canonical JSON (never pickle). A record that
does not parse is treated by every store as a miss and removed.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from .key import CompileKey

from .key import canonical_json, normalize_digest

_HEX_RE = re.compile(r"[0-9a-f]{64}")

__all__ = [
    "ActionRecord",
    "Built",
    "CacheResult",
    "CacheStats",
    "CompilerInfo",
    "Found",
    "GcReport",
    "RecordAuthority",
    "Source",
    "StoreStats",
    "VerifyReport",
    "WritePolicy",
]

#: Where a result came from. ``inflight``: another caller in this process compiled it while we
#: waited (single-flight); ``compiled``: this call ran the build.
Source = Literal["disk", "redis", "s3", "compiled", "inflight"]


class WritePolicy(enum.Enum):
    """What the tiered cache writes where (reads always go disk, then Redis, backfilling disk)."""

    #: Every new entry is written to disk and to Redis (blob before record on each).
    WRITE_THROUGH = "write-through"
    #: Redis is read-only for this process: entries are written to disk only (e.g. a developer
    #: laptop reading a CI-populated shared cache without being able to poison it).
    LOCAL_ONLY = "local-only"


class RecordAuthority(Protocol):
    """Signs action records and authenticates them (``kiln.provenance.Authority``)."""

    def seal(self, key: CompileKey, record: ActionRecord) -> str:
        """The provenance envelope for a new record ("" when it cannot sign)."""
        ...

    def check(self, record: ActionRecord) -> str | None:
        """None when the record is authentic, else why not (it is then never served)."""
        ...

    def seal_params(self, digest: str, size: int, *, graph_digest: str) -> str:
        """The provenance envelope for a new parameter archive ("" when it cannot sign)."""
        ...

    def envelope_for(self, provenance: str, digest: str) -> dict[str, Any] | None:
        """The envelope if it verifies and is about ``digest``."""
        ...


@dataclass(frozen=True)
class CompilerInfo:
    name: str
    version: str
    hash: str

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "version": self.version, "hash": self.hash}


@dataclass(frozen=True)
class ActionRecord:
    """The action-cache value: what compiling ``key`` produced.

    ``key`` is the hex :meth:`CompileKey.digest`; ``digest`` is ``sha256:<hex>`` of the blob's
    bytes; ``size`` is in bytes; ``compile_seconds`` is the wall time of the compile that produced
    it; ``created`` is Unix time (seconds) when it was stored.
    """

    key: str
    digest: str
    size: int
    target: str
    flags: tuple[str, ...]
    compiler: CompilerInfo
    compile_seconds: float
    created: float
    warnings: tuple[str, ...] = ()
    rewrites: tuple[str, ...] = ()  # Kiln's linalg rewrites (see CompileKey.rewrites)
    #: The DSSE envelope (canonical JSON text) signing this record's key, blob and parameters
    #: (kiln.provenance); "" = unsigned, a miss wherever the cache authenticates records.
    provenance: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "digest", normalize_digest(self.digest))
        if not _HEX_RE.fullmatch(self.key):
            raise ValueError(f"record key must be 64 lowercase hex, got {self.key!r}")
        if self.size < 0:
            raise ValueError("negative size")
        object.__setattr__(self, "flags", tuple(self.flags))
        object.__setattr__(self, "warnings", tuple(self.warnings))
        object.__setattr__(self, "rewrites", tuple(self.rewrites))

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "digest": self.digest,
            "size": self.size,
            "target": self.target,
            "flags": list(self.flags),
            "compiler": self.compiler.to_json(),
            "compile_seconds": self.compile_seconds,
            "created": self.created,
            "warnings": list(self.warnings),
            "rewrites": list(self.rewrites),
            **({"provenance": json.loads(self.provenance)} if self.provenance else {}),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ActionRecord:
        """Raises ValueError (or KeyError/TypeError wrapped as ValueError) on a malformed record."""
        try:
            comp = data["compiler"]
            return cls(
                key=str(data["key"]),
                digest=str(data["digest"]),
                size=int(data["size"]),
                target=str(data["target"]),
                flags=tuple(str(f) for f in data["flags"]),
                compiler=CompilerInfo(str(comp["name"]), str(comp["version"]), str(comp["hash"])),
                compile_seconds=float(data["compile_seconds"]),
                created=float(data["created"]),
                warnings=tuple(str(w) for w in data.get("warnings", ())),
                rewrites=tuple(str(r) for r in data.get("rewrites", ())),
                provenance=canonical_json(data["provenance"]).decode()
                if data.get("provenance") else "",
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"malformed action record: {exc}") from exc


@dataclass(frozen=True)
class Built:
    """What a build callable returns: the executable's bytes and how it went."""

    data: bytes
    compile_seconds: float
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Found:
    """A verified action-cache hit inside one store: the record, and the bytes if already read."""

    record: ActionRecord
    source: Source
    data: bytes | None = None


@dataclass(frozen=True)
class CacheResult:
    """The answer of :meth:`ArtifactCache.lookup` / :meth:`ArtifactCache.get_or_build`.

    ``cached`` is False only when this very call ran the build. ``data`` is the executable's bytes,
    already sha256-verified; ``lookup(key)`` leaves it None unless asked for it (use
    ``blob_path`` to serve the file without copying it).
    """

    record: ActionRecord
    cached: bool
    source: Source
    data: bytes | None = None

    @property
    def key(self) -> str:
        return self.record.key

    @property
    def digest(self) -> str:
        return self.record.digest


@dataclass(frozen=True)
class StoreStats:
    """One backend's contents. ``bytes`` counts blobs and records. ``max_size`` None = unbounded."""

    backend: str
    location: str
    records: int
    blobs: int
    bytes: int
    pinned: int = 0
    max_size: int | None = None

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class CacheStats:
    """This process's counters plus the backends' contents (``None`` for an unreachable backend)."""

    hits: int
    misses: int
    builds: int
    inflight_joins: int
    corrupt: int
    redis_errors: int
    backends: tuple[StoreStats | None, ...]
    forged: int = 0

    def to_json(self) -> dict[str, Any]:
        d = {k: v for k, v in self.__dict__.items() if k != "backends"}
        d["backends"] = [b.to_json() if b else None for b in self.backends]
        return d


@dataclass
class VerifyReport:
    """``corrupt``: blobs whose bytes do not match their name, or unreadable records; ``dangling``:
    records naming a missing blob (normal after Redis maxmemory eviction). All were removed."""

    ok_records: int = 0
    ok_blobs: int = 0
    corrupt: int = 0
    dangling: int = 0
    removed: list[str] = field(default_factory=list)

    def merge(self, other: VerifyReport) -> VerifyReport:
        return VerifyReport(
            self.ok_records + other.ok_records,
            self.ok_blobs + other.ok_blobs,
            self.corrupt + other.corrupt,
            self.dangling + other.dangling,
            self.removed + other.removed,
        )

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class GcReport:
    """Sizes in bytes. ``size_after`` can exceed the bound only when pinned entries alone do."""

    size_before: int = 0
    size_after: int = 0
    removed_records: int = 0
    removed_blobs: int = 0
    pinned_bytes: int = 0

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)
