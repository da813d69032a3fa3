"""Signed provenance and authenticated action records, on the cache alone (no compiler).

Each test is the attack or mistake a user would meet: a record edited on disk or in Redis to
name other (validly stored) bytes, another key's record copied over, an unsigned record, a
signature by a key nobody trusts, a rotated key; and the envelope checked by hand (PAE +
Ed25519 with ``cryptography``), outside Kiln and outside securesystemslib.
"""

from __future__ import annotations

import base64
import hashlib
import json
import stat
from pathlib import Path
from typing import Any

import pytest
import redis
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from kiln.cache import Built, CompileKey, open_cache
from kiln.errors import IntegrityError
from kiln.provenance import (
    PAYLOAD_TYPE,
    PREDICATE_TYPE,
    STATEMENT_TYPE,
    Authority,
    KeyRing,
    Signer,
    check_statement,
)


def key(i: int) -> CompileKey:
    return CompileKey(
        graph_digest=hashlib.sha256(f"g{i}".encode()).hexdigest(),
        target="cpu:x86_64:generic",
        options={"opt_level": "O3"},
        flags=("--iree-hal-target-device=local", f"--flag-{i}"),
        compiler_version="3.13.0",
        compiler_hash="d" * 64,
    )


def blob(i: int) -> bytes:
    return (f"executable {i} ".encode()) * 500


def build(i: int) -> Any:
    return lambda: Built(blob(i), compile_seconds=0.25, warnings=[f"w{i}"])


@pytest.fixture
def authority(tmp_path: Path) -> Authority:
    return Authority(Signer.load_or_create(tmp_path / "keys" / "signing-key.pem"))


def test_key_file_is_created_0600_once_and_reused(tmp_path: Path) -> None:
    path = tmp_path / "cfg" / "kiln" / "signing-key.pem"
    a = Signer.load_or_create(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert Signer.load_or_create(path).keyid == a.keyid
    raw = a.private_key.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    assert a.keyid == hashlib.sha256(raw).hexdigest()


def test_new_records_carry_a_statement_that_verifies_outside_kiln(
    tmp_path: Path, authority: Authority
) -> None:
    with open_cache(cache_dir=tmp_path / "c", authority=authority) as cache:
        res = cache.get_or_build(key(1), build(1))
        env = cache.provenance(res.digest)
        assert env is not None and cache.provenance(res.digest, key=key(1)) == env
    # DSSE by hand: PAE("DSSEv1" SP len(type) SP type SP len(body) SP body), Ed25519.
    payload = base64.b64decode(env["payload"])
    pae = b"DSSEv1 %d %s %d %s" % (len(PAYLOAD_TYPE), PAYLOAD_TYPE.encode(), len(payload),
                                    payload)
    pem = authority.ring.to_json()[0]["public_key_pem"].encode()
    pub = serialization.load_pem_public_key(pem)
    assert isinstance(pub, Ed25519PublicKey)
    (sig,) = env["signatures"]
    pub.verify(base64.b64decode(sig["sig"]), pae)  # raises InvalidSignature if wrong
    stmt = json.loads(payload)
    assert stmt["_type"] == STATEMENT_TYPE and stmt["predicateType"] == PREDICATE_TYPE
    assert stmt["subject"][0]["digest"]["sha256"] == hashlib.sha256(blob(1)).hexdigest()
    bd = stmt["predicate"]["buildDefinition"]
    assert bd["externalParameters"] == {
        "graph_digest": key(1).graph_digest, "target": "cpu:x86_64:generic",
        "options": {"opt_level": "O3"},
    }
    assert bd["internalParameters"]["flags"] == list(key(1).flags)
    assert stmt["predicate"]["runDetails"]["builder"]["version"]["iree-compile"] == "3.13.0"


def _edit_record(path: Path, **changes: Any) -> None:
    rec = json.loads(path.read_bytes())
    rec.update(changes)
    path.write_text(json.dumps(rec))


def test_a_record_edited_on_disk_to_name_other_bytes_is_a_miss(
    tmp_path: Path, authority: Authority
) -> None:
    with open_cache(cache_dir=tmp_path / "c", authority=authority) as cache:
        one = cache.get_or_build(key(1), build(1))
        two = cache.get_or_build(key(2), build(2))  # validly stored foreign bytes
        path = cache.disk.record_file(one.key)  # type: ignore[union-attr]
        _edit_record(path, digest=two.digest, size=two.record.size)
        assert cache.lookup(key(1)) is None
        assert cache.counters.forged == 1 and not path.exists()
        again = cache.get_or_build(key(1), build(1))  # rebuilt, never the foreign bytes
        assert again.cached is False and again.data == blob(1)


def test_a_record_verified_once_is_not_reverified_but_an_edit_of_it_is(
    tmp_path: Path, authority: Authority, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[object] = []
    real_open = KeyRing.open
    monkeypatch.setattr(KeyRing, "open", lambda self, env, **kw: (
        opened.append(env), real_open(self, env, **kw))[1])
    with open_cache(cache_dir=tmp_path / "c", authority=authority) as cache:
        one = cache.get_or_build(key(1), build(1))
        for _ in range(5):
            assert cache.lookup(key(1), load=True).data == blob(1)  # type: ignore[union-attr]
        assert len(opened) == 1  # the signature was verified on the first hit only
        path = cache.disk.record_file(one.key)  # type: ignore[union-attr]
        _edit_record(path, flags=[*one.record.flags, "--iree-invented"])
        assert cache.lookup(key(1)) is None  # the edited record is verified, and refused
        assert cache.counters.forged == 1 and len(opened) == 2


@pytest.mark.parametrize("attack", ["copied", "unsigned", "invented-flag", "unknown-key"])
def test_foreign_unsigned_or_altered_records_are_misses(
    tmp_path: Path, authority: Authority, attack: str
) -> None:
    with open_cache(cache_dir=tmp_path / "c", authority=authority) as cache:
        disk = cache.disk
        assert disk is not None
        one = cache.get_or_build(key(1), build(1))
        two = cache.get_or_build(key(2), build(2))
        path = disk.record_file(one.key)
        other = json.loads(disk.record_file(two.key).read_bytes())
        if attack == "copied":  # another key's whole, validly signed record
            _edit_record(path, **{**other, "key": one.key})
        elif attack == "unsigned":
            rec = json.loads(path.read_bytes())
            del rec["provenance"]
            path.write_text(json.dumps(rec))
        elif attack == "invented-flag":
            _edit_record(path, flags=[*one.record.flags, "--iree-invented"])
        else:  # signed with a key this cache does not trust
            stranger = Authority(Signer.generate())
            forged = stranger.seal(key(1), one.record)
            _edit_record(path, provenance=json.loads(forged))
        assert cache.lookup(key(1)) is None
        assert cache.counters.forged == 1
        assert cache.lookup(key(2), load=True).data == blob(2)  # type: ignore[union-attr]


def test_rotation_keeps_old_signatures_valid_until_the_key_is_removed(
    tmp_path: Path, authority: Authority
) -> None:
    assert authority.signer is not None
    old_pem = authority.signer.trusted.pem
    with open_cache(cache_dir=tmp_path / "c", authority=authority) as cache:
        cache.get_or_build(key(1), build(1))
    rotated = Authority(Signer.generate(), KeyRing.from_pems([old_pem]))
    with open_cache(cache_dir=tmp_path / "c", authority=rotated) as cache:
        assert cache.lookup(key(1)) is not None  # old key still trusted
        new = cache.get_or_build(key(2), build(2))
        assert new.record.provenance and rotated.check(new.record) is None
    removed = Authority(rotated.signer)
    with open_cache(cache_dir=tmp_path / "c", authority=removed) as cache:
        assert cache.lookup(key(1)) is None and cache.counters.forged == 1
        assert cache.lookup(key(2)) is not None


def test_check_statement_refuses_other_bytes_target_and_graph(authority: Authority) -> None:
    with pytest.raises(IntegrityError, match="unknown key"):
        KeyRing([]).open(json.loads(authority.seal(key(1), _record(1, authority))))
    stmt = authority.ring.open(authority.seal(key(1), _record(1, authority)))
    digest = hashlib.sha256(blob(1)).hexdigest()
    check_statement(stmt, sha256=digest, target="cpu:x86_64:generic",
                    graph_digest=key(1).graph_digest)
    with pytest.raises(IntegrityError, match="not these bytes"):
        check_statement(stmt, sha256=hashlib.sha256(b"x").hexdigest())
    with pytest.raises(IntegrityError, match="target"):
        check_statement(stmt, target="vulkan")
    with pytest.raises(IntegrityError, match="graph"):
        check_statement(stmt, graph_digest=key(2).graph_digest)


def _record(i: int, authority: Authority) -> Any:
    from kiln.cache.store import blob_digest
    from kiln.cache.types import ActionRecord, CompilerInfo

    k = key(i)
    return ActionRecord(key=k.digest(), digest=blob_digest(blob(i)), size=len(blob(i)),
                        target=k.target, flags=k.flags,
                        compiler=CompilerInfo("iree", "3.13.0", k.compiler_hash),
                        compile_seconds=0.25, created=1.0e9)


@pytest.mark.redis
def test_a_record_edited_in_redis_is_a_miss_and_never_reaches_the_disk_tier(
    tmp_path: Path, authority: Authority, redis_server: Any
) -> None:
    with open_cache(cache_dir=tmp_path / "a", redis_url=redis_server.url,
                    authority=authority) as writer:
        one = writer.get_or_build(key(1), build(1))
        two = writer.get_or_build(key(2), build(2))
    rkey = f"kiln:v1:ac:{one.key}"
    r = redis.Redis.from_url(redis_server.url)
    rec = json.loads(r.get(rkey))
    rec.update(digest=two.digest, size=two.record.size, flags=[*rec["flags"], "--invented"])
    r.set(rkey, json.dumps(rec))
    with open_cache(cache_dir=tmp_path / "b", redis_url=redis_server.url,
                    authority=authority) as replica:
        assert replica.lookup(key(1)) is None
        assert replica.counters.forged == 1
        assert not replica.disk.record_file(one.key).exists()  # type: ignore[union-attr]
        assert r.get(rkey) is None  # removed from Redis too
        got = replica.get_or_build(key(1), build(1))
        assert got.data == blob(1) and got.cached is False
        assert replica.lookup(key(2), load=True).source == "redis"  # type: ignore[union-attr]
    r.close()


def test_malformed_envelopes_are_refused_with_a_reason_never_an_exception(
    authority: Authority,
) -> None:
    import dataclasses

    rec = _record(1, authority)
    good = json.loads(authority.seal(key(1), rec))
    kid = good["signatures"][0]["keyid"]
    bad: list[Any] = [
        {}, [], "x", {"payload": 1},
        {**good, "signatures": [1]},
        {**good, "signatures": [{"keyid": kid, "sig": "zz"}]},
        {**good, "signatures": [{"keyid": kid}]},
        {**good, "signatures": [{"keyid": kid, "sig": base64.b64encode(b"x" * 64).decode()}]},
        {**good, "payload": base64.b64encode(b"[1, 2]").decode()},
        {**good, "signatures": {"a": 1}},
        {**good, "payloadType": 5},
    ]
    for env in bad:
        why = authority.check(dataclasses.replace(rec, provenance=json.dumps(env)))
        assert isinstance(why, str) and why, env
    assert authority.check(dataclasses.replace(rec, provenance=json.dumps(good))) is None


def test_verifying_an_envelope_leaves_it_intact(authority: Authority) -> None:
    env = json.loads(authority.seal(key(1), _record(1, authority)))
    before = json.dumps(env, sort_keys=True)
    authority.ring.open(env)
    assert json.dumps(env, sort_keys=True) == before  # still has its keyid and sig
