"""Redis and tiered caches against a real redis-server: integrity, outages, eviction, policies."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Any

import pytest

from kiln.cache import Built, CompileKey, WritePolicy, open_cache
from kiln.cache.redis import RedisStorage
from kiln.errors import CacheUnavailable

pytestmark = pytest.mark.redis


def key(i: int) -> CompileKey:
    return CompileKey(
        graph_digest=hashlib.sha256(f"g{i}".encode()).hexdigest(),
        target="rocm:gfx942",
        options={"opt_level": 3},
        flags=("--iree-hal-target-device=hip", "--iree-hip-target=gfx942"),
        compiler_version="3.13.0",
        compiler_hash="d" * 64,
    )


def data_for(k: CompileKey, size: int = 8192) -> bytes:
    seed = k.digest().encode()
    return (seed * (size // 64 + 1))[:size]


class Counter:
    def __init__(self, k: CompileKey, size: int = 8192) -> None:
        self.k, self.size, self.calls = k, size, 0

    def __call__(self) -> Built:
        self.calls += 1
        return Built(data_for(self.k, self.size), compile_seconds=0.2)


def test_flipped_byte_in_redis_is_never_served_and_is_rebuilt(redis_server: Any) -> None:
    k, b = key(1), Counter(key(1))
    with open_cache(redis_url=redis_server.url, disk=False) as cache:
        digest = cache.get_or_build(k, b).digest
        blob_key = f"kiln:v1:cas:{digest.removeprefix('sha256:')}"
        redis_server.command("SETRANGE", blob_key, "10", "X")
        assert cache.lookup(k) is None
        assert cache.counters.corrupt == 1
        again = cache.get_or_build(k, b)
        assert again.cached is False and again.data == data_for(k) and b.calls == 2
        assert cache.lookup(k, load=True).data == data_for(k)  # type: ignore[union-attr]


def test_flipped_byte_in_redis_is_caught_by_another_replica(
    redis_server: Any, tmp_path: Path
) -> None:
    k = key(2)
    with open_cache(cache_dir=tmp_path / "a", redis_url=redis_server.url) as a:
        digest = a.get_or_build(k, Counter(k)).digest
    redis_server.command("SETRANGE", f"kiln:v1:cas:{digest.removeprefix('sha256:')}", "0", "\x00")
    b_build = Counter(k)
    with open_cache(cache_dir=tmp_path / "b", redis_url=redis_server.url) as b:
        r = b.get_or_build(k, b_build)
    assert (r.cached, b_build.calls, r.data) == (False, 1, data_for(k))


def test_remote_hit_backfills_the_disk_tier(redis_server: Any, tmp_path: Path) -> None:
    k = key(3)
    with open_cache(cache_dir=tmp_path / "a", redis_url=redis_server.url) as a:
        a.get_or_build(k, Counter(k))
    with open_cache(cache_dir=tmp_path / "b", redis_url=redis_server.url) as b:
        first = b.lookup(k)
        assert first is not None and first.source == "redis"
        redis_server.kill()
        second = b.lookup(k)
        assert second is not None and second.source == "disk"
        path = b.blob_path(second.digest)
        assert path is not None and path.read_bytes() == data_for(k)


def test_redis_down_requests_still_succeed_and_are_counted(
    redis_server: Any, tmp_path: Path
) -> None:
    events: list[str] = []
    with (
        open_cache(cache_dir=tmp_path / "a", redis_url=redis_server.url, redis_retry_interval=0.05,
                   metrics_hook=events.append) as a,
        open_cache(redis_url=redis_server.url, disk=False, redis_retry_interval=0.05) as remote_only,
    ):  # fmt: skip
        a.get_or_build(key(1), Counter(key(1)))
        redis_server.kill()
        hit = a.get_or_build(key(1), Counter(key(1)))
        assert hit.cached and hit.source == "disk"
        b2 = Counter(key(2))
        built = a.get_or_build(key(2), b2)
        assert built.data == data_for(key(2)) and b2.calls == 1
        assert a.counters.redis_errors >= 1 and "redis_error" in events
        assert remote_only.get_or_build(key(3), Counter(key(3))).data == data_for(key(3))
        assert remote_only.counters.redis_errors >= 1
        assert a.stats().backends[1] is None  # reported unreachable, not raised

        redis_server.start()  # back, empty: sharing must resume without a restart of Kiln
        with open_cache(cache_dir=tmp_path / "b", redis_url=redis_server.url) as b:
            deadline = time.monotonic() + 15
            for i in range(100, 1000):
                a.get_or_build(key(i), Counter(key(i)))
                if b.lookup(key(i)) is not None:
                    break
                assert time.monotonic() < deadline, "sharing did not resume"
                time.sleep(0.05)
        assert remote_only.get_or_build(key(3), Counter(key(3))).data == data_for(key(3))


def test_record_whose_blob_was_evicted_is_a_miss(redis_server: Any) -> None:
    k, b = key(4), Counter(key(4))
    with open_cache(redis_url=redis_server.url, disk=False) as cache:
        digest = cache.get_or_build(k, b).digest
        redis_server.command("DEL", f"kiln:v1:cas:{digest.removeprefix('sha256:')}")
        assert cache.lookup(k) is None
        assert redis_server.command("EXISTS", f"kiln:v1:ac:{k.digest()}").startswith(b":0")
        assert cache.get_or_build(k, b).cached is False and b.calls == 2


def test_maxmemory_eviction_only_ever_yields_verified_hits_or_misses(redis_server: Any) -> None:
    redis_server.command("CONFIG", "SET", "maxmemory", "4mb")
    redis_server.command("CONFIG", "SET", "maxmemory-policy", "allkeys-random")
    with open_cache(redis_url=redis_server.url, disk=False) as cache:
        for i in range(80):
            cache.get_or_build(key(i), Counter(key(i), size=100_000))
        outcomes = []
        for i in range(80):
            r = cache.lookup(key(i), load=True)
            outcomes.append(r is not None)
            assert r is None or r.data == data_for(key(i), 100_000)
        assert not all(outcomes)  # 8 MB into 4 MB: some were evicted
        assert cache.counters.redis_errors == 0


def test_local_only_policy_never_writes_redis(redis_server: Any, tmp_path: Path) -> None:
    with open_cache(cache_dir=tmp_path, redis_url=redis_server.url,
                    write_policy=WritePolicy.LOCAL_ONLY) as cache:  # fmt: skip
        cache.get_or_build(key(5), Counter(key(5)))
        assert cache.lookup(key(5)) is not None
    assert redis_server.command("DBSIZE").startswith(b":0")


def test_unreachable_redis_raises_cache_unavailable_from_the_backend(tmp_path: Path) -> None:
    from tests.conftest_redis import free_port

    store = RedisStorage(f"redis://127.0.0.1:{free_port()}/0", connect_timeout=0.2)
    try:
        with pytest.raises(CacheUnavailable) as info:
            store.find(key(1).digest())
        assert info.value.code == "cache_unavailable" and info.value.__cause__ is not None
        assert store.ping() is False
    finally:
        store.close()


def test_entries_made_during_an_outage_reach_redis_afterwards(
    redis_server: Any, tmp_path: Path
) -> None:
    # During Redis's back-off new entries go to the local tier first, and reach Redis after.
    with open_cache(cache_dir=tmp_path / "a", redis_url=redis_server.url,
                    redis_retry_interval=0.05) as a:
        redis_server.kill()
        made = [a.get_or_build(key(i), Counter(key(i))) for i in range(200, 205)]
        assert all(not m.cached for m in made)
        redis_server.start()  # back, empty
        with open_cache(cache_dir=tmp_path / "b", redis_url=redis_server.url) as b:
            deadline = time.monotonic() + 20
            while any(b.lookup(key(i)) is None for i in range(200, 205)):
                assert time.monotonic() < deadline, "the outage's entries never reached redis"
                a.lookup(key(999))  # any cache operation lets the catch-up start
                time.sleep(0.2)
            for i in range(200, 205):  # and another replica gets the same bytes without building
                b2 = Counter(key(i))
                got = b.get_or_build(key(i), b2)
                assert got.cached and got.data == data_for(key(i)) and b2.calls == 0


def test_the_outage_list_survives_a_restart(redis_server: Any, tmp_path: Path) -> None:
    with open_cache(cache_dir=tmp_path / "a", redis_url=redis_server.url,
                    redis_retry_interval=0.05) as a:
        redis_server.kill()
        a.get_or_build(key(300), Counter(key(300)))
    redis_server.start()
    with open_cache(cache_dir=tmp_path / "a", redis_url=redis_server.url) as again:
        assert again.storage.catch_up() == 1
        with open_cache(redis_url=redis_server.url, disk=False) as remote_only:
            assert remote_only.lookup(key(300)) is not None
