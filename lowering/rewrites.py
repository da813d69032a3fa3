"""Kiln's own linalg rewrites, applied between phases of IREE's pipeline: the registry.

Each rewrite follows one IREE phase: the compile stops there (``--compile-to=PHASE``), Kiln
rewrites the module, and IREE resumes (``--compile-from=PHASE``). ``depthwise-nhwc``
(``kiln.lowering.depthwise``) follows input conversion; ``pool-nhwc``, ``stem-s2d`` and
``conv1x1-matmul`` (``kiln.lowering.cnn``) follow global optimization; ``conv-narrow-tiles``
(``kiln.lowering.tiles``) changes the tile sizes IREE's CPU backend chose, after its executable
configurations. Shared helpers: ``kiln.lowering.linalg``. Measured effects: docs/performance.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kiln.lowering.cnn import conv1x1_to_matmul, pool_nhwc, stem_space_to_depth
from kiln.lowering.depthwise import depthwise_to_nhwc
from kiln.lowering.tiles import conv_narrow_tiles

if TYPE_CHECKING:
    from iree.compiler import ir

__all__ = ["PHASES", "REWRITES", "Rewrite", "apply_rewrites", "rewrite_stages"]


@dataclass(frozen=True)
class Rewrite:
    """One of Kiln's rewrites: the IREE phase it follows (``iree-compile --compile-to=PHASE``)
    and the function that rewrites the module in place, returning how many ops it changed."""

    phase: str
    fn: Callable[[Any], int]


#: IREE compile phases a rewrite may follow, in pipeline order.
PHASES = ("input", "global-optimization", "executable-configurations")

#: Rewrites by the name they carry in compile keys and artifacts.
REWRITES: dict[str, Rewrite] = {
    "depthwise-nhwc": Rewrite("input", depthwise_to_nhwc),
    "pool-nhwc": Rewrite("global-optimization", pool_nhwc),
    "stem-s2d": Rewrite("global-optimization", stem_space_to_depth),
    "conv1x1-matmul": Rewrite("global-optimization", conv1x1_to_matmul),
    "conv-narrow-tiles": Rewrite("executable-configurations", conv_narrow_tiles),
}


def rewrite_stages(names: list[str] | tuple[str, ...]) -> list[tuple[str, list[str]]]:
    """Group ``names`` by the phase they follow, in pipeline order: ``[(phase, [name, ...])]``.

    Raises ``KeyError`` for an unknown name."""
    by_phase: dict[str, list[str]] = {}
    for name in names:
        by_phase.setdefault(REWRITES[name].phase, []).append(name)
    return [(phase, by_phase[phase]) for phase in PHASES if phase in by_phase]


def apply_rewrites(module: ir.Module | ir.Operation, names: list[str] | tuple[str, ...]) -> int:
    """Apply the named rewrites in order; return how many ops they changed in all."""
    total = 0
    for name in names:
        total += REWRITES[name].fn(module)
    return total
