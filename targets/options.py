"""Structured, allow-listed compile options and the flags each one maps to.

A client never sends compiler flags: it sends options, each a key from ``OPTIONS`` with a value from
that key's allow-list. Unknown keys and values outside the allow-list raise ``InvalidRequest``.
The normalized options (defaults dropped, keys sorted) are part of the cache key.

``preset`` names a flag set from ``kiln.targets.presets``; its flags depend on the target kind and
the graph, so they are added by the pipeline (``Pipeline.flags_for``), not by ``flags()`` here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kiln.errors import InvalidRequest
from kiln.targets.presets import PRESETS

__all__ = ["DEFAULTS", "OPTIONS", "CompileOptions", "normalize_options"]

# key -> {allowed value -> flags}
OPTIONS: dict[str, dict[Any, tuple[str, ...]]] = {
    "opt_level": {
        "O0": ("--iree-opt-level=O0",),
        "O1": ("--iree-opt-level=O1",),
        "O2": ("--iree-opt-level=O2",),
        "O3": ("--iree-opt-level=O3",),
    },
    # Flags come from kiln.targets.presets (per target kind and graph), added by the pipeline.
    "preset": {name: () for name in PRESETS},
    # Where the weights live (docs/caching.md, "Weights apart from code"): in the executable,
    # or in a parameter archive (.irpa) the runtime binds at load. No flags: the graph differs.
    "params": {"embedded": (), "external": ()},
}
# Values equal to these are dropped when normalizing: asking for the default is not asking for
# something else (same cache key as not asking).
DEFAULTS: dict[str, Any] = {"preset": "default", "params": "embedded"}


@dataclass(frozen=True)
class CompileOptions:
    """Normalized options: a sorted tuple of (key, value) pairs."""

    items: tuple[tuple[str, Any], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return dict(self.items)

    @property
    def preset(self) -> str:
        return str(dict(self.items).get("preset", DEFAULTS["preset"]))

    @property
    def params(self) -> str:
        """``"embedded"`` (weights in the executable) or ``"external"`` (in an archive)."""
        return str(dict(self.items).get("params", DEFAULTS["params"]))

    def flags(self) -> tuple[str, ...]:
        out: list[str] = []
        for k, v in self.items:
            out.extend(OPTIONS[k][v])
        return tuple(out)


def normalize_options(options: Mapping[str, Any] | None) -> CompileOptions:
    if options is None:
        return CompileOptions()
    if not isinstance(options, Mapping):
        raise InvalidRequest("options must be an object", detail={"allowed": _allowed()})
    items = []
    for key, value in options.items():
        if key not in OPTIONS:
            raise InvalidRequest(
                f"unknown compile option {str(key)[:64]!r}",
                detail={"allowed": _allowed()},
            )
        if value is None:
            continue
        allowed = OPTIONS[key]
        if not isinstance(value, (str, int, bool)) or value not in allowed:
            raise InvalidRequest(
                f"invalid value for option {key!r}: {str(value)[:64]!r}",
                detail={"allowed": _allowed()},
            )
        if DEFAULTS.get(key, _UNSET) == value and type(value) is type(DEFAULTS[key]):
            continue
        items.append((key, value))
    return CompileOptions(tuple(sorted(items)))


_UNSET = object()


def _allowed() -> dict[str, list[Any]]:
    return {k: list(v) for k, v in OPTIONS.items()}
