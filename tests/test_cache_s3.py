"""The S3 tier against a real object store (Swift + s3api, tests/swift.py) and a real Redis:
blobs in the bucket, records in Redis, the disk tier in front; integrity, outages, recovery."""

from __future__ import annotations

import hashlib
import io
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kiln import cli
from kiln.cache import ArtifactCache, Built, CompileKey, open_cache
from kiln.cli import serve as serve_cli
from kiln.client.runtime import load_vmfb
from kiln.errors import CacheUnavailable, NotFound
from kiln.provenance import Authority, Signer
from kiln.service.auth import TokenAuth
from kiln.service.metrics import Metrics
from kiln.service.service import Service
from tests.graphs import LINALG
from tests.server import kiln_server
from tests.swift import SwiftServer, running_swift

pytestmark = pytest.mark.redis

BUCKET = "kiln-tests"


@pytest.fixture(scope="module")
def swift(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SwiftServer]:
    with running_swift(tmp_path_factory.mktemp("swift"), BUCKET) as server:
        yield server


@pytest.fixture
def env(swift: SwiftServer, monkeypatch: pytest.MonkeyPatch) -> SwiftServer:
    """The standard AWS environment (and KILN_S3_ENDPOINT_URL) pointing at the test store."""
    for name, value in swift.env().items():
        monkeypatch.setenv(name, value)
    return swift


@pytest.fixture
def s3_url() -> str:
    return f"s3://{BUCKET}/t-{uuid.uuid4().hex[:12]}"  # one prefix per test


@pytest.fixture
def authority() -> Authority:
    return Authority(Signer.generate())


def key(i: int) -> CompileKey:
    return CompileKey(
        graph_digest=hashlib.sha256(f"s3-g{i}".encode()).hexdigest(),
        target="llvm-cpu:host",
        options={"opt_level": 3},
        flags=("--iree-hal-target-device=local",),
        compiler_version="3.13.0",
        compiler_hash="e" * 64,
    )


def data_for(k: CompileKey, size: int = 20000) -> bytes:
    seed = k.digest().encode()
    return (seed * (size // 64 + 1))[:size]


class Counter:
    def __init__(self, k: CompileKey, then: Any = None) -> None:
        self.k, self.calls, self.then = k, 0, then

    def __call__(self) -> Built:
        self.calls += 1
        if self.then is not None:
            self.then()
        return Built(data_for(self.k), compile_seconds=0.3)


def _req(i: int) -> dict[str, object]:
    src = LINALG.replace("%zero = arith.constant 0.0", f"%zero = arith.constant {i}.5e-2")
    return {"graph": {"format": "mlir", "encoding": "utf-8", "data": src}, "targets": ["cpu"]}


def redis_keys(redis: Any, pattern: str) -> bytes:
    """The raw RESP answer to KEYS (``*0`` when there are none)."""
    return bytes(redis.command("KEYS", pattern))


def blob_key(url: str, digest: str) -> str:
    prefix = url.removeprefix(f"s3://{BUCKET}/")
    return f"{prefix}/v1/cas/{digest.removeprefix('sha256:')}"


def open_s3(root: Path, url: str, redis: Any, authority: Authority) -> ArtifactCache:
    return open_cache(
        cache_dir=root, redis_url=redis.url if redis else None, s3_url=url, authority=authority
    )


def test_blob_goes_to_s3_record_to_redis_and_another_replica_gets_both(
    env: SwiftServer, redis_server: Any, tmp_path: Path, s3_url: str, authority: Authority
) -> None:
    k, build = key(1), Counter(key(1))
    with open_s3(tmp_path / "a", s3_url, redis_server, authority) as a:
        first = a.get_or_build(k, build)
        assert (first.cached, build.calls) == (False, 1)
        assert a.get_or_build(k, build).source == "disk"
    obj = env.client().get_object(Bucket=BUCKET, Key=blob_key(s3_url, first.digest))
    assert obj["Body"].read() == data_for(k)
    # Redis holds the record (and its provenance), never the blob.
    assert redis_server.command("EXISTS", f"kiln:v1:ac:{k.digest()}") == b":1\r\n"
    assert redis_keys(redis_server, "kiln:v1:cas:*") == b"*0\r\n"

    with open_s3(tmp_path / "b", s3_url, redis_server, authority) as b:  # an empty disk
        hit = b.lookup(k, load=True)
        assert hit is not None and hit.source == "s3" and hit.data == data_for(k)
        assert b.provenance(hit.digest) is not None  # signed, and it verifies
        again = b.lookup(k)
        assert again is not None and again.source == "disk"  # copied into b's disk tier
        assert b.get_or_build(k, build).data == data_for(k) and build.calls == 1


def test_disk_and_s3_without_redis_share_records_through_the_bucket(
    env: SwiftServer, tmp_path: Path, s3_url: str, authority: Authority
) -> None:
    k, build = key(2), Counter(key(2))
    with open_s3(tmp_path / "a", s3_url, None, authority) as a:
        a.get_or_build(k, build)
    with open_s3(tmp_path / "b", s3_url, None, authority) as b:
        r = b.get_or_build(k, build)
        assert (r.cached, r.source, r.data, build.calls) == (True, "s3", data_for(k), 1)
        assert b.provenance(r.digest) is not None


def test_corrupted_object_in_s3_is_never_served(
    env: SwiftServer, redis_server: Any, tmp_path: Path, s3_url: str, authority: Authority
) -> None:
    k = key(3)
    with open_s3(tmp_path / "a", s3_url, redis_server, authority) as a:
        digest = a.get_or_build(k, Counter(k)).digest
    s3 = env.client()
    bad = bytearray(data_for(k))
    bad[100] ^= 0xFF  # same size, one byte flipped: only the sha256 can tell
    s3.put_object(Bucket=BUCKET, Key=blob_key(s3_url, digest), Body=bytes(bad))

    with open_s3(tmp_path / "b", s3_url, redis_server, authority) as b:
        with pytest.raises(NotFound):
            b.read_blob(digest)
        assert b.counters.corrupt == 1
        assert b.lookup(k) is None  # the record named a blob that is gone: a miss
        assert not (tmp_path / "b" / "v1" / "cas" / digest[7:9] / digest[7:]).exists()
        rebuild = Counter(k)
        r = b.get_or_build(k, rebuild)
        assert (r.cached, rebuild.calls, r.data) == (False, 1, data_for(k))
    obj = s3.get_object(Bucket=BUCKET, Key=blob_key(s3_url, digest))
    assert obj["Body"].read() == data_for(k)  # uploaded again, whole and right


def test_verify_removes_a_corrupt_blob_from_s3_and_the_record_naming_it(
    env: SwiftServer, redis_server: Any, tmp_path: Path, s3_url: str, authority: Authority
) -> None:
    ok, bad = key(8), key(9)
    with open_s3(tmp_path / "a", s3_url, redis_server, authority) as a:
        a.get_or_build(ok, Counter(ok))
        digest = a.get_or_build(bad, Counter(bad)).digest
    env.client().put_object(Bucket=BUCKET, Key=blob_key(s3_url, digest), Body=b"not it")
    with open_s3(tmp_path / "b", s3_url, redis_server, authority) as b:
        rep = b.verify()
        assert (rep.ok_blobs, rep.corrupt, rep.ok_records, rep.dangling) == (1, 1, 1, 1)
        assert b.lookup(bad) is None and b.lookup(ok) is not None


def test_s3_down_serves_local_hits_refuses_the_rest_and_recovers_without_reopening(
    env: SwiftServer, redis_server: Any, tmp_path: Path, s3_url: str, authority: Authority
) -> None:
    k1, k2, k3 = key(4), key(5), key(6)
    a = open_s3(tmp_path / "a", s3_url, redis_server, authority)
    b = open_s3(tmp_path / "b", s3_url, redis_server, authority)
    try:
        digest = a.get_or_build(k1, Counter(k1)).digest
        env.stop()

        local = a.lookup(k1, load=True)  # on a's disk: still served
        assert local is not None and local.source == "disk" and local.data == data_for(k1)
        assert a.read_blob(digest) == data_for(k1)
        build2 = Counter(k2)
        with pytest.raises(CacheUnavailable):
            a.get_or_build(k2, build2)  # a miss: nothing compiled that could not be shared
        assert build2.calls == 0
        with pytest.raises(CacheUnavailable):
            b.lookup(k1)  # the record is in Redis, the blob only in the stopped store
        with pytest.raises(CacheUnavailable):
            b.read_blob(digest)  # 503, not 404: the artifact exists
        with pytest.raises(CacheUnavailable):
            b.blob_path(digest)
        assert a.counters.s3_errors > 0 and b.counters.s3_errors > 0

        env.start()  # the same caches, not reopened
        hit = b.lookup(k1, load=True)
        assert hit is not None and hit.source == "s3" and hit.data == data_for(k1)
        assert a.get_or_build(k2, build2).cached is False and build2.calls == 1

        # The store goes down while a compile runs: the result is kept on disk, served, and
        # uploaded once the store is back.
        build3 = Counter(k3, then=env.stop)
        r3 = a.get_or_build(k3, build3)
        assert (r3.cached, r3.data) == (False, data_for(k3))
        env.start()
        assert a.storage.catch_up() == 1  # type: ignore[attr-defined]
        hit3 = b.lookup(k3, load=True)
        assert hit3 is not None and hit3.source == "s3" and hit3.data == data_for(k3)
    finally:
        if not env.procs:
            env.start()  # the module's store stays up for the other tests
        a.close()
        b.close()


def test_kiln_serve_s3_url_puts_the_service_blobs_in_the_bucket(
    env: SwiftServer, redis_server: Any, tmp_path: Path, s3_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: dict[str, Any] = {}
    monkeypatch.setattr(serve_cli, "serve", lambda s: seen.setdefault("s", s) and 0)
    for var in ("KILN_S3_URL", "KILN_REDIS_URL", "KILN_CACHE_DIR", "KILN_SIGNING_KEY_FILE"):
        monkeypatch.setenv(var, "")  # restored after the test (kiln serve exports its flags)
    argv = ["serve", "--s3-url", s3_url, "--redis-url", redis_server.url,
            "--cache-dir", str(tmp_path / "cache"),
            "--signing-key-file", str(tmp_path / "key.pem")]  # fmt: skip
    assert cli.main(argv, stdout=io.StringIO(), stderr=io.StringIO()) == 0
    settings = seen["s"]
    assert (settings.s3_url, settings.s3_endpoint_url) == (s3_url, env.endpoint_url)

    service = Service(settings, metrics=Metrics(), auth=TokenAuth(()))
    try:
        k = key(7)
        digest = service.cache.get_or_build(k, Counter(k)).digest
    finally:
        service.close()
    obj = env.client().get_object(Bucket=BUCKET, Key=blob_key(s3_url, digest))
    assert obj["Body"].read() == data_for(k)


def test_two_replicas_on_s3_artifact_get_answers_503_while_s3_is_down_then_200(
    env: SwiftServer, redis_server: Any, tmp_path: Path, s3_url: str
) -> None:
    common = {"redis_url": redis_server.url, "s3_url": s3_url,
              "s3_endpoint_url": env.endpoint_url, "workers": 1, "access_log": "false"}  # fmt: skip
    with kiln_server(tmp_path / "a", **common) as a, kiln_server(tmp_path / "b", **common) as b:
        ca, cb = a.client(), b.client()
        art = ca.post("/v1/compile", json=_req(1)).json()["artifacts"][0]
        assert redis_keys(redis_server, "kiln:v1:cas:*") == b"*0\r\n"  # the blob went to S3
        assert cb.get("/readyz").json()["checks"]["s3"] == "ok"
        env.stop()
        try:
            assert ca.get(art["url"]).status_code == 200  # on a's disk
            down = cb.get(art["url"])  # b has it only through the stopped store
            assert down.status_code == 503
            assert down.json()["error"]["code"] == "cache_unavailable"
            # and the readiness probe says so (a load balancer stops sending it requests)
            ready = cb.get("/readyz")
            assert ready.status_code == 503
            assert ready.json()["error"]["code"] == "cache_unavailable"
            assert ready.json()["error"]["detail"]["checks"]["s3"] == "unreachable"
        finally:
            env.start()
        assert cb.get("/readyz").status_code == 200
        back = cb.get(art["url"])  # the same replica, not restarted
        assert back.status_code == 200 and back.content == ca.get(art["url"]).content
        assert load_vmfb(back.content, driver="local-task")
