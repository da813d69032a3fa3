"""Weights apart from code: which constants of an MLIR graph are weights held inline.

With ``params: "external"`` an executable must hold code only, its weights bound at load from a
parameter archive. ONNX models are imported that way (``kiln.dialects.onnx``); MLIR must arrive
that way, reading each weight from a ``#flow.parameter.named`` (or ``#stream.parameter.named``)
global, as ``kiln.torch.export`` writes it. IREE 3.13 has no pass that faithfully moves inline
torch-dialect literals out (``iree-compile --iree-parameter-export=model=FILE`` wrote no archive
for an imported ONNX MLP with inline weights, and a compile-time pass would run after the graph
digest, which covers inline values), so a graph that still holds weights inline is refused
rather than compiled with its weights in.

A weight here is a non-splat floating-point elements attribute (``dense<...>`` or
``dense_resource<...>``) of at least ``WEIGHT_ELEMENTS`` elements: integer and boolean tensors
(indices, masks, shapes) and small float constants (a scale, an epsilon) are code.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from iree.compiler import ir

__all__ = ["WEIGHT_ELEMENTS", "inline_weights"]

#: A float constant of at least this many elements is a weight (iree-import-onnx's default
#: --num-elements-threshold).
WEIGHT_ELEMENTS = 100


def inline_weights(module: ir.Module) -> list[str]:
    """``"op.name: type"`` of each inline weight constant, in walk order (empty: none)."""
    from iree.compiler import ir

    found: list[str] = []

    def complex_typed(v: ir.Value) -> bool:
        t = v.type
        return isinstance(t, ir.ShapedType) and isinstance(t.element_type, ir.ComplexType)

    def visit(op: ir.Operation) -> ir.WalkResult:
        if any(complex_typed(v) for v in [*op.operands, *op.results]):
            return ir.WalkResult.ADVANCE  # reading a dense complex attribute aborts (canonical.py)
        attrs = op.attributes
        for i in range(len(attrs)):
            a = attrs[i].attr
            if isinstance(a, ir.DenseElementsAttr):
                if a.is_splat:
                    continue
            elif not str(a).startswith("dense_resource<"):
                continue
            t = ir.ShapedType(a.type)
            if not isinstance(t.element_type, ir.FloatType) or not t.has_static_shape:
                continue
            if math.prod(t.shape) >= WEIGHT_ELEMENTS:
                found.append(f"{op.name}: {a.type}")
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found
