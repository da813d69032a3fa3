"""Graph traits: counts of the compute ops that decide how a graph is best compiled.

The presets in ``kiln.targets.presets`` read these counts to pick a convolution lowering, data
tiling and so on per model class (a CNN is compiled differently from a transformer). They are taken
from the imported module before lowering, so they see the graph's own ops in any input dialect:

- ONNX (imported as ``torch.operator "onnx.Conv"`` with the ONNX op in the ``name`` attribute),
- torch (``torch.aten.convolution``, ``torch.aten.mm``...), StableHLO, TOSA and linalg.

A convolution is *depthwise* when every group has one input channel (ONNX ``group`` equal to the
channels, ``linalg.depthwise_conv_*``, ``tosa.depthwise_conv2d``, StableHLO ``feature_group_count``
equal to the input features). Failure semantics: counting never raises; an op whose attributes
cannot be read counts as a plain convolution.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from kiln.dialects.types import GraphTraits

if TYPE_CHECKING:
    from iree.compiler import ir

__all__ = ["MLIR_OPS", "ONNX_OPS", "graph_traits", "op_kind"]

# The one table of which op counts as what, used here (on the imported module) and by the light
# client's ``kiln.client.autotune.cheap_traits`` (on ONNX protobufs and MLIR text, without the
# compiler). Values: "conv", "depthwise_conv" (a convolution known to be depthwise), "matmul",
# "attention" (softmax and fused attention).

#: ONNX op type -> kind (ops imported as ``torch.operator "onnx.<type>"``).
ONNX_OPS: dict[str, str] = {
    "Conv": "conv", "ConvInteger": "conv", "QLinearConv": "conv",
    "MatMul": "matmul", "Gemm": "matmul", "MatMulInteger": "matmul", "QLinearMatMul": "matmul",
    "Softmax": "attention", "LogSoftmax": "attention", "Attention": "attention",
    "MultiHeadAttention": "attention",
}
#: MLIR op name -> kind; ``linalg.conv_*`` and ``linalg.depthwise_conv_*`` by prefix (op_kind).
MLIR_OPS: dict[str, str] = {
    **dict.fromkeys((
        "linalg.matmul", "linalg.batch_matmul", "linalg.matvec", "linalg.batch_matvec",
        "linalg.matmul_transpose_a", "linalg.matmul_transpose_b", "linalg.batch_matmul_transpose_b",
        "linalg.contract", "linalg.batch_reduce_matmul",
        "stablehlo.dot", "stablehlo.dot_general",
        "tosa.matmul", "tosa.fully_connected",
        "torch.aten.mm", "torch.aten.bmm", "torch.aten.matmul", "torch.aten.linear",
        "torch.aten.addmm", "torch.aten.baddbmm",
    ), "matmul"),
    **dict.fromkeys((
        "linalg.softmax", "iree_linalg_ext.attention", "iree_linalg_ext.online_attention",
        "torch.aten.softmax.int", "torch.aten._softmax", "torch.aten.log_softmax.int",
        "torch.aten.scaled_dot_product_attention",
    ), "attention"),
    **dict.fromkeys(("tosa.conv2d", "tosa.conv3d", "stablehlo.convolution",
                     "torch.aten.convolution", "torch.aten.conv2d", "torch.aten._convolution"),
                    "conv"),
    "tosa.depthwise_conv2d": "depthwise_conv",
}
_MLIR_PREFIXES = (("linalg.depthwise_conv", "depthwise_conv"), ("linalg.conv", "conv"))


def op_kind(name: str) -> str | None:
    """The kind an MLIR op (``linalg.matmul``) or an imported ONNX op (``onnx.Conv``) counts as;
    None for the rest."""
    if name.startswith("onnx."):
        return ONNX_OPS.get(name[len("onnx."):])
    kind = MLIR_OPS.get(name)
    if kind is None:
        kind = next((k for prefix, k in _MLIR_PREFIXES if name.startswith(prefix)), None)
    return kind


_SHAPE_RE = re.compile(r"\[([0-9,?\s]*)\]")
_INT_RE = re.compile(r"-?\d+")


def graph_traits(module: ir.Module) -> GraphTraits:
    """Walk ``module`` and count convolutions (depthwise among them), matmuls and attention ops."""
    from iree.compiler import ir

    counts = {"conv": 0, "depthwise_conv": 0, "matmul": 0, "attention": 0}

    def visit(op: ir.Operation) -> ir.WalkResult:
        try:
            _count(op, counts)
        except Exception:  # noqa: BLE001 - traits are advisory; a strange op is not an error
            pass
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return GraphTraits(**counts)


def _count(op: ir.Operation, counts: dict[str, int]) -> None:
    name = op.name
    if name == "torch.operator":
        name = _str_attr(op, "name") or ""
    kind = op_kind(name)
    if kind is None:
        return
    if kind == "conv":
        # The kinds a table cannot tell: depthwise when every group has one input channel.
        if name.startswith("onnx."):
            group = _int_attr(op, "torch.onnx.group") or 1
            weight = _shape(op.operands[1].type) if len(op.operands) > 1 else None
            if group > 1 and weight is not None and len(weight) > 1 and weight[1] == 1:
                kind = "depthwise_conv"
        elif name == "stablehlo.convolution":
            groups = _int_attr(op, "feature_group_count") or 1
            lhs = _shape(op.operands[0].type)
            if groups > 1 and lhs is not None and groups in lhs:
                kind = "depthwise_conv"
        elif name.startswith("torch.aten."):
            weight = _shape(op.operands[1].type) if len(op.operands) > 1 else None
            # aten weight is [out, in/groups, kh, kw]: one input channel per group is depthwise
            # when the op has several groups (the output channels exceed 1 then).
            if weight is not None and len(weight) > 1 and weight[1] == 1 and weight[0] > 1:
                kind = "depthwise_conv"
    if kind == "depthwise_conv":
        counts["conv"] += 1
    counts[kind] += 1


def _str_attr(op: ir.Operation, key: str) -> str | None:
    attrs = op.attributes
    if key not in attrs:
        return None
    from iree.compiler import ir

    return ir.StringAttr(attrs[key]).value


def _int_attr(op: ir.Operation, key: str) -> int | None:
    attrs = op.attributes
    if key not in attrs:
        return None
    m = _INT_RE.search(str(attrs[key]))
    return int(m.group()) if m else None


def _shape(type_: ir.Type) -> list[int] | None:
    """Static dims of ``!torch.vtensor<[a,b],f32>`` or ``tensor<axbxf32>``; ``?`` dims are -1."""
    text = str(type_)
    m = _SHAPE_RE.search(text)
    if m:  # torch vtensor: [1,3,224,224]
        dims = [d.strip() for d in m.group(1).split(",") if d.strip()]
        return [int(d) if d.lstrip("-").isdigit() else -1 for d in dims]
    if "<" in text and "x" in text:  # builtin tensor: tensor<1x224x224x3xf32>
        dims = text.split("<", 1)[1].split("x")[:-1]
        return [int(d) if d.isdigit() else -1 for d in dims]
    return None
