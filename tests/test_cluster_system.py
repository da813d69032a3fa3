"""The whole cluster as one system (tests/cluster.py: Redis with its append-only file, Swift's
S3 for the blobs, two `kiln serve --compile remote` replicas, two `kiln worker`s with the kernel
cache on), every feature at once, in the order a fleet meets them:

sibling models on two replicas share kernels through the workers (their compile log lines and
heartbeats count the hits) and a second target starts from the stored front end; weights apart
from code (``params: "external"``) cross the replicas; a tuning record posted on one replica is
served by the other (one trusted submitter, or two tokens agreeing); jobs on both replicas;
the SDK verifying signed provenance with the keys of ``GET /v1/keys``; a worker SIGKILLed
mid-compile (the other finishes the job); Redis restarting under jobs; a replica SIGTERMed
(scale-in) right after an object-store outage: the other keeps answering and the stopped one
has copied what it stored meanwhile. At the end every artifact and archive handed out is
fetched again and verified against its digest and its signature: nothing lost. Every
executable run is checked against numpy (CPU: local-task; Vulkan: lavapipe).
"""

from __future__ import annotations

import hashlib
import json
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from kiln import Client
from kiln.client.runtime import load_vmfb
from kiln.provenance import TUNING_PREDICATE_TYPE, KeyRing, verify_artifact
from tests.cluster import AOF, Cluster, kiln_cluster
from tests.test_cluster_jobs import chain, check_runs, job_request, wait_job
from tests.test_kernel_cache import inputs, reference
from tests.test_params_external import EXTERNAL
from tests.test_params_external import mlp as onnx_mlp
from tests.test_service_shared_kernels import A_LAYERS, B_LAYERS, compile_request

pytestmark = pytest.mark.redis

TOKENS = ("t1", "t2")
TRUSTED = "t3"  # KILN_TUNING_TRUSTED_TOKENS
RUNTIME = "3.13.0"

#: Every artifact and archive the cluster handed out: (kind, digest, key, target, graph digest).
HANDED: list[tuple[str, str, str | None, str | None, str]] = []


@pytest.fixture(scope="module")
def cl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with kiln_cluster(tmp_path_factory.mktemp("system"), tokens=TOKENS,
                      trusted=(TRUSTED,)) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def pems(cl: Cluster) -> list[str]:
    keys = cl.apis[0].client().get("/v1/keys").json()
    assert keys == cl.apis[1].client().get("/v1/keys").json()  # one signing key in the cluster
    return [k["public_key_pem"] for k in keys]


def note(answer: dict[str, Any]) -> dict[str, Any]:
    """Keep what a compile answer (or a job's result) handed out; return the answer."""
    for art in answer["artifacts"]:
        HANDED.append(("artifact", art["digest"], art["key"], art["target"],
                       answer["graph_digest"]))
    if answer.get("params"):
        HANDED.append(("params", answer["params"]["digest"], None, None, answer["graph_digest"]))
    return answer


def compile_onnx(c: httpx.Client, model: onnx.ModelProto) -> dict[str, Any]:
    r = c.post("/v1/compile", content=model.SerializeToString(),
               headers={"Content-Type": "application/octet-stream"},
               params={"format": "onnx", "target": ["cpu"], "params": "external"})
    assert r.status_code == 200, r.text
    return note(r.json())


def onnx_reference(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    w = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    h = np.maximum(x @ w["w1"] + w["b1"], 0)
    return np.asarray(h @ w["w2"] + w["b2"], np.float32)


def heartbeat_kernels(cl: Cluster) -> dict[str, int]:
    """Kernel-cache results in the live workers' heartbeats, summed."""
    rc = cl.rclient()
    out: dict[str, int] = {}
    try:
        for w in cl.workers:
            raw = rc.get(f"kiln:v1:cluster:worker:{w.name}")
            for k, n in (json.loads(raw)["kernels"] if raw else {}).items():
                out[k] = out.get(k, 0) + n
    finally:
        rc.close()
    return out


def until(what: str, check: Any, *, within: float = 30.0) -> Any:
    """Poll ``check()`` until it is truthy; fail saying ``what`` after ``within`` s."""
    deadline = time.monotonic() + within
    while not (got := check()):
        assert time.monotonic() < deadline, f"{what}: not within {within} s"
        time.sleep(0.1)
    return got


@pytest.mark.vulkan
def test_sibling_models_share_kernels_and_front_ends_through_the_workers(cl: Cluster) -> None:
    a, b = (srv.client() for srv in cl.apis)
    mark = cl.compile_mark()
    ra = a.post("/v1/compile", json=compile_request(A_LAYERS, "vulkan"))
    assert ra.status_code == 200, ra.text
    note(ra.json())
    assert cl.kernel_results(since=mark) == {"miss": len(A_LAYERS)}, cl.compile_lines(since=mark)

    mark = cl.compile_mark()
    rb = b.post("/v1/compile", json=compile_request(B_LAYERS, "vulkan"))
    assert rb.status_code == 200, rb.text
    note(rb.json())
    # On the other replica, through whichever worker: A's layers are hits, the head is new.
    assert cl.kernel_results(since=mark) == {"hit": len(A_LAYERS), "miss": 1}
    until("the heartbeats count the kernel hits",
          lambda: heartbeat_kernels(cl).get("hit", 0) >= len(A_LAYERS), within=10)

    # A's graph for a second target: its input phase comes from the front-end cache.
    mark = cl.compile_mark()
    rc = b.post("/v1/compile", json=compile_request(A_LAYERS, "cuda:sm_80"))
    assert rc.status_code == 200, rc.text
    note(rc.json())
    assert cl.frontend_results(since=mark) == {"hit": 1}

    # B's executable (A's kernels and its own head) computes the MLP on lavapipe.
    art = rb.json()["artifacts"][0]
    mod = load_vmfb(b.get(art["url"]).content, driver="vulkan")
    xs = inputs(B_LAYERS)
    np.testing.assert_allclose(np.asarray(mod.main(*xs)), reference(B_LAYERS, xs),
                               rtol=1e-4, atol=1e-4)
    assert sum(s.metric("kiln_compiles_total") for s in cl.apis) == 0  # the workers compiled
    assert not any(e["outcome"] != "ok" or "fallback" in e.get("kernels", {})
                   for e in cl.compile_lines())


def test_weights_apart_from_code_cross_the_replicas(cl: Cluster, pems: list[str],
                                                    tmp_path: Path) -> None:
    a, b = (srv.client() for srv in cl.apis)
    first = compile_onnx(a, onnx_mlp(1))
    mark = cl.compile_mark()
    second = compile_onnx(b, onnx_mlp(2))  # same code, other weights: no compile
    assert cl.compile_lines(since=mark) == []
    assert all(x["cached"] for x in second["artifacts"])
    assert [x["digest"] for x in first["artifacts"]] == [x["digest"] for x in second["artifacts"]]
    assert first["params"]["digest"] != second["params"]["digest"]
    # a's archive from b, b's from a.
    for c, p in ((b, first["params"]), (a, second["params"])):
        r = c.get(p["url"])
        assert r.status_code == 200 and r.content[:4] == b"IRPA"
        assert "sha256:" + hashlib.sha256(r.content).hexdigest() == p["digest"]
    x = np.random.default_rng(3).standard_normal((5, 64)).astype(np.float32)
    with Client(cl.apis[1].url, token=TOKENS[1], trusted_keys=pems,
                cache_dir=tmp_path / "sdk") as sdk:
        for seed in (1, 2):
            mod = sdk.load(onnx_mlp(seed), device="cpu:x86_64:generic", options=EXTERNAL)
            assert mod.params is not None
            np.testing.assert_allclose(mod.mlp(x), onnx_reference(onnx_mlp(seed), x),
                                       rtol=1e-4, atol=1e-4)


def _tuning(graph_hex: str, speedup: float) -> dict[str, Any]:
    return {"graph_digest": f"sha256:{graph_hex}", "target": "cpu", "preset": "baseline",
            "times": {"default": {"median_ms": 1.0, "samples": 5},
                      "baseline": {"median_ms": 1.0 / speedup, "samples": 5}},
            "device": {"kind": "cpu", "name": "Test CPU 9000"}}


def test_a_tuning_record_posted_on_one_replica_is_served_by_the_other(
    cl: Cluster, pems: list[str]
) -> None:
    a, b = cl.apis
    headers = {"X-Kiln-Runtime": RUNTIME}
    ring = KeyRing.from_pems(pems)

    def choice(srv: Any, graph_hex: str) -> Any:
        r = srv.client().get(f"/v1/tuning/{graph_hex}", params={"target": "cpu",
                                                                "runtime": RUNTIME})
        assert r.status_code == 200, r.text
        doc = r.json()
        if doc["choice"] is not None:  # signed by the cluster's key
            stmt = ring.open(doc["provenance"], predicate_type=TUNING_PREDICATE_TYPE)
            assert stmt["predicate"]["choice"] == doc["choice"]
        return doc["choice"]

    # One trusted submitter counts alone.
    trusted = "cd" * 32
    r = a.client(token=TRUSTED).post("/v1/tuning", json=_tuning(trusted, 1.25), headers=headers)
    assert r.status_code == 200, r.text
    assert choice(b, trusted)["preset"] == "baseline"
    # Two ordinary tokens must agree: one on each replica.
    agreed = "ce" * 32
    r = a.client(token=TOKENS[0]).post("/v1/tuning", json=_tuning(agreed, 1.25), headers=headers)
    assert r.status_code == 200, r.text
    assert choice(b, agreed) is None
    r = b.client(token=TOKENS[1]).post("/v1/tuning", json=_tuning(agreed, 1.3), headers=headers)
    assert r.status_code == 200, r.text
    assert choice(a, agreed)["preset"] == "baseline"


def test_jobs_on_both_replicas_and_the_sdk_verifying_provenance(
    cl: Cluster, pems: list[str], tmp_path: Path
) -> None:
    a, b = (srv.client() for srv in cl.apis)
    seeds = (0.125, 0.25, 0.375)
    submitted = []
    for i in range(6):
        r = (a, b)[i % 2].post("/v1/jobs", json=job_request(1, seeds[i % 3]))
        assert r.status_code == 202, r.text
        submitted.append((seeds[i % 3], r.json()["id"]))
    keys: dict[float, set[str]] = {}
    for seed, job_id in submitted:
        doc = wait_job([a, b], job_id)
        assert doc["state"] == "done", doc
        keys.setdefault(seed, set()).add(note(doc["result"])["artifacts"][0]["key"])
    assert all(len(k) == 1 for k in keys.values())
    for i, seed in enumerate(seeds):
        doc = wait_job([b, a], submitted[i][1])
        check_runs((a, b)[i % 2], doc["result"]["artifacts"][0], 1, seed)
    # The SDK trusts the keys of GET /v1/keys and checks each signature before keeping bytes.
    with Client(cl.apis[1].url, token=TOKENS[0], trusted_keys=pems,
                cache_dir=tmp_path / "sdk") as sdk:
        data, rec = sdk.artifact(chain(1, seeds[0]), "cpu")
        assert hashlib.sha256(data).hexdigest() == rec["digest"].removeprefix("sha256:")
        job = sdk.submit(chain(2, 0.5), targets=["cpu"])
        res = sdk.wait(job)
        note(res.to_json())
        blob = sdk.fetch(res.artifacts[0].digest)
        verify_artifact(sdk.trusted, blob, sdk.provenance(res.artifacts[0].digest,
                                                          key=res.artifacts[0].key),
                        target=res.artifacts[0].target, graph_digest=res.graph_digest)


def _busy(cl: Cluster, name: str) -> bool:
    """Whether worker ``name``'s heartbeat says a compile runs in its pool."""
    rc = cl.rclient()
    try:
        raw = rc.get(f"kiln:v1:cluster:worker:{name}")
    finally:
        rc.close()
    return bool(raw) and int(json.loads(raw)["busy"]) > 0


def test_a_worker_killed_mid_compile_and_the_other_finishes_the_job(cl: Cluster) -> None:
    a, b = (srv.client() for srv in cl.apis)
    seen = [w.received() for w in cl.workers]
    r = a.post("/v1/jobs", json=job_request(12, 0.875))
    assert r.status_code == 202, r.text
    victim = until("a worker took the job", lambda: next(
        (w for w, n in zip(cl.workers, seen, strict=True) if w.received() > n), None))
    until("the victim's compile runs", lambda: _busy(cl, victim.name), within=60)
    victim.proc.kill()
    victim.proc.wait(10)
    until("the killed worker's process group is gone", lambda: not victim.group_alive(),
          within=10)
    doc = wait_job([b, a], r.json()["id"])
    assert doc["state"] == "done", doc
    note(doc["result"])
    check_runs(b, doc["result"]["artifacts"][0], 12, 0.875)
    survivor = next(w for w in cl.workers if w is not victim)
    assert survivor.events("requeued"), survivor.log()[-3000:]
    cl.workers.remove(victim)
    cl.retired.append(victim)
    cl.add_worker(f"{victim.name}-2")  # scale back to two


def test_redis_restarts_under_running_jobs(cl: Cluster) -> None:
    srv = cl.apis[1]
    c = srv.client()
    earlier = next(h for h in HANDED if h[0] == "artifact" and h[3] == "cpu:x86_64:generic")
    jobs = [c.post("/v1/jobs", json=job_request(3, s)).json()["id"] for s in (1.5, 1.625)]
    cl.redis.kill()
    until("the replica notices Redis is gone", lambda: c.get("/readyz").status_code == 503)
    cl.redis.start(*AOF)
    for job_id, seed in zip(jobs, (1.5, 1.625), strict=True):
        doc = wait_job([c, cl.apis[0].client()], job_id)
        assert doc["state"] == "done", doc
        check_runs(c, note(doc["result"])["artifacts"][0], 3, seed)
    rc = cl.rclient()
    assert rc.exists(f"kiln:v1:ac:{earlier[2]}")  # the append-only file kept the records
    rc.close()


def test_scale_in_after_an_object_store_outage(cl: Cluster) -> None:
    a, b = cl.apis
    ca, cb = a.client(), b.client()
    warm = compile_onnx(cb, onnx_mlp(3))  # b holds the code-only executable on its disk
    assert cb.get(warm["artifacts"][0]["url"]).status_code == 200
    cl.swift.stop()
    during = compile_onnx(cb, onnx_mlp(4))  # its new archive: on b's disk alone, noted
    assert list(b.cache_dir.rglob("remote-pending/*"))
    cl.swift.start()
    # Scale-in: b stops (SIGTERM) while a keeps answering.
    answers: list[int] = []
    stop = threading.Event()

    def traffic() -> None:
        while not stop.is_set():
            answers.append(ca.post("/v1/compile", json=job_request(1, 0.125)).status_code)

    t = threading.Thread(target=traffic)
    t.start()
    try:
        # uvicorn re-raises the SIGTERM it handled once shut down cleanly
        assert b.stop(timeout=30) in (0, -signal.SIGTERM), b.log_tail()
    finally:
        stop.set()
        t.join(60)
    assert "Application shutdown complete" in b.log_tail(100_000)
    assert answers and set(answers) == {200}, answers
    assert not list(b.cache_dir.rglob("remote-pending/*")), "b left outage entries behind"
    r = ca.get(during["params"]["url"])  # what b stored during the outage, served by a
    assert r.status_code == 200
    assert "sha256:" + hashlib.sha256(r.content).hexdigest() == during["params"]["digest"]


def test_nothing_handed_out_is_lost_or_unverifiable(cl: Cluster, pems: list[str],
                                                    tmp_path: Path) -> None:
    survivor = next(s for s in cl.apis if s.proc.poll() is None)
    bad: list[str] = []
    with Client(survivor.url, token=TOKENS[0], trusted_keys=pems,
                cache_dir=tmp_path / "sdk") as sdk:
        assert sdk.trusted is not None
        for kind, digest, key, target, graph_digest in HANDED:
            try:
                if kind == "params":
                    sdk.fetch_params(digest)  # sha256 and signature checked
                    continue
                blob = sdk.fetch(digest)
                verify_artifact(sdk.trusted, blob, sdk.provenance(digest, key=key),
                                target=target, graph_digest=graph_digest)
            except Exception as exc:
                bad.append(f"{kind} {digest[:20]} ({target}): {type(exc).__name__}: {exc}")
    assert len(HANDED) >= 15
    assert bad == []
