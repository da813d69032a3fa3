"""The compile key: every input that can change the bytes ``iree-compile`` produces.

A :class:`CompileKey` is a frozen dataclass serialized as canonical JSON (sorted keys, no
whitespace, no NaN) and hashed with sha256 — never pickled, so the key of a request is the same in
every process, Python version and machine. ``docs/caching.md`` lists every input and what is
deliberately *not* one.

``KEY_VERSION`` is Kiln's own part of the key. Bump it whenever the meaning of a field changes, a
field is added or removed, or anything outside the key starts to influence the output (a new
pre-codegen pass, a changed flag derivation): old entries then simply stop matching and age out of
the LRU; nothing has to be migrated or flushed.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, TypeAlias, cast

__all__ = ["KEY_VERSION", "CompileKey", "canonical_json", "normalize_digest", "sha256_hex"]

KEY_VERSION = 2

JSONScalar: TypeAlias = str | int | float | bool | None
#: A frozen option value: a JSON scalar or a (nested) tuple of them.
OptionValue: TypeAlias = JSONScalar | tuple[Any, ...]

_DIGEST_RE = re.compile(r"^sha256:[0-9a-f]{64}$")
_HEX_RE = re.compile(r"^[0-9a-f]{64}$")


def canonical_json(value: Any) -> bytes:
    """UTF-8 canonical JSON: sorted keys, no whitespace; NaN/inf rejected (ValueError)."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def normalize_digest(value: str) -> str:
    """Return ``sha256:<64 lowercase hex>``; a bare 64-hex string is accepted and prefixed.

    Raises ValueError for anything else (so a digest can never smuggle a path into a store).
    """
    v = value.strip().lower()
    if _HEX_RE.match(v):
        v = "sha256:" + v
    if not _DIGEST_RE.match(v):
        raise ValueError(f"not a sha256 digest: {value!r}")
    return v


def _freeze(value: Any, where: str) -> OptionValue:
    if value is None or isinstance(value, (str, bool, int, float)):
        if isinstance(value, float) and math.isnan(value):  # NaN has no canonical form
            raise ValueError(f"option {where} is NaN")
        return value
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v, where) for v in value)
    raise TypeError(
        f"option {where} has type {type(value).__name__}; compile options must be JSON scalars "
        "or lists of them (normalize them in kiln.targets before building the key)"
    )


def _thaw(value: OptionValue) -> Any:
    if isinstance(value, tuple):
        return [_thaw(v) for v in value]
    return value


@dataclass(frozen=True)
class CompileKey:
    """Everything that determines the executable; ``digest()`` is the action-cache key.

    ``options`` may be given as a mapping; it is stored as a sorted tuple of ``(name, value)``
    pairs so the key is hashable and independent of the caller's dict order. ``flags`` are the
    exact ``iree-compile`` flags derived from target + options: they are redundant with those two
    on purpose, so a change in the flag derivation (a new IREE flag spelling, a fixed alias) can
    never produce a stale hit even if someone forgets to bump ``KEY_VERSION``.
    ``graph_digest`` and ``compiler_hash`` accept bare hex and are normalized to ``sha256:<hex>``.
    """

    graph_digest: str
    target: str
    options: tuple[tuple[str, OptionValue], ...] | Mapping[str, Any]
    flags: tuple[str, ...]
    compiler_version: str
    compiler_hash: str
    key_version: int = KEY_VERSION
    #: Kiln's own linalg rewrites (``kiln.lowering.rewrites.REWRITES``), each applied after the
    #: IREE phase it follows; part of the key like the flags.
    rewrites: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        opts = self.options
        items = opts.items() if isinstance(opts, Mapping) else opts
        frozen: dict[str, OptionValue] = {}
        for name, value in items:
            if not isinstance(name, str):
                raise TypeError(f"option names must be str, got {name!r}")
            if name in frozen:
                raise ValueError(f"duplicate option {name!r}")
            frozen[name] = _freeze(value, name)
        object.__setattr__(self, "options", tuple(sorted(frozen.items())))
        if isinstance(self.flags, str):
            raise TypeError("flags must be a sequence of str, not one str")
        object.__setattr__(self, "flags", tuple(str(f) for f in self.flags))
        if isinstance(self.rewrites, str):
            raise TypeError("rewrites must be a sequence of str, not one str")
        object.__setattr__(self, "rewrites", tuple(str(r) for r in self.rewrites))
        object.__setattr__(self, "graph_digest", normalize_digest(self.graph_digest))
        object.__setattr__(self, "compiler_hash", normalize_digest(self.compiler_hash))
        if not self.target or self.target != self.target.strip():
            raise ValueError(f"target must be a normalized non-empty string, got {self.target!r}")
        if not isinstance(self.key_version, int) or isinstance(self.key_version, bool):
            raise TypeError("key_version must be an int")

    @property
    def options_dict(self) -> dict[str, Any]:
        pairs = cast(tuple[tuple[str, OptionValue], ...], self.options)  # frozen in __post_init__
        return {k: _thaw(v) for k, v in pairs}

    def to_json(self) -> dict[str, Any]:
        return {
            "graph_digest": self.graph_digest,
            "target": self.target,
            "options": self.options_dict,
            "flags": list(self.flags),
            "compiler_version": self.compiler_version,
            "compiler_hash": self.compiler_hash,
            "key_version": self.key_version,
            "rewrites": list(self.rewrites),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CompileKey:
        return cls(
            graph_digest=data["graph_digest"],
            target=data["target"],
            options=dict(data.get("options") or {}),
            flags=tuple(data.get("flags") or ()),
            compiler_version=data["compiler_version"],
            compiler_hash=data["compiler_hash"],
            key_version=int(data.get("key_version", KEY_VERSION)),
            rewrites=tuple(data.get("rewrites") or ()),
        )

    def canonical(self) -> bytes:
        return canonical_json(self.to_json())

    def digest(self) -> str:
        """Hex sha256 of the canonical JSON: the action-cache key and the artifact URL's ``<hex>``."""
        return sha256_hex(self.canonical())

    def debug_lines(self) -> list[str]:
        """One line per field with the field's canonical JSON and its sha256 (first 16 hex).

        Compare two keys' lines (or use :meth:`diff`) to see which input made a lookup miss.
        """
        doc = self.to_json()
        lines = [f"key {self.digest()} (key_version {self.key_version})"]
        for f in fields(self):
            value = canonical_json(doc[f.name])
            shown = value.decode()
            if len(shown) > 120:
                shown = shown[:117] + "..."
            lines.append(f"  {f.name}: {shown} [sha256 {sha256_hex(value)[:16]}]")
        return lines

    def diff(self, other: CompileKey) -> list[str]:
        """Names of the fields whose canonical JSON differs between the two keys."""
        a, b = self.to_json(), other.to_json()
        return [
            f.name for f in fields(self) if canonical_json(a[f.name]) != canonical_json(b[f.name])
        ]
