"""Idle tuning (service/idle_tuning.py) against a real ``kiln serve``: after a client compiles a
small CNN for a CPU this host can execute, the idle server tunes it itself (giving up when a
compile request arrives, and taking it up again when idle) and keeps a record signed by the
server, and the next client gets the choice without a tuning run of its own; a target this host
cannot execute (aarch64) is never tuned, nor anything with the setting off."""

from __future__ import annotations

import base64
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kiln import Client
from kiln.client.sdk import runtime_version
from kiln.service.idle_tuning import SUBMITTER, host_can_execute
from tests.graphs import LINALG
from tests.server import KilnServer, kiln_server
from tests.test_presets import onnx_cnn
from tests.test_tuning_records import TimingCalls, evidence

HASWELL = "cpu:x86_64:haswell"
ARM = "cpu:aarch64:neoverse-n1"


def compile_cnn(srv: KilnServer, targets: list[str], runtime: str) -> str:
    """Compile ``onnx_cnn()`` for ``targets``; its graph digest's hex."""
    r = srv.client().post("/v1/compile", headers={"X-Kiln-Runtime": runtime}, json={
        "graph": {"format": "onnx", "encoding": "base64",
                  "data": base64.b64encode(onnx_cnn()).decode()}, "targets": targets})
    assert r.status_code == 200, r.text
    assert [a["target"] for a in r.json()["artifacts"]] == targets
    return str(r.json()["graph_digest"]).removeprefix("sha256:")


def wait_for(what: Callable[[], Any], *, timeout: float, every: float = 0.5) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = what()
        if got:
            return got
        time.sleep(every)
    return what()


@pytest.mark.parametrize("fixture", ["zen4-epyc-9r14", "sapphirerapids-xeon-8480", "this host"])
def test_an_avx512_host_of_any_vendor_executes_lower_x86_levels(fixture: str) -> None:
    from kiln.client.resolver import detect_cpu
    from tests.test_cpu_detect import cpuinfo

    host = detect_cpu() if fixture == "this host" else detect_cpu(cpuinfo(fixture),
                                                                  machine="x86_64")
    if host.arch != "x86_64" or "avx512f" not in host.isa:
        pytest.skip(f"needs an x86-64 host with AVX-512, not {host.target}")
    for target in ("cpu:x86_64:x86-64-v2", HASWELL, "cpu:x86_64:skylake-avx512",
                   "cpu:x86_64:generic", host.target):
        assert host_can_execute(target, host=host), target
    assert not host_can_execute(ARM, host=host)
    assert not host_can_execute("cpu:riscv64:generic-rv64:+a,+c,+d,+f,+m", host=host)
    assert host_can_execute("cpu:x86_64:haswell:+amx-tile", host=host) == ("amx-tile" in host.isa)
    assert not host_can_execute("vulkan:generic", host=host)


def test_the_idle_server_tunes_what_it_can_execute_and_serves_the_choice(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    runtime = runtime_version()
    assert runtime is not None
    if not host_can_execute(HASWELL):
        pytest.skip("this host cannot execute haswell (x86-64-v3) code")
    with kiln_server(tmp_path_factory, workers=1, idle_tuning=1, idle_tuning_after=1,
                     access_log="false") as srv:
        graph_hex = compile_cnn(srv, [HASWELL, ARM], runtime)
        assert srv.metric("kiln_idle_tuning_candidates") >= 1  # remembered before the answer
        # A compile request while it tunes: the tuning is given up, and taken up again later.
        assert wait_for(lambda: "idle tuning: tuning" in srv.log_tail(100_000), timeout=30,
                        every=0.05), srv.log_tail()
        r = srv.client().post("/v1/compile", json={"graph": {"format": "mlir", "data": LINALG},
                                                   "targets": ["vulkan"]})
        assert r.status_code == 200, r.text
        assert wait_for(lambda: srv.metric("kiln_idle_tunings_total", result="preempted"),
                        timeout=30) == 1
        doc = wait_for(lambda: evidence(srv, graph_hex, HASWELL, runtime)["records"]
                       and evidence(srv, graph_hex, HASWELL, runtime), timeout=60)
        assert doc and doc["records"], srv.log_tail()
        (rec,) = doc["records"]
        assert rec["submitter"] == SUBMITTER and rec["device"]["kind"] == "cpu"
        assert len(rec["times"]) >= 2 and all(
            t["median_ms"] > 0 and t["samples"] >= 3 for t in rec["times"].values())
        assert doc["choice"]["preset"] in rec["times"] and doc["provenance"] is not None
        assert srv.metric("kiln_idle_tunings_total", result="tuned") == 1
        assert srv.metric("kiln_idle_tunings_total", result="skipped") == 1  # the aarch64 one
        assert evidence(srv, graph_hex, ARM, runtime)["records"] == []
        assert re.search(r'id="idle-tuned"[^>]*>1<', srv.client().get("/").text)

        # The next client: the server's choice, no timing run here.
        timing = TimingCalls(monkeypatch)
        with Client(srv.url, cache_dir=tmp_path / "c2") as c2:
            got = c2.tune(onnx_cnn(), HASWELL)
        assert (got.source, got.preset, got.compiles, timing.calls) == (
            "fleet", doc["choice"]["preset"], 0, 0)

        # Nothing is left to tune (the aarch64 target was judged once and dropped): no more
        # tunings can come.
        assert srv.metric("kiln_idle_tuning_candidates") == 0
        assert evidence(srv, graph_hex, ARM, runtime)["records"] == []
        assert srv.metric("kiln_idle_tunings_total", result="tuned") == 1
        assert srv.metric("kiln_idle_tunings_total", result="failed") == 0


def test_with_the_setting_off_nothing_is_tuned(tmp_path_factory: pytest.TempPathFactory) -> None:
    runtime = runtime_version()
    assert runtime is not None
    with kiln_server(tmp_path_factory, workers=1, idle_tuning_after=1,
                     access_log="false") as srv:
        graph_hex = compile_cnn(srv, [HASWELL], runtime)
        # Nothing was remembered (an enabled tuner remembers before answering): nothing can be
        # tuned later.
        assert srv.metric("kiln_idle_tuning_candidates") == 0
        assert evidence(srv, graph_hex, HASWELL, runtime)["records"] == []
        assert srv.metric("kiln_idle_tunings_total") == 0


def test_remembered_graphs_and_started_tunings_are_bounded(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from kiln.service.idle_tuning import IdleTuner
    from kiln.service.settings import Settings

    def tuner(**settings: Any) -> IdleTuner:
        return IdleTuner(Settings(idle_tuning=True, **settings), pipeline=SimpleNamespace(),
                         tuning=SimpleNamespace(), tmp_root=tmp_path)  # type: ignore[arg-type]

    def answer(i: int, *targets: str) -> dict[str, Any]:
        return {"graph_digest": f"sha256:{i:064x}", "artifacts": [{"target": t}
                                                                   for t in targets]}

    t = tuner(idle_tuning_memory_bytes=100, idle_tuning_per_hour=2)
    for i in range(3):  # 40 bytes each: the oldest goes
        t.remember(bytes(40), format="mlir", options=None, runtime="3.13.0",
                   answer=answer(i, HASWELL, "vulkan:generic"))
    t.remember(bytes(101), format="mlir", options=None, runtime="3.13.0",
               answer=answer(9, HASWELL))  # larger than all of it: never held
    t.remember(bytes(10), format="onnx", options={"params": "external"}, runtime="3.13.0",
               answer=answer(8, HASWELL))  # the weights apart: a client tunes it with them
    assert [c.graph_digest[-1] for c in t._candidates.values()] == ["1", "2"]
    assert t._budget_left()
    t._started.extend([time.monotonic(), time.monotonic()])
    assert not t._budget_left()  # two started this hour
    t._started[0] -= 3601
    assert t._budget_left()
    # Off unless it can see every compile: one HTTP worker compiling locally.
    assert not tuner(http_workers=2).enabled
    assert not IdleTuner(Settings(), pipeline=SimpleNamespace(), tuning=SimpleNamespace(),
                         tmp_root=tmp_path).enabled  # type: ignore[arg-type]
