"""Kiln's rewrite of IREE's executable configurations (``conv-narrow-tiles``): data-tiled
convolutions on narrow images get a vector tile of the image's width and a distribution tile of
all its rows; everything else keeps IREE's configuration, and results stay right."""

from __future__ import annotations

import re
import subprocess
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from kiln.client.resolver import detect_cpu
from kiln.client.runtime import load_vmfb
from kiln.compiler.pipeline import Pipeline
from kiln.targets import normalize_options, parse_target
from tests.graphs import onnx_model

# An AVX-512 CPU: IREE 3.13 data-tiles convolutions for it (16 columns x 16 channels a vector
# tile); compiled here, not run, so any machine checks the configurations.
AVX512 = "cpu:x86_64:skylake-avx512"
_CONV_CONFIG = re.compile(
    r"lowering_config<distribution = \[([0-9, ]*)\], vector_common_parallel = \[([0-9, ]*)\], "
    r"vector_reduction = \[[0-9, ]*\]>"
)


def last_stage(
    *, size: int = 4, channels: int = 32, batch: int = 1
) -> tuple[bytes, onnx.ModelProto]:
    """A ResNet's last stage, small: conv 3x3 + bias -> relu -> + input, then a 3x3 stride-2
    convolution to twice the channels."""
    rng = np.random.default_rng(5)
    c = channels

    def w(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.1).astype(np.float32)

    inits = {"w1": w(c, c, 3, 3), "b1": w(c), "w2": w(2 * c, c, 3, 3), "b2": w(2 * c)}
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["h"], pads=[1] * 4),
        helper.make_node("Relu", ["h"], ["r"]),
        helper.make_node("Add", ["r", "x"], ["s"]),
        helper.make_node("Conv", ["s", "w2", "b2"], ["y"], pads=[1] * 4, strides=[2, 2]),
    ]
    out = (size + 1) // 2
    return onnx_model(
        "last_stage",
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, c, size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 2 * c, out, out])],
        inits,
    )


def _at_executable_configurations(
    pipeline: Pipeline, data: bytes, target: str, tmp_path: Any
) -> tuple[Any, Any]:
    """The graph after IREE's executable configurations with the default flags for ``target``,
    parsed in a compiler session's context: (session, module)."""
    from iree.compiler import ir
    from iree.compiler.api import Session

    from kiln.compiler.tasks import cli_command

    graph = pipeline.prepare(data)
    flags = pipeline.flags_for(parse_target(target), normalize_options({}), graph=graph)
    (tmp_path / "in.mlir").write_text(graph.mlir)
    cmd = cli_command(list(flags))[:-3] + [
        "--compile-to=executable-configurations", "--emit-mlir-bytecode", "in.mlir",
        "-o", "ec.mlirbc"]
    subprocess.run(cmd, cwd=tmp_path, check=True, capture_output=True)
    session = Session()
    return session, ir.Module.parse((tmp_path / "ec.mlirbc").read_bytes(), context=session.context)


def _conv_configs(module: Any) -> list[tuple[list[int], list[int]]]:
    """(distribution, vector tile) of every op configured like a data-tiled convolution."""
    from kiln.lowering.linalg import ops_named

    found = []
    for op in ops_named(module, "linalg.generic"):
        if "lowering_config" in op.attributes:
            m = _CONV_CONFIG.search(str(op.attributes["lowering_config"]))
            if m and len(m[1].split(",")) == 9:
                found.append(([int(v) for v in m[1].split(",")], [int(v) for v in m[2].split(",")]))
    return found


@pytest.mark.parametrize("size", [7, 8])
def test_narrow_convolutions_get_a_tile_of_their_width(
    pipeline: Pipeline, tmp_path: Any, size: int
) -> None:
    from kiln.lowering.tiles import conv_narrow_tiles

    data, _ = last_stage(size=size)
    session, module = _at_executable_configurations(pipeline, data, AVX512, tmp_path)
    with module.context:
        before = _conv_configs(module)
        # Both convolutions data-tiled: 16 columns a vector tile, a row or two a workgroup.
        assert len(before) == 2
        assert all(p[3] == 16 and d[2] <= 2 for d, p in before)
        assert conv_narrow_tiles(module) == len(before)
        module.operation.verify()
        after = _conv_configs(module)
        assert len(after) == len(before)
        for d, p in after:
            # The vector tile is the image's width, and a workgroup takes all its rows (square
            # images: the same number).
            assert p[3] in (size, (size + 1) // 2) and d[2] == p[3]
        # The fused ops' tiles follow (no 16-column tile is left in those dispatches).
        assert "vector_common_parallel = [1, 1, 1, 16, 16]" not in str(module)
        assert "vector_common_parallel = [1, 1, 1, 16, 0, 0, 0, 16, 0]" not in str(module)
        assert conv_narrow_tiles(module) == 0  # nothing left to retile
    del module
    session.close()


def test_wide_convolutions_keep_iree_tiles(pipeline: Pipeline, tmp_path: Any) -> None:
    from kiln.lowering.tiles import conv_narrow_tiles

    data, _ = last_stage(size=24, channels=16)  # 24 and 12 columns: more than half a tile
    session, module = _at_executable_configurations(pipeline, data, AVX512, tmp_path)
    with module.context:
        before = str(module)
        assert len(_conv_configs(module)) == 2
        assert conv_narrow_tiles(module) == 0
        assert str(module) == before
    del module
    session.close()


def test_other_configurations_are_left_alone(pipeline: Pipeline, tmp_path: Any) -> None:
    """Without convolution data tiling (AVX2 in IREE 3.13) convolutions are direct, configured
    in another form: nothing matches."""
    from kiln.lowering.tiles import conv_narrow_tiles

    data, _ = last_stage(size=4)
    session, module = _at_executable_configurations(pipeline, data, "cpu:x86_64:znver3", tmp_path)
    with module.context:
        before = str(module)
        assert conv_narrow_tiles(module) == 0
        assert str(module) == before
    del module
    session.close()


def _host_avx512() -> bool:
    try:
        with open("/proc/cpuinfo") as f:
            return " avx512f" in f.read()
    except OSError:
        return False


@pytest.mark.skipif(not _host_avx512(), reason="runs AVX-512 code: this CPU has no avx512f")
@pytest.mark.parametrize(("size", "batch"), [(7, 1), (4, 2)])
def test_retiled_convolutions_match_the_reference(size: int, batch: int) -> None:
    data, model = last_stage(size=size, batch=batch)
    x = np.random.default_rng(2).standard_normal((batch, 32, size, size)).astype(np.float32)
    (want,) = ReferenceEvaluator(model).run(None, {"x": x})
    with Pipeline(workers=1) as p:
        res = p.compile(data, targets=[detect_cpu().target])
    assert not res.errors, res.errors
    art = res.artifacts[0]
    assert "conv-narrow-tiles" in art.rewrites
    got = load_vmfb(art.data, driver="local-task")["last_stage"](x)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
