"""Jobs belong to their token, against a real ``kiln serve`` on a real redis-server, as a
stranger would try it: one token floods ``POST /v1/jobs`` (concurrently, through a small Redis
pool) and hits its cap (429 with Retry-After) while another token's compile goes through; a
token cannot read or cancel another's job (404, as for an unknown id); the owner cancels its own
(204, then 404) and gets its slot back; an orphaned job expires instead of compiling; every
answer is strict JSON."""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import time
from typing import Any

import httpx
import pytest

from tests.conftest_redis import RedisServer
from tests.server import kiln_server
from tests.test_cluster_jobs import chain, job_request

CAP = 3


def strict(r: httpx.Response) -> Any:
    def refuse(token: str) -> Any:
        raise ValueError(f"not JSON: {token}")
    return json.loads(r.text, parse_constant=refuse)


@pytest.mark.redis
def test_one_token_floods_jobs_and_others_are_served(
    redis_server: RedisServer, tmp_path_factory: pytest.TempPathFactory,
) -> None:
    with kiln_server(tmp_path_factory, workers=1, tokens="alice,bob", access_log="false",
                     redis_url=redis_server.url, max_jobs_per_client=CAP,
                     redis_max_connections=4, redis_pool_timeout=30,
                     job_orphan_after=5) as srv:
        alice, bob = srv.client(token="alice"), srv.client(token="bob")

        # Alice floods: 40 different graphs at once. CAP are taken, the rest refused with 429
        # and Retry-After; none fails for want of a Redis connection.
        def submit(i: int) -> httpx.Response:
            return alice.post("/v1/jobs", json=job_request(24, 0.001 * (i + 1)))

        with concurrent.futures.ThreadPoolExecutor(16) as ex:
            answers = list(ex.map(submit, range(40)))
        codes = sorted(r.status_code for r in answers)
        assert set(codes) <= {202, 429}, [strict(r) for r in answers if r.status_code >= 500]
        mine = [strict(r)["id"] for r in answers if r.status_code == 202]
        assert 1 <= len(mine) <= CAP + 2  # concurrent replicas' reads may overshoot a little
        refused = next(r for r in answers if r.status_code == 429)
        assert strict(refused)["error"]["code"] == "overloaded"
        assert int(refused.headers["retry-after"]) >= 1
        # Sequentially, past the cap, always refused.
        assert alice.post("/v1/jobs", json=job_request(24, 0.9)).status_code == 429

        # Bob's compile goes through meanwhile.
        r = bob.post("/v1/compile", json={"graph": {"format": "mlir", "data": chain(1, 0.5)},
                                          "targets": ["cpu"]})
        assert r.status_code == 200, r.text
        strict(r)

        # Bob can neither read nor cancel Alice's job: 404, word for word an unknown id's.
        victim = mine[-1]
        for method in ("GET", "DELETE"):
            r = bob.request(method, f"/v1/jobs/{victim}")
            assert r.status_code == 404 and strict(r)["error"]["code"] == "not_found"
        unknown = bob.get(f"/v1/jobs/{'0' * 32}")
        assert strict(unknown)["error"]["message"].replace("0" * 32, victim) == \
            strict(bob.get(f"/v1/jobs/{victim}"))["error"]["message"]
        assert alice.get(f"/v1/jobs/{victim}").status_code == 200

        # Alice cancels her own: 204, then gone; her slot is free again.
        r = alice.delete(f"/v1/jobs/{victim}")
        assert r.status_code == 204 and r.content == b""
        assert alice.get(f"/v1/jobs/{victim}").status_code == 404
        assert alice.delete(f"/v1/jobs/{victim}").status_code == 404
        for job in mine[:-1]:
            assert alice.delete(f"/v1/jobs/{job}").status_code == 204
        r = alice.post("/v1/jobs", json=job_request(1, 0.25))
        assert r.status_code == 202, r.text
        done = alice.get(f"/v1/jobs/{strict(r)['id']}", params={"wait": 60})
        while strict(done)["state"] not in ("done", "failed"):
            done = alice.get(f"/v1/jobs/{strict(r)['id']}", params={"wait": 60})
        assert strict(done)["state"] == "done", done.text

        # An orphan: a job whose replica is long gone (no driver, no change for longer than
        # KILN_JOB_ORPHAN_AFTER) expires when asked about instead of compiling.
        jid = hashlib.sha256(b"orphan").hexdigest()[:32]
        owner = "token:" + hashlib.sha256(b"alice").hexdigest()[:16]
        doc = {"id": jid, "state": "queued", "owner": owner, "graph_digest": "sha256:" + "0" * 64,
               "progress": {"targets_done": 0, "targets_total": 1}, "result": None,
               "error": None, "created": time.time() - 60, "updated": time.time() - 60}
        redis_server.command("SET", f"kiln:v1:job:{jid}", json.dumps(doc))
        r = alice.get(f"/v1/jobs/{jid}")
        assert r.status_code == 404, r.text
        assert redis_server.command("EXISTS", f"kiln:v1:job:{jid}") == b":0\r\n"
        assert srv.healthy()
