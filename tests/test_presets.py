"""Presets and graph traits: allow-listed flag sets per target kind, chosen from the graph."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from kiln.client.runtime import load_vmfb
from kiln.compiler.pipeline import Pipeline
from kiln.errors import InvalidRequest
from kiln.targets import normalize_options, parse_target
from kiln.targets.presets import PRESETS, autotune_presets, merge_flags, preset_flags
from tests.graphs import onnx_mlp, onnx_mlp_reference

CPU = "cpu:x86_64:generic"
CONV_ONLY = "--iree-dispatch-creation-experimental-set-data-tiling-ops=convolution"
IM2COL = "--iree-global-opt-use-im2col-for-convs"
# Targets of each x86 ISA level (kiln.targets.cpu.LEVELS), as keyword arguments of preset_flags.
AVX512 = {"arch": "x86_64", "cpu": "skylake-avx512"}
AVX2 = {"arch": "x86_64", "cpu": "haswell"}


def onnx_cnn(*, depthwise: bool = False) -> bytes:
    """conv3x3 (optionally depthwise) -> relu -> global average pool, NCHW 1x4x8x8."""
    rng = np.random.default_rng(1)
    group = 4 if depthwise else 1
    w = rng.standard_normal((4, 4 // group, 3, 3)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], group=group),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("GlobalAveragePool", ["r"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 1, 1])],
        initializer=[numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


LINALG_CONV = """
func.func @main(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<1x4x6x6xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%empty : tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  %c = linalg.conv_2d_nchw_fchw
      {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>)
      outs(%fill : tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  return %c : tensor<1x4x6x6xf32>
}
"""


def test_every_preset_is_an_allowed_option_value() -> None:
    for name in PRESETS:
        normalize_options({"preset": name})
    with pytest.raises(InvalidRequest) as exc:
        normalize_options({"preset": "turbo"})
    assert exc.value.code == "invalid_request"
    assert "default" in exc.value.detail["allowed"]["preset"]


def test_asking_for_the_default_preset_is_the_same_request_as_not_asking() -> None:
    assert normalize_options({"preset": "default"}) == normalize_options(None)
    assert normalize_options({"preset": "size"}).preset == "size"


def test_presets_only_emit_known_iree_flags() -> None:
    for kind in ("cpu", "cuda", "rocm", "vulkan", "metal"):
        for name in PRESETS:
            arch = "gfx942" if kind == "rocm" else ""
            for flag in preset_flags(kind, name, arch=arch, traits={"conv": 1, "matmul": 1}):
                assert flag.startswith("--iree-"), flag


def test_trait_based_choice_for_conv_and_matmul_graphs() -> None:
    conv = preset_flags("cpu", "default", traits={"conv": 3, "matmul": 1}, **AVX512)
    dense = preset_flags("cpu", "default", traits={"matmul": 4, "attention": 2}, **AVX512)
    plain = preset_flags("cpu", "default", traits={})
    # a vision transformer: one patch-embedding convolution among 97 matmuls
    vit = preset_flags("cpu", "default", traits={"conv": 1, "matmul": 97, "attention": 12},
                       **AVX512)
    assert vit == dense
    assert CONV_ONLY in conv and "--iree-opt-data-tiling" in conv
    assert CONV_ONLY not in dense and "--iree-opt-data-tiling" in dense
    assert plain == ()  # nothing to tile: IREE's own defaults
    assert autotune_presets("cpu", {"conv": 1})[0] == "default"
    assert "conv-im2col" in autotune_presets("cpu", {"conv": 1})
    assert "conv-im2col" not in autotune_presets("cpu", {"matmul": 1})


def test_the_isa_level_comes_from_llvms_features_for_the_cpu() -> None:
    from kiln.targets.presets import cpu_level

    assert cpu_level() == "x86-64"  # the portable `cpu` target: LLVM's generic x86-64
    assert cpu_level("x86_64", "x86-64-v2") == cpu_level("x86_64", "nehalem") == "x86-64-v2"
    assert cpu_level("x86_64", "haswell") == cpu_level("x86_64", "znver3") == "avx2"
    assert cpu_level("x86_64", "skylake-avx512") == cpu_level("x86_64", "znver4") == "avx512"
    # explicit features count, the last mention winning as in LLVM
    assert cpu_level("x86_64", "skylake-avx512", ["-avx512f"]) == "avx2"
    assert cpu_level("x86_64", "haswell", ["+avx512f"]) == "avx512"
    assert cpu_level("aarch64", "neoverse-v2") == "aarch64"
    assert cpu_level("riscv64", "generic-rv64") == "riscv64"


def test_below_avx512_a_cnn_defaults_to_im2col() -> None:
    """IREE 3.13 data-tiles convolutions only with AVX-512F: below it the AVX-512 default's
    convolutions ran 7x slower than im2col; at the SSE levels data tiling itself lost to the
    baseline (docs/performance.md, "Defaults per ISA level")."""
    cnn = {"conv": 3}
    avx512 = preset_flags("cpu", "default", traits=cnn, **AVX512)
    assert CONV_ONLY in avx512 and IM2COL not in avx512
    avx2 = preset_flags("cpu", "default", traits=cnn, **AVX2)
    assert avx2 == preset_flags("cpu", "conv-im2col", traits=cnn, **AVX2)
    assert "--iree-opt-data-tiling" in avx2
    # SSE levels, and the unmeasured arches (the choice never slower than the baseline here)
    targets: list[dict[str, str]] = [{"arch": "x86_64", "cpu": "x86-64-v2"}, {},
                                     {"arch": "aarch64"}, {"arch": "riscv64"}]
    for kw in targets:
        flags = preset_flags("cpu", "default", traits=cnn, **kw)
        assert IM2COL in flags and "--iree-opt-data-tiling" not in flags
        dense = preset_flags("cpu", "default", traits={"matmul": 2}, **kw)
        assert dense == ()
    # autotune lists what differs for the target: at AVX2 conv-im2col is the default itself
    assert autotune_presets("cpu", cnn, **AVX2) == (
        "default", "baseline", "conv-tiled", "conv-direct")
    assert "conv-im2col" in autotune_presets("cpu", cnn, **AVX512)


def _host_runs(level: str) -> bool:
    """Whether this machine executes code built for the x86 ``level``."""
    from kiln.client.resolver import detect_cpu
    from kiln.targets.cpu import LEVELS, isa_level

    host = detect_cpu()
    if host.arch != "x86_64":
        return False
    order = [name for name, _ in reversed(LEVELS["x86_64"])]
    return order.index(isa_level("x86_64", host.name, host.features)) >= order.index(level)


@pytest.mark.parametrize(
    ("level", "target"),
    [("x86-64", CPU), ("avx2", "cpu:x86_64:haswell"), ("avx512", "cpu:x86_64:skylake-avx512")],
)
def test_the_default_at_each_isa_level_matches_the_reference(
    pipeline: Pipeline, level: str, target: str
) -> None:
    """A ResNet-style bottleneck (strided 1x1 projection), a MobileNet-style block and an MLP,
    compiled with each level's default and run here when this host executes that level."""
    from onnx.reference import ReferenceEvaluator

    from tests.test_cnn_rewrites import onnx_bottleneck

    if not _host_runs(level):
        pytest.skip(f"this host does not execute {level} code")
    cnn_data, cnn = onnx_bottleneck(batch=1)
    dw_data, dw = onnx_separable(batch=1)
    rng = np.random.default_rng(5)
    for data, model in ((cnn_data, cnn), (dw_data, dw)):
        dims = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
        x = rng.standard_normal(dims).astype(np.float32)
        res = pipeline.compile(data, targets=[target])
        assert not res.errors, res.errors
        art = res.artifacts[0]
        if model is cnn:
            assert (CONV_ONLY in art.flags) == (level == "avx512")
            assert (IM2COL in art.flags) == (level != "avx512")
        y = load_vmfb(art.data, driver="local-task")[res.functions[0]](x)
        ref = ReferenceEvaluator(model).run(None, {"x": x})[0]
        np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)
    res = pipeline.compile(onnx_mlp(), targets=[target])
    x = rng.standard_normal((4, 8)).astype(np.float32)
    y = load_vmfb(res.artifacts[0].data, driver="local-task")["mlp"](x)
    np.testing.assert_allclose(y, onnx_mlp_reference(x), rtol=1e-4, atol=1e-4)


def test_explicit_option_wins_over_the_preset_and_list_flags_survive() -> None:
    with Pipeline(workers=1) as p:
        spec = parse_target(CPU)
        flags = p.flags_for(spec, normalize_options({"opt_level": "O1"}))
        assert flags[: len(spec.flags)] == spec.flags
    preset = preset_flags("cpu", "default", traits={"conv": 1}, **AVX512)
    merged = merge_flags(spec.flags, preset, ("--iree-opt-level=O1",))
    assert [f for f in merged if f.startswith("--iree-opt-level")] == ["--iree-opt-level=O1"]
    tiling = "--iree-dispatch-creation-experimental-set-data-tiling-ops="
    assert sum(f.startswith(tiling) for f in merged) == 3


def test_prepare_counts_convolutions_and_matmuls(pipeline: Pipeline) -> None:
    cnn = pipeline.prepare(onnx_cnn())
    dw = pipeline.prepare(onnx_cnn(depthwise=True))
    mlp = pipeline.prepare(onnx_mlp())
    assert (cnn.traits.conv, cnn.traits.depthwise_conv, cnn.traits.matmul) == (1, 0, 0)
    assert (dw.traits.conv, dw.traits.depthwise_conv) == (1, 1)
    assert (mlp.traits.conv, mlp.traits.matmul) == (0, 2)
    spec = parse_target(CPU)
    opts = normalize_options(None)
    assert IM2COL in pipeline.flags_for(spec, opts, graph=cnn)
    assert CONV_ONLY in pipeline.flags_for(parse_target("cpu:x86_64:skylake-avx512"), opts,
                                           graph=cnn)
    assert CONV_ONLY not in pipeline.flags_for(spec, opts, graph=mlp)
    # the portable target's SSE level gets no data tiling; AVX2 does
    assert "--iree-opt-data-tiling" not in pipeline.flags_for(spec, opts, graph=mlp)
    assert "--iree-opt-data-tiling" in pipeline.flags_for(parse_target("cpu:x86_64:haswell"),
                                                          opts, graph=mlp)


def test_linalg_traits(pipeline: Pipeline) -> None:
    from tests.graphs import LINALG

    g = pipeline.prepare(LINALG.encode())
    assert (g.traits.conv, g.traits.matmul) == (0, 1)


def test_a_preset_change_changes_the_cache_key_and_the_executable_runs(tmp_path: Path) -> None:
    from kiln.cache import open_cache

    data = LINALG_CONV.encode()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 4, 8, 8)).astype(np.float32)
    w = rng.standard_normal((4, 4, 3, 3)).astype(np.float32)
    with open_cache(cache_dir=tmp_path / "c") as cache, Pipeline(workers=1, cache=cache) as p:
        default = p.compile(data, targets=[CPU]).artifacts[0]
        again = p.compile(data, targets=[CPU], options={"preset": "default"}).artifacts[0]
        base = p.compile(data, targets=[CPU], options={"preset": "baseline"}).artifacts[0]
        assert again.key == default.key and again.cached
        assert base.key != default.key and not base.cached
        assert IM2COL in default.flags and IM2COL not in base.flags
        outs = [
            load_vmfb(cache.read_blob(a.digest), driver="local-task")["main"](x, w)
            for a in (default, base)
        ]
        np.testing.assert_allclose(outs[0], outs[1], rtol=1e-4, atol=1e-4)


def test_tuned_default_keeps_matmul_results_right(pipeline: Pipeline) -> None:
    if not _host_runs("avx2"):
        pytest.skip("this host does not execute AVX2 code")
    res = pipeline.compile(onnx_mlp(), targets=["cpu:x86_64:haswell"])
    art = res.artifacts[0]
    assert "--iree-opt-data-tiling" in art.flags
    x = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
    y = load_vmfb(art.data, driver="local-task")["mlp"](x)
    np.testing.assert_allclose(y, onnx_mlp_reference(x), rtol=1e-4, atol=1e-4)


# -- depthwise convolutions: Kiln's channels-last rewrite ----------------------------------------


def onnx_separable(batch: int = 2) -> tuple[bytes, onnx.ModelProto]:
    """A MobileNet-style block: 1x1 expand, depthwise 3x3 (stride 1), Clip, depthwise 3x3
    (stride 2, no padding on one side), 1x1 project. NCHW, batch 2, odd spatial size."""
    rng = np.random.default_rng(3)
    cin, hidden, cout = 3, 12, 5

    def t(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.5).astype(np.float32)

    inits = {
        "w1": t(hidden, cin, 1, 1), "b1": t(hidden),
        "dw1": t(hidden, 1, 3, 3), "db1": t(hidden),
        "dw2": t(hidden, 1, 3, 3), "db2": t(hidden),
        "w2": t(cout, hidden, 1, 1), "b2": t(cout),
        "lo": np.array(0.0, np.float32), "hi": np.array(6.0, np.float32),
    }  # fmt: skip
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["e"]),
        helper.make_node("Conv", ["e", "dw1", "db1"], ["d1"], pads=[1, 1, 1, 1], group=hidden),
        helper.make_node("Clip", ["d1", "lo", "hi"], ["r1"]),
        helper.make_node(
            "Conv", ["r1", "dw2", "db2"], ["d2"], pads=[0, 0, 1, 1], strides=[2, 2], group=hidden
        ),
        helper.make_node("Conv", ["d2", "w2", "b2"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "separable",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, cin, 11, 11])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, cout, 5, 5])],
        initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model.SerializeToString(), model


def test_preset_rewrites_by_graph_class_and_target() -> None:
    from kiln.targets.presets import model_class, preset_rewrites

    dw = {"conv": 3, "depthwise_conv": 1}
    assert model_class(dw) == "depthwise-cnn"
    assert preset_rewrites("cpu", "default", traits=dw, **AVX512) == ("depthwise-nhwc",)
    assert preset_rewrites("cpu", "conv-direct", traits=dw) == ("depthwise-nhwc",)
    for preset in ("baseline", "fast-compile", "size", "conv-im2col"):
        assert preset_rewrites("cpu", preset, traits=dw) == ()
    # A plain CNN with data-tiled convolutions on CPU gets the rewrites after global optimization
    # and the tile sizes of its narrow convolutions.
    cnn = {"conv": 3}
    for preset in ("default", "conv-tiled"):
        assert preset_rewrites("cpu", preset, traits=cnn, **AVX512) == (
            "pool-nhwc", "stem-s2d", "conv1x1-matmul", "conv-narrow-tiles")
    for preset in ("baseline", "fast-compile", "size", "conv-im2col", "conv-direct"):
        assert preset_rewrites("cpu", preset, traits=cnn, **AVX512) == ()
    # Below AVX-512 the default CNN lowering is im2col: no data-tiled convolutions to rewrite.
    assert preset_rewrites("cpu", "default", traits=cnn, **AVX2) == ()
    assert preset_rewrites("cpu", "conv-tiled", traits=cnn, **AVX2) == preset_rewrites(
        "cpu", "conv-tiled", traits=cnn, **AVX512)
    assert preset_rewrites("cpu", "default", traits={"matmul": 2}) == ()
    for kind in ("cuda", "rocm", "metal"):
        assert preset_rewrites(kind, "default", traits=dw) == ()
        assert preset_rewrites(kind, "default", traits=cnn) == ()
    # Vulkan: the rewrite is a correctness fix there (generic profile), for every tuned preset.
    assert preset_rewrites("vulkan", "default", traits=dw) == ("depthwise-nhwc",)
    assert preset_rewrites("vulkan", "size", traits=dw) == ("depthwise-nhwc",)
    assert preset_rewrites("vulkan", "baseline", traits=dw) == ()
    assert preset_rewrites("vulkan", "default", traits={"conv": 3}) == ()
    # A depthwise CNN compiles its convolutions direct (channels-last, no conv data tiling);
    # a plain CNN keeps data-tiled convolutions.
    assert CONV_ONLY not in preset_flags("cpu", "default", traits=dw, **AVX512)
    assert CONV_ONLY in preset_flags("cpu", "default", traits={"conv": 3}, **AVX512)
    with pytest.raises(KeyError):
        preset_rewrites("cpu", "turbo")


def test_depthwise_rewrite_on_linalg() -> None:
    from iree.compiler import ir

    from kiln.lowering.rewrites import apply_rewrites

    static = """
    func.func @f(%x: tensor<2x8x9x9xf32>, %w: tensor<8x3x3xf32>, %o: tensor<2x8x4x4xf32>)
        -> tensor<2x8x4x4xf32> {
      %r = linalg.depthwise_conv_2d_nchw_chw
          {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>}
          ins(%x, %w : tensor<2x8x9x9xf32>, tensor<8x3x3xf32>)
          outs(%o : tensor<2x8x4x4xf32>) -> tensor<2x8x4x4xf32>
      return %r : tensor<2x8x4x4xf32>
    }"""
    dynamic = static.replace("tensor<2x8x9x9xf32>", "tensor<?x8x9x9xf32>").replace(
        "tensor<2x8x4x4xf32>", "tensor<?x8x4x4xf32>"
    )
    ctx = ir.Context()
    m = ir.Module.parse(static, context=ctx)
    assert apply_rewrites(m, ["depthwise-nhwc"]) == 1
    m.operation.verify()
    text = str(m)
    assert "depthwise_conv_2d_nchw_chw" not in text
    assert "linalg.depthwise_conv_2d_nhwc_hwc" in text and "strides = dense<2>" in text
    d = ir.Module.parse(dynamic, context=ctx)
    assert apply_rewrites(d, ["depthwise-nhwc"]) == 0  # dynamic shapes are left alone
    assert "depthwise_conv_2d_nchw_chw" in str(d)


@pytest.mark.parametrize("engine", ["session", "cli"])
def test_depthwise_graph_runs_channels_last_and_matches_the_reference(
    engine: str, tmp_path: Path
) -> None:
    from onnx.reference import ReferenceEvaluator

    from kiln.cache import open_cache

    data, model = onnx_separable()
    x = np.random.default_rng(4).standard_normal((2, 3, 11, 11)).astype(np.float32)
    ref = ReferenceEvaluator(model).run(None, {"x": x})[0]
    with open_cache(cache_dir=tmp_path / "c") as cache, Pipeline(
        workers=1, cache=cache, engine=engine
    ) as p:
        tuned = p.compile(data, targets=[CPU]).artifacts[0]
        base = p.compile(data, targets=[CPU], options={"preset": "baseline"}).artifacts[0]
        again = p.compile(data, targets=[CPU]).artifacts[0]
        assert tuned.rewrites == ("depthwise-nhwc",) and base.rewrites == ()
        assert tuned.key != base.key
        assert again.cached and again.rewrites == ("depthwise-nhwc",)
        assert tuned.to_json()["rewrites"] == ["depthwise-nhwc"]
        for art in (tuned, base):
            y = load_vmfb(cache.read_blob(art.digest), driver="local-task")["separable"](x)
            np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)


def test_both_engines_build_the_same_bytes_with_the_rewrite() -> None:
    data, _ = onnx_separable(batch=1)
    digests = []
    for engine in ("session", "cli"):
        with Pipeline(workers=1, engine=engine) as p:
            art = p.compile(data, targets=[CPU]).artifacts[0]
            assert art.rewrites == ("depthwise-nhwc",)
            digests.append(art.digest)
    assert digests[0] == digests[1]


# Depthwise convolutions arriving in other dialects: torch (NCHW, rewritten) and TOSA (NHWC
# already: the rewrite finds nothing to do), checked against numpy.
TORCH_DW = """
func.func @main(%x: !torch.vtensor<[2,6,9,9],f32>, %w: !torch.vtensor<[6,1,3,3],f32>) -> !torch.vtensor<[2,6,5,5],f32> {
  %none = torch.constant.none
  %false = torch.constant.bool false
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %int2 = torch.constant.int 2
  %int6 = torch.constant.int 6
  %stride = torch.prim.ListConstruct %int2, %int2 : (!torch.int, !torch.int) -> !torch.list<int>
  %pad = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %dil = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %opad = torch.prim.ListConstruct %int0, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  %r = torch.aten.convolution %x, %w, %none, %stride, %pad, %dil, %false, %opad, %int6 : !torch.vtensor<[2,6,9,9],f32>, !torch.vtensor<[6,1,3,3],f32>, !torch.none, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int -> !torch.vtensor<[2,6,5,5],f32>
  return %r : !torch.vtensor<[2,6,5,5],f32>
}
"""
TOSA_DW = """
func.func @main(%x: tensor<1x10x10x8xf32>, %w: tensor<3x3x8x1xf32>) -> tensor<1x8x8x8xf32> {
  %b = "tosa.const"() <{values = dense<0.0> : tensor<8xf32>}> : () -> tensor<8xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %r = "tosa.depthwise_conv2d"(%x, %w, %b, %zp, %zp) <{acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>}> : (tensor<1x10x10x8xf32>, tensor<3x3x8x1xf32>, tensor<8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x8x8xf32>
  return %r : tensor<1x8x8x8xf32>
}
"""



def _depthwise_ref(x: np.ndarray, w: np.ndarray, stride: int, pad: int) -> np.ndarray:
    """NCHW depthwise 3x3: x [N,C,H,W], w [C,3,3]."""
    n, c, h, wd = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - 3) // stride + 1, (wd + 2 * pad - 3) // stride + 1
    out = np.zeros((n, c, oh, ow), np.float64)
    for i in range(3):
        for j in range(3):
            win = xp[:, :, i : i + stride * oh : stride, j : j + stride * ow : stride]
            out += win * w[None, :, i, j, None, None]
    return out.astype(np.float32)


@pytest.mark.parametrize("dialect", ["torch", "tosa"])
def test_depthwise_in_other_dialects_matches_numpy(pipeline: Pipeline, dialect: str) -> None:
    rng = np.random.default_rng(5)
    if dialect == "torch":
        src, x, w = TORCH_DW, rng.standard_normal((2, 6, 9, 9)), rng.standard_normal((6, 1, 3, 3))
        ref = _depthwise_ref(x, w[:, 0], 2, 1)
    else:
        src, x, w = TOSA_DW, rng.standard_normal((1, 10, 10, 8)), rng.standard_normal((3, 3, 8, 1))
        nchw = _depthwise_ref(x.transpose(0, 3, 1, 2), w[:, :, :, 0].transpose(2, 0, 1), 1, 0)
        ref = nchw.transpose(0, 2, 3, 1)
    x, w = x.astype(np.float32), w.astype(np.float32)
    res = pipeline.compile(src.encode(), targets=[CPU])
    assert not res.errors, res.errors
    art = res.artifacts[0]
    assert art.rewrites == ("depthwise-nhwc",)  # chosen from the traits, whatever the dialect
    y = load_vmfb(art.data, driver="local-task")["main"](x, w)
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)


def test_a_default_that_does_not_compile_falls_back_to_irees_own_defaults(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Kiln's tuned flags must never make a graph fail that IREE's defaults compile (the zoo's
    # RegNet at x86-64-v2 did). Here the dense set for AVX2 is broken on purpose.
    from kiln.targets import presets

    broken = "--iree-input-type=kiln-bogus"  # the compiler refuses it: exit 1
    monkeypatch.setitem(presets._DENSE_LOWERINGS, "O3", (*presets._CPU_DENSE, broken))
    x = np.random.default_rng(3).standard_normal((4, 8)).astype(np.float32)
    with Pipeline(workers=1) as p:
        res = p.compile(onnx_mlp(), targets=["cpu:x86_64:haswell"])
        assert not res.errors, res.errors
        art = res.artifacts[0]
        assert broken not in art.flags and "--iree-opt-data-tiling" not in art.flags
        assert any("IREE's own defaults (preset baseline)" in w and "kiln-bogus" in w
                   for w in art.warnings), art.warnings
        y = load_vmfb(art.data, driver="local-task")["mlp"](x)
        np.testing.assert_allclose(y, onnx_mlp_reference(x), rtol=1e-4, atol=1e-4)
        # the same answer again (the failure is remembered, the fallback is not a new error)
        again = p.compile(onnx_mlp(), targets=["cpu:x86_64:haswell"])
        assert not again.errors and again.artifacts[0].digest == art.digest
        # a preset asked for by name is not replaced: its failure is the answer
        monkeypatch.setitem(presets._CONV_LOWERINGS, "direct", (broken,))
        named = p.compile(onnx_cnn(), targets=["cpu:x86_64:haswell"],
                          options={"preset": "conv-direct"})
        assert named.errors and named.errors[0].error.code == "compile_failed"
