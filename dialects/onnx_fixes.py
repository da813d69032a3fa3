"""Graph fix-ups applied to an ONNX model before IREE's importer sees it.

IREE 3.13's importer and its torch-mlir lowerings leave some ONNX forms unlegalized (e.g.
``torch.aten.nll_loss_forward``, opset-23 ``RMSNormalization``, ``auto_pad`` on ``LpPool``,
asymmetric pads on ``ConvTranspose``). Each fix below rewrites one such form into ops that do
lower, and only where the rewrite is exact (same values, same types, same signature). Each lists
the ONNX backend node tests it turns green on CPU (measured against Kiln without the fix: IREE's
importer and Kiln's CPU flags); ``bench/conformance.py`` always runs them, and the CI sample keeps
two per fix.

Failure semantics: every fix is best effort. A fix that raises, or whose result fails
``onnx.checker``, is dropped and the model goes on as it was; ``fix_model`` never raises. A model
no fix applies to is returned unchanged (the same object), so its imported graph and cache key do
not move.

Order: expand function ops → explicit pads → split asymmetric pads → fold shape computations.
Expansion first so the later fixes see the expanded body; folding last so it sees every producer.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import onnx

__all__ = ["fix_model", "FIXES", "Fix"]


@dataclass(frozen=True)
class Fix:
    name: str
    apply: Callable[[onnx.ModelProto], bool]  # mutates the model; True when it changed anything
    tests: tuple[str, ...]  # node tests it turns green (Kiln cpu), measured
    why: str


def fix_model(model: onnx.ModelProto) -> tuple[onnx.ModelProto, list[str]]:
    """Apply every fix that matches; return the model and the names of the fixes applied."""
    import onnx

    if not _has_candidates(model):
        return model, []
    applied: list[str] = []
    current = model
    for fix in FIXES:
        trial = onnx.ModelProto()
        trial.CopyFrom(current)
        try:
            if not fix.apply(trial):
                continue
            onnx.checker.check_model(trial)
        except Exception:  # noqa: BLE001 - a fix that cannot apply cleanly is skipped
            continue
        current = trial
        applied.append(fix.name)
    return current, applied


def _main_opset(model: onnx.ModelProto) -> int:
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            return o.version
    return 0


def _has_candidates(model: onnx.ModelProto) -> bool:
    ops = {n.op_type for n in model.graph.node if n.domain in ("", "ai.onnx")}
    if ops & set(EXPAND):
        return True
    for n in model.graph.node:
        if n.op_type in _AUTO_PAD_OPS and _decode(_attr(n, "auto_pad", "NOTSET")) != "NOTSET":
            return True
        if n.op_type in ("ConvTranspose", "MaxPool"):
            pads = list(_attr(n, "pads", []))  # type: ignore[call-overload]
            if pads[: len(pads) // 2] != pads[len(pads) // 2 :]:
                return True
    return False


def _attr(node: onnx.NodeProto, name: str, default: object = None) -> object:
    from onnx import helper

    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def _set_attr(node: onnx.NodeProto, name: str, value: object) -> None:
    from onnx import helper

    for i, a in enumerate(node.attribute):
        if a.name == name:
            del node.attribute[i]
            break
    if value is not None:
        node.attribute.append(helper.make_attribute(name, value))


def _inferred(model: onnx.ModelProto) -> onnx.ModelProto:
    import onnx

    return onnx.shape_inference.infer_shapes(model, data_prop=True)


def _static_shapes(model: onnx.ModelProto) -> dict[str, tuple[int, ...]]:
    """Fully static tensor shapes by value name, from shape inference and initializers."""
    m = _inferred(model)
    shapes: dict[str, tuple[int, ...]] = {}
    for vi in itertools.chain(m.graph.input, m.graph.value_info, m.graph.output):
        t = vi.type.tensor_type
        if vi.type.WhichOneof("value") != "tensor_type" or not t.HasField("shape"):
            continue
        dims = [d.dim_value if d.HasField("dim_value") else -1 for d in t.shape.dim]
        if all(d >= 0 for d in dims):
            shapes[vi.name] = tuple(dims)
    for init in m.graph.initializer:
        shapes[init.name] = tuple(init.dims)
    return shapes


def _elem_types(model: onnx.ModelProto) -> dict[str, int]:
    m = _inferred(model)
    out: dict[str, int] = {}
    for vi in itertools.chain(m.graph.input, m.graph.value_info, m.graph.output):
        if vi.type.WhichOneof("value") == "tensor_type":
            out[vi.name] = vi.type.tensor_type.elem_type
    for init in m.graph.initializer:
        out[init.name] = init.data_type
    return out


def _fresh(model: onnx.ModelProto, stem: str) -> Callable[[str], str]:
    used = {v for n in model.graph.node for v in itertools.chain(n.input, n.output)}
    used |= {v.name for v in itertools.chain(model.graph.input, model.graph.initializer)}
    counter = itertools.count()

    def name(suffix: str) -> str:
        while True:
            cand = f"{stem}_{next(counter)}_{suffix}"
            if cand not in used:
                used.add(cand)
                return cand

    return name


# -- 1. expand ops into their ONNX function bodies ---------------------------------------------

# Ops whose IREE 3.13 lowering is missing or wrong, but whose ONNX function body lowers and runs
# correctly (the ``test_X_expanded`` node tests pass where ``test_X`` does not).
EXPAND = {
    "NegativeLogLikelihoodLoss": "torch.aten.nll_loss_forward has no lowering in IREE 3.13",
    "RMSNormalization": "opset 23: the importer leaves onnx.RMSNormalization unlegalized",
}


def _function_body(node: onnx.NodeProto, opset: int, model: onnx.ModelProto) -> onnx.FunctionProto:
    import onnx
    import onnx.defs

    schema = onnx.defs.get_schema(node.op_type, opset, node.domain)
    plain = [v for v in schema.function_opset_versions if v <= opset]
    ctx = [v for v in schema.context_dependent_function_opset_versions if v <= opset]
    fn = onnx.FunctionProto()
    if ctx and (not plain or max(ctx) >= max(plain)):
        m = _inferred(model)
        types = {vi.name: vi.type for vi in itertools.chain(m.graph.input, m.graph.value_info)}
        for init in m.graph.initializer:
            types[init.name] = onnx.helper.make_tensor_type_proto(init.data_type, init.dims)
        input_types = [types[i] if i else onnx.TypeProto() for i in node.input]
        with_defaults = onnx.NodeProto()
        with_defaults.CopyFrom(node)
        _add_default_attrs(with_defaults, schema)
        fn.ParseFromString(
            schema.get_context_dependent_function_with_opset_version(
                max(ctx), with_defaults.SerializeToString(),
                [t.SerializeToString() for t in input_types],
            )
        )
    elif plain:
        fn.ParseFromString(schema.get_function_with_opset_version(max(plain)))
    else:
        raise ValueError(f"{node.op_type} has no function body at opset {opset}")
    # The body is written against some opset; its ops must mean the same at the model's opset.
    body_opset = next((o.version for o in fn.opset_import if o.domain in ("", "ai.onnx")), opset)
    for n in fn.node:
        if n.domain not in ("", "ai.onnx"):
            raise ValueError(f"function body uses domain {n.domain!r}")
        a = onnx.defs.get_schema(n.op_type, body_opset).since_version
        b = onnx.defs.get_schema(n.op_type, opset).since_version
        if a != b:
            raise ValueError(f"{n.op_type} differs between opsets {body_opset} and {opset}")
        if any(at.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
               for at in n.attribute):
            raise ValueError("function body has subgraphs")
    return fn


def _add_default_attrs(node: onnx.NodeProto, schema: object) -> None:
    present = {a.name for a in node.attribute}
    for name, attr in schema.attributes.items():  # type: ignore[attr-defined]
        if name not in present and attr.default_value.name:
            node.attribute.append(attr.default_value)


def _expand_node(node: onnx.NodeProto, fn: onnx.FunctionProto, prefix: str,
                 schema: object) -> list[onnx.NodeProto]:
    import onnx

    defaults = onnx.NodeProto()
    defaults.CopyFrom(node)
    _add_default_attrs(defaults, schema)
    attrs = {a.name: a for a in defaults.attribute}
    io: dict[str, str] = {}
    for i, name in enumerate(fn.input):
        io[name] = node.input[i] if i < len(node.input) else ""
    for i, name in enumerate(fn.output):
        if i < len(node.output) and node.output[i]:
            io[name] = node.output[i]

    def rename(n: str) -> str:
        if n in io:
            return io[n]
        return "" if n == "" else prefix + n

    out = []
    for inner in fn.node:
        new = onnx.NodeProto()
        new.CopyFrom(inner)
        del new.input[:]
        del new.output[:]
        del new.attribute[:]
        new.input.extend(rename(i) for i in inner.input)
        new.output.extend(rename(o) for o in inner.output)
        new.name = prefix + (inner.name or inner.op_type)
        for a in inner.attribute:
            if a.HasField("ref_attr_name"):
                if a.ref_attr_name in attrs:
                    ref = onnx.AttributeProto()
                    ref.CopyFrom(attrs[a.ref_attr_name])
                    ref.name = a.name
                    new.attribute.append(ref)
            else:
                new.attribute.append(a)
        out.append(new)
    return out


def expand_function_ops(model: onnx.ModelProto) -> bool:
    import onnx.defs

    opset = _main_opset(model)
    fresh = _fresh(model, "kiln_expand")
    changed = False
    nodes: list[onnx.NodeProto] = []
    for node in model.graph.node:
        if node.domain in ("", "ai.onnx") and node.op_type in EXPAND:
            fn = _function_body(node, opset, model)
            schema = onnx.defs.get_schema(node.op_type, opset, node.domain)
            nodes.extend(_expand_node(node, fn, fresh(node.op_type) + "_", schema))
            changed = True
        else:
            nodes.append(node)
    if changed:
        del model.graph.node[:]
        model.graph.node.extend(nodes)
    return changed


# -- 2. auto_pad → explicit pads -----------------------------------------------------------------

_AUTO_PAD_OPS = ("Conv", "AveragePool", "MaxPool", "LpPool", "ConvTranspose")


def _decode(v: object) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def explicit_pads(model: onnx.ModelProto) -> bool:
    """``auto_pad = SAME_UPPER | SAME_LOWER | VALID`` → ``pads``, where spatial shapes are static.

    Pools and Conv (ONNX spec): ``out = ceil(in / stride)`` and
    ``total = max(0, (out - 1) * stride + (k - 1) * dilation + 1 - in)``; SAME_UPPER puts the odd
    pixel at the end, SAME_LOWER at the start. ConvTranspose: ``out = in * stride`` and
    ``total = stride * (in - 1) + output_padding + (k - 1) * dilation + 1 - out`` (skipped when
    negative). Pools keep ``ceil_mode``: with explicit pads the output size equals the SAME size.
    """
    shapes = _static_shapes(model)
    changed = False
    for node in model.graph.node:
        if node.op_type not in _AUTO_PAD_OPS or node.domain not in ("", "ai.onnx"):
            continue
        mode = _decode(_attr(node, "auto_pad", "NOTSET"))
        if mode == "NOTSET":
            continue
        x = shapes.get(node.input[0])
        if x is None or len(x) < 3:
            continue
        spatial = x[2:]
        nd = len(spatial)
        kernel = _attr(node, "kernel_shape")
        if kernel is None and node.op_type in ("Conv", "ConvTranspose"):
            w = shapes.get(node.input[1])
            kernel = list(w[2:]) if w is not None else None
        if kernel is None:
            continue
        kernel = list(kernel)
        strides = list(_attr(node, "strides", [1] * nd))  # type: ignore[call-overload]
        dil = list(_attr(node, "dilations", [1] * nd))  # type: ignore[call-overload]
        begin, end = [], []
        for i in range(nd):
            eff = (kernel[i] - 1) * dil[i] + 1
            if mode == "VALID":
                total = 0
            elif node.op_type == "ConvTranspose":
                outpad = list(_attr(node, "output_padding", [0] * nd))[i]  # type: ignore[call-overload]
                total = strides[i] * (spatial[i] - 1) + outpad + eff - spatial[i] * strides[i]
                if total < 0:
                    break
            else:
                out = -(-spatial[i] // strides[i])
                total = max(0, (out - 1) * strides[i] + eff - spatial[i])
            # SAME_UPPER puts the odd pixel at the end (ConvTranspose too: begin = total / 2).
            small, big = total // 2, total - total // 2
            b, e = (small, big) if mode == "SAME_UPPER" else (big, small)
            begin.append(b)
            end.append(e)
        else:
            _set_attr(node, "auto_pad", None)
            _set_attr(node, "pads", begin + end)
            changed = True
    return changed


# -- 3. asymmetric pads the lowerings refuse ------------------------------------------------------


def split_asymmetric_pads(model: onnx.ModelProto) -> bool:
    """Asymmetric ``pads`` (begin != end), as SAME padding produces, on two ops:

    - ``ConvTranspose``: the lowering refuses them. Compute the full result (pads 0) and
      ``Slice`` off ``begin``/``end`` per spatial axis: ConvTranspose's pads only crop its output.
    - ``MaxPool`` (single output): with f64 kept, its asymmetric-pad lowering emits an
      ``arith.truncf f64→f32`` the CPU pipeline rejects. ``Pad`` with the dtype's lowest value
      (-inf for floats), then pool without pads: a window never lies wholly in the padding
      (pads < kernel), so every max is the same.
    """
    import numpy as np
    from onnx import helper, numpy_helper

    shapes = _static_shapes(model)
    types = _elem_types(model)
    fresh = _fresh(model, "kiln_pads")
    changed = False
    nodes: list[onnx.NodeProto] = []
    for node in model.graph.node:
        pads = _attr(node, "pads")
        if (
            node.domain not in ("", "ai.onnx")
            or node.op_type not in ("ConvTranspose", "MaxPool")
            or pads is None
            or _decode(_attr(node, "auto_pad", "NOTSET")) != "NOTSET"
        ):
            nodes.append(node)
            continue
        pads = list(pads)  # type: ignore[call-overload]
        nd = len(pads) // 2
        begin, end = pads[:nd], pads[nd:]
        if begin == end:
            nodes.append(node)
            continue
        x = node.input[0]
        if node.op_type == "ConvTranspose":
            if _attr(node, "output_shape") is not None:
                nodes.append(node)
                continue
            full = fresh("full")
            new = helper.make_node(node.op_type, list(node.input), [full], name=fresh("convt"))
            new.attribute.extend(a for a in node.attribute if a.name != "pads")
            new.attribute.append(helper.make_attribute("pads", [0] * (2 * nd)))
            out_shape = shapes.get(node.output[0])
            if out_shape is None:
                nodes.append(node)
                continue
            starts = numpy_helper.from_array(np.array(begin, np.int64), fresh("starts"))
            ends = numpy_helper.from_array(
                np.array([begin[i] + out_shape[2 + i] for i in range(nd)], np.int64), fresh("ends"))
            axes = numpy_helper.from_array(np.arange(2, 2 + nd, dtype=np.int64), fresh("axes"))
            model.graph.initializer.extend([starts, ends, axes])
            nodes.append(new)
            nodes.append(helper.make_node(
                "Slice", [full, starts.name, ends.name, axes.name], [node.output[0]],
                name=fresh("crop")))
        else:
            if len([o for o in node.output if o]) != 1 or types.get(x) is None:
                nodes.append(node)
                continue
            dt = helper.tensor_dtype_to_np_dtype(types[x])
            low = -np.inf if np.issubdtype(dt, np.floating) else np.iinfo(dt).min
            kernel = list(_attr(node, "kernel_shape"))  # type: ignore[call-overload]
            if any(p >= k for p, k in zip(pads, kernel + kernel, strict=True)):
                nodes.append(node)
                continue
            pad_vec = numpy_helper.from_array(
                np.array([0, 0, *begin, 0, 0, *end], np.int64), fresh("pads"))
            value = numpy_helper.from_array(np.array(low, dt), fresh("low"))
            model.graph.initializer.extend([pad_vec, value])
            padded = fresh("padded")
            nodes.append(helper.make_node("Pad", [x, pad_vec.name, value.name], [padded],
                                          name=fresh("pad"), mode="constant"))
            new = helper.make_node("MaxPool", [padded], list(node.output), name=fresh("maxpool"))
            new.attribute.extend(a for a in node.attribute if a.name != "pads")
            nodes.append(new)
        changed = True
    if changed:
        del model.graph.node[:]
        model.graph.node.extend(nodes)
    return changed


# -- 4. fold integer shape computations ---------------------------------------------------------

_NONDETERMINISTIC = {"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike",
                     "Multinomial", "Bernoulli", "Dropout"}
_FOLD_LIMIT = 4096  # elements: shape-like values only, never weights


def fold_shape_computations(model: onnx.ModelProto) -> bool:
    """Evaluate integer-valued nodes whose inputs are constants (or ``Shape``/``Size`` of a value
    with a static shape) with onnx's reference evaluator, and make them initializers.

    Function bodies compute axes and shapes at run time (``Shape`` → ``Gather`` → ``Range``...);
    IREE needs them static (``ReduceMean`` with an axes tensor of unknown value is unlegalized).
    Only int/bool results of at most ``_FOLD_LIMIT`` elements are folded: float math stays IREE's.
    Runs only on models another fix changed (the expanded bodies), so untouched models keep their
    imported form.
    """
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper
    from onnx.reference import ReferenceEvaluator

    shapes = _static_shapes(model)
    types = _elem_types(model)
    consts: dict[str, np.ndarray] = {
        i.name: numpy_helper.to_array(i) for i in model.graph.initializer
    }
    graph_inputs = {i.name for i in model.graph.input} - set(consts)
    int_types = {TensorProto.INT64, TensorProto.INT32, TensorProto.BOOL}
    opset = _main_opset(model)
    folded: dict[str, np.ndarray] = {}
    keep: list[onnx.NodeProto] = []
    for node in model.graph.node:
        if node.domain not in ("", "ai.onnx") or node.op_type in _NONDETERMINISTIC or any(
            a.type in (a.GRAPH, a.GRAPHS) for a in node.attribute
        ):
            keep.append(node)
            continue
        value: list[np.ndarray] | None = None
        if node.op_type == "Constant":
            v = _attr(node, "value")
            if v is not None and types.get(node.output[0]) in int_types:
                arr = numpy_helper.to_array(v)  # type: ignore[arg-type]
                if arr.size <= _FOLD_LIMIT:
                    value = [arr]
        elif node.op_type in ("Shape", "Size") and node.input[0] in shapes:
            shp = shapes[node.input[0]]
            if node.op_type == "Size":
                value = [np.array(int(np.prod(shp)), np.int64)]
            else:
                start = int(_attr(node, "start", 0))  # type: ignore[arg-type]
                end = _attr(node, "end", None)
                value = [np.array(shp[start:end if end is not None else None], np.int64)]
        elif node.input and all(i == "" or i in consts for i in node.input) and all(
            types.get(o) in int_types for o in node.output
        ):
            sub = helper.make_graph(
                [node], "fold",
                [],
                [helper.make_tensor_value_info(o, types[o], None) for o in node.output],
                initializer=[numpy_helper.from_array(consts[i], i) for i in node.input if i],
            )
            m = helper.make_model(sub, opset_imports=[helper.make_opsetid("", opset)])
            try:
                value = list(ReferenceEvaluator(m).run(None, {}))
            except Exception:  # noqa: BLE001 - an op the evaluator lacks: keep the node
                value = _range_of_1d(node, consts)
            if value is not None and any(np.asarray(v).size > _FOLD_LIMIT for v in value):
                value = None
        if value is None or any(o in graph_inputs for o in node.output):
            keep.append(node)
            continue
        for o, v in zip(node.output, value, strict=True):
            arr = np.asarray(v)
            want = types.get(o)
            if want is not None:
                arr = arr.astype(helper.tensor_dtype_to_np_dtype(want), copy=False)
            consts[o] = arr
            folded[o] = arr
    if not folded:
        return False
    outputs = {o.name for o in model.graph.output}
    del model.graph.node[:]
    model.graph.node.extend(keep)
    for name, arr in folded.items():
        if name in outputs:
            model.graph.node.append(helper.make_node(
                "Constant", [], [name], value=numpy_helper.from_array(arr, name + "_value")))
        else:
            model.graph.initializer.append(numpy_helper.from_array(arr, name))
    # Drop value_info entries for folded names (initializers carry their own type).
    kept_vi = [vi for vi in model.graph.value_info if vi.name not in folded]
    del model.graph.value_info[:]
    model.graph.value_info.extend(kept_vi)
    return True


def _range_of_1d(node: onnx.NodeProto, consts: dict[str, np.ndarray]) -> list[np.ndarray] | None:
    """``Range`` over one-element 1-D tensors, as ONNX's own RMSNormalization body writes it
    (the spec wants scalars; the reference evaluator refuses): the same ``arange``."""
    import numpy as np

    if node.op_type != "Range" or any(consts[i].size != 1 for i in node.input):
        return None
    start, limit, delta = (consts[i].reshape(()) for i in node.input)
    return [np.arange(start, limit, delta, dtype=consts[node.input[0]].dtype)]


def _fold_after_expansion(model: onnx.ModelProto) -> bool:
    if not any(n.name.startswith("kiln_expand_") for n in model.graph.node):
        return False
    return fold_shape_computations(model)


_RMS_TESTS = (
    "test_rms_normalization_2d_axis0",
    "test_rms_normalization_2d_axis1",
    "test_rms_normalization_2d_axis_negative_1",
    "test_rms_normalization_2d_axis_negative_2",
    "test_rms_normalization_3d_axis0_epsilon",
    "test_rms_normalization_3d_axis1_epsilon",
    "test_rms_normalization_3d_axis2_epsilon",
    "test_rms_normalization_3d_axis_negative_1_epsilon",
    "test_rms_normalization_3d_axis_negative_2_epsilon",
    "test_rms_normalization_3d_axis_negative_3_epsilon",
    "test_rms_normalization_4d_axis0",
    "test_rms_normalization_4d_axis1",
    "test_rms_normalization_4d_axis2",
    "test_rms_normalization_4d_axis3",
    "test_rms_normalization_4d_axis_negative_1",
    "test_rms_normalization_4d_axis_negative_2",
    "test_rms_normalization_4d_axis_negative_3",
    "test_rms_normalization_4d_axis_negative_4",
    "test_rms_normalization_default_axis",
)


FIXES: tuple[Fix, ...] = (
    Fix(
        "expand_function_ops",
        expand_function_ops,
        # NegativeLogLikelihoodLoss (and the SoftmaxCrossEntropyLoss bodies that call it), then
        # RMSNormalization (which also needs fold_shape_computations).
        tests=(
            "test_nllloss_NCd1",
            "test_nllloss_NCd1_ii",
            "test_nllloss_NCd1_mean_weight_negative_ii",
            "test_nllloss_NCd1_weight",
            "test_nllloss_NCd1_weight_ii",
            "test_nllloss_NCd1d2",
            "test_nllloss_NCd1d2_no_weight_reduction_mean_ii",
            "test_nllloss_NCd1d2_reduction_mean",
            "test_nllloss_NCd1d2_reduction_sum",
            "test_nllloss_NCd1d2_with_weight",
            "test_nllloss_NCd1d2_with_weight_reduction_mean",
            "test_nllloss_NCd1d2_with_weight_reduction_sum",
            "test_nllloss_NCd1d2_with_weight_reduction_sum_ii",
            "test_nllloss_NCd1d2d3_none_no_weight_negative_ii",
            "test_nllloss_NCd1d2d3d4d5_mean_weight",
            "test_nllloss_NCd1d2d3d4d5_none_no_weight",
            "test_sce_NCd1_mean_weight_negative_ii_expanded",
            "test_sce_NCd1_mean_weight_negative_ii_log_prob_expanded",
            "test_sce_NCd1d2d3_none_no_weight_negative_ii_expanded",
            "test_sce_NCd1d2d3_none_no_weight_negative_ii_log_prob_expanded",
            "test_sce_NCd1d2d3_sum_weight_high_ii_expanded",
            "test_sce_NCd1d2d3_sum_weight_high_ii_log_prob_expanded",
            "test_sce_NCd1d2d3d4d5_mean_weight_expanded",
            "test_sce_NCd1d2d3d4d5_mean_weight_log_prob_expanded",
            "test_sce_NCd1d2d3d4d5_none_no_weight_expanded",
            "test_sce_NCd1d2d3d4d5_none_no_weight_log_prob_expanded",
            "test_sce_mean_3d_expanded",
            "test_sce_mean_3d_log_prob_expanded",
            "test_sce_mean_expanded",
            "test_sce_mean_log_prob_expanded",
            "test_sce_mean_no_weight_ii_3d_expanded",
            "test_sce_mean_no_weight_ii_3d_log_prob_expanded",
            "test_sce_mean_no_weight_ii_4d_expanded",
            "test_sce_mean_no_weight_ii_4d_log_prob_expanded",
            "test_sce_mean_no_weight_ii_expanded",
            "test_sce_mean_no_weight_ii_log_prob_expanded",
            "test_sce_mean_weight_expanded",
            "test_sce_mean_weight_ii_3d_expanded",
            "test_sce_mean_weight_ii_3d_log_prob_expanded",
            "test_sce_mean_weight_ii_4d_expanded",
            "test_sce_mean_weight_ii_4d_log_prob_expanded",
            "test_sce_mean_weight_ii_expanded",
            "test_sce_mean_weight_ii_log_prob_expanded",
            "test_sce_mean_weight_log_prob_expanded",
            "test_sce_none_expanded",
            "test_sce_none_log_prob_expanded",
            "test_sce_none_weights_expanded",
            "test_sce_none_weights_log_prob_expanded",
            "test_sce_sum_expanded",
            "test_sce_sum_log_prob_expanded",
            *_RMS_TESTS,
                ),
        why="; ".join(f"{k}: {v}" for k, v in EXPAND.items()),
    ),
    Fix(
        "explicit_pads",
        explicit_pads,
        tests=("test_lppool_2d_same_lower", "test_lppool_2d_same_upper"),
        why="auto_pad on MaxPool/LpPool/ConvTranspose is unlegalized (or hits an f64 truncf "
        "when f64 is kept)",
    ),
    Fix(
        "split_asymmetric_pads",
        split_asymmetric_pads,
        # With explicit_pads first (their auto_pad gives asymmetric pads).
        tests=(
            "test_convtranspose_autopad_same",
            "test_maxpool_2d_same_lower",
            "test_maxpool_2d_same_upper",
        ),
        why="asymmetric pads: ConvTranspose's lowering refuses them; MaxPool's emits an f64 "
        "truncf the CPU pipeline rejects when f64 is kept",
    ),
    Fix(
        "fold_shape_computations",
        _fold_after_expansion,
        tests=(
            *_RMS_TESTS,
                ),
        why="expanded function bodies compute axes at run time; IREE needs them static",
    ),
)
