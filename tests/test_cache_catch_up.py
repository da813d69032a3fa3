"""Entries written while the shared tier was down reach it once it is back: on the catch-up timer
without any cache operation, on ``close`` (bounded), or on the next start."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import redis

from kiln.cache import ArtifactCache, open_cache
from kiln.cache.kinds import is_known
from kiln.cache.redis import DEFAULT_PREFIX
from kiln.cache.store import blob_digest
from kiln.cache.types import ActionRecord, CompilerInfo
from tests.conftest_redis import RedisServer

pytestmark = pytest.mark.redis

# A bare FlatBuffer with the IREE identifier: of the executable kind.
EXE = b"\x00\x00\x00\x00IREE" + b"\x07" * 2048


def record(i: int) -> ActionRecord:
    data = EXE + bytes([i])
    return ActionRecord(key=f"{i:064x}", digest=blob_digest(data), size=len(data), target="cpu",
                        flags=(), compiler=CompilerInfo("iree", "3.13.0", "sha256:" + "c" * 64),
                        compile_seconds=0.1, created=time.time())


def replica(root: Path, url: str, *, catch_up_interval: float | None = None) -> ArtifactCache:
    return open_cache(cache_dir=root, redis_url=url, accept_blob=is_known,
                      redis_retry_interval=0.05, catch_up_interval=catch_up_interval)


def put_during_outage(cache: ArtifactCache, server: RedisServer, *ids: int) -> None:
    server.kill()
    for i in ids:
        rec = record(i)
        cache.storage.put(rec, EXE + bytes([i]))
    server.start()  # a fresh, empty Redis on the same port


def in_redis(url: str, i: int, *, within: float) -> bool:
    """Whether record ``i`` and its blob appear in Redis before ``within`` seconds have passed."""
    client = redis.Redis.from_url(url)
    rec = record(i)
    deadline = time.monotonic() + within
    try:
        while True:
            if client.exists(f"{DEFAULT_PREFIX}ac:{rec.key}", f"{DEFAULT_PREFIX}cas:"
                             f"{rec.digest.removeprefix('sha256:')}") == 2:
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.1)
    finally:
        client.close()


def test_the_timer_copies_outage_entries_without_any_cache_operation(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    cache = replica(tmp_path / "a", redis_server.url, catch_up_interval=0.5)
    try:
        put_during_outage(cache, redis_server, 1, 2)
        assert in_redis(redis_server.url, 1, within=10.0) and in_redis(redis_server.url, 2,
                                                                        within=1.0)
        other = replica(tmp_path / "b", redis_server.url)
        assert other.lookup(record(2).key, load=True) is not None
        other.close()
    finally:
        cache.close()


def test_close_copies_what_is_still_noted(redis_server: RedisServer, tmp_path: Path) -> None:
    cache = replica(tmp_path / "a", redis_server.url)  # no timer: only close copies
    put_during_outage(cache, redis_server, 3)
    assert not in_redis(redis_server.url, 3, within=0.0)
    cache.close()
    assert in_redis(redis_server.url, 3, within=0.0)


def test_what_close_could_not_copy_is_copied_after_the_next_start(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    cache = replica(tmp_path / "a", redis_server.url)
    put_during_outage(cache, redis_server, 4)
    redis_server.kill()
    cache.close()  # Redis is down: gives up, the entry stays noted on disk
    assert list((tmp_path / "a").rglob("remote-pending/*"))
    redis_server.start()
    again = replica(tmp_path / "a", redis_server.url, catch_up_interval=0.5)
    try:
        assert in_redis(redis_server.url, 4, within=10.0)
    finally:
        again.close()
    assert not list((tmp_path / "a").rglob("remote-pending/*"))
