"""Jobs and cluster mode with real processes: a redis-server (append-only file on), a Swift
with s3api holding the executables (when its Debian packages are installed, as bootstrap does;
else the blobs stay in Redis), two `kiln serve --compile remote` replicas and two `kiln worker`s,
each with its own disk cache.

What a user of the cluster would notice: concurrent jobs for the same graphs compile once each
and give executables that compute the right numbers; a worker SIGKILLed mid-compile loses no
job (another worker finishes it) and leaves no compiler behind; the replica that accepted a job
can die and the other replica finishes it and serves its result; Redis can restart under
running jobs without losing an artifact; jobs work without Redis too, through the SDK and
`kiln build --server`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import hashlib
import io
import os
import re
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
import redis

from kiln.client.runtime import load_vmfb
from tests.cluster import AOF, VISIBILITY
from tests.cluster import ClusterWorker as Worker
from tests.conftest_redis import RedisServer, free_port
from tests.server import KilnServer, kiln_server
from tests.swift import SwiftServer, swift_missing


def chain(layers: int, seed: float) -> str:
    """``layers`` x (matmul by ``w`` from ``seed``, scale, tanh) on 16x32 activations: more
    layers, a longer compile; another seed, another graph."""
    out = ["#id = affine_map<(i, j) -> (i, j)>",
           "func.func @main(%x: tensor<16x32xf32>, %w: tensor<32x32xf32>) -> tensor<16x32xf32> {",
           f"  %seed = arith.constant {seed!r} : f32",
           "  %empty = tensor.empty() : tensor<16x32xf32>",
           "  %fill = linalg.fill ins(%seed : f32) outs(%empty : tensor<16x32xf32>) "
           "-> tensor<16x32xf32>"]
    cur = "%x"
    for k in range(layers):
        out += [
            f"  %mm{k} = linalg.matmul ins({cur}, %w : tensor<16x32xf32>, tensor<32x32xf32>) "
            f"outs(%fill : tensor<16x32xf32>) -> tensor<16x32xf32>",
            f"  %r{k} = linalg.generic {{indexing_maps = [#id, #id], iterator_types = "
            f"[\"parallel\", \"parallel\"]}} ins(%mm{k} : tensor<16x32xf32>) "
            f"outs(%empty : tensor<16x32xf32>) {{",
            "  ^bb0(%a: f32, %o: f32):",
            f"    %c = arith.constant {0.5 + k / 1000!r} : f32",
            "    %s = arith.mulf %a, %c : f32",
            "    %t = math.tanh %s : f32",
            "    linalg.yield %t : f32",
            "  } -> tensor<16x32xf32>",
        ]
        cur = f"%r{k}"
    out.append(f"  return {cur} : tensor<16x32xf32>\n}}")
    return "\n".join(out)


def chain_reference(layers: int, seed: float, x: np.ndarray, w: np.ndarray) -> np.ndarray:
    cur = x
    for k in range(layers):
        cur = np.tanh((np.float32(seed) + cur @ w) * np.float32(0.5 + k / 1000))
    return cur.astype(np.float32)


def job_request(layers: int, seed: float, targets: tuple[str, ...] = ("cpu",)) -> dict[str, Any]:
    return {"graph": {"format": "mlir", "data": chain(layers, seed)}, "targets": list(targets)}


@dataclass
class Cluster:
    redis: RedisServer
    apis: list[KilnServer]
    workers: list[Worker]
    key_file: Path
    root: Path
    swift: SwiftServer | None = None
    s3: tuple[str, dict[str, str]] | None = None

    def compiles(self) -> int:
        """Compiler runs of every worker (they count in Redis too; the logs are the proof)."""
        return sum(w.log().count('"event": "compile"') for w in self.workers)

    def rclient(self) -> redis.Redis:
        return redis.Redis.from_url(self.redis.url)


BUCKET = "kiln"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    binary = shutil.which("redis-server")
    assert binary, "redis-server not on PATH (scripts/bootstrap.sh installs it)"
    root = tmp_path_factory.mktemp("cluster")
    rs = RedisServer(binary, root / "redis", free_port())
    rs.start(*AOF)
    key_file = root / "signing-key.pem"
    common: dict[str, Any] = {
        "redis_url": rs.url, "compile": "remote", "workers": 1, "access_log": "false",
        "visibility_timeout": VISIBILITY, "signing_key_file": key_file}
    with contextlib.ExitStack() as stack:
        stack.callback(rs.kill)
        swift, s3 = None, None
        if not swift_missing():
            swift = SwiftServer(root / "swift")
            swift.start()
            stack.callback(swift.close)
            swift.create_bucket(BUCKET)
            s3 = (f"s3://{BUCKET}/cluster", swift.env())
            common.update(s3_url=s3[0], s3_endpoint_url=swift.endpoint_url)
            saved = {k: os.environ.get(k) for k in s3[1]}  # the replicas inherit AWS_*
            os.environ.update({k: v for k, v in s3[1].items() if k.startswith("AWS_")})
            stack.callback(lambda: [os.environ.pop(k, None) if v is None else
                                    os.environ.__setitem__(k, v) for k, v in saved.items()])
        # Replicas and workers start at once (each takes seconds on a busy machine).
        cms = [kiln_server(root / f"api-{n}", **common) for n in "ab"]
        workers: list[Worker] = []
        stack.callback(lambda: [w.stop() for w in workers])
        with concurrent.futures.ThreadPoolExecutor(4) as ex:
            api_futs = [ex.submit(cm.__enter__) for cm in cms]
            worker_futs = [ex.submit(Worker.start, root / f"worker-{n}", f"w{n}",
                                     redis_url=rs.url, key_file=key_file, s3=s3,
                                     kernel_cache=None) for n in (1, 2)]
            for cm, fut in zip(cms, api_futs, strict=True):
                with contextlib.suppress(Exception):
                    fut.result()
                    stack.push(cm.__exit__)
            workers += [f.result() for f in worker_futs]
            apis = [f.result() for f in api_futs]
        yield Cluster(rs, apis, workers, key_file, root, swift, s3)


def wait_job(clients: list[httpx.Client], job_id: str, *, timeout: float = 150) -> dict[str, Any]:
    """Long-poll the job on whichever replica answers, through 503s and dead replicas."""
    deadline = time.monotonic() + timeout
    i = 0
    while time.monotonic() < deadline:
        c = clients[i % len(clients)]
        try:
            r = c.get(f"/v1/jobs/{job_id}", params={"wait": 20})
        except httpx.HTTPError:
            i += 1
            time.sleep(0.2)
            continue
        if r.status_code == 503:
            time.sleep(0.5)
            continue
        assert r.status_code == 200, r.text
        doc = r.json()
        if doc["state"] in ("done", "failed"):
            return doc
    raise AssertionError(f"job {job_id} not finished after {timeout} s")


def check_runs(client: httpx.Client, art: dict[str, Any], layers: int, seed: float) -> None:
    data = client.get(art["url"]).content
    mod = load_vmfb(data, driver="local-task")
    rng = np.random.default_rng(int(seed * 100))
    x = rng.standard_normal((16, 32), dtype=np.float32)
    w = (rng.standard_normal((32, 32), dtype=np.float32) / 8).astype(np.float32)
    np.testing.assert_allclose(mod.main(x, w), chain_reference(layers, seed, x, w),
                               rtol=1e-4, atol=1e-5)


@pytest.mark.redis
def test_32_jobs_for_8_graphs_compile_8_times_and_compute_right(cluster: Cluster) -> None:
    a, b = (srv.client() for srv in cluster.apis)
    before = cluster.compiles()
    seeds = [i / 8 for i in range(8)]

    def submit(i: int) -> tuple[int, str]:
        r = (a, b)[i % 2].post("/v1/jobs", json=job_request(1, seeds[i % 8]))
        assert r.status_code == 202, r.text
        assert r.headers["location"] == f"/v1/jobs/{r.json()['id']}"
        return i % 8, r.json()["id"]

    with concurrent.futures.ThreadPoolExecutor(32) as ex:
        submitted = list(ex.map(submit, range(32)))
        docs = list(ex.map(lambda s: (s[0], wait_job([a, b], s[1])), submitted))
    keys: dict[int, set[str]] = {}
    for g, doc in docs:
        assert doc["state"] == "done", doc
        assert doc["progress"] == {"targets_done": 1, "targets_total": 1}
        art = doc["result"]["artifacts"][0]
        assert art["target"] == "cpu:x86_64:generic" and art["runtime"]
        keys.setdefault(g, set()).add(art["key"])
    assert all(len(k) == 1 for k in keys.values()) and len(keys) == 8
    assert cluster.compiles() - before == 8
    # Identical jobs in flight were one job: fewer ids than submissions.
    assert len({jid for _g, jid in submitted}) < 32
    for g, doc in docs[:8]:
        check_runs((b, a)[g % 2], doc["result"]["artifacts"][0], 1, seeds[g])
    # The replicas themselves compiled nothing.
    assert sum(srv.metric("kiln_compiles_total") for srv in cluster.apis) == 0
    # /v1/compile keeps working, answered from the shared cache.
    r = b.post("/v1/compile", json=job_request(1, seeds[3]))
    assert r.status_code == 200 and r.json()["artifacts"][0]["cached"] is True


@pytest.mark.redis
# A bench suite (`scripts/test.sh -m bench`): the default run had grown past its 15 minutes.
@pytest.mark.slow
@pytest.mark.bench
def test_a_worker_killed_mid_compile_loses_no_job_and_leaves_no_compiler(
    cluster: Cluster,
) -> None:
    a, b = (srv.client() for srv in cluster.apis)
    seen = [w.received() for w in cluster.workers]
    r = a.post("/v1/jobs", json=job_request(12, 0.375))
    assert r.status_code == 202
    deadline = time.monotonic() + 60
    victim = None
    while victim is None:
        assert time.monotonic() < deadline, "no worker took the job"
        for w, n in zip(cluster.workers, seen, strict=True):
            if w.received() > n:
                victim = w
        time.sleep(0.05)
    time.sleep(0.5)  # into the compile
    t_kill = time.monotonic()
    victim.proc.kill()
    victim.proc.wait(10)
    doc = wait_job([b, a], r.json()["id"])
    took = time.monotonic() - t_kill
    assert doc["state"] == "done", doc
    key = doc["result"]["artifacts"][0]["key"]
    survivor = next(w for w in cluster.workers if w is not victim)
    assert survivor.finished(key) and not victim.finished(key)
    check_runs(b, doc["result"]["artifacts"][0], 12, 0.375)
    assert took < VISIBILITY / 2, took  # the heartbeat reaper, not the visibility timeout
    assert '"event": "requeued"' in survivor.log()
    # The killed worker's whole process group (compile workers, compilers) is gone.
    deadline = time.monotonic() + 5
    while victim.group_alive():
        assert time.monotonic() < deadline, "processes of the killed worker survived it"
        time.sleep(0.1)
    # A fresh worker takes its place for the tests below.
    cluster.workers[cluster.workers.index(victim)] = Worker.start(
        cluster.root / f"{victim.name}-2", f"{victim.name}b", redis_url=cluster.redis.url,
        key_file=cluster.key_file, s3=cluster.s3, kernel_cache=None)


@pytest.mark.redis
# A bench suite (`scripts/test.sh -m bench`): the default run had grown past its 15 minutes.
@pytest.mark.slow
@pytest.mark.bench
def test_the_replica_that_accepted_a_job_dies_and_the_other_finishes_it(
    cluster: Cluster,
) -> None:
    accepting, other = cluster.apis
    r = accepting.client().post("/v1/jobs", json=job_request(6, 0.625, ("cpu", "vulkan")))
    assert r.status_code == 202
    job_id = r.json()["id"]
    accepting.proc.kill()
    accepting.proc.wait(10)
    c = other.client()
    doc = wait_job([c], job_id)
    assert doc["state"] == "done", doc
    assert doc["progress"] == {"targets_done": 2, "targets_total": 2}
    arts = {a["target"]: a for a in doc["result"]["artifacts"]}
    assert set(arts) == {"cpu:x86_64:generic", "vulkan:generic"}
    check_runs(c, arts["cpu:x86_64:generic"], 6, 0.625)
    assert c.get(arts["vulkan:generic"]["url"]).status_code == 200
    assert f'"msg":"job taken over from a stopped replica","job":"{job_id}"' in other.log_tail(
        200_000)


@pytest.mark.redis
def test_redis_restart_loses_no_artifact_and_jobs_resume(cluster: Cluster) -> None:
    srv = cluster.apis[1]
    c = srv.client()
    earlier = c.post("/v1/compile", json=job_request(1, 0.0)).json()["artifacts"][0]
    jobs = [c.post("/v1/jobs", json=job_request(3, s)).json()["id"] for s in (1.5, 1.625)]
    time.sleep(0.5)
    cluster.redis.kill()  # down for two seconds: replicas and workers meet the outage
    time.sleep(2)
    cluster.redis.start(*AOF)
    docs = [wait_job([c], j) for j in jobs]
    for d, s in zip(docs, (1.5, 1.625), strict=True):
        assert d["state"] == "done", d
        check_runs(c, d["result"]["artifacts"][0], 3, s)
    # What was compiled before the restart is still in the shared stores: its record in Redis,
    # its blob in the bucket (Redis holds no executable then) or else in Redis.
    rc = cluster.rclient()
    hexd = earlier["digest"].split(":")[1]
    assert rc.exists(f"kiln:v1:ac:{earlier['key']}")
    if cluster.swift is not None:
        obj = cluster.swift.client().get_object(Bucket=BUCKET, Key=f"cluster/v1/cas/{hexd}")
        assert hashlib.sha256(obj["Body"].read()).hexdigest() == hexd
        assert not list(rc.scan_iter("kiln:v1:cas:*"))
    else:
        assert rc.exists(f"kiln:v1:cas:{hexd}")


@pytest.mark.redis
def test_no_compiler_outlives_the_cluster(cluster: Cluster) -> None:
    groups = [w.proc.pid for w in cluster.workers]
    for w in cluster.workers:
        w.stop()
    deadline = time.monotonic() + 10
    for pgid in groups:
        while True:
            try:
                os.killpg(pgid, 0)
            except ProcessLookupError:
                break
            assert time.monotonic() < deadline, f"process group {pgid} survived its worker"
            time.sleep(0.1)


def test_jobs_without_redis_through_the_sdk_and_kiln_build(tmp_path: Path) -> None:
    from kiln.cli import main
    from kiln.client import AsyncClient, Client

    with kiln_server(tmp_path / "solo", workers=1, access_log="false") as srv:
        c = srv.client()
        first = c.post("/v1/jobs", json=job_request(2, 2.5)).json()
        twin = c.post("/v1/jobs", json=job_request(2, 2.5)).json()
        assert twin["id"] == first["id"]  # an identical job in flight is the same job
        assert wait_job([c], first["id"])["state"] == "done"
        assert c.get("/v1/jobs/" + "0" * 32).json()["error"]["code"] == "not_found"
        assert c.get("/v1/jobs/nope").status_code == 404
        assert c.get(f"/v1/jobs/{first['id']}", params={"wait": 61}).status_code == 400
        bad = c.post("/v1/jobs", json={**job_request(1, 0.0), "targets": ["cpu:nope"]})
        assert bad.status_code == 400 and bad.json()["error"]["code"] == "unsupported_target"
        # The raw form of /v1/compile works for jobs too.
        raw = c.post("/v1/jobs", params={"format": "mlir", "target": "cpu"},
                     content=chain(2, 2.5).encode(),
                     headers={"content-type": "application/octet-stream"})
        assert raw.status_code == 202, raw.text
        done = wait_job([c], raw.json()["id"])
        assert done["result"]["artifacts"][0]["cached"] is True  # the first job's executable

        seen: list[tuple[str, int, int]] = []
        with Client(srv.url, cache_dir=tmp_path / "sdk-cache") as client:
            job = client.submit(chain(2, 2.75), targets=["cpu", "vulkan"])
            res = client.wait(job, on_progress=lambda j: seen.append(
                (j.state, j.targets_done, j.targets_total)))
        assert {a.target for a in res.artifacts} == {"cpu:x86_64:generic", "vulkan:generic"}
        assert seen[-1] == ("done", 2, 2) and seen[0][0] in ("queued", "running", "done")

        async def via_async() -> Any:
            async with AsyncClient(srv.url, cache_dir=tmp_path / "sdk-cache") as ac:
                job = await ac.submit(chain(2, 2.75), targets=["cpu"])
                return await ac.wait(job.id)

        again = asyncio.run(via_async())
        assert again.artifacts[0].cached is True

        (tmp_path / "g.mlir").write_text(chain(2, 3.0))
        (tmp_path / "kiln.toml").write_text(
            '[[models]]\nname = "g"\npath = "g.mlir"\ntargets = ["cpu", "vulkan"]\n')
        out, err = io.StringIO(), io.StringIO()
        code = main(["build", str(tmp_path / "kiln.toml"), "-o", str(tmp_path / "out"),
                     "--server", srv.url], stdout=out, stderr=err)
        assert code == 0, err.getvalue()
        assert re.search(r"2 built", out.getvalue())
        assert (tmp_path / "out" / "manifest.json").exists()
