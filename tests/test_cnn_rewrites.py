"""Kiln's rewrites after IREE's global optimization (``pool-nhwc``, ``stem-s2d``,
``conv1x1-matmul``) on plain CNNs:
the graphs they match still compute the reference results, both compile engines build the same
bytes, and graphs they must not touch are left alone."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from kiln.client.runtime import load_vmfb
from kiln.compiler.pipeline import Pipeline
from kiln.targets import normalize_options, parse_target
from tests.graphs import onnx_model

CPU = "cpu:x86_64:generic"
REWRITES = ("pool-nhwc", "stem-s2d", "conv1x1-matmul", "conv-narrow-tiles")
# The rewrites come with data-tiled convolutions: the CPU default at the avx512 level, and
# conv-tiled at every level (the portable target here, so the tests run on any x86_64 host).
TILED = {"preset": "conv-tiled"}


def onnx_stem_cnn(
    *,
    size: int = 32,
    kernel: int = 7,
    stride: int = 2,
    channels: int = 3,
    pool: str = "MaxPool",
    pool_output: bool = False,
    batch: int = 1,
    pool_attrs: dict[str, Any] | None = None,
) -> tuple[bytes, onnx.ModelProto]:
    """ResNet's first stage, small: conv KxK/stride (pad K//2) -> relu -> 3x3/2 pool (pad 1) ->
    conv 3x3 + residual -> relu -> global average pool -> linear. With ``pool_output`` the pool's
    result is a second graph output (channels-first), besides feeding the next convolution."""
    rng = np.random.default_rng(7)
    f = 8
    inits = {
        "w1": rng.standard_normal((f, channels, kernel, kernel)).astype(np.float32) * 0.2,
        "b1": rng.standard_normal(f).astype(np.float32) * 0.1,
        "w2": rng.standard_normal((f, f, 3, 3)).astype(np.float32) * 0.2,
        "b2": rng.standard_normal(f).astype(np.float32) * 0.1,
        "wl": rng.standard_normal((f, 5)).astype(np.float32),
        "bl": rng.standard_normal(5).astype(np.float32),
    }
    pool_attrs = dict(pool_attrs or {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1] * 4})
    if pool == "AveragePool":
        pool_attrs["count_include_pad"] = 1
    p = kernel // 2
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[p] * 4, strides=[stride] * 2),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node(pool, ["r1"], ["p"], **pool_attrs),
        helper.make_node("Conv", ["p", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c2", "p"], ["s"]),
        helper.make_node("Relu", ["s"], ["r2"]),
        helper.make_node("GlobalAveragePool", ["r2"], ["g"]),
        helper.make_node("Flatten", ["g"], ["fl"], axis=1),
        helper.make_node("Gemm", ["fl", "wl", "bl"], ["y"]),
    ]
    c1 = (size + 2 * p - kernel) // stride + 1
    pk, ps_, pp = pool_attrs["kernel_shape"][0], pool_attrs["strides"][0], pool_attrs["pads"][0]
    pd = pool_attrs.get("dilations", [1])[0]
    ps = (c1 + 2 * pp - pd * (pk - 1) - 1) // ps_ + 1
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 5])]
    if pool_output:
        outputs.append(helper.make_tensor_value_info("p", TensorProto.FLOAT, [batch, f, ps, ps]))
    return onnx_model(
        "stem_cnn",
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, channels, size, size])],
        outputs,
        inits,
    )


def onnx_bottleneck(*, size: int = 16, batch: int = 1) -> tuple[bytes, onnx.ModelProto]:
    """Two ResNet-50-style bottleneck blocks: one with an identity shortcut (1x1 16 -> 8, 3x3,
    1x1 8 -> 16, add, relu), then one that downsamples: 1x1 (16 -> 8) -> 3x3 stride 2 -> 1x1
    (8 -> 32), plus a strided 1x1 projection (16 -> 32) of the first block's output; add, relu,
    global average pool."""
    rng = np.random.default_rng(11)

    def w(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.3).astype(np.float32)

    inits = {"w0": w(8, 16, 1, 1), "b0": w(8), "w1": w(8, 8, 3, 3), "b1": w(8),
             "w2": w(16, 8, 1, 1), "b2": w(16),
             "wa": w(8, 16, 1, 1), "ba": w(8), "wb": w(8, 8, 3, 3), "bb": w(8),
             "wc": w(32, 8, 1, 1), "bc": w(32), "wp": w(32, 16, 1, 1), "bp": w(32)}
    nodes = [
        helper.make_node("Conv", ["x", "w0", "b0"], ["h0"]),
        helper.make_node("Relu", ["h0"], ["r0"]),
        helper.make_node("Conv", ["r0", "w1", "b1"], ["h1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["h1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["h2"]),
        helper.make_node("Add", ["h2", "x"], ["s0"]),
        helper.make_node("Relu", ["s0"], ["x1"]),
        helper.make_node("Conv", ["x1", "wa", "ba"], ["a"]),
        helper.make_node("Relu", ["a"], ["ra"]),
        helper.make_node("Conv", ["ra", "wb", "bb"], ["b"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["b"], ["rb"]),
        helper.make_node("Conv", ["rb", "wc", "bc"], ["c"]),
        helper.make_node("Conv", ["x1", "wp", "bp"], ["p"], strides=[2, 2]),
        helper.make_node("Add", ["c", "p"], ["s"]),
        helper.make_node("Relu", ["s"], ["r"]),
        helper.make_node("GlobalAveragePool", ["r"], ["y"]),
    ]
    return onnx_model(
        "bottleneck",
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 16, size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 32, 1, 1])],
        inits,
    )


def _check_against_reference(
    pipeline: Pipeline,
    data: bytes,
    model: onnx.ModelProto,
    *,
    options: dict[str, Any] | None = None,
) -> Any:
    inp = model.graph.input[0].type.tensor_type.shape.dim
    x = np.random.default_rng(3).standard_normal([d.dim_value for d in inp]).astype(np.float32)
    refs = ReferenceEvaluator(model).run(None, {"x": x})
    res = pipeline.compile(data, targets=[CPU], options=options)
    assert not res.errors, res.errors
    art = res.artifacts[0]
    got = load_vmfb(art.data, driver="local-task")[res.functions[0]](x)
    got = got if isinstance(got, (list, tuple)) else [got]
    assert len(got) == len(refs)
    for g, r in zip(got, refs, strict=True):
        np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-4)
    return art


@pytest.mark.parametrize(
    "kw",
    [
        {},  # 7x7/2 stem + 3x3/2 max pool: both rewrites apply
        {"pool": "AveragePool"},  # a sum window (then a division by 9)
        {"pool_output": True},  # the pool's channels-first result is also a graph output
        {"batch": 2},
        {"pool_attrs": {"kernel_shape": [2, 2], "strides": [2, 2], "pads": [0] * 4}},
        {"pool_attrs": {"kernel_shape": [3, 3], "strides": [1, 1], "pads": [2] * 4,
                        "dilations": [2, 2]}},
        {"channels": 1},  # grayscale: 4 channels after space to depth, nothing padded
        {"channels": 5},  # padded to 8 channels: 32 after space to depth
        {"channels": 8},  # already a power of two
    ],
    ids=["maxpool", "avgpool", "pool-is-an-output", "batch2", "pool2x2", "dilated-pool",
         "1-channel", "5-channels", "8-channels"],
)
def test_rewritten_cnn_matches_the_reference(pipeline: Pipeline, kw: dict[str, Any]) -> None:
    data, model = onnx_stem_cnn(**kw)
    art = _check_against_reference(pipeline, data, model, options=TILED)
    assert art.rewrites == REWRITES
    base = _check_against_reference(pipeline, data, model, options={"preset": "baseline"})
    assert base.rewrites == () and base.key != art.key


@pytest.mark.parametrize(
    "kw",
    [
        {"stride": 1},  # stride 1: no space-to-depth
        {"kernel": 3},  # a small kernel: left to the data-tiled convolution
        {"size": 33},  # odd padded size: not rewritten
        {"channels": 16},  # many input channels: not a stem
    ],
    ids=["stride1", "kernel3", "odd-size", "16-channels"],
)
def test_graphs_the_stem_rewrite_does_not_match_still_compile_right(
    pipeline: Pipeline, kw: dict[str, Any]
) -> None:
    data, model = onnx_stem_cnn(**kw)
    art = _check_against_reference(pipeline, data, model, options=TILED)
    assert art.rewrites == REWRITES  # chosen from the graph class; matching is per op


def _at_global_optimization(pipeline: Pipeline, data: bytes, tmp_path: Any) -> tuple[Any, Any]:
    """The graph after IREE's global optimization with the conv-tiled flags, parsed in a
    compiler session's context: (session, module). Staged by the native ``iree-compile`` (the
    data-tiling op-set flag is a global option the session API does not take)."""
    import subprocess

    from iree.compiler import ir
    from iree.compiler.api import Session

    from kiln.compiler.tasks import cli_command

    graph = pipeline.prepare(data)
    flags = pipeline.flags_for(parse_target(CPU), normalize_options(TILED), graph=graph)
    (tmp_path / "in.mlir").write_text(graph.mlir)
    cmd = cli_command(list(flags))[:-3] + [
        "--compile-to=global-optimization", "--emit-mlir-bytecode", "in.mlir", "-o", "go.mlirbc"]
    subprocess.run(cmd, cwd=tmp_path, check=True, capture_output=True)
    session = Session()
    return session, ir.Module.parse((tmp_path / "go.mlirbc").read_bytes(), context=session.context)


def _window_reductions(module: Any) -> int:
    """Generics with reduction loops whose body combines with max (the pooling, before)."""
    from iree.compiler import ir

    found = []

    def visit(op: Any) -> Any:
        if op.name == "linalg.generic":
            iters = [str(a) for a in ir.ArrayAttr(op.attributes["iterator_types"])]
            body = [o.operation.name for o in op.regions[0].blocks[0].operations]
            if "#linalg.iterator_type<reduction>" in iters and "arith.maximumf" in body:
                found.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return len(found)


def test_each_rewrite_matches_its_op_once(pipeline: Pipeline, tmp_path: Any) -> None:
    from kiln.lowering.cnn import pool_nhwc, stem_space_to_depth

    data, _ = onnx_stem_cnn()
    session, module = _at_global_optimization(pipeline, data, tmp_path)
    with module.context:
        assert _window_reductions(module) == 1
        assert pool_nhwc(module) == 1
        assert _window_reductions(module) == 0
        assert stem_space_to_depth(module) == 1
        module.operation.verify()
        text = str(module)
        # 32x32 input, 7x7 stem padded by 3: 38x38x3, its channels zero-padded to 4 (whole
        # vector blocks after space to depth) -> 19x19x16; the 7x7 kernel -> 8x8x4 -> 4x4x16.
        assert "tensor<38x38x4xf32>" in text and "tensor<19x19x16xf32>" in text
        assert "tensor<8x8x4x8xf32>" in text and "tensor<4x4x16x8xf32>" in text
        assert "tensor<19x19x12xf32>" not in text
        assert pool_nhwc(module) == 0 and stem_space_to_depth(module) == 0  # nothing left
    del module
    session.close()


def test_both_engines_build_the_same_bytes_with_the_cnn_rewrites() -> None:
    data, _ = onnx_stem_cnn()
    digests = []
    for engine in ("session", "cli"):
        with Pipeline(workers=1, engine=engine) as p:
            art = p.compile(data, targets=[CPU], options=TILED).artifacts[0]
            assert art.rewrites == REWRITES
            digests.append(art.digest)
    assert digests[0] == digests[1]


@pytest.mark.parametrize(
    "kw", [{"stride": 1}, {"kernel": 3}, {"size": 33}, {"channels": 16}],
    ids=["stride1", "kernel3", "odd-size", "16-channels"],
)
def test_the_stem_rewrite_leaves_other_convolutions_alone(
    pipeline: Pipeline, tmp_path: Any, kw: dict[str, Any]
) -> None:
    from kiln.lowering.cnn import pool_nhwc, stem_space_to_depth

    data, _ = onnx_stem_cnn(**kw)
    session, module = _at_global_optimization(pipeline, data, tmp_path)
    with module.context:
        assert stem_space_to_depth(module) == 0
        assert pool_nhwc(module) == 1
        module.operation.verify()
    del module
    session.close()


@pytest.mark.parametrize("batch", [1, 2])
def test_bottleneck_with_strided_projection_matches_the_reference(
    pipeline: Pipeline, batch: int
) -> None:
    data, model = onnx_bottleneck(batch=batch)
    art = _check_against_reference(pipeline, data, model, options=TILED)
    assert art.rewrites == REWRITES


def test_every_1x1_convolution_becomes_a_matmul(pipeline: Pipeline, tmp_path: Any) -> None:
    from kiln.lowering.cnn import conv1x1_to_matmul

    data, _ = onnx_bottleneck()
    session, module = _at_global_optimization(pipeline, data, tmp_path)
    with module.context:
        # first block: reduce, expand; second: reduce, expand and the strided projection
        assert conv1x1_to_matmul(module) == 5
        module.operation.verify()
        assert conv1x1_to_matmul(module) == 0
    del module
    session.close()


@pytest.mark.parametrize("engine", ["session", "cli"])
def test_a_failing_rewrite_is_a_clean_compile_error(
    engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kiln.compiler.tasks import compile_module
    from kiln.errors import CompileError
    from kiln.lowering import rewrites as layout

    def boom(module: Any) -> int:
        raise RuntimeError("rewrite bug")

    monkeypatch.setitem(layout.REWRITES, "boom", layout.Rewrite("global-optimization", boom))
    mlir = """
    func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
      %0 = arith.addf %a, %a : tensor<4xf32>
      return %0 : tensor<4xf32>
    }"""
    flags = list(parse_target(CPU).flags)
    with pytest.raises(CompileError) as info:
        compile_module(mlir=mlir, flags=flags, engine=engine, rewrites=["boom"])
    assert info.value.code == "compile_failed"
    assert "rewrite (boom) after IREE's global-optimization phase failed" in str(info.value)
    assert "rewrite bug" in str(info.value) and "preset=baseline" in str(info.value)
    # the same process compiles and runs the next graph normally
    out = compile_module(mlir=mlir, flags=flags, engine=engine)
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(load_vmfb(out.data, driver="local-task").main(x), 2 * x)
