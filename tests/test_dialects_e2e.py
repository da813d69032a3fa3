"""Each input kind compiles for CPU and Vulkan, runs (local-task; lavapipe), and equals numpy."""

from __future__ import annotations

import numpy as np
import pytest

from kiln.client.runtime import load_vmfb
from kiln.compiler.pipeline import Pipeline
from kiln.dialects.types import InputDialect
from tests.graphs import CASES, onnx_mlp, onnx_mlp_reference

TARGETS = ["cpu", "vulkan"]
DRIVER = {"cpu": "local-task", "vulkan": "vulkan"}


@pytest.mark.parametrize("dialect", sorted(CASES))
def test_mlir_dialect_runs_and_matches_numpy(pipeline: Pipeline, dialect: str) -> None:
    src, fn, make_inputs, reference = CASES[dialect]
    res = pipeline.compile(src, targets=TARGETS)
    assert res.input_dialect is InputDialect(dialect)
    assert not res.errors
    assert [a.target for a in res.artifacts] == ["cpu:x86_64:generic", "vulkan:generic"]
    rng = np.random.default_rng(42)
    for art in res.artifacts:
        assert art.data is not None
        mod = load_vmfb(art.data, driver=DRIVER[art.target.split(":")[0]])
        inputs = make_inputs(rng)
        out = mod[fn](*inputs)
        np.testing.assert_allclose(out, reference(*inputs), rtol=1e-4, atol=1e-4)


def test_onnx_model_runs_and_matches_numpy(pipeline: Pipeline) -> None:
    # The entry function is named after the ONNX graph, however odd its name.
    res = pipeline.compile(onnx_mlp("Model from PaddlePaddle."), targets=TARGETS)
    assert res.input_dialect is InputDialect.ONNX
    assert res.functions == ("Model from PaddlePaddle.",)
    x = np.random.default_rng(3).standard_normal((4, 8)).astype(np.float32)
    for art in res.artifacts:
        assert art.data is not None
        mod = load_vmfb(art.data, driver=DRIVER[art.target.split(":")[0]])
        out = mod["Model from PaddlePaddle."](x)
        np.testing.assert_allclose(out, onnx_mlp_reference(x), rtol=1e-4, atol=1e-4)


def test_mlir_bytecode_input_is_accepted(pipeline: Pipeline) -> None:
    from iree.compiler import ir

    src = CASES["linalg"][0]
    with ir.Context():
        m = ir.Module.parse(src.decode())
        import io

        buf = io.BytesIO()
        m.operation.write_bytecode(buf)
    bytecode = buf.getvalue()
    assert bytecode.startswith(b"ML\xefR")
    text_res = pipeline.compile(src, targets=["cpu"])
    bc_res = pipeline.compile(bytecode, targets=["cpu"])
    # Same graph, other serialization: same canonical digest.
    assert bc_res.graph_digest == text_res.graph_digest


def test_f64_is_kept_on_cpu(pipeline: Pipeline) -> None:
    src = b"""
    func.func @main(%a: tensor<4xf64>) -> tensor<4xf64> {
      %0 = arith.mulf %a, %a : tensor<4xf64>
      return %0 : tensor<4xf64>
    }"""
    res = pipeline.compile(src, targets=["cpu"])
    assert res.artifacts[0].data is not None
    mod = load_vmfb(res.artifacts[0].data, driver="local-task")
    x = np.array([1e-200, 2.0, 3.0, 1e150], dtype=np.float64)
    out = mod.main(x)
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, x * x)


def test_scalar_inputs_keep_their_rank(pipeline: Pipeline) -> None:
    src = b"""
    func.func @main(%a: tensor<f32>, %b: tensor<3xf32>) -> tensor<3xf32> {
      %e = tensor.empty() : tensor<3xf32>
      %s = linalg.broadcast ins(%a : tensor<f32>) outs(%e : tensor<3xf32>) dimensions = [0]
      %r = arith.mulf %s, %b : tensor<3xf32>
      return %r : tensor<3xf32>
    }"""
    res = pipeline.compile(src, targets=["cpu", "vulkan"])
    for art in res.artifacts:
        assert art.data is not None
        mod = load_vmfb(art.data, driver=DRIVER[art.target.split(":")[0]])
        out = mod.main(np.float32(2.0), np.array([1, 2, 3], np.float32))
        np.testing.assert_allclose(out, [2, 4, 6])
