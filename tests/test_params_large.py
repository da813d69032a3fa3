"""A model whose weights are larger than the daemon should ever hold: an ONNX MatMul with a
196 MiB weight in a side file, sent as a tar with ``params: "external"`` to a real ``kiln serve``.

The daemon's memory grows by well under half the side file (the weights travel disk to disk:
the tar streams to the request's directory, the prepare worker maps them into an archive file,
the cache copies that file in chunks, ``/v1/params`` streams it back), and the code-only
executable run with the archive as its parameter provider matches numpy.
"""

from __future__ import annotations

import os
import tarfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tests.server import KilnServer, kiln_server

pytestmark = pytest.mark.slow

K = 7168  # the weight is K×K f32: 196 MiB
ROWS = 4


def _status(pid: int) -> dict[str, int]:
    """``VmRSS`` and ``VmHWM`` of a process, in bytes."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            out[name] = int(value.split()[0]) * 1024
    return out


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KilnServer]:
    with kiln_server(tmp_path_factory, workers=1, access_log="false",
                     max_request_bytes=512 << 20, max_upload_bytes_per_client=512 << 20) as s:
        yield s


@pytest.fixture(scope="module")
def upload(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray]:
    """The tar (model + side file) on disk, and the weight."""
    folder = tmp_path_factory.mktemp("big")
    w = np.random.default_rng(3).standard_normal((K, K), dtype=np.float32)
    w /= np.float32(np.sqrt(K))
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])], "mm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [ROWS, K])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [ROWS, K])],
        [numpy_helper.from_array(w, "w")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save_model(model, folder / "mm.onnx", save_as_external_data=True,
                    all_tensors_to_one_file=True, location="mm.weights", size_threshold=0)
    del model, g
    tar = folder / "mm.tar"
    with tarfile.open(tar, "w") as t:
        t.add(folder / "mm.onnx", "mm.onnx")
        t.add(folder / "mm.weights", "mm.weights")
    return tar, w


def test_a_196_mib_side_file_leaves_the_daemon_small_and_runs_with_its_archive(
    srv: KilnServer, upload: tuple[Path, np.ndarray], tmp_path: Path
) -> None:
    import iree.runtime as rt

    tar, w = upload
    side = os.path.getsize(tar)
    before = _status(srv.proc.pid)["VmRSS"]
    with open(tar, "rb") as body:
        r = srv.client().post("/v1/compile", content=body,
                              headers={"Content-Type": "application/x-tar"},
                              params={"format": "onnx", "target": "cpu", "params": "external"})
    assert r.status_code == 200, r.text
    res = r.json()
    archive = tmp_path / "mm.irpa"
    with srv.client().stream("GET", res["params"]["url"]) as got, open(archive, "wb") as f:
        assert got.status_code == 200
        for chunk in got.iter_bytes(8 << 20):
            f.write(chunk)
    peak = _status(srv.proc.pid)["VmHWM"]
    growth = peak - before
    assert res["params"]["size"] == os.path.getsize(archive) >= K * K * 4
    assert growth < side // 2, f"daemon grew {growth >> 20} MiB for a {side >> 20} MiB upload"

    vmfb = srv.client().get(res["artifacts"][0]["url"]).content
    assert len(vmfb) < 1 << 20  # code only
    config = rt.Config("local-task")
    index = rt.ParameterIndex()
    index.load(str(archive))
    params = rt.create_io_parameters_module(
        config.vm_instance, index.create_provider(scope=res["params"]["scope"]))
    ctx = rt.SystemContext(
        vm_modules=[params, rt.VmModule.copy_buffer(config.vm_instance, vmfb)], config=config)
    x = np.random.default_rng(4).standard_normal((ROWS, K), dtype=np.float32)
    y = ctx.modules.module["mm"](x).to_host()
    np.testing.assert_allclose(y, x @ w, rtol=1e-3, atol=1e-3)
    assert not list((srv.cache_dir / "v1" / "scratch").iterdir())  # the worker's file is gone
