"""A parameter archive stored from a file (``ArtifactCache.put_params_file``): the disk tier and a
real Redis get the same bytes, under the same digest, as ``put_params`` from memory; Redis gets
them in pieces; a file that does not match its digest stores nothing; a blob over Redis's string
limit stays in the disk tier."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
import redis

from kiln.cache import open_cache
from kiln.cache import store as store_module

GRAPH = "sha256:" + "2" * 64


def _archive(tmp_path: Path, size: int, seed: int = 0) -> tuple[Path, str]:
    data = b"IRPA" + hashlib.sha256(bytes([seed])).digest() * (size // 32)
    path = tmp_path / f"a{seed}.irpa"
    path.write_bytes(data)
    return path, "sha256:" + hashlib.sha256(data).hexdigest()


@pytest.mark.redis
def test_a_file_goes_to_disk_and_redis_in_pieces_as_put_params_would(
    redis_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_module, "CHUNK", 4096)  # many pieces from a small file
    path, digest = _archive(tmp_path, 100_000)
    with open_cache(cache_dir=tmp_path / "c", redis_url=redis_server.url) as cache:
        assert cache.put_params_file(path, digest=digest, graph_digest=GRAPH) == digest
        assert cache.put_params(path.read_bytes(), graph_digest=GRAPH) == digest
        assert cache.read_blob(digest) == path.read_bytes()
        r = redis.Redis.from_url(redis_server.url)
        assert r.get(f"kiln:v1:cas:{digest.removeprefix('sha256:')}") == path.read_bytes()
        assert r.keys("*partial*") == []
    assert path.exists()  # the caller's file is left in place
    with open_cache(redis_url=redis_server.url, disk=False) as remote:
        assert remote.read_blob(digest) == path.read_bytes()


def test_a_file_that_does_not_match_its_digest_stores_nothing(tmp_path: Path) -> None:
    path, _ = _archive(tmp_path, 10_000)
    wrong = "sha256:" + "0" * 64
    with open_cache(cache_dir=tmp_path / "c") as cache:
        with pytest.raises(ValueError, match="hashes to"):
            cache.put_params_file(path, digest=wrong, graph_digest=GRAPH)
        cas = tmp_path / "c" / "v1" / "cas"
        assert [p for p in cas.rglob("*") if p.is_file()] == []


@pytest.mark.redis
def test_an_archive_over_the_redis_limit_stays_on_disk(redis_server: Any, tmp_path: Path) -> None:
    path, digest = _archive(tmp_path, 50_000)
    with open_cache(cache_dir=tmp_path / "c", redis_url=redis_server.url) as cache:
        remote = cache.storage.remote  # type: ignore[attr-defined]
        remote.max_blob_bytes = 10_000
        cache.put_params_file(path, digest=digest, graph_digest=GRAPH)
        assert remote.skipped_large == 1
        assert cache.read_blob(digest) == path.read_bytes()  # from the disk tier
        assert not redis.Redis.from_url(redis_server.url).exists(f"kiln:v1:cas:{digest[7:]}")
