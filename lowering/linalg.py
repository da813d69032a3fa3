"""Helpers shared by Kiln's linalg rewrites (``kiln.lowering.rewrites``): finding ops, reading
their indexing maps, iterator types and static shapes through IREE's MLIR Python bindings."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

__all__ = [
    "PARALLEL",
    "REDUCTION",
    "indexing_maps",
    "iterator_types",
    "ops_named",
    "ops_where",
    "static_shape",
]

PARALLEL = "#linalg.iterator_type<parallel>"
REDUCTION = "#linalg.iterator_type<reduction>"
# Window combiners a pooling body may use: out = f(out, in).


def ops_where(module: Any, pred: Callable[[Any], bool]) -> list[Any]:
    """Every op under ``module`` (a Module or an Operation) for which ``pred`` holds, collected
    first so the caller may rewrite them."""
    from iree.compiler import ir

    out: list[Any] = []

    def visit(op: Any) -> Any:
        if pred(op):
            out.append(op)
        return ir.WalkResult.ADVANCE

    (module.operation if hasattr(module, "operation") else module).walk(visit)
    return out


def ops_named(module: Any, name: str) -> list[Any]:
    """Every op called ``name`` under ``module`` (see ``ops_where``)."""
    return ops_where(module, lambda op: op.name == name)


def _op(value_owner: Any) -> Any:
    """The Operation behind an OpView / Operation / Block owner (None for a block argument)."""
    from iree.compiler import ir

    if isinstance(value_owner, ir.Block):
        return None
    return getattr(value_owner, "operation", value_owner)


def indexing_maps(op: Any) -> list[Any]:
    from iree.compiler import ir

    return [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(op.attributes["indexing_maps"])]


def iterator_types(op: Any) -> list[str]:
    from iree.compiler import ir

    return [str(a) for a in ir.ArrayAttr(op.attributes["iterator_types"])]


def _body(op: Any) -> list[Any]:
    return [o.operation for o in op.regions[0].blocks[0].operations]


def _dim(expr: Any) -> int | None:
    from iree.compiler import ir

    try:
        return ir.AffineDimExpr(expr).position
    except (ValueError, TypeError):
        return None


def _linear(expr: Any, n: int) -> tuple[list[int], int] | None:
    """``expr`` over ``n`` dims as (coefficients, constant), or None if it is not linear."""
    from iree.compiler import ir

    def at(point: list[int]) -> int | None:
        m = ir.AffineMap.get(n, 0, [ir.AffineConstantExpr.get(v) for v in point])
        try:
            return ir.AffineConstantExpr(expr.compose(m)).value
        except (ValueError, TypeError):
            return None

    base = at([0] * n)
    if base is None:
        return None
    coeffs = []
    for i in range(n):
        one = at([1 if j == i else 0 for j in range(n)])
        two = at([2 if j == i else 0 for j in range(n)])
        if one is None or two is None or two - base != 2 * (one - base):
            return None
        coeffs.append(one - base)
    return coeffs, base


def static_shape(value: Any) -> list[int] | None:
    """A ranked tensor value's shape when every dimension is static, else None."""
    from iree.compiler import ir

    try:
        t = ir.RankedTensorType(value.type)
    except (ValueError, TypeError):
        return None
    return list(t.shape) if t.has_static_shape else None


def _reassoc(groups: list[list[int]]) -> Any:
    from iree.compiler import ir

    i64 = ir.IntegerType.get_signless(64)
    return ir.ArrayAttr.get(
        [ir.ArrayAttr.get([ir.IntegerAttr.get(i64, i) for i in g]) for g in groups]
    )


def _mul_adds(module: Any, *, reductions: int) -> Iterator[tuple[Any, list[Any]]]:
    """``(op, indexing maps)`` for each ``(x, w) -> out`` generic with three parallel loops, then
    ``reductions`` reduction loops, and a float multiply-accumulate body."""
    for g in ops_named(module, "linalg.generic"):
        if len(g.operands) != 3 or len(g.results) != 1:
            continue
        if iterator_types(g) != [PARALLEL] * 3 + [REDUCTION] * reductions:
            continue
        if [o.name for o in _body(g)] != ["arith.mulf", "arith.addf", "linalg.yield"]:
            continue
        yield g, indexing_maps(g)


def _transpose_perm(op: Any) -> list[int] | None:
    """For a pure transpose (``linalg.generic`` that only yields its input, identity output map),
    the input map's dims: the result at index r reads the source at
    ``r[perm[0]], r[perm[1]]...``."""
    if op is None or op.name != "linalg.generic" or len(op.operands) != 2 or len(op.results) != 1:
        return None
    if any(i != PARALLEL for i in iterator_types(op)):
        return None
    body = _body(op)
    block = op.regions[0].blocks[0]
    if len(body) != 1 or body[0].name != "linalg.yield":
        return None
    if body[0].operands[0] != block.arguments[0]:
        return None
    m_in, m_out = indexing_maps(op)
    perm = [_dim(e) for e in m_in.results]
    if [_dim(e) for e in m_out.results] != list(range(len(perm))):
        return None
    if None in perm or sorted(perm) != list(range(len(perm))):
        return None
    return perm  # type: ignore[return-value]
