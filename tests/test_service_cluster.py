"""Two `kiln serve` replicas sharing one real redis-server (each with its own disk cache): what one
compiled, the other serves without compiling; a cold stampede across both compiles once; Redis
going away does not fail requests."""

from __future__ import annotations

import concurrent.futures
import time
from pathlib import Path

import numpy as np
import pytest
import redis

from kiln.cache.redis import DEFAULT_PREFIX
from kiln.client.runtime import load_vmfb
from tests.conftest_redis import RedisServer
from tests.graphs import LINALG
from tests.server import kiln_server


def _req(i: int) -> dict[str, object]:
    src = LINALG.replace("%zero = arith.constant 0.0", f"%zero = arith.constant {i}.25e-2")
    return {"graph": {"format": "mlir", "encoding": "utf-8", "data": src}, "targets": ["cpu"]}


def in_redis(url: str, keys: list[str], *, within: float) -> bool:
    """Whether the records of every compile key in ``keys`` are in Redis before ``within``
    seconds have passed (a record is written after its blob)."""
    client = redis.Redis.from_url(url)
    deadline = time.monotonic() + within
    try:
        while True:
            try:
                if all(client.exists(f"{DEFAULT_PREFIX}ac:{k}") for k in keys):
                    return True
            except redis.RedisError:
                pass
            if time.monotonic() > deadline:
                return False
            time.sleep(0.1)
    finally:
        client.close()


def test_replicas_share_compiles_through_redis(redis_server: RedisServer, tmp_path: Path) -> None:
    common = {"redis_url": redis_server.url, "workers": 1, "access_log": "false"}
    with kiln_server(tmp_path / "a", **common) as a, kiln_server(tmp_path / "b", **common) as b:
        ca, cb = a.client(), b.client()
        first = ca.post("/v1/compile", json=_req(1)).json()["artifacts"][0]
        assert first["cached"] is False
        second = cb.post("/v1/compile", json=_req(1)).json()["artifacts"][0]
        assert second["cached"] is True and second["digest"] == first["digest"]
        assert b.metric("kiln_compiles_total", kind="cpu") == 0
        data = cb.get(second["url"]).content
        mod = load_vmfb(data, driver="local-task")
        x, w, bias = np.ones((4, 8), np.float32), np.full((8, 3), 0.5, np.float32), np.zeros(3, np.float32)
        # _req(1) sets the fill/relu constant to 0.0125: the matmul accumulates onto it.
        np.testing.assert_allclose(mod.main(x, w, bias), np.full((4, 3), 4.0125, np.float32))

        # A cold stampede across both replicas: one compile in all.
        with concurrent.futures.ThreadPoolExecutor(8) as ex:
            futs = [ex.submit((ca if i % 2 else cb).post, "/v1/compile", json=_req(2))
                    for i in range(8)]
            answers = [f.result().json()["artifacts"][0]["digest"] for f in futs]
        assert len(set(answers)) == 1
        total = a.metric("kiln_compiles_total", kind="cpu") + b.metric("kiln_compiles_total", kind="cpu")
        assert total == 2  # request 1 (on a) + the stampede's single compile

        # Redis down: requests still succeed (local tier + compiler).
        redis_server.kill()
        r = cb.post("/v1/compile", json=_req(3))
        assert r.status_code == 200 and r.json()["artifacts"][0]["cached"] is False
        assert cb.get("/healthz").status_code == 200
        assert cb.get("/readyz").status_code == 503
        redis_server.restart()
        # Sharing resumes: b compiles a new graph (onto its disk alone while its Redis back-off
        # lasts; the catch-up timer copies it up then), and once its record is in Redis a gets
        # it from there.
        key = cb.post("/v1/compile", json=_req(4)).json()["artifacts"][0]["key"]
        assert in_redis(redis_server.url, [key], within=15.0)
        shared = ca.post("/v1/compile", json=_req(4)).json()["artifacts"][0]
        assert shared["cached"] is True


# A bench suite (`scripts/test.sh -m bench`): the default run had grown past its 15 minutes.
@pytest.mark.bench
def test_a_redis_outage_under_load_loses_nothing(redis_server: RedisServer, tmp_path: Path) -> None:
    """Clients keep hitting and compiling on replica a while Redis is killed and restarted: no
    request fails, and what a compiled during the outage reaches replica b through Redis."""
    import threading

    common = {"redis_url": redis_server.url, "workers": 1, "access_log": "false"}
    with kiln_server(tmp_path / "a", **common) as a, kiln_server(tmp_path / "b", **common) as b:
        ca = a.client()
        for i in range(3):  # the hot set, shared before the outage
            assert ca.post("/v1/compile", json=_req(100 + i)).status_code == 200
        stop = threading.Event()
        failures: list[str] = []
        made: list[tuple[int, str]] = []  # (graph, compile key)

        def load(seed: int) -> None:
            c = a.client()
            n = 0
            while not stop.is_set():
                n += 1
                hot = c.post("/v1/compile", json=_req(100 + n % 3))
                if hot.status_code != 200 or c.get(hot.json()["artifacts"][0]["url"]).status_code != 200:
                    failures.append(f"hit {hot.status_code}")
                if n % 5 == 0:  # now and then a graph never seen before
                    i = 1000 + seed * 1000 + n
                    r = c.post("/v1/compile", json=_req(i))
                    if r.status_code == 200:
                        made.append((i, r.json()["artifacts"][0]["key"]))
                    else:
                        failures.append(f"miss {r.status_code}: {r.text[:200]}")

        threads = [threading.Thread(target=load, args=(s,)) for s in range(4)]
        for t in threads:
            t.start()
        time.sleep(2)
        redis_server.kill()
        outage_from = len(made)
        time.sleep(6)
        during = made[outage_from:]
        redis_server.restart()
        time.sleep(4)
        stop.set()
        for t in threads:
            t.join(120)
        assert failures == []
        assert during, "nothing was compiled during the outage"
        # what a built while Redis was down reaches b through Redis (a's catch-up timer copies
        # it up), without a compile on b
        assert in_redis(redis_server.url, [k for _i, k in during], within=30.0)
        cb = b.client()
        for i, _key in during:
            r = cb.post("/v1/compile", json=_req(i))
            assert r.status_code == 200 and r.json()["artifacts"][0]["cached"], i
        assert b.metric("kiln_compiles_total") == 0
