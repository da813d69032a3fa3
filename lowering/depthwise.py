"""``depthwise-nhwc``, Kiln's rewrite after IREE's input conversion (``kiln.lowering.rewrites``): ONNX and PyTorch graphs arrive channels-first, and IREE 3.13's input conversion
turns a depthwise convolution into ``linalg.depthwise_conv_2d_nchw_chw``. Its channels-last
preprocessing (``iree-preprocessing-convert-conv-to-channels-last``) converts ordinary convolutions
but not this one, and CPU codegen has no good schedule for it: the op is generalized and compiled
with ``DoubleTilingExpert``, vectorized along the image width with the 3×3 window as a reduction
(measured: 2 GFLOP/s, two thirds of a MobileNet's time). The same convolution in NHWC
(``linalg.depthwise_conv_2d_nhwc_hwc``) gets IREE's convolution pipeline
(``ConvTileAndDecomposeExpert``), vectorized along channels. So this rewrite wraps each
channels-first depthwise convolution in transposes::

    x:NCHW ──transpose──▶ NHWC ─┐
    w:CHW  ──transpose──▶ HWC  ─┼─▶ depthwise_conv_2d_nhwc_hwc ──transpose──▶ NCHW
    init:NCHW ─transpose─▶ NHWC ┘

and IREE's transpose propagation cancels the transposes between consecutive channels-last layers.
Same arithmetic, same summation order per output element (the 3×3 window), so results match the
channels-first form to float rounding. Only static shapes are rewritten; anything else is left
as it is. Measured effect: docs/performance.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kiln.lowering.linalg import ops_named, static_shape

if TYPE_CHECKING:
    from iree.compiler import ir

__all__ = ["depthwise_to_nhwc"]

_NCHW_TO_NHWC = [0, 2, 3, 1]
_NHWC_TO_NCHW = [0, 3, 1, 2]
_CHW_TO_HWC = [1, 2, 0]


def _permuted(shape: list[int], perm: list[int]) -> list[int]:
    return [shape[p] for p in perm]


def _ints(attr: Any) -> list[int]:
    from iree.compiler import ir

    return [int(v) for v in ir.DenseIntElementsAttr(attr)]


def depthwise_to_nhwc(module: ir.Module | ir.Operation) -> int:
    """Rewrite every static-shaped ``linalg.depthwise_conv_2d_nchw_chw`` in place; return the count."""
    from iree.compiler import ir
    from iree.compiler.dialects import linalg, tensor

    done = 0
    for op in ops_named(module, "linalg.depthwise_conv_2d_nchw_chw"):
        if len(op.operands) != 3 or len(op.results) != 1:
            continue
        x, w, init = op.operands
        shapes = [static_shape(v) for v in (x, w, init)]
        if any(s is None for s in shapes) or len(shapes[0]) != 4 or len(shapes[1]) != 3:
            continue
        xs, ws, os_ = shapes
        elem = ir.RankedTensorType(x.type).element_type
        out_elem = ir.RankedTensorType(init.type).element_type
        attrs = op.attributes
        strides = _ints(attrs["strides"]) if "strides" in attrs else [1, 1]
        dilations = _ints(attrs["dilations"]) if "dilations" in attrs else [1, 1]
        with ir.InsertionPoint(op), op.location:
            def transpose(v: Any, shape: list[int], perm: list[int], et: Any) -> Any:
                empty = tensor.empty(_permuted(shape, perm), et)
                return linalg.transpose(v, outs=[empty], permutation=perm).results[0]

            xt = transpose(x, xs, _NCHW_TO_NHWC, elem)
            wt = transpose(w, ws, _CHW_TO_HWC, ir.RankedTensorType(w.type).element_type)
            ot = transpose(init, os_, _NCHW_TO_NHWC, out_elem)
            conv = linalg.depthwise_conv_2d_nhwc_hwc(
                xt, wt, outs=[ot], strides=strides, dilations=dilations
            )
            if not isinstance(conv, ir.Value):
                conv = conv.results[0]
            back = transpose(conv, _permuted(os_, _NCHW_TO_NHWC), _NHWC_TO_NCHW, out_elem)
        op.results[0].replace_all_uses_with(back)
        op.erase()
        done += 1
    return done
