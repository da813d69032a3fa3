"""The client SDK's domain types: typed compile results, its two errors, and the retry policy."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kiln.errors import KilnError

if TYPE_CHECKING:
    from kiln.dialects.types import FunctionSignature

__all__ = [
    "RemoteArtifact",
    "RemoteCompileResult",
    "RemoteTargetError",
    "RetryPolicy",
]


@dataclass(frozen=True)
class RemoteArtifact:
    """One executable the server built (or found in its cache); fetch its bytes by ``digest``."""

    target: str
    key: str
    digest: str  # "sha256:<hex>" of the executable's bytes
    size: int  # bytes
    cached: bool
    compile_seconds: float
    url: str
    flags: tuple[str, ...]
    warnings: tuple[str, ...] = ()
    rewrites: tuple[str, ...] = ()  # Kiln's linalg rewrites (see docs/performance.md)
    runtime: tuple[str, ...] = ()  # IREE runtime versions it loads on, e.g. ("3.13.x",)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> RemoteArtifact:
        return cls(
            target=str(d["target"]),
            key=str(d.get("key", "")),
            digest=str(d["digest"]),
            size=int(d.get("size", 0)),
            cached=bool(d.get("cached", False)),
            compile_seconds=float(d.get("compile_seconds", 0.0)),
            url=str(d.get("url", "")),
            flags=tuple(d.get("flags") or ()),
            warnings=tuple(d.get("warnings") or ()),
            rewrites=tuple(d.get("rewrites") or ()),
            runtime=tuple(d.get("runtime") or ()),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "key": self.key,
            "digest": self.digest,
            "size": self.size,
            "cached": self.cached,
            "compile_seconds": self.compile_seconds,
            "url": self.url,
            "flags": list(self.flags),
            "rewrites": list(self.rewrites),
            "warnings": list(self.warnings),
            "runtime": list(self.runtime),
        }


@dataclass(frozen=True)
class RemoteTargetError:
    """A target that failed while others in the same request succeeded."""

    target: str
    error: KilnError

    def to_json(self) -> dict[str, Any]:
        return {"target": self.target, "error": self.error.to_json()}


@dataclass(frozen=True)
class RemoteCompileResult:
    graph_digest: str
    input_dialect: str
    compiler: dict[str, str]
    artifacts: list[RemoteArtifact]
    errors: list[RemoteTargetError]
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    #: The public functions' types as the server imported the graph (empty from a server that
    #: does not send them).
    signatures: tuple[FunctionSignature, ...] = ()
    #: With options ``params: "external"``: the weights' archive (``digest``, ``size``, ``url``,
    #: ``scope``, ``format``), one for every artifact; None otherwise.
    params: dict[str, Any] | None = None

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> RemoteCompileResult:
        from kiln.dialects.types import FunctionSignature

        return cls(
            graph_digest=str(d.get("graph_digest", "")),
            input_dialect=str(d.get("input_dialect", "")),
            compiler=dict(d.get("compiler") or {}),
            signatures=tuple(FunctionSignature.from_json(s) for s in d.get("signatures") or ()),
            params=dict(d["params"]) if isinstance(d.get("params"), dict) else None,
            artifacts=[RemoteArtifact.from_json(a) for a in d.get("artifacts") or []],
            errors=[
                RemoteTargetError(
                    str(e.get("target", "")), KilnError.from_json(e.get("error") or {})
                )
                for e in d.get("errors") or []
            ],
            raw=d,
        )

    def to_json(self) -> dict[str, Any]:
        out = dict(self.raw)
        out.update(
            graph_digest=self.graph_digest,
            input_dialect=self.input_dialect,
            compiler=self.compiler,
            artifacts=[a.to_json() for a in self.artifacts],
            errors=[e.to_json() for e in self.errors],
        )
        if self.signatures:
            out["signatures"] = [s.to_json() for s in self.signatures]
        return out


@dataclass(frozen=True)
class RetryPolicy:
    """Retries on 429/503 and on connection errors: exponential backoff with full jitter.

    ``attempts`` counts every try (1 = no retry). A ``Retry-After`` is honoured as the minimum wait;
    one longer than ``max_retry_after`` seconds is not waited for (the error is raised at once).
    """

    attempts: int = 5
    base: float = 0.25  # seconds
    cap: float = 10.0  # seconds, the largest backoff step
    max_retry_after: float = 60.0  # seconds

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait before try ``attempt + 1`` (``attempt`` counts from 0)."""
        backoff = random.uniform(0.0, min(self.cap, self.base * (2**attempt)))
        if retry_after is None:
            return backoff
        return retry_after + min(backoff, 0.1 * retry_after + 0.05)
