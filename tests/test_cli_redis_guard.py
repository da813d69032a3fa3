"""`kiln compile --redis-url` guards its tiered cache like the service: a record in Redis that
names a blob of no Kiln kind (its digest verifies, its signature too) is a miss there, so the
command compiles and writes an executable, never the stranger's bytes."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from kiln.cache import open_cache
from kiln.cache.kinds import is_known
from kiln.cache.types import Built
from kiln.cli import main
from kiln.compiler.pipeline import Pipeline
from kiln.provenance import Authority
from kiln.targets import normalize_options, parse_target
from tests.conftest_redis import RedisServer
from tests.test_service_cluster import _req

pytestmark = pytest.mark.redis

STRANGER = b"#!/bin/sh\necho not an executable\n" * 64


def test_kiln_compile_refuses_a_stranger_blob_from_redis(
    redis_server: RedisServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KILN_SIGNING_KEY_FILE", str(tmp_path / "signing-key.pem"))
    doc = _req(5)["graph"]
    assert isinstance(doc, dict)
    src = str(doc["data"])
    graph = tmp_path / "g.mlir"
    graph.write_text(src)
    with Pipeline(cache=None, workers=1) as p:
        ckey = p.key_for(p.prepare(src.encode()), parse_target("cpu"), normalize_options(None))
    # Another writer (no guard on writes) files the stranger under the graph's key, signed with
    # the key this machine trusts.
    writer = open_cache(cache_dir=tmp_path / "writer", redis_url=redis_server.url,
                        authority=Authority.from_env())
    writer.get_or_build(ckey, lambda: Built(STRANGER, 0.1))
    writer.close()

    out, err = io.StringIO(), io.StringIO()
    code = main(["compile", str(graph), "-t", "cpu", "-o", str(tmp_path / "g.vmfb"),
                 "--redis-url", redis_server.url, "--cache-dir", str(tmp_path / "cache")],
                stdout=out, stderr=err)
    assert code == 0, err.getvalue()
    data = (tmp_path / "g.vmfb").read_bytes()
    assert data != STRANGER and is_known(data)
