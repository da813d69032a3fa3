"""Static shapes for ONNX graphs that compute their own shapes, before IREE's importer sees them.

Exporters (torch's TorchScript exporter on transformers models: GPT-2's causal mask, Swin's
window partition) write shape arithmetic into the graph (``ConstantOfShape`` → ``Mul`` →
``Where`` → ``Expand``, ``Shape`` → ``Gather`` → ``Concat`` → ``Reshape``). IREE 3.13's importer
types what such a subgraph produces as dynamic (``tensor<?x?x64x64>``) even when every input of
the graph is static, and its torch-to-linalg conversion then fails on the mixed static/dynamic
values ("failed to legalize unresolved target materialization"). ``fold_shapes`` runs ONNX's
own shape inference with data propagation and the onnxscript optimizer's constant folding
(``onnxscript.optimizer.fold_constants`` and ``optimize``, on ``onnx_ir``): the shape
subgraphs become constants and every value gets its static type back.

When: ``needs_folding`` — every graph input has a static shape, yet shape inference leaves some
value without one (the graph computes a shape it could know), or the graph holds shape ops
(``Shape``, ``Size``, ``ConstantOfShape``) feeding shape operands. ``import_model`` also folds
and retries once when the importer refuses the model as it came. A model that needs nothing is
imported exactly as it came (its graph digest does not move).

Failure semantics: best effort, as the fixes of ``onnx_fixes``: a fold that raises or whose
result fails ``onnx.checker`` returns the model unchanged; never raises.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import onnx

__all__ = ["fold_shapes", "needs_folding"]

#: ``ConstantOfShape`` is folded (onnxscript keeps it by default, to keep models small) when it
#: makes at most this many elements: a mask or a shape, never a weight-sized tensor.
CONSTANT_OF_SHAPE_ELEMENTS = 1 << 16
_SHAPE_OPS = frozenset({"Shape", "Size", "ConstantOfShape"})
# Operand positions that are shapes: what a shape subgraph feeds.
_SHAPE_OPERANDS = {"Reshape": 1, "Expand": 1, "Tile": 1, "ConstantOfShape": 0, "Range": 0,
                   "Slice": 1, "Resize": 3, "Unsqueeze": 1, "Squeeze": 1, "Pad": 1}


def _static(vi: Any) -> bool:
    t = vi.type
    if not t.HasField("tensor_type"):
        return True  # sequences, maps: not ours to judge
    tt = t.tensor_type
    return tt.HasField("shape") and all(d.HasField("dim_value") for d in tt.shape.dim)


def needs_folding(model: onnx.ModelProto) -> bool:
    """Whether ``model`` (already shape-inferred) computes shapes it could know statically."""
    g = model.graph
    inits = {i.name for i in g.initializer}
    inputs = [i for i in g.input if i.name not in inits]
    if not inputs or not all(_static(i) for i in inputs):
        return False  # a dynamic input: dynamic values are expected
    if not all(_static(v) for v in [*g.value_info, *g.output]):
        return True
    producers = {o: n.op_type for n in g.node for o in n.output}
    for n in g.node:
        pos = _SHAPE_OPERANDS.get(n.op_type)
        if pos is not None and pos < len(n.input) and producers.get(n.input[pos]) in (
                _SHAPE_OPS | {"Concat", "Gather", "Cast", "Mul", "Where", "Unsqueeze"}):
            return True
    return False


def fold_shapes(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` with its shape subgraphs folded to constants (module docstring); the model
    unchanged when folding fails."""
    import numpy as np
    import onnx
    import onnx_ir as ir
    import onnxscript.optimizer as optimizer

    def should_fold(node: ir.Node) -> bool | None:
        if node.op_type == "ConstantOfShape" and node.inputs and node.inputs[0] is not None:
            shape = node.inputs[0].const_value
            if shape is not None:
                return int(np.prod(shape.numpy())) <= CONSTANT_OF_SHAPE_ELEMENTS
        return None

    try:
        inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
        ir_model = ir.serde.deserialize_model(inferred)
        for _ in range(3):  # folding a mask can make the next shape constant
            changed = optimizer.fold_constants(ir_model, onnx_shape_inference=True,
                                               should_fold=should_fold).modified
            optimizer.optimize(ir_model)
            if not changed:
                break
        out = ir.serde.serialize_model(ir_model)
        onnx.checker.check_model(out)
        return onnx.shape_inference.infer_shapes(out, data_prop=True)
    except Exception:  # noqa: BLE001 - best effort: the model as it came
        return model
