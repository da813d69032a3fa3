"""ONNX models with their weights in side files, uploaded as a tar, against a real ``kiln serve``.

A model saved with ``save_as_external_data`` compiles through ``POST /v1/compile`` (and
``/v1/jobs``) with a tar body, through ``kiln.Client.load(path)`` and ``kiln compile --server``,
and matches onnxruntime; tars that try to reach outside the request's directory (``..``,
absolute names, links, a model whose ``location`` is ``/etc/passwd`` or ``../../x``) or carry
what the model does not name are refused with a clean 400 (413 past the size limit), and
nothing is written outside the server's temporary directory, where nothing stays.
"""

from __future__ import annotations

import io
import os
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from kiln import Client
from kiln.errors import InvalidGraph
from tests.server import KilnServer, kiln_server


def mlp(seed: int = 1, hidden: int = 256) -> onnx.ModelProto:
    r = np.random.default_rng(seed)
    inits = {"w1": r.standard_normal((64, hidden)), "b1": r.standard_normal(hidden),
             "w2": r.standard_normal((hidden, 10)) / 16, "b2": r.standard_normal(10)}
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]),
             helper.make_node("Add", ["h", "b1"], ["h1"]),
             helper.make_node("Relu", ["h1"], ["h2"]),
             helper.make_node("MatMul", ["h2", "w2"], ["o"]),
             helper.make_node("Add", ["o", "b2"], ["y"])]
    g = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [5, 10])],
        [numpy_helper.from_array(a.astype(np.float32), k) for k, a in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


X = np.random.default_rng(7).standard_normal((5, 64)).astype(np.float32)


def reference(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    import onnxruntime as ort

    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    out: np.ndarray = sess.run(None, {"x": x})[0]
    return out


def save_apart(model: onnx.ModelProto, folder: Path, location: str = "mlp.weights") -> Path:
    """``model`` saved in ``folder`` with every tensor in the side file ``location``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "mlp.onnx"
    onnx.save_model(model, str(path), save_as_external_data=True,
                    all_tensors_to_one_file=True, location=location, size_threshold=0)
    return path


def tar_of(members: list[tuple[str, bytes]], *, extra: Any = None) -> bytes:
    """A tar of regular files (``extra(tar)`` may add special members)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        if extra is not None:
            extra(tar)
    return buf.getvalue()


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KilnServer]:
    with kiln_server(tmp_path_factory, workers=1, access_log="false",
                     max_request_bytes=4 << 20) as s:
        yield s


@pytest.fixture(scope="module")
def apart(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_apart(mlp(), tmp_path_factory.mktemp("apart"))


def post_tar(srv: KilnServer, body: bytes, *, route: str = "/v1/compile",
             **params: Any) -> httpx.Response:
    return srv.client().post(route, content=body, headers={"Content-Type": "application/x-tar"},
                             params={"format": "onnx", "target": "cpu", **params})


def run_vmfb(srv: KilnServer, body: dict[str, Any], x: np.ndarray) -> np.ndarray:
    import iree.runtime as rt

    vmfb = srv.client().get(body["artifacts"][0]["url"]).content
    config = rt.Config("local-task")
    modules = []
    if "params" in body:
        archive = srv.client().get(body["params"]["url"]).content
        index = rt.ParameterIndex()
        index.load_from_file_handle(rt.FileHandle.wrap_memory(archive), "irpa")
        modules.append(rt.create_io_parameters_module(
            config.vm_instance, index.create_provider(scope=body["params"]["scope"])))
    modules.append(rt.VmModule.copy_buffer(config.vm_instance, vmfb))
    ctx = rt.SystemContext(vm_modules=modules, config=config)
    out: np.ndarray = ctx.modules.module["mlp"](x).to_host()
    return out


def leftovers(srv: KilnServer) -> list[str]:
    """Files under the server's root other than its cache, log and worker scratch folders."""
    out = []
    for dirpath, _dirs, files in os.walk(srv.root):
        rel = Path(dirpath).relative_to(srv.root)
        if rel.parts[:1] == ("cache",) or (len(rel.parts) >= 2 and rel.parts[0] == "tmp"
                                           and rel.parts[1].startswith("kiln-workers-")):
            continue
        out += [str(rel / f) for f in files if not f.startswith("server-")]
    return sorted(out)


def test_a_tar_with_the_side_file_compiles_and_matches_onnxruntime(
    srv: KilnServer, apart: Path
) -> None:
    body = tar_of([("mlp.onnx", apart.read_bytes()),
                   ("mlp.weights", (apart.parent / "mlp.weights").read_bytes())])
    r = post_tar(srv, body)
    assert r.status_code == 200, r.text
    got = r.json()
    assert got["input_dialect"] == "onnx" and "params" not in got  # small: weights inline
    np.testing.assert_allclose(run_vmfb(srv, got, X), reference(mlp(), X), rtol=1e-4, atol=1e-4)
    # weights apart on request: one archive; the same answer through a job
    r = post_tar(srv, body, params="external")
    assert r.status_code == 200, r.text
    ext = r.json()
    assert ext["params"]["size"] > 64 * 256 * 4
    np.testing.assert_allclose(run_vmfb(srv, ext, X), reference(mlp(), X), rtol=1e-4, atol=1e-4)
    r = post_tar(srv, body, route="/v1/jobs")
    assert r.status_code == 202, r.text
    job = srv.client().get(r.headers["Location"], params={"wait": 60}).json()
    while job["state"] not in ("done", "failed"):
        job = srv.client().get(r.headers["Location"], params={"wait": 60}).json()
    assert job["state"] == "done" and job["result"]["graph_digest"] == got["graph_digest"]
    assert leftovers(srv) == []


def test_other_weights_beside_the_same_model_are_another_graph(
    srv: KilnServer, apart: Path, tmp_path: Path
) -> None:
    other = save_apart(mlp(seed=2), tmp_path)
    assert other.read_bytes() == apart.read_bytes()  # the model file alone is the same
    bodies = [post_tar(srv, tar_of([("mlp.onnx", p.read_bytes()),
                                    ("mlp.weights", (p.parent / "mlp.weights").read_bytes())]))
              for p in (apart, other)]
    a, b = (r.json() for r in bodies)
    assert a["graph_digest"] != b["graph_digest"]
    np.testing.assert_allclose(run_vmfb(srv, b, X), reference(mlp(seed=2), X),
                               rtol=1e-4, atol=1e-4)


def test_the_sdk_and_the_cli_send_the_side_files(srv: KilnServer, apart: Path,
                                                  tmp_path: Path) -> None:
    (apart.parent / "unrelated.bin").write_bytes(b"not sent")
    with Client(srv.url, cache_dir=tmp_path / "client-cache") as c:
        mod = c.load(apart, device="cpu")
        np.testing.assert_allclose(mod.mlp(X), reference(mlp(), X), rtol=1e-4, atol=1e-4)
        res = c.compile(apart, targets=["cpu"], options={"params": "external"})
        assert res.params is not None
        job = c.wait(c.submit(str(apart), targets=["cpu"]))
        assert job.artifacts
    from kiln.cli import main

    out = io.StringIO()
    code = main(["compile", str(apart), "-t", "cpu", "-o", str(tmp_path / "m.vmfb"),
                 "--server", srv.url], stdout=out, stderr=out)
    assert code == 0, out.getvalue()
    assert (tmp_path / "m.vmfb").stat().st_size > 0


def test_mlir_text_is_never_taken_for_a_path() -> None:
    from kiln.client.side_files import with_side_files

    # Longer than a file name may be, and with a NUL: neither is a path to look at.
    for text in ("func.func @f() {\n" + "  // " + "x" * 400 + "\n  return\n}\n", "a\0b"):
        assert with_side_files(text) is text


def test_the_sdk_never_reads_a_location_outside_the_models_folder(tmp_path: Path) -> None:
    model = mlp()
    onnx.save_model(model, str(tmp_path / "m.onnx"), save_as_external_data=True,
                    location="w.bin", size_threshold=0)
    m = onnx.load_model(str(tmp_path / "m.onnx"), load_external_data=False)
    for t in m.graph.initializer:
        for e in t.external_data:
            if e.key == "location":
                e.value = "../secret.bin"
    (tmp_path / "evil").mkdir()
    (tmp_path / "evil" / "m.onnx").write_bytes(m.SerializeToString())
    from kiln.client.side_files import with_side_files

    with pytest.raises(InvalidGraph, match="must be a relative path"):
        with_side_files(tmp_path / "evil" / "m.onnx")


def _evil_model(apart: Path, location: str) -> bytes:
    m = onnx.load_model(str(apart), load_external_data=False)
    for t in m.graph.initializer:
        for e in t.external_data:
            if e.key == "location":
                e.value = location
    return m.SerializeToString()


def _symlink(tar: tarfile.TarFile) -> None:
    info = tarfile.TarInfo("mlp.weights")
    info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
    tar.addfile(info)


def _hardlink(tar: tarfile.TarFile) -> None:
    info = tarfile.TarInfo("mlp.weights")
    info.type, info.linkname = tarfile.LNKTYPE, "/etc/passwd"
    tar.addfile(info)


def _fifo(tar: tarfile.TarFile) -> None:
    info = tarfile.TarInfo("mlp.weights")
    info.type = tarfile.FIFOTYPE
    tar.addfile(info)


ATTACKS: dict[str, tuple[str, Any, str]] = {
    # name: (model location, extra members or a special member, what the error says)
    "dotdot member": ("mlp.weights", [("../x", b"boom")], "'..'"),
    "deep dotdot member": ("mlp.weights", [("a/../../x", b"boom")], "'..'"),
    "absolute member": ("mlp.weights", [("/tmp/kiln-evil-abs", b"boom")], "absolute"),
    "symlink member": ("mlp.weights", _symlink, "symbolic link"),
    "hardlink member": ("mlp.weights", _hardlink, "hard link"),
    "fifo member": ("mlp.weights", _fifo, "a fifo"),
    "duplicate member": ("mlp.weights", [("mlp.weights", b"again")], "twice"),
    "unnamed member": ("mlp.weights", [("extra.bin", b"surprise")], "does not name"),
    "location /etc/passwd": ("/etc/passwd", [], "invalid external data location"),
    "location ../../x": ("../../x", [], "points outside"),
}


@pytest.mark.parametrize("attack", ATTACKS)
def test_an_attack_is_a_clean_400_and_writes_nothing_outside(
    srv: KilnServer, apart: Path, attack: str
) -> None:
    location, extra, says = ATTACKS[attack]
    weights = (apart.parent / "mlp.weights").read_bytes()
    members = [("mlp.onnx", _evil_model(apart, location) if location != "mlp.weights"
                else apart.read_bytes()), ("mlp.weights", weights)]
    if isinstance(extra, list):
        body = tar_of(members + extra)
    else:
        body = tar_of(members[:1], extra=extra)
    r = post_tar(srv, body)
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["code"] == "invalid_graph" and says in err["message"], err
    assert leftovers(srv) == []
    assert not Path("/tmp/kiln-evil-abs").exists()
    assert not (srv.root / "x").exists() and not (srv.root / "tmp" / "x").exists()
    assert srv.healthy()


def test_oversize_and_broken_tars(srv: KilnServer, apart: Path) -> None:
    big = tar_of([("mlp.onnx", apart.read_bytes()), ("mlp.weights", bytes(5 << 20))])
    r = post_tar(srv, big)
    assert r.status_code == 413 and r.json()["error"]["code"] == "too_large"

    def chunked() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
        yield big[: 1 << 20]
        yield big[1 << 20:]

    r = srv.client().post("/v1/compile", content=chunked(), params={"target": "cpu"},
                          headers={"Content-Type": "application/x-tar"})
    assert r.status_code == 413
    r = post_tar(srv, b"this is not a tar" * 100)
    assert r.status_code == 400 and "not a valid tar" in r.json()["error"]["message"]
    r = post_tar(srv, tar_of([("mlp.weights", b"x")]))
    assert r.status_code == 400 and "no .onnx member" in r.json()["error"]["message"]
    # weights apart but not sent: the model names a file the tar lacks
    r = post_tar(srv, tar_of([("mlp.onnx", apart.read_bytes())]))
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_graph"
    assert leftovers(srv) == []
    assert srv.healthy()
