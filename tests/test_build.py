"""`kiln build`: ONNX and MLIR models × cpu, vulkan, cuda, rocm; embedded and with --server."""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from kiln.cli import main
from tests.graphs import LINALG, onnx_mlp, onnx_mlp_reference
from tests.server import kiln_server

TARGETS = ["cpu", "vulkan", "cuda:sm_80", "rocm:gfx1100"]
GOOD = {("mlp", "cpu:x86_64:generic"), ("mlp", "vulkan:generic"), ("mlp", "cuda:sm_80"),
        ("mlp", "rocm:gfx1100"), ("linalg", "cpu:x86_64:generic"), ("linalg", "vulkan:generic"),
        ("linalg", "cuda:sm_80"), ("linalg", "rocm:gfx1100")}


@pytest.fixture(scope="module")
def manifest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("proj")
    (d / "models").mkdir()
    (d / "models" / "mlp.onnx").write_bytes(onnx_mlp())
    (d / "models" / "linalg.mlir").write_text(LINALG)
    (d / "models" / "broken.onnx").write_bytes(b"this is not a graph")
    targets = ", ".join(f'"{t}"' for t in TARGETS)
    (d / "kiln.toml").write_text(
        f'[[models]]\nname = "mlp"\npath = "models/mlp.onnx"\ntargets = [{targets}]\n\n'
        f'[[models]]\nname = "linalg"\npath = "models/linalg.mlir"\n'
        f'targets = [{targets}, "tpu:v5"]\n\n'
        '[[models]]\nname = "broken"\npath = "models/broken.onnx"\ntargets = ["cpu"]\n'
    )
    return d / "kiln.toml"


def _build(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    rc = main(["build", *args], stdout=out, stderr=err)
    return rc, out.getvalue(), err.getvalue()


def _check(out_dir: Path, *, cached: bool) -> dict:
    doc = json.loads((out_dir / "manifest.json").read_text())
    got = {(a["model"], a["target"]) for a in doc["artifacts"]}
    assert got == GOOD, doc["errors"]
    for a in doc["artifacts"]:
        data = (out_dir / a["path"]).read_bytes()
        assert a["digest"] == "sha256:" + hashlib.sha256(data).hexdigest()
        assert a["cached"] is cached and a["flags"] and a["key"]
    errs = {(e["model"], e["target"]): e["error"]["code"] for e in doc["errors"]}
    assert errs == {("linalg", "tpu:v5"): "unsupported_target", ("broken", "cpu"): "invalid_graph"}
    return doc


def _run_cpu_artifact(out_dir: Path, doc: dict) -> None:
    from kiln.client.runtime import load_vmfb

    path = next(a["path"] for a in doc["artifacts"]
                if a["model"] == "mlp" and a["target"].startswith("cpu"))
    x = np.random.default_rng(1).standard_normal((4, 8)).astype(np.float32)
    y = load_vmfb((out_dir / path).read_bytes(), driver="local-task").mlp(x)  # ONNX: the graph name
    np.testing.assert_allclose(y, onnx_mlp_reference(x), rtol=1e-4, atol=1e-4)


def test_embedded_build_then_rebuild_all_hits(manifest: Path, tmp_path: Path) -> None:
    out, cache = tmp_path / "out", tmp_path / "cache"
    rc, stdout, stderr = _build(str(manifest), "-o", str(out), "--cache-dir", str(cache))
    assert rc == 1  # two entries failed ...
    doc = _check(out, cached=False)  # ... and all the others were written
    assert "linalg × tpu:v5: unsupported_target" in stderr
    assert "broken × cpu: invalid_graph" in stderr
    assert "8 built (0 cache hits), 2 failed" in stdout
    _run_cpu_artifact(out, doc)

    rc, stdout, _ = _build(str(manifest), "-o", str(out), "--cache-dir", str(cache))
    assert rc == 1
    again = _check(out, cached=True)
    assert "8 built (8 cache hits)" in stdout
    assert [a["digest"] for a in again["artifacts"]] == [a["digest"] for a in doc["artifacts"]]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with kiln_server(tmp_path_factory, workers=2) as srv:
        yield srv.url


def test_remote_build_then_rebuild_all_hits(manifest: Path, server: str, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KILN_CLIENT_CACHE_DIR", str(tmp_path / "client-cache"))
    out = tmp_path / "out"
    rc, stdout, stderr = _build(str(manifest), "-o", str(out), "--server", server, "--jobs", "3")
    assert rc == 1, stderr
    doc = _check(out, cached=False)
    _run_cpu_artifact(out, doc)
    rc, stdout, _ = _build(str(manifest), "-o", str(out), "--server", server)
    assert rc == 1
    _check(out, cached=True)
    assert "8 built (8 cache hits)" in stdout


def test_bad_manifest_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "m.toml").write_text("[[models]]\nname = 'x'\n")
    rc, _, stderr = _build(str(tmp_path / "m.toml"), "-o", str(tmp_path / "o"))
    assert rc == 2 and "'path' must be a string" in stderr


def test_a_missing_model_file_is_one_usage_error(tmp_path: Path) -> None:
    # Exit 2 once, before any work: not exit 1 with the same error repeated per target.
    (tmp_path / "m.toml").write_text(
        "[[models]]\nname = 'x'\npath = 'nope.onnx'\ntargets = ['cpu', 'vulkan', 'cuda']\n")
    rc, _, stderr = _build(str(tmp_path / "m.toml"), "-o", str(tmp_path / "o"))
    assert rc == 2
    assert stderr.count("nope.onnx") == 1 and "does not exist" in stderr
    assert not (tmp_path / "o").exists()
