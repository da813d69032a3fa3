"""``f$async`` for MLIR inputs (kiln.lowering.entry_points): which functions get one, and that
the executables export and answer through both forms, compiled by Kiln and run on this CPU."""

from __future__ import annotations

import numpy as np
import pytest
from iree.compiler import ir

from kiln.client.runtime import _polling_invoker_class, load_vmfb
from kiln.compiler.pipeline import Pipeline
from kiln.lowering.entry_points import add_async_entry_points

CPU = "cpu:x86_64"

# A scalar argument, two results: (x @ w) * s and x + 1; a batch of N rows ("?": dynamic).
TWO_RESULTS = """
func.func @"Model from PaddlePaddle."(%x: tensor<Nx8xf32>, %w: tensor<8x4xf32>, %s: f32)
    -> (tensor<Nx4xf32>, tensor<Nx8xf32>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %n = tensor.dim %x, %c0 : tensor<Nx8xf32>
  %e = tensor.empty(DIMS) : tensor<Nx4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<Nx4xf32>) -> tensor<Nx4xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<Nx8xf32>, tensor<8x4xf32>)
      outs(%f : tensor<Nx4xf32>) -> tensor<Nx4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%mm : tensor<Nx4xf32>) outs(%e : tensor<Nx4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %s : f32
    linalg.yield %m : f32
  } -> tensor<Nx4xf32>
  %e2 = tensor.empty(DIMS) : tensor<Nx8xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<Nx8xf32>) outs(%e2 : tensor<Nx8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %q = arith.addf %a, %one : f32
    linalg.yield %q : f32
  } -> tensor<Nx8xf32>
  return %r, %p : tensor<Nx4xf32>, tensor<Nx8xf32>
}
"""
NAME = "Model from PaddlePaddle."


def two_results(rows: int | None) -> str:
    """TWO_RESULTS with ``rows`` rows, or a dynamic batch for None."""
    n, dims = ("?", "%n") if rows is None else (str(rows), "")
    return TWO_RESULTS.replace("Nx", n + "x").replace("DIMS", dims)


IDENTITY = """
func.func {vis}@{name}(%x: {t}) -> {t} {attrs}{{
  return %x : {t}
}}
"""


def _added(text: str) -> tuple[list[str], str]:
    ctx = ir.Context()
    module = ir.Module.parse(text, context=ctx)
    names = add_async_entry_points(module)
    return names, str(module)


def test_a_public_function_gets_both_exports_around_one_call_of_its_body() -> None:
    names, text = _added(two_results(16))
    assert names == [NAME]
    assert 'util.func public @"Model from PaddlePaddle.$async"' in text
    assert 'iree.abi.model = "coarse-fences"' in text
    assert 'util.func public @"Model from PaddlePaddle."' in text
    assert ('iree.abi.declaration = "sync func @Model from PaddlePaddle.(%input0: '
            'tensor<16x8xf32>, %input1: tensor<8x4xf32>, %input2: f32) -> '
            '(%output0: tensor<16x4xf32>, %output1: tensor<16x8xf32>)"') in text
    # the body keeps its signature, is private, and is called once (by f$async)
    assert ('func.func private @"Model from PaddlePaddle.$kiln"(%arg0: tensor<16x8xf32>'
            in text)
    assert text.count('call @"Model from PaddlePaddle.$kiln"') == 1
    assert "no_inline" in text


def test_calls_of_the_function_inside_the_module_follow_its_body() -> None:
    src = """
func.func @helper(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = func.call @main(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
"""
    names, text = _added(src)
    assert names == ["helper", "main"]
    assert "call @main$kiln(%arg0)" in text


@pytest.mark.parametrize(
    ("vis", "name", "t", "attrs"),
    [
        ("private ", "helper", "tensor<4xf32>", ""),  # not an entry point
        ("", "main$async", "tensor<4xf32>", ""),  # already asynchronous by name
        ("", "main", "tuple<tensor<4xf32>>", ""),  # not a tensor or a scalar
        ("", "main", "tensor<4xcomplex<f32>>", ""),
        ("", "main", "!stablehlo.token", ""),
        ("", "main", "tensor<*xf32>", ""),  # unranked
        ("", "main", "tensor<4xf64>", ""),  # demoted to f32 on CPU after the stubs
        ("", "main", "tensor<4xi1>", ""),
        ("", "main", "tensor<4xui16>", ""),  # made signless by the input conversion, later
        ("", "main", "tensor<4xsi32>", ""),
        ("", "main", "ui8", ""),
        ("", "main", "i32", ""),  # no tensor to wait for or to signal
    ],
)
def test_functions_a_wrapper_could_change_are_left_alone(
    vis: str, name: str, t: str, attrs: str
) -> None:
    src = IDENTITY.format(vis=vis, name=name, t=t, attrs=attrs)
    names, text = _added(src)
    assert names == [] and "util.func" not in text and "no_inline" not in text


def test_functions_with_iree_abi_attributes_or_an_async_form_are_left_alone() -> None:
    abi = """
func.func @main(%x: tensor<4xf32> {iree.abi.encoding = tensor<4xf32>}) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
"""
    assert _added(abi)[0] == []
    both = IDENTITY.format(vis="", name="f", t="tensor<4xf32>", attrs="") + IDENTITY.format(
        vis="", name='"f$async"', t="tensor<4xf32>", attrs="")
    assert _added(both)[0] == []
    # other argument attributes (a JAX export's, say) do not matter
    jax = """
func.func @main(%x: tensor<4xf32> {jax.arg_info = "x"}) -> (tensor<4xf32> {jax.result_info = ""}) {
  return %x : tensor<4xf32>
}
"""
    assert _added(jax)[0] == ["main"]


def test_functions_without_a_tensor_result_or_argument_keep_one_export() -> None:
    src = """
func.func @a(%x: tensor<4xf32>, %n: i32) {
  return
}
func.func @b(%x: tensor<4xf32>, %i: i32) -> (tensor<4xf32>, tensor<4xf32>, i32) {
  return %x, %x, %i : tensor<4xf32>, tensor<4xf32>, i32
}
func.func @c(%n: i32) -> tensor<4xf32> {
  %c = arith.constant dense<1.0> : tensor<4xf32>
  return %c : tensor<4xf32>
}
"""
    names, text = _added(src)
    assert names == ["b"]
    assert "util.func public @b$async" in text and "@a$async" not in text


def _compile(pipeline: Pipeline, src: str) -> bytes:
    res = pipeline.compile(src.encode(), targets=[CPU], format="mlir")
    assert not res.errors, res.errors
    return res.artifacts[0].data


def test_both_forms_answer_with_the_same_results(pipeline: Pipeline) -> None:
    vmfb = _compile(pipeline, two_results(16))
    polled = load_vmfb(vmfb, driver="local-task")
    blocked = load_vmfb(vmfb, driver="local-task", wait="block")
    assert isinstance(polled._polling(NAME), _polling_invoker_class())
    rng = np.random.default_rng(0)
    w = rng.standard_normal((8, 4)).astype(np.float32)
    for _ in range(3):
        x = rng.standard_normal((16, 8)).astype(np.float32)
        for mod in (polled, blocked):
            r, p = mod[NAME](x, w, 0.5)
            np.testing.assert_allclose(r, (x @ w) * 0.5, rtol=1e-5, atol=1e-5)
            np.testing.assert_array_equal(p, x + 1)


def test_a_dynamic_batch_answers_for_any_size_through_both_forms(pipeline: Pipeline) -> None:
    # results whose dimension comes from one argument: the case two callers of the body broke
    vmfb = _compile(pipeline, two_results(None))
    polled = load_vmfb(vmfb, driver="local-task")
    blocked = load_vmfb(vmfb, driver="local-task", wait="block")
    assert isinstance(polled._polling(NAME), _polling_invoker_class())
    rng = np.random.default_rng(1)
    w = rng.standard_normal((8, 4)).astype(np.float32)
    for n in (1, 5, 33):
        x = rng.standard_normal((n, 8)).astype(np.float32)
        for mod in (polled, blocked):
            r, p = mod[NAME](x, w, 2.0)
            assert r.shape == (n, 4) and p.shape == (n, 8)
            np.testing.assert_allclose(r, (x @ w) * 2.0, rtol=1e-5, atol=1e-5)
            np.testing.assert_array_equal(p, x + 1)


# Shapes of return that go through IREE's calling convention differently: an argument returned
# as it is, one value twice, a constant, and no tensor at all.
ODD_RETURNS = """
func.func @args(%x: tensor<4xf32>, %k: i32) -> (tensor<4xf32>, tensor<4xf32>, i32) {
  return %x, %x, %k : tensor<4xf32>, tensor<4xf32>, i32
}
func.func @const() -> tensor<3xf32> {
  %c = arith.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  return %c : tensor<3xf32>
}
func.func @scalar(%a: f32, %b: f32) -> f32 {
  %s = arith.addf %a, %b : f32
  return %s : f32
}
"""


def test_odd_returns_answer_through_both_forms(pipeline: Pipeline) -> None:
    vmfb = _compile(pipeline, ODD_RETURNS)
    mod = load_vmfb(vmfb, driver="local-task")
    assert isinstance(mod._polling("args"), _polling_invoker_class())
    assert mod._polling("const") is None and mod._polling("scalar") is None
    for wait in ("poll", "block"):
        mod = load_vmfb(vmfb, driver="local-task", wait=wait)
        x = np.arange(4, dtype=np.float32)
        a, b, k = mod.args(x, 7)
        np.testing.assert_array_equal(a, x)
        np.testing.assert_array_equal(b, x)
        assert int(k) == 7
        np.testing.assert_array_equal(mod.const(), [1.0, 2.0, 3.0])
        assert float(mod.scalar(1.5, 2.0)) == 3.5


# Unsigned tensors through StableHLO: IREE's input conversion makes them signless
# after the stubs would be written, so these functions keep their one export and must compile
# and wrap around as unsigned integers do.
UNSIGNED = "\n".join(
    f"""
func.func @add_{t}(%a: tensor<3x5x{t}>, %b: tensor<3x5x{t}>) -> tensor<3x5x{t}> {{
  %0 = stablehlo.add %a, %b : tensor<3x5x{t}>
  return %0 : tensor<3x5x{t}>
}}"""
    for t in ("ui8", "ui16", "ui32", "ui64")
)


def test_unsigned_stablehlo_functions_compile_and_wrap_around(pipeline: Pipeline) -> None:
    vmfb = _compile(pipeline, UNSIGNED)
    mod = load_vmfb(vmfb, driver="local-task")
    for dt in (np.uint8, np.uint16, np.uint32, np.uint64):
        top = np.iinfo(dt).max
        a = np.full((3, 5), top - 2, dt)
        b = np.arange(15, dtype=dt).reshape(3, 5)
        got = mod[f"add_ui{np.iinfo(dt).bits}"](a, b)
        np.testing.assert_array_equal(got, a + b)  # wraps past the top like numpy's
