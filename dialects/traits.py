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

__all__ = ["graph_traits"]

_MATMUL_ONNX = {"onnx.MatMul", "onnx.Gemm", "onnx.MatMulInteger", "onnx.QLinearMatMul"}
_CONV_ONNX = {"onnx.Conv", "onnx.ConvInteger", "onnx.QLinearConv"}
_ATTN_ONNX = {"onnx.Softmax", "onnx.LogSoftmax", "onnx.Attention", "onnx.MultiHeadAttention"}
_MATMUL_OPS = {
    "linalg.matmul", "linalg.batch_matmul", "linalg.matvec", "linalg.batch_matvec",
    "linalg.matmul_transpose_a", "linalg.matmul_transpose_b", "linalg.batch_matmul_transpose_b",
    "linalg.contract", "linalg.batch_reduce_matmul",
    "stablehlo.dot", "stablehlo.dot_general",
    "tosa.matmul", "tosa.fully_connected",
    "torch.aten.mm", "torch.aten.bmm", "torch.aten.matmul", "torch.aten.linear",
    "torch.aten.addmm", "torch.aten.baddbmm",
}
_ATTN_OPS = {
    "linalg.softmax", "iree_linalg_ext.attention", "iree_linalg_ext.online_attention",
    "torch.aten.softmax.int", "torch.aten._softmax", "torch.aten.log_softmax.int",
    "torch.aten.scaled_dot_product_attention",
}
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
        onnx_name = _str_attr(op, "name")
        if onnx_name in _CONV_ONNX:
            counts["conv"] += 1
            group = _int_attr(op, "torch.onnx.group") or 1
            weight = _shape(op.operands[1].type) if len(op.operands) > 1 else None
            if group > 1 and weight is not None and len(weight) > 1 and weight[1] == 1:
                counts["depthwise_conv"] += 1
        elif onnx_name in _MATMUL_ONNX:
            counts["matmul"] += 1
        elif onnx_name in _ATTN_ONNX:
            counts["attention"] += 1
        return
    if name.startswith("linalg.depthwise_conv") or name == "tosa.depthwise_conv2d":
        counts["conv"] += 1
        counts["depthwise_conv"] += 1
    elif name.startswith("linalg.conv") or name in ("tosa.conv2d", "tosa.conv3d"):
        counts["conv"] += 1
    elif name == "stablehlo.convolution":
        counts["conv"] += 1
        groups = _int_attr(op, "feature_group_count") or 1
        lhs = _shape(op.operands[0].type)
        if groups > 1 and lhs is not None and groups in lhs:
            counts["depthwise_conv"] += 1
    elif name in ("torch.aten.convolution", "torch.aten.conv2d", "torch.aten._convolution"):
        counts["conv"] += 1
        weight = _shape(op.operands[1].type) if len(op.operands) > 1 else None
        # aten weight is [out, in/groups, kh, kw]: one input channel per group is depthwise
        # when the op has several groups (the output channels exceed 1 then).
        if weight is not None and len(weight) > 1 and weight[1] == 1 and weight[0] > 1:
            counts["depthwise_conv"] += 1
    elif name in _MATMUL_OPS:
        counts["matmul"] += 1
    elif name in _ATTN_OPS:
        counts["attention"] += 1


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
