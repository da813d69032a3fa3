"""The daemon's own death (SIGKILL) mid-compile and mid-write, against real processes: after a
restart on the same cache directory nothing partial or corrupt is served, ``kiln cache verify``
finds nothing to remove, no compile worker or compiler outlives the daemon, and the same request
then succeeds with an executable whose bytes match its digest and run correctly."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import numpy as np
import pytest

from kiln.client.runtime import load_vmfb
from tests.server import kiln_server

pytestmark = pytest.mark.slow


N = 1 << 21


def _graph(seed: int) -> bytes:
    """y = x * c + 1 with an 8 MiB random constant: a compile of a few seconds and a write of an
    8 MiB blob, both long enough to be killed in."""
    from onnx import TensorProto, helper, numpy_helper

    c = np.random.default_rng(seed).standard_normal(N).astype(np.float32)
    one = np.ones(1, np.float32)
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "c"], ["m"]), helper.make_node("Add", ["m", "one"], ["y"])],
        "killed",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [N])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [N])],
        initializer=[numpy_helper.from_array(c, "c"), numpy_helper.from_array(one, "one")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            stat = Path(f"/proc/{d}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(d))
    out, todo = set(), [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.add(c)
            todo.append(c)
    return out


def _alive(pids: set[int]) -> set[int]:
    alive = set()
    for p in pids:
        try:
            state = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive.add(p)
    return alive


RAW = {"content-type": "application/octet-stream"}
PARAMS = {"format": "onnx", "target": "cpu"}


def _compiler_running(pid: int) -> bool:
    for p in _alive(_descendants(pid)):
        try:
            if b"iree-compile" in Path(f"/proc/{p}/cmdline").read_bytes():
                return True
        except OSError:
            pass
    return False


def _writing(cache: Path) -> bool:
    """A blob is being written: an atomic write's temporary file in the CAS."""
    return any("cas" in p.parts for p in cache.rglob(".tmp-*"))


# ``prepare`` is a bench suite (`scripts/test.sh -m bench`): the default run was at 15 minutes;
# a kill during the import writes nothing to the cache in the first place.
@pytest.mark.parametrize("moment", [
    pytest.param("prepare", marks=[pytest.mark.slow, pytest.mark.bench]), "compile", "write"])
def test_sigkill_mid_compile_or_write_leaves_nothing_partial(tmp_path: Path, moment: str) -> None:
    cache = tmp_path / "cache"
    seed = ["prepare", "compile", "write"].index(moment)
    graph = _graph(seed)
    with kiln_server(tmp_path / "first", cache_dir=cache, workers=1) as srv:
        done = threading.Event()

        def post() -> None:
            try:
                httpx.post(srv.url + "/v1/compile", params=PARAMS, content=graph, headers=RAW,
                           timeout=120)
            except httpx.HTTPError:
                pass  # the daemon dies under it
            done.set()

        reached = {
            "prepare": lambda: True,
            "compile": lambda: _compiler_running(srv.proc.pid),
            "write": lambda: _writing(cache),
        }[moment]
        threading.Thread(target=post, daemon=True).start()
        deadline = time.monotonic() + 120
        while not reached() and not done.is_set() and time.monotonic() < deadline:
            time.sleep(0.001)
        family = _descendants(srv.proc.pid)
        srv.proc.send_signal(signal.SIGKILL)
        assert not done.is_set(), f"the request finished before the {moment} was reached"
        srv.proc.wait(30)
        deadline = time.monotonic() + 20
        while _alive(family) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _alive(family), "compile workers or compilers outlived the daemon"
    # every entry on disk is whole: verify removes nothing
    r = subprocess.run([sys.executable, "-m", "kiln.cli", "cache", "verify",
                        "--cache-dir", str(cache)], capture_output=True, text=True, timeout=300, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    stale = list((cache / "tmp").glob("kiln-workers-*"))
    assert stale  # the killed daemon's worker temporaries, under the cache directory
    with kiln_server(tmp_path / "second", cache_dir=cache, workers=1) as srv:
        assert not any(p.exists() for p in stale)  # swept when the new daemon's pools start
        c = srv.client(timeout=300)
        res = c.post("/v1/compile", params=PARAMS, content=graph, headers=RAW)
        assert res.status_code == 200, res.text[:2000]
        art = res.json()["artifacts"][0]
        blob = c.get(art["url"]).content
        assert "sha256:" + hashlib.sha256(blob).hexdigest() == art["digest"]
        x = np.arange(N, dtype=np.float32) / N
        cst = np.random.default_rng(seed).standard_normal(N).astype(np.float32)
        fn = load_vmfb(blob, driver="local-task")[res.json()["functions"][0]]
        np.testing.assert_allclose(fn(x), x * cst + 1, rtol=1e-6, atol=1e-6)
