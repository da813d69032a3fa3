"""`kiln inspect FILE` through main(argv, stdout, stderr): the functions of an executable or a
graph with their types, on real executables built by the real compiler, and the bundled ONNX
example it is shown on in the README."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest

from kiln.cli import main
from kiln.client.runtime import load_vmfb
from kiln.compiler.pipeline import Pipeline

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_an_executable_lists_its_functions_and_types(pipeline: Pipeline, tmp_path: Path) -> None:
    res = pipeline.compile((EXAMPLES / "mlp.mlir").read_bytes(), targets=["cpu"])
    vmfb = tmp_path / "mlp.vmfb"
    vmfb.write_bytes(res.artifacts[0].data)
    code, out, err = run("inspect", str(vmfb))
    assert code == 0, err
    assert out.splitlines() == [
        f"{vmfb}: IREE executable (.vmfb), 1 public function",
        "  main(tensor<4x8xf32>, tensor<8x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>",
    ]
    code, out, _ = run("inspect", str(vmfb), "--json")
    doc = json.loads(out)
    assert doc["kind"] == "executable"
    assert doc["signatures"][0]["inputs"][0] == {"kind": "tensor", "dtype": "f32", "shape": [4, 8]}


def test_the_onnx_example_is_a_graph_with_a_dynamic_batch() -> None:
    code, out, err = run("inspect", str(EXAMPLES / "mlp.onnx"))
    assert code == 0, err
    assert out.splitlines()[1:] == ["  mlp(tensor<?x8xf32>) -> tensor<?x3xf32>"]
    assert "ONNX graph, input dialect onnx, 1 public function" in out
    code, out, _ = run("inspect", str(EXAMPLES / "mlp.onnx"), "--json")
    doc = json.loads(out)
    assert (doc["kind"], doc["input_format"], doc["graph_digest"][:7]) == ("graph", "onnx", "sha256:")
    assert doc["signatures"][0]["outputs"] == [{"kind": "tensor", "dtype": "f32", "shape": [None, 3]}]


def test_the_onnx_example_is_what_its_script_writes_and_runs_as_the_readme_says(
    pipeline: Pipeline,
) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_mlp_onnx", EXAMPLES / "make_mlp_onnx.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    data = (EXAMPLES / "mlp.onnx").read_bytes()
    assert script.build().SerializeToString(deterministic=True) == data
    assert len(data) < 50_000
    res = pipeline.compile(data, targets=["cpu"])
    mod = load_vmfb(res.artifacts[0].data, driver="local-task", signatures=res.signatures)
    assert str(mod.signatures["mlp"]) == "mlp(tensor<?x8xf32>) -> tensor<?x3xf32>"
    # The README's input: x = 1 everywhere, w = 0.5, b = -1 -> 8 * 0.5 - 1 = 3.
    np.testing.assert_array_equal(mod.mlp(np.ones((4, 8), np.float32)), np.full((4, 3), 3.0))


@pytest.mark.parametrize(
    ("content", "seen"),
    [
        (b"# Kiln\n\nKiln compiles tensor graphs.\n", "text whose first line is '# Kiln'"),
        (b"\x7fELF\x02\x01\x01\x00" + bytes(64), "an ELF executable"),
        (b'{"graph": 1}', "JSON text"),
    ],
)
def test_what_is_no_graph_is_named_for_what_it_is(tmp_path: Path, content: bytes, seen: str) -> None:
    f = tmp_path / "notes.onnx"
    f.write_bytes(content)
    code, out, err = run("inspect", str(f))
    assert code == 1 and not out
    assert "invalid_graph: the graph is not recognised as ONNX or MLIR" in err and seen in err


def test_a_graph_without_the_server_parts_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # As in a client-only install (tests/test_client_light.py has the real one): no compiler.
    monkeypatch.setattr("kiln.cli.errors.missing_server_parts", lambda: ["iree.compiler", "onnx"])
    code, _, err = run("inspect", str(EXAMPLES / "mlp.mlir"))
    assert code == 2
    assert 'pip install "kiln[server]"' in err and "an executable (.vmfb) needs only the client" in err


def test_an_unreadable_file_is_a_usage_error(tmp_path: Path) -> None:
    code, _, err = run("inspect", str(tmp_path / "missing.vmfb"))
    assert code == 2 and "cannot read" in err
