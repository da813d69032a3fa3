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
    # And with securesystemslib's own DSSE verifier.
    from securesystemslib.dsse import Envelope
    from securesystemslib.signer import SSlibKey

    ssl_key = SSlibKey.from_crypto(pub, keyid=sig["keyid"])
    keyid = sig["keyid"]
    assert list(Envelope.from_dict(json.loads(json.dumps(env))).verify([ssl_key], 1)) == [keyid]
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


# -- the SDK and `kiln verify` -------------------------------------------------------------------

class Meddler(httpx.BaseTransport):
    """Between the SDK and the real server: forwards every request, then alters one kind of
    answer the way a man in the middle (or a poisoned cache or CDN) would."""

    def __init__(self, mode: str, *, other: dict[str, Any] | None = None) -> None:
        self.inner = httpx.HTTPTransport()
        self.mode, self.other = mode, other

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        resp = self.inner.handle_request(request)
        path = request.url.path
        body = resp.read()
        if path.endswith("/provenance") and self.mode != "bytes":
            if self.mode == "swapped":  # another artifact's genuine, signed provenance
                body = json.dumps(self.other).encode()
            elif self.mode == "unsigned":
                body = json.dumps({**json.loads(body), "signatures": []}).encode()
            elif self.mode == "missing":
                err = {"error": {"code": "not_found", "message": "no provenance", "detail": None}}
                return httpx.Response(404, json=err)
        elif self.mode == "bytes" and path.startswith("/v1/artifacts/") and len(body) > 200:
            body = body[:100] + bytes([body[100] ^ 1]) + body[101:]
        headers = {k: v for k, v in resp.headers.items()
                   if k.lower() not in ("content-length", "content-encoding", "transfer-encoding")}
        return httpx.Response(resp.status_code, headers=headers, content=body)

    def close(self) -> None:
        self.inner.close()


def _server_pem(srv: KilnServer) -> str:
    pem: str = srv.client().get("/v1/keys").json()[0]["public_key_pem"]
    return pem


def test_the_sdk_verifies_before_loading(srv: KilnServer, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from kiln import IntegrityError
    from kiln.client import Client
    from kiln.client.resolver import Candidate
    from kiln.provenance import Signer

    cpu = [Candidate("cpu", "local-task")]
    pem = _server_pem(srv)
    with Client(srv.url, trusted_keys=[pem], cache_dir=tmp_path / "good") as c:
        mod = c.load(LINALG, candidates=cpu)
        assert mod.target == "cpu:x86_64:generic"
        other = c.provenance(c.artifact(TOSA, "cpu")[1]["digest"])
    # From KILN_TRUSTED_KEYS too (a path list).
    (tmp_path / "server.pem").write_text(pem)
    monkeypatch.setenv("KILN_TRUSTED_KEYS", str(tmp_path / "server.pem"))
    with Client(srv.url, cache_dir=tmp_path / "env") as c:
        assert c.trusted is not None and c.artifact(LINALG, "cpu")[1]["provenance"]
    monkeypatch.delenv("KILN_TRUSTED_KEYS")

    cases = {
        "bytes": ("tampered", pem),
        "swapped": ("not these bytes", pem),
        "unsigned": ("not signed", pem),
        "missing": ("no provenance", pem),
        "unknown-key": ("unknown key", Signer.generate().trusted.pem),
    }
    for mode, (why, key) in cases.items():
        cache = tmp_path / f"c-{mode}"
        with (Client(srv.url, trusted_keys=[key], cache_dir=cache,
                     transport=Meddler(mode, other=other)) as c,
              pytest.raises(IntegrityError) as err):
            c.load(LINALG, candidates=cpu)
        message = err.value.message
        assert why in message or (mode == "bytes" and "arrived with" in message), (mode, message)
        assert not list(cache.rglob("results/*/*.json")), mode  # nothing kept, nothing loaded


def test_kiln_build_writes_provenance_that_kiln_verify_checks(
    srv: KilnServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    from kiln.cli import main
    from kiln.provenance import Signer

    (tmp_path / "a.mlir").write_text(LINALG)
    (tmp_path / "b.mlir").write_text(TOSA)
    (tmp_path / "kiln.toml").write_text(
        '[[models]]\nname = "a"\npath = "a.mlir"\ntargets = ["cpu"]\n'
        '[[models]]\nname = "b"\npath = "b.mlir"\ntargets = ["cpu"]\n'
    )
    out = tmp_path / "out"
    key = tmp_path / "server.pem"
    key.write_text(_server_pem(srv))
    monkeypatch.setenv("KILN_TRUSTED_KEYS", str(key))  # the build verifies what it writes
    assert main(["build", str(tmp_path / "kiln.toml"), "-o", str(out), "--server", srv.url,
                 "--no-progress"], stdout=io.StringIO(), stderr=io.StringIO()) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    a, b = manifest["artifacts"]
    assert a["provenance"] == a["path"] + ".provenance.json"
    stranger = tmp_path / "stranger.pem"
    stranger.write_text(Signer.generate().trusted.pem)

    def verify(*args: str) -> tuple[int, str]:
        o, e = io.StringIO(), io.StringIO()
        return main(["verify", *args], stdout=o, stderr=e), o.getvalue() + e.getvalue()

    exe_a = str(out / a["path"])
    code, text = verify(exe_a, "--key", str(key), "--target", "cpu:x86_64:generic")
    assert code == 0 and text.startswith("verified: "), text
    # The target as a user writes it (the manifest said "cpu"): normalized as the server does.
    code, text = verify(exe_a, "--key", str(key), "--target", "cpu")
    assert code == 0 and text.startswith("verified: "), text
    code, text = verify(exe_a, "--key", str(key), "--target", "cpu:nosuch")
    assert code == 1 and "unsupported_target" in text, text
    tampered = tmp_path / "tampered.vmfb"
    data = bytearray((out / a["path"]).read_bytes())
    data[100] ^= 1
    tampered.write_bytes(data)
    refusals = {
        "not these bytes": (str(tampered), "--provenance", str(out / a["provenance"])),
        "a swapped or foreign": (exe_a, "--provenance", str(out / b["provenance"])),
        "unknown key": (exe_a,),
        "no provenance": (str(tampered),),
        "for target": (exe_a, "--target", "vulkan:generic"),
    }
    for why, args in refusals.items():
        k = str(stranger) if why == "unknown key" else str(key)
        code, text = verify(*args, "--key", k)
        assert code == 1 and "integrity_error" in text and why in text, (why, text)


def test_a_runtime_of_another_series_gets_409_and_the_sdk_says_what_to_install(
    srv: KilnServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    import kiln.client.sdk
    from kiln.errors import IncompatibleRuntime

    c = srv.client()
    body = {"graph": {"format": "mlir", "data": LINALG}, "targets": ["cpu"]}
    ok = c.post("/v1/compile", json=body, headers={"X-Kiln-Runtime": "3.13.7"})
    assert ok.status_code == 200 and ok.json()["artifacts"][0]["runtime"] == ["3.13.x"]
    r = c.post("/v1/compile", json=body, headers={"X-Kiln-Runtime": "3.12.0"})
    assert r.status_code == 409
    err = r.json()["error"]
    assert err["code"] == "incompatible_runtime"
    assert err["detail"]["supported"] == ["3.13.x"] and err["detail"]["runtime"] == "3.12.0"
    bad = c.post("/v1/compile", json=body, headers={"X-Kiln-Runtime": "latest"})
    assert bad.status_code == 400

    # The SDK sends the installed runtime's version; with another series it explains.
    assert (kiln.client.sdk.runtime_version() or "").startswith("3.13.")
    monkeypatch.setattr(kiln.client.sdk, "runtime_version", lambda: "3.14.1")
    with kiln.client.Client(srv.url) as sdk, pytest.raises(IncompatibleRuntime) as exc:
        sdk.compile(LINALG, targets=["cpu"])
    assert "iree-base-runtime==3.13.*" in exc.value.message
    assert exc.value.detail["supported"] == ["3.13.x"]


def test_bytes_stored_under_their_own_sha256_are_not_served_unless_an_executable(
    srv: KilnServer, redis_srv: RedisServer
) -> None:
    junk = b"#!/bin/sh\necho not an executable\n" * 20
    hexd = hashlib.sha256(junk).hexdigest()
    path = srv.cache_dir / "v1" / "cas" / hexd[:2] / hexd
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(junk)
    c = srv.client()
    assert c.get(f"/v1/artifacts/{hexd}").status_code == 404
    # The same bytes in Redis only: not copied into the disk tier, not served.
    path.unlink()
    r = redis.Redis.from_url(redis_srv.url)
    r.set(f"kiln:v1:cas:{hexd}", junk)
    assert c.get(f"/v1/artifacts/{hexd}").status_code == 404
    assert not path.exists()
    r.close()
    exe = compile_one(srv, LINALG)["artifacts"][0]
    assert c.get(exe["url"]).status_code == 200
