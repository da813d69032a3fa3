"""Shape subgraphs folded before IREE's importer (``kiln.dialects.onnx_shapes``).

The causal-mask pattern of torch's export of GPT-2 (``ConstantOfShape`` → ``Mul`` → ``Equal``
→ ``Where`` → ``Expand``) gives IREE's importer a dynamic ``Expand`` on static inputs, which its
CPU conversion cannot legalize; folded with ONNX shape inference and the onnxscript optimizer, it
compiles and matches onnxruntime. A model with dynamic inputs is left as it came.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from kiln.client.runtime import LoadedModule
from kiln.compiler.pipeline import Pipeline
from kiln.dialects.onnx_shapes import fold_shapes, needs_folding


def masked(batch: int | str = 1) -> onnx.ModelProto:
    c = [numpy_helper.from_array(np.array([4], np.int64), "rank"),
         numpy_helper.from_array(np.array(-1, np.int64), "minus1"),
         numpy_helper.from_array(np.array([1, 1, 8, 8], np.int64), "full"),
         numpy_helper.from_array(np.tril(np.ones((1, 1, 8, 8), bool)), "tril")]
    nodes = [helper.make_node("ConstantOfShape", ["rank"], ["ones"],
                              value=numpy_helper.from_array(np.array([1], np.int64))),
             helper.make_node("Mul", ["ones", "minus1"], ["neg"]),
             helper.make_node("Equal", ["full", "neg"], ["eq"]),
             helper.make_node("Where", ["eq", "ones", "full"], ["shape"]),
             helper.make_node("Expand", ["tril", "shape"], ["mask"]),
             helper.make_node("Where", ["mask", "x", "lowest"], ["y"])]
    c.append(numpy_helper.from_array(np.array(-1e4, np.float32), "lowest"))
    g = helper.make_graph(
        nodes, "masked", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 1, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], c)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def test_a_computed_mask_shape_is_folded_and_compiles(tmp_path: object) -> None:
    model = masked()
    assert needs_folding(onnx.shape_inference.infer_shapes(model, data_prop=True))
    folded = fold_shapes(model)
    assert not any(n.op_type in ("ConstantOfShape", "Expand") for n in folded.graph.node)
    p = Pipeline(cache=None, workers=1)
    try:
        res = p.compile(model.SerializeToString(), targets=["cpu"])
    finally:
        p.close()
    assert not res.errors, res.errors
    x = np.random.default_rng(3).standard_normal((1, 1, 8, 8)).astype(np.float32)
    got = LoadedModule(res.artifacts[0].data, driver="local-task").masked(x)
    import onnxruntime as ort

    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(np.asarray(got), want)


def test_a_model_with_dynamic_inputs_is_not_folded() -> None:
    model = onnx.shape_inference.infer_shapes(masked("N"), data_prop=True)
    assert not needs_folding(model)
