"""`kiln compile` and `kiln targets` through main(argv, stdout, stderr), as a user runs them."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest

from kiln.cli import main
from kiln.client.runtime import load_vmfb
from tests.graphs import onnx_mlp, onnx_mlp_reference

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "mlp.mlir"


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_compile_one_target_writes_the_named_file_and_it_runs(tmp_path: Path) -> None:
    out = tmp_path / "mlp.vmfb"
    code, stdout, stderr = run("compile", str(EXAMPLE), "--target", "cpu", "-o", str(out),
                               "--cache-dir", str(tmp_path / "c"))
    assert code == 0, stderr
    assert "cpu:x86_64:generic" in stdout and "compiled" in stdout
    mod = load_vmfb(out.read_bytes(), driver="local-task")
    rng = np.random.default_rng(0)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((4, 8), (8, 3), (3,)))
    np.testing.assert_allclose(mod.main(x, w, b), np.maximum(x @ w + b, 0), rtol=1e-4, atol=1e-5)
    # The second run is a cache hit with the same bytes.
    before = out.read_bytes()
    code, stdout, _ = run("compile", str(EXAMPLE), "--target", "cpu", "-o", str(out),
                          "--cache-dir", str(tmp_path / "c"))
    assert code == 0 and "cache hit" in stdout
    assert out.read_bytes() == before


def test_compile_several_targets_writes_a_directory(tmp_path: Path) -> None:
    model = tmp_path / "m.onnx"
    model.write_bytes(onnx_mlp())
    outdir = tmp_path / "out"
    code, stdout, stderr = run("compile", str(model), "-t", "cpu", "-t", "vulkan", "-t", "cuda:a100",
                               "-o", str(outdir), "--json", "--no-cache")
    assert code == 0, stderr
    summary = json.loads(stdout)
    assert [a["target"] for a in summary["artifacts"]] == ["cpu:x86_64:generic", "vulkan:generic", "cuda:sm_80"]
    assert summary["input_dialect"] == "onnx"
    files = sorted(p.name for p in outdir.iterdir())
    assert files == ["m.cpu_x86_64_generic.vmfb", "m.cuda_sm_80.vmfb", "m.vulkan_generic.vmfb"]
    x = np.ones((4, 8), np.float32)
    mod = load_vmfb((outdir / "m.vulkan_generic.vmfb").read_bytes(), driver="vulkan")
    np.testing.assert_allclose(mod["mlp"](x), onnx_mlp_reference(x), rtol=1e-4, atol=1e-4)


def test_errors_exit_nonzero_with_code_on_stderr(tmp_path: Path) -> None:
    code, _, stderr = run("compile", str(EXAMPLE), "--target", "cuda:sm_12", "--no-cache")
    assert code == 1 and "unsupported_target" in stderr and "sm_80" in stderr
    bad = tmp_path / "bad.mlir"
    bad.write_text('func.func @main() {\n  "foo.bar"() : () -> ()\n  return\n}\n')
    code, _, stderr = run("compile", str(bad), "--target", "cpu", "--no-cache")
    assert code == 1 and "invalid_graph" in stderr and ":2:" in stderr
    code, _, stderr = run("compile", str(EXAMPLE), "--target", "cpu", "--option", "iree-flags=--x",
                          "--no-cache")
    assert code == 1 and "invalid_request" in stderr
    assert not list(tmp_path.glob("*.vmfb"))


def test_targets_lists_kinds_and_the_compiler() -> None:
    code, stdout, _ = run("targets", "--json")
    assert code == 0
    data = json.loads(stdout)
    assert data["compiler"]["version"].startswith("3.13")
    kinds = {k["kind"]: k for k in data["kinds"]}
    assert set(kinds) == {"cpu", "cuda", "rocm", "vulkan", "metal"}
    assert kinds["cuda"]["aliases"]["a100"] == "sm_80"
    code, stdout, _ = run("targets", "--cpus", "x86_64")
    assert code == 0 and "znver3" in stdout.split()


def test_onnx_with_external_weights_beside_it_compiles(tmp_path: Path) -> None:
    import onnx

    model = onnx.load_model_from_string(onnx_mlp())
    onnx.save_model(model, str(tmp_path / "ext.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="ext.weights", size_threshold=0)
    assert (tmp_path / "ext.weights").exists()
    out = tmp_path / "ext.vmfb"
    code, _, stderr = run("compile", str(tmp_path / "ext.onnx"), "-t", "cpu", "-o", str(out),
                          "--no-cache")
    assert code == 0, stderr
    x = np.ones((4, 8), np.float32)
    mod = load_vmfb(out.read_bytes(), driver="local-task")
    np.testing.assert_allclose(mod["mlp"](x), onnx_mlp_reference(x), rtol=1e-4, atol=1e-4)


def test_option_prefixes_are_not_expanded(capsys: pytest.CaptureFixture[str]) -> None:
    # A prefix never stands for a longer option (`--compile remote` was once read as
    # `--compile-timeout remote`).
    code, _, _ = run("serve", "--compile-t", "5")  # a prefix of --compile-timeout
    assert code == 2 and "unrecognized arguments: --compile-t 5" in capsys.readouterr().err
    code, _, _ = run("compile", "x.onnx", "-t", "cpu", "--time", "5")
    assert code == 2 and "unrecognized arguments: --time" in capsys.readouterr().err


def test_an_output_ending_in_a_slash_is_a_folder_for_one_target(tmp_path: Path) -> None:
    code, stdout, stderr = run("compile", str(EXAMPLE), "-t", "cpu", "-o", f"{tmp_path}/out/",
                               "--no-cache")
    assert code == 0, stderr
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["mlp.cpu_x86_64_generic.vmfb"]


def test_targets_piped_into_a_reader_that_quits_exits_quietly(tmp_path: Path) -> None:
    import subprocess
    import sys

    # `kiln targets | head -1`: head exits after one line, the rest of the listing hits a closed
    # pipe.
    r = subprocess.run(f"'{sys.executable}' -m kiln.cli targets | head -1", shell=True,
                       capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert r.stdout.startswith("compiler: iree 3.13")
    assert r.stderr == ""


def test_cuda_archs_are_listed_in_compute_capability_order() -> None:
    code, stdout, _ = run("targets", "--json")
    cuda = next(k for k in json.loads(stdout)["kinds"] if k["kind"] == "cuda")
    archs = cuda["archs"]
    assert archs.index("sm_89") < archs.index("sm_90") < archs.index("sm_100") < archs.index("sm_120")
