"""Two `kiln serve` replicas, each with its own disk, sharing one real Redis (or Swift's S3 for
the blobs): the kernels and front-end phases one replica compiled are found by the other, and the
executable built from them computes what numpy does on lavapipe. A replica that gets no request
after a Redis outage still copies what it built meanwhile to Redis."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import redis

from kiln.cache.redis import DEFAULT_PREFIX
from kiln.client.runtime import load_vmfb
from tests.conftest_redis import RedisServer
from tests.server import kiln_server
from tests.swift import SwiftServer, swift_missing
from tests.test_kernel_cache import inputs, mlp, reference
from tests.test_service_cluster import _req

pytestmark = pytest.mark.redis

# Every layer of A is a hidden one (matmul + ReLU, its own kernel); B is A plus a head.
A_LAYERS = [(64, 128, True), (128, 256, True), (256, 96, True)]
B_LAYERS = [*A_LAYERS, (96, 10, False)]
BUCKET = "kiln-replicas"


def compile_request(layers: list[tuple[int, int, bool]], target: str) -> dict[str, Any]:
    return {"graph": {"format": "mlir", "encoding": "utf-8", "data": mlp(layers).decode()},
            "targets": [target]}


@pytest.fixture(params=["redis", "s3"])
def shared(request: pytest.FixtureRequest, redis_server: RedisServer, tmp_path: Path,
           monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """The replicas' settings: records and leases in Redis, blobs in Redis or in Swift."""
    settings: dict[str, Any] = {"redis_url": redis_server.url, "workers": 2,
                                "access_log": "false", "kernel_cache": "1"}
    if request.param == "redis":
        yield settings
        return
    missing = swift_missing()
    if missing:
        pytest.fail(f"{', '.join(missing)} not on PATH (scripts/bootstrap.sh installs Swift)")
    swift = SwiftServer(tmp_path / "swift")
    swift.start()
    try:
        swift.create_bucket(BUCKET)
        for var, value in swift.env().items():
            if not var.startswith("KILN_"):
                monkeypatch.setenv(var, value)  # the servers inherit the AWS_* variables
        yield {**settings, "s3_url": f"s3://{BUCKET}/{uuid.uuid4().hex[:8]}",
               "s3_endpoint_url": swift.endpoint_url}
    finally:
        swift.close()


@pytest.mark.vulkan
def test_replicas_share_kernels_and_front_ends(shared: dict[str, Any], tmp_path: Path) -> None:
    with kiln_server(tmp_path / "a", **shared) as a, kiln_server(tmp_path / "b", **shared) as b:
        ra = a.client().post("/v1/compile", json=compile_request(A_LAYERS, "vulkan"))
        assert ra.status_code == 200, ra.text
        stored = a.metric("kiln_kernel_cache_total", kind="vulkan", result="miss")
        assert stored == len(A_LAYERS), a.log_tail()

        cb = b.client()
        rb = cb.post("/v1/compile", json=compile_request(B_LAYERS, "vulkan"))
        assert rb.status_code == 200, rb.text
        assert b.metric("kiln_kernel_cache_total", kind="vulkan", result="hit") == stored
        assert b.metric("kiln_kernel_cache_total", kind="vulkan", result="miss") == 1
        assert b.metric("kiln_kernel_cache_total", result="fallback") == 0

        # A's graph for another target on B: the graph's input phase comes from A.
        rc = cb.post("/v1/compile", json=compile_request(A_LAYERS, "cuda:sm_80"))
        assert rc.status_code == 200, rc.text
        assert b.metric("kiln_frontend_cache_total", result="hit") >= 1

        # B's executable (A's three kernels and its own head) computes the MLP.
        art = rb.json()["artifacts"][0]
        mod = load_vmfb(cb.get(art["url"]).content, driver="vulkan")
        xs = inputs(B_LAYERS)
        np.testing.assert_allclose(np.asarray(mod.main(*xs)), reference(B_LAYERS, xs),
                                   rtol=1e-4, atol=1e-4)
        assert "neither an executable" not in b.log_tail(100_000)
        assert "guard refused" not in a.log_tail(100_000) + b.log_tail(100_000)


def test_a_replica_copies_its_outage_entries_to_redis_without_a_request(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    with kiln_server(tmp_path / "a", redis_url=redis_server.url, workers=1,
                     access_log="false") as a:
        redis_server.kill()
        r = a.client().post("/v1/compile", json=_req(7))
        assert r.status_code == 200, r.text
        key = r.json()["artifacts"][0]["key"]
        redis_server.start()  # empty; nothing asks replica a anything from now on
        client = redis.Redis.from_url(redis_server.url)
        deadline = time.monotonic() + 10.0
        while not client.exists(f"{DEFAULT_PREFIX}ac:{key}"):
            assert time.monotonic() < deadline, "the outage entry did not reach Redis in 10 s"
            time.sleep(0.1)
        client.close()
