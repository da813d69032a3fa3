"""Known compiler crashers and bad graphs answer clean errors; the caller keeps running."""

from __future__ import annotations

from pathlib import Path

import pytest

from kiln.compiler.pipeline import Pipeline
from kiln.compiler.tasks import CompileJob
from kiln.errors import CompileError, InvalidGraph, UnsupportedTarget
from tests.graphs import onnx_external_data, onnx_mlp

NOTES = Path(__file__).resolve().parents[2] / "shared" / "iree-notes"
ADD = b"func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> { return %a : tensor<4xf32> }"


def test_unregistered_op_is_invalid_graph_with_diagnostics(pipeline: Pipeline) -> None:
    src = b'func.func @main() {\n  "foo.bar"() : () -> ()\n  return\n}\n'
    with pytest.raises(InvalidGraph) as info:
        pipeline.compile(src, targets=["cpu"])
    diags = info.value.detail["diagnostics"]
    assert (diags[0]["line"], diags[0]["col"]) == (2, 12)
    assert "unregistered dialect" in diags[0]["message"]


def test_syntax_error_reports_line_and_column(pipeline: Pipeline) -> None:
    with pytest.raises(InvalidGraph) as info:
        pipeline.compile(b"func.func @main(%a: tensor<4xf32>) {\n  return %a :\n}", targets=["cpu"])
    assert info.value.detail["diagnostics"][0]["line"] in (2, 3)


@pytest.mark.parametrize("target", ["cuda:sm_999", "vulkan:geforce9", "cpu:x86_64:pentium9"])
def test_unknown_gpu_and_cpu_names_never_reach_the_compiler(pipeline: Pipeline, target: str) -> None:
    started = pipeline.pool.workers_started
    with pytest.raises(UnsupportedTarget):
        pipeline.compile(ADD, targets=[target])
    assert pipeline.pool.workers_started == started


@pytest.mark.parametrize(
    ("flags", "signal_or_exit"),
    [
        # What the allow-list prevents, run on purpose through the pool: the worker dies, the
        # caller gets a clean CompileError naming the signal, and the pool replaces the worker.
        (["--iree-hal-target-device=cuda", "--iree-cuda-target=h100"], "signal"),
        (["--iree-hal-target-device=vulkan", "--iree-vulkan-target=bogus"], "signal"),
        (
            [
                "--iree-hal-target-device=local",
                "--iree-hal-local-target-device-backends=llvm-cpu",
                "--iree-llvmcpu-target-triple=x86_64-unknown-linux-gnu",
                "--iree-llvmcpu-target-cpu=pentium9",
            ],
            "exit",
        ),
    ],
)
@pytest.mark.parametrize("engine", ["session", "cli"])
def test_a_compiler_crash_is_a_clean_error_and_the_pool_recovers(
    pipeline: Pipeline, flags: list[str], signal_or_exit: str, engine: str
) -> None:
    src = "func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> { %0 = arith.addf %a, %a : tensor<4xf32>  return %0 : tensor<4xf32> }"
    with pytest.raises(CompileError) as info:
        pipeline.pool.run(
            CompileJob(mlir=src, flags=tuple(flags), engine=engine, timeout=120),
            timeout=120,
        )
    failure = info.value.failure
    if signal_or_exit == "signal":
        assert failure.signal is not None
    else:
        assert failure.exit_code not in (0, None)
    assert info.value.detail["hint"]
    # The pool still compiles.
    res = pipeline.compile(ADD, targets=["cpu"])
    assert res.artifacts and res.artifacts[0].size > 0


def test_conv_net_for_mi300_is_a_clean_outcome(pipeline: Pipeline) -> None:
    src = (NOTES / "conv4_crashes_gfx9.mlir").read_bytes()
    res = pipeline.compile(src, targets=["rocm:gfx942", "rocm:gfx1100"])
    ok = {a.target for a in res.artifacts}
    assert "rocm:gfx1100" in ok
    for err in res.errors:
        # If gfx942 cannot be compiled, it says so cleanly; it never takes the caller down.
        assert err.error.code == "compile_failed"
        assert err.error.message


def test_garbage_and_truncated_onnx_are_invalid_graph(pipeline: Pipeline) -> None:
    model = onnx_mlp()
    for data in (model[: len(model) // 2], b"\x08\x07garbage\xff\xff\xff", b"\x00" * 64):
        with pytest.raises(InvalidGraph):
            pipeline.compile(data, targets=["cpu"])


def test_onnx_external_data_outside_is_refused(pipeline: Pipeline, tmp_path: Path) -> None:
    data = onnx_external_data("../../etc/passwd")
    with pytest.raises(InvalidGraph, match="outside"):
        pipeline.compile(data, targets=["cpu"], external_data_dir=str(tmp_path))
    with pytest.raises(InvalidGraph, match="external"):
        pipeline.compile(data, targets=["cpu"])


def test_graph_cannot_declare_its_own_targets(pipeline: Pipeline) -> None:
    src = (NOTES / "cuda_sm90_target_attr.mlir").read_bytes()
    with pytest.raises(InvalidGraph, match="hal.device.targets"):
        pipeline.compile(src, targets=["cpu"])


README = (Path(__file__).resolve().parents[1] / "README.md").read_bytes()
OS_RELEASE = b'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nNAME="Debian GNU/Linux"\nID=debian\n'
ELF = Path("/proc/self/exe").resolve().read_bytes()[:8192]  # this Python interpreter


@pytest.mark.parametrize(
    ("data", "declared", "seen"),
    [
        (README, "mlir", "text whose first line is '# Kiln'"),
        (OS_RELEASE, None, "text whose first line is 'PRETTY_NAME="),
        (OS_RELEASE, "onnx", "text whose first line is 'PRETTY_NAME="),
        (ELF, None, "an ELF executable or shared library (first bytes 7f 45 4c 46"),
        (b"PK\x03\x04" + bytes(40), "onnx", "a zip archive"),
        (b'[{"op": "Conv"}]', None, "JSON text"),
        (b'[[models]]\nname = "a"\npath = "a.onnx"\n', None, "TOML text (a kiln build manifest?"),
    ],
    ids=["readme-as-mlir", "os-release", "os-release-as-onnx", "elf", "zip-as-onnx", "json",
         "toml"],
)
def test_what_is_no_graph_is_refused_saying_what_it_looks_like(
    pipeline: Pipeline, data: bytes, declared: str | None, seen: str
) -> None:
    # Not a parser's complaint about a file that was never a graph ("invalid attribute name",
    # "custom op 'PRETTY_NAME' is unknown", "Wire format was corrupt", "looks like MLIR").
    with pytest.raises(InvalidGraph) as info:
        pipeline.compile(data, targets=["cpu"], format=declared)
    assert info.value.code == "invalid_graph"
    assert info.value.message.startswith("the graph is not recognised as ONNX or MLIR")
    assert seen in info.value.message
    assert info.value.detail["first_bytes"] == data[:16].hex(" ")


def test_a_declared_format_that_the_bytes_contradict_says_what_they_are(pipeline: Pipeline) -> None:
    with pytest.raises(InvalidGraph, match="format is 'onnx' but the data is MLIR text"):
        pipeline.compile(ADD, targets=["cpu"], format="onnx")
    with pytest.raises(InvalidGraph, match="format is 'mlir' but the data is an ONNX model"):
        pipeline.compile(onnx_mlp(), targets=["cpu"], format="mlir")


def test_a_type_error_is_not_called_a_parse_error(pipeline: Pipeline) -> None:
    src = (b"func.func @main(%a: tensor<4xf32>, %b: tensor<3xf32>) -> tensor<4xf32> {\n"
           b"  %0 = arith.addf %a, %b : tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n")
    with pytest.raises(InvalidGraph) as info:
        pipeline.compile(src, targets=["cpu"])
    assert info.value.message.startswith("the MLIR has a type error: use of value '%b' expects")
    assert info.value.detail["diagnostics"][0]["line"] == 2


def test_a_bad_cpu_name_suggests_close_ones_instead_of_listing_all(pipeline: Pipeline) -> None:
    with pytest.raises(UnsupportedTarget) as info:
        pipeline.compile(ADD, targets=["cpu:x86_64:skylakee"])
    msg = info.value.message
    assert "did you mean skylake" in msg and "`kiln targets --cpus x86_64` lists all" in msg
    assert len(msg) < 250 and "znver3" not in msg
    assert info.value.code == "unsupported_target"
    assert len(info.value.detail["valid"]["cpu"]) > 100  # the machine-readable list stays whole
    with pytest.raises(UnsupportedTarget, match=r"did you mean \+avx512f"):
        pipeline.compile(ADD, targets=["cpu:x86_64:znver3:+avx512ff"])
