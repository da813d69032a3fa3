"""A full cache disk (a real tmpfs, too small for the executable): the daemon answers 507
``insufficient_storage`` instead of a 200 whose ``url`` would answer 404, leaves no partial entry,
keeps serving what it has, and compiles and serves the same graph once there is space again."""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.server import kiln_server


def _big_onnx() -> bytes:
    """y = x + c with a 4 MiB random constant: the executable carries it (does not fit 1 MiB)."""
    from onnx import TensorProto, helper, numpy_helper

    c = np.random.default_rng(3).standard_normal(1 << 20).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "c"], ["y"])], "big",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1 << 20])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1 << 20])],
        initializer=[numpy_helper.from_array(c, "c")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


SMALL = "func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> { return %a : tensor<4xf32> }"


@pytest.fixture
def tiny_cache(tmp_path: Path) -> Iterator[Path]:
    mnt = tmp_path / "cache"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)],
                       capture_output=True, text=True, check=False)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _leftovers(cache: Path) -> list[str]:
    return [str(p.relative_to(cache)) for p in cache.rglob(".tmp-*")]


def test_a_full_cache_answers_507_and_recovers_when_space_returns(
    tmp_path: Path, tiny_cache: Path
) -> None:
    with kiln_server(tmp_path / "srv", cache_dir=tiny_cache, workers=1) as srv:
        c = srv.client()
        small = c.post("/v1/compile", json={"graph": {"format": "mlir", "data": SMALL},
                                            "targets": ["cpu"]})
        assert small.status_code == 200, small.text
        big = _big_onnx()
        raw = {"content": big, "params": {"format": "onnx", "target": "cpu"},
               "headers": {"content-type": "application/octet-stream"}}
        r = c.post("/v1/compile", **raw)
        assert r.status_code == 507, r.text[:2000]
        err = r.json()["error"]
        assert err["code"] == "insufficient_storage"
        assert _leftovers(tiny_cache) == []
        # what fitted is still served, and the daemon is healthy
        assert c.get(small.json()["artifacts"][0]["url"]).status_code == 200
        assert srv.healthy()
        # space returns: the same request compiles, and its url serves the bytes it names
        subprocess.run(["mount", "-o", "remount,size=64m", str(tiny_cache)], check=True)
        r = c.post("/v1/compile", **raw)
        assert r.status_code == 200, r.text[:2000]
        art = r.json()["artifacts"][0]
        got = c.get(art["url"])
        assert got.status_code == 200
        assert "sha256:" + hashlib.sha256(got.content).hexdigest() == art["digest"]
        assert _leftovers(tiny_cache) == []


@pytest.fixture
def roomy_cache(tmp_path: Path) -> Iterator[Path]:
    mnt = tmp_path / "roomy"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", str(mnt)],
                       capture_output=True, text=True, check=False)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_a_disk_that_fills_mid_compile_is_507_and_never_remembered(
    tmp_path: Path, roomy_cache: Path
) -> None:
    """The compile's own temporary files live on the cache's file system too (the workers'
    TMPDIR): with it nearly full the graph's import and compile fail with ENOSPC, which is the
    server's condition, not the graph's: 507, and the same request compiles at once when space
    returns (failure memory on, as by default)."""
    import os

    with kiln_server(tmp_path / "srv", cache_dir=roomy_cache, workers=1,
                     failure_ttl=600) as srv:
        c = srv.client()
        small = c.post("/v1/compile", json={"graph": {"format": "mlir", "data": SMALL},
                                            "targets": ["cpu"]})
        assert small.status_code == 200, small.text
        raw = {"content": _big_onnx(), "params": {"format": "onnx", "target": "cpu"},
               "headers": {"content-type": "application/octet-stream"}}
        st = os.statvfs(roomy_cache)
        filler = roomy_cache / "filler"
        with open(filler, "wb") as f:  # leave 256 KiB: less than the graph's canonical form
            f.truncate(0)
            left = st.f_bavail * st.f_frsize - (256 << 10)
            chunk = b"\0" * (1 << 20)
            while left > 0:
                left -= f.write(chunk[: min(len(chunk), left)])
        for _ in range(2):  # refused each time, never from memory
            r = c.post("/v1/compile", **raw)
            assert r.status_code == 507, r.text[:2000]
            err = r.json()["error"]
            assert err["code"] == "insufficient_storage", err
            assert "remembered" not in json.dumps(err)
        assert srv.healthy()
        filler.unlink()  # space returns: the same request compiles at once
        r = c.post("/v1/compile", **raw)
        assert r.status_code == 200, r.text[:2000]
        assert _leftovers(roomy_cache) == []
