"""Trust against a real ``kiln serve`` with a real Redis (one server for the module).

What a user (or an attacker with write access to the cache) would see: every artifact has a
provenance that verifies with the published key, outside Kiln; an action record edited on disk
or in Redis to name another graph's (validly stored) executable is never served — the next
compile answers the graph's own executable, rebuilt.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from tests.conftest_redis import RedisServer, free_port
from tests.graphs import LINALG, TOSA
from tests.server import KilnServer, kiln_server

pytestmark = pytest.mark.redis


@pytest.fixture(scope="module")
def redis_srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.fail("redis-server not on PATH (scripts/bootstrap.sh installs it)")
    server = RedisServer(binary, tmp_path_factory.mktemp("redis"), free_port())
    server.start()
    try:
        yield server
    finally:
        server.kill()


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory, redis_srv: RedisServer) -> Iterator[KilnServer]:
    with kiln_server(tmp_path_factory, workers=1, redis_url=redis_srv.url,
                     access_log="false") as s:
        yield s


def compile_one(srv: KilnServer, graph: str) -> dict[str, Any]:
    r = srv.client().post("/v1/compile", json={
        "graph": {"format": "mlir", "data": graph}, "targets": ["cpu"],
    })
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def test_every_artifact_has_provenance_that_verifies_with_the_published_key(
    srv: KilnServer,
) -> None:
    body = compile_one(srv, LINALG)
    art = body["artifacts"][0]
    c = srv.client()
    keys = c.get("/v1/keys").json()
    assert [k["algorithm"] for k in keys] == ["ed25519"]
    env = c.get(f"{art['url']}/provenance", params={"key": art["key"]}).json()
    assert c.get(f"{art['url']}/provenance").json() == env
    assert c.get(f"/v1/artifacts/{'0' * 64}/provenance").status_code == 404
    # Outside Kiln: DSSE PAE + Ed25519 with cryptography alone.
    pub = serialization.load_pem_public_key(keys[0]["public_key_pem"].encode())
    assert isinstance(pub, Ed25519PublicKey)
    payload = base64.b64decode(env["payload"])
    ptype = env["payloadType"].encode()
    pae = b"DSSEv1 %d %s %d %s" % (len(ptype), ptype, len(payload), payload)
    (sig,) = env["signatures"]
    assert sig["keyid"] == keys[0]["keyid"]
    pub.verify(base64.b64decode(sig["sig"]), pae)
    stmt = json.loads(payload)
    exe = c.get(art["url"]).content
    assert stmt["subject"][0]["digest"]["sha256"] == hashlib.sha256(exe).hexdigest()
    ext = stmt["predicate"]["buildDefinition"]["externalParameters"]
    assert ext["graph_digest"] == body["graph_digest"] and ext["target"] == art["target"]
    assert stmt["predicate"]["buildDefinition"]["internalParameters"]["flags"] == art["flags"]
    # The key lives outside the cache directory.
    assert not list(srv.cache_dir.rglob("*.pem"))


def _record_file(srv: KilnServer, key: str) -> Path:
    return srv.cache_dir / "v1" / "ac" / key[:2] / f"{key}.json"


def test_a_record_edited_on_disk_or_in_redis_never_serves_foreign_bytes(
    srv: KilnServer, redis_srv: RedisServer
) -> None:
    a = compile_one(srv, LINALG)["artifacts"][0]
    b = compile_one(srv, TOSA)["artifacts"][0]  # validly stored, under its own sha256
    forged_before = srv.metric("kiln_cache_forged_records_total")

    # On disk: A's record now names B's executable (with B's flags: a plausible record).
    path = _record_file(srv, a["key"])
    rec = json.loads(path.read_bytes())
    rec.update(digest=b["digest"], flags=b["flags"])
    path.write_text(json.dumps(rec))
    again = compile_one(srv, LINALG)["artifacts"][0]
    assert again["digest"] == a["digest"] != b["digest"]  # the disk record was a miss
    assert srv.metric("kiln_cache_forged_records_total") == forged_before + 1

    # In Redis: the same edit, with the disk tier's record gone so the read reaches Redis.
    r = redis.Redis.from_url(redis_srv.url)
    rkey = f"kiln:v1:ac:{a['key']}"
    rec = json.loads(r.get(rkey))
    rec.update(digest=b["digest"], flags=[*rec["flags"], "--iree-invented-flag"])
    r.set(rkey, json.dumps(rec))
    _record_file(srv, a["key"]).unlink()
    again = compile_one(srv, LINALG)["artifacts"][0]
    assert again["digest"] == a["digest"] and "--iree-invented-flag" not in again["flags"]
    assert again["cached"] is False
    assert srv.metric("kiln_cache_forged_records_total") == forged_before + 2
    # What replaced the poison in both tiers is the graph's own, signed record.
    assert json.loads(r.get(rkey))["digest"] == a["digest"]
    assert json.loads(_record_file(srv, a["key"]).read_bytes())["digest"] == a["digest"]
    r.close()
    # And B was never disturbed.
    assert httpx.get(srv.url + b["url"]).status_code == 200
