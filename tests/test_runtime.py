"""The client runtime's call path (kiln.client.runtime): the polling wait on local-task against the
blocking one, on real executables compiled by Kiln and run on this machine's CPU.

Every graph Kiln compiles has an asynchronous form of each entry point (``main$async``), which
the runtime polls: IREE writes it for ONNX and torch graphs, Kiln adds it for MLIR in linalg,
StableHLO and TOSA (kiln.lowering.entry_points). A module without one (compiled by plain
``iree-compile``) is called as it is."""

from __future__ import annotations

import subprocess
import sys
import threading

import numpy as np
import pytest

from kiln.client.runtime import _polling_invoker_class, load_vmfb
from kiln.compiler.pipeline import Pipeline
from kiln.targets.toolchain import iree_compile_path
from tests import graphs
from tests.graphs import onnx_model

CPU = "cpu:x86_64"

# Two inputs, two results of different shapes: y1 = relu(a @ b), y2 = a + 1.
TWO_IN_TWO_OUT = """
func.func @main(%a: tensor<64x32xf32>, %b: tensor<32x48xf32>) -> (tensor<64x48xf32>, tensor<64x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<64x48xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64x48xf32>) -> tensor<64x48xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<64x32xf32>, tensor<32x48xf32>) outs(%f : tensor<64x48xf32>) -> tensor<64x48xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%mm : tensor<64x48xf32>) outs(%e : tensor<64x48xf32>) {
  ^bb0(%x: f32, %o: f32):
    %m = arith.maximumf %x, %zero : f32
    linalg.yield %m : f32
  } -> tensor<64x48xf32>
  %e2 = tensor.empty() : tensor<64x32xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<64x32xf32>) outs(%e2 : tensor<64x32xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.addf %x, %one : f32
    linalg.yield %s : f32
  } -> tensor<64x32xf32>
  return %r, %p : tensor<64x48xf32>, tensor<64x32xf32>
}
"""


def _onnx_two_in_two_out() -> bytes:
    from onnx import TensorProto, helper

    f32 = TensorProto.FLOAT
    data, _ = onnx_model(
        "main",
        [helper.make_node("MatMul", ["a", "b"], ["mm"]),
         helper.make_node("Relu", ["mm"], ["y1"]),
         helper.make_node("Add", ["a", "one"], ["y2"])],
        [helper.make_tensor_value_info("a", f32, [64, 32]),
         helper.make_tensor_value_info("b", f32, [32, 48])],
        [helper.make_tensor_value_info("y1", f32, [64, 48]),
         helper.make_tensor_value_info("y2", f32, [64, 32])],
        {"one": np.ones((1,), np.float32)},
    )
    return data


@pytest.fixture(scope="module")
def vmfb(pipeline: Pipeline) -> bytes:
    res = pipeline.compile(_onnx_two_in_two_out(), targets=[CPU])
    assert not res.errors, res.errors
    assert list(res.functions) == ["main"]
    return res.artifacts[0].data


def _inputs(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((64, 32)).astype(np.float32),
            rng.standard_normal((32, 48)).astype(np.float32))


def _expected(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.maximum(a @ b, 0), a + 1


def test_local_task_polls_and_gets_the_same_results_as_blocking(vmfb: bytes) -> None:
    polled = load_vmfb(vmfb, driver="local-task")
    blocked = load_vmfb(vmfb, driver="local-task", wait="block")
    assert polled.wait == "poll" and blocked.wait == "block"
    assert isinstance(polled._polling("main"), _polling_invoker_class())
    for seed in range(3):  # repeated calls reuse nothing stale
        a, b = _inputs(seed)
        y1, y2 = polled.main(a, b)
        z1, z2 = blocked.main(a, b)
        e1, e2 = _expected(a, b)
        np.testing.assert_allclose(y1, e1, rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(y2, e2)
        np.testing.assert_array_equal(y1, z1)
        np.testing.assert_array_equal(y2, z2)


def test_importing_the_runtime_module_does_not_import_iree_runtime() -> None:
    import subprocess

    code = "import sys, kiln.client.runtime, kiln.client; print('iree.runtime' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    assert out.stdout.strip() == "False"


def test_other_drivers_block_by_default(vmfb: bytes) -> None:
    assert load_vmfb(vmfb, driver="local-sync").wait == "block"
    y1, _ = load_vmfb(vmfb, driver="local-sync").main(*_inputs())
    np.testing.assert_allclose(y1, _expected(*_inputs())[0], rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="wait must be"):
        load_vmfb(vmfb, driver="local-task", wait="spin")


def test_a_call_past_its_poll_budget_blocks_and_still_answers(vmfb: bytes) -> None:
    mod = load_vmfb(vmfb, driver="local-task", poll_budget_s=0.0)
    y1, y2 = mod.main(*_inputs(5))
    e1, e2 = _expected(*_inputs(5))
    np.testing.assert_allclose(y1, e1, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(y2, e2)


def test_bad_arguments_raise_instead_of_hanging(vmfb: bytes) -> None:
    mod = load_vmfb(vmfb, driver="local-task")
    a, b = _inputs()
    with pytest.raises((ValueError, RuntimeError)):
        mod.main(a.T.copy(), b)  # wrong shape: rejected by the module's own checks
    with pytest.raises((ValueError, RuntimeError, TypeError)):
        mod.main(a)  # missing argument
    y1, _ = mod.main(a, b)  # the module still works afterwards
    np.testing.assert_allclose(y1, _expected(a, b)[0], rtol=1e-5, atol=1e-5)


def test_threads_calling_one_module_each_get_their_own_results(vmfb: bytes) -> None:
    mod = load_vmfb(vmfb, driver="local-task")
    errors: list[BaseException] = []

    def work(seed: int) -> None:
        try:
            for i in range(10):
                a, b = _inputs(seed * 100 + i)
                y1, y2 = mod.main(a, b)
                e1, e2 = _expected(a, b)
                np.testing.assert_allclose(y1, e1, rtol=1e-5, atol=1e-5)
                np.testing.assert_array_equal(y2, e2)
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert not errors, errors


@pytest.mark.parametrize("dialect", ["linalg", "stablehlo", "tosa"])
def test_mlir_inputs_get_a_polled_async_form_with_the_same_results(
    pipeline: Pipeline, dialect: str
) -> None:
    src = TWO_IN_TWO_OUT if dialect == "linalg" else getattr(graphs, dialect.upper())
    res = pipeline.compile(src.encode(), targets=[CPU], format="mlir")
    assert not res.errors, res.errors
    polled = load_vmfb(res.artifacts[0].data, driver="local-task")
    blocked = load_vmfb(res.artifacts[0].data, driver="local-task", wait="block")
    assert isinstance(polled._polling("main"), _polling_invoker_class())
    rng = np.random.default_rng(3)
    if dialect == "linalg":
        args = _inputs(3)
        e1, e2 = _expected(*args)
        for mod in (polled, blocked):
            y1, y2 = mod.main(*args)
            np.testing.assert_allclose(y1, e1, rtol=1e-5, atol=1e-5)
            np.testing.assert_array_equal(y2, e2)
        return
    if dialect == "stablehlo":  # tanh(x @ w + b)
        x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((4, 8), (8, 3), (3,)))
        args, want = (x, w, b), np.tanh(x @ w + b)
    else:  # tosa: max(exp(x + y), x)
        x, y = (rng.standard_normal((4, 8)).astype(np.float32) for _ in range(2))
        args, want = (x, y), np.maximum(np.exp(x + y), x)
    for mod in (polled, blocked):
        for _ in range(3):
            np.testing.assert_allclose(mod.main(*args), want, rtol=1e-5, atol=1e-6)


def test_a_module_without_an_async_form_falls_back_to_the_blocking_call(
    tmp_path: pytest.TempPathFactory,
) -> None:
    # plain iree-compile: one synchronous function, no `main$async` to poll
    src, out = tmp_path / "m.mlir", tmp_path / "m.vmfb"  # type: ignore[operator]
    src.write_text(TWO_IN_TWO_OUT)
    subprocess.run([str(iree_compile_path()), "--iree-hal-target-device=local",
                    "--iree-hal-local-target-device-backends=llvm-cpu",
                    "--iree-llvmcpu-target-cpu=generic", str(src), "-o", str(out)],
                   check=True, capture_output=True, timeout=240)
    mod = load_vmfb(out.read_bytes(), driver="local-task")
    assert mod.wait == "poll" and mod._polling("main") is None
    y1, y2 = mod.main(*_inputs(2))
    e1, e2 = _expected(*_inputs(2))
    np.testing.assert_allclose(y1, e1, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(y2, e2)


# Three public functions: tensors of a static and a dynamic shape, a scalar argument, an i1 result.
SEVERAL = TWO_IN_TWO_OUT + """
func.func @scaled(%a: tensor<?x4xi64>, %k: i32) -> (tensor<?x4xi64>, tensor<i1>) {
  %t = arith.constant dense<true> : tensor<i1>
  return %a, %t : tensor<?x4xi64>, tensor<i1>
}
"""


def test_a_loaded_module_lists_its_functions_with_their_types(pipeline: Pipeline) -> None:
    from kiln.client.runtime import read_signatures

    res = pipeline.compile(SEVERAL.encode(), targets=[CPU])
    assert not res.errors, res.errors
    data = res.artifacts[0].data
    mod = load_vmfb(data, driver="local-task")
    # main$async and __init are there too, but are not what a caller calls.
    assert mod.function_names == ["main", "scaled"]
    assert {"main", "scaled"} <= set(dir(mod))
    main, scaled = mod.signatures["main"], mod.signatures["scaled"]
    assert [(v.shape, v.dtype, v.numpy_dtype) for v in main.inputs] == [
        ((64, 32), "f32", "float32"), ((32, 48), "f32", "float32")]
    assert [v.shape for v in main.outputs] == [(64, 48), (64, 32)]
    assert [(v.kind, v.shape, v.dtype) for v in scaled.inputs] == [
        ("tensor", (None, 4), "i64"), ("scalar", (), "i32")]
    assert str(scaled) == "scaled(tensor<?x4xi64>, i32) -> (tensor<?x4xi64>, tensor<i1>)"
    assert "main(tensor<64x32xf32>, tensor<32x48xf32>) -> (tensor<64x48xf32>, " in repr(mod)
    assert read_signatures(data) == mod.signatures  # the same without a device
    # What the engine saw when it imported the graph agrees with the executable.
    assert {s.name: s for s in res.signatures} == mod.signatures
    with pytest.raises(AttributeError, match="no function 'mian'; it has 'main', 'scaled'"):
        mod.mian  # noqa: B018
    a = np.arange(8, dtype=np.int64).reshape(2, 4)
    out, flag = mod.scaled(a, 3)
    np.testing.assert_array_equal(out, a)
    assert bool(flag) is True


def test_an_onnx_executable_has_no_types_of_its_own_unless_given(
    pipeline: Pipeline, vmfb: bytes
) -> None:
    # IREE records no iree.abi.declaration for ONNX imports: the calling convention says how
    # many buffers; the types come from the compile answer (Client.load passes them on).
    bare = load_vmfb(vmfb, driver="local-task")
    assert str(bare.signatures["main"]) == "main(tensor<?>, tensor<?>) -> (tensor<?>, tensor<?>)"
    graph = pipeline.prepare(_onnx_two_in_two_out())
    given = load_vmfb(vmfb, driver="local-task", signatures=graph.signatures)
    assert str(given.signatures["main"]) == (
        "main(tensor<64x32xf32>, tensor<32x48xf32>) -> (tensor<64x48xf32>, tensor<64x32xf32>)")


def test_signatures_round_trip_and_read_every_type_form() -> None:
    from kiln.dialects.types import FunctionSignature, ValueType

    decl = ("sync func @f(%input0: tensor<4x?xf32>, %input1: tensor<*xbf16>, %input2: f64) -> "
            "(%output0: tensor<2xcomplex<f32>>, %output1: !hal.buffer_view)")
    sig = FunctionSignature.from_declaration(decl)
    assert sig is not None
    assert str(sig) == ("f(tensor<4x?xf32>, tensor<*xbf16>, f64) -> "
                        "(tensor<2xcomplex<f32>>, !hal.buffer_view)")
    assert FunctionSignature.from_json(sig.to_json()) == sig
    assert ValueType.parse("!torch.vtensor<[?,3],si64>") == ValueType("tensor", "i64", (None, 3))
    assert ValueType.parse("tensor<4xf32, #enc<a, b>>") == ValueType("tensor", "f32", (4,))
    assert FunctionSignature.from_declaration("not a declaration") is None


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
