"""The disk cache in one process: hits, integrity, single-flight across threads, eviction, pins."""

from __future__ import annotations

import asyncio
import hashlib
import os
import threading
import time
from pathlib import Path

import pytest

from kiln.cache import Built, CompileKey, open_cache
from kiln.cache.disk import DiskStorage, default_cache_dir
from kiln.errors import NotFound


def key(i: int, *, target: str = "cpu:x86_64") -> CompileKey:
    return CompileKey(
        graph_digest=hashlib.sha256(f"graph-{i}".encode()).hexdigest(),
        target=target,
        options={"opt_level": 2},
        flags=("--iree-hal-target-device=local",),
        compiler_version="3.13.0",
        compiler_hash="c" * 64,
    )


def payload(k: CompileKey, size: int = 4096) -> bytes:
    seed = k.digest().encode()
    return (seed * (size // len(seed) + 1))[:size]


class Builder:
    """A counting build callable producing deterministic bytes for a key."""

    def __init__(self, k: CompileKey, *, size: int = 4096, delay: float = 0.0) -> None:
        self.k, self.size, self.delay = k, size, delay
        self.calls = 0
        self._mu = threading.Lock()

    def __call__(self) -> Built:
        with self._mu:
            self.calls += 1
        if self.delay:
            time.sleep(self.delay)  # widens the race window; never asserted on
        return Built(payload(self.k, self.size), compile_seconds=0.5, warnings=["w1"])


def test_miss_builds_then_hits_across_instances(tmp_path: Path) -> None:
    k, b = key(1), Builder(key(1))
    with open_cache(cache_dir=tmp_path) as cache:
        first = cache.get_or_build(k, b)
        second = cache.get_or_build(k, b)
    assert (first.cached, first.source) == (False, "compiled")
    assert (second.cached, second.source) == (True, "disk")
    assert first.data == second.data == payload(k)
    assert b.calls == 1
    rec = second.record
    assert (
        rec.key == k.digest() and rec.digest == "sha256:" + hashlib.sha256(payload(k)).hexdigest()
    )
    assert (rec.size, rec.target, rec.flags, rec.warnings) == (4096, k.target, k.flags, ("w1",))
    assert (rec.compiler.version, rec.compiler.hash) == ("3.13.0", k.compiler_hash)
    with open_cache(cache_dir=tmp_path) as again:  # a new process sees the same entry
        hit = again.lookup(k)
        assert hit is not None and hit.cached and hit.data is None
        assert again.read_blob(hit.digest) == payload(k)
        path = again.blob_path(hit.digest)
        assert path is not None and path.read_bytes() == payload(k)
        assert (again.counters.hits, again.counters.misses) == (1, 0)


def test_other_target_is_a_miss(tmp_path: Path) -> None:
    with open_cache(cache_dir=tmp_path) as cache:
        cache.get_or_build(key(1), Builder(key(1)))
        assert cache.lookup(key(1, target="vulkan")) is None
        assert cache.counters.misses == 2


def _blob_file(cache_dir: Path, digest: str) -> Path:
    h = digest.removeprefix("sha256:")
    return cache_dir / "v1" / "cas" / h[:2] / h


def test_flipped_byte_on_disk_is_never_served_and_is_rebuilt(tmp_path: Path) -> None:
    k, b = key(2), Builder(key(2))
    with open_cache(cache_dir=tmp_path) as cache:
        digest = cache.get_or_build(k, b).digest
        f = _blob_file(tmp_path, digest)
        raw = bytearray(f.read_bytes())
        raw[100] ^= 0x01
        f.write_bytes(bytes(raw))
        with pytest.raises(NotFound):
            cache.read_blob(digest)
        assert not f.exists()  # the corrupt copy was removed
        assert cache.lookup(k) is None
        again = cache.get_or_build(k, b)
        assert again.cached is False and again.data == payload(k)
        assert b.calls == 2 and cache.counters.corrupt == 1
        assert cache.read_blob(digest) == payload(k)


def test_flip_after_a_memoized_verification_is_still_detected(tmp_path: Path) -> None:
    k = key(3)
    with open_cache(cache_dir=tmp_path) as cache:
        digest = cache.get_or_build(k, Builder(k)).digest
        f = _blob_file(tmp_path, digest)
        old = time.time() - 3600
        os.utime(f, (old, old))  # looks old: the memo (keyed on ctime, which utime bumps) ...
        assert cache.blob_path(digest) is not None
        raw = bytearray(f.read_bytes())
        raw[0] ^= 0xFF
        f.write_bytes(bytes(raw))  # ... must not hide an in-place rewrite
        assert cache.blob_path(digest) is None


def test_unreadable_record_is_a_miss_and_removed(tmp_path: Path) -> None:
    k = key(4)
    with open_cache(cache_dir=tmp_path) as cache:
        cache.get_or_build(k, Builder(k))
        rec = tmp_path / "v1" / "ac" / k.digest()[:2] / f"{k.digest()}.json"
        rec.write_text('{"key": "truncated')
        assert cache.lookup(k) is None
        assert not rec.exists()


def test_failed_build_stores_nothing_and_propagates(tmp_path: Path) -> None:
    def boom() -> Built:
        raise RuntimeError("compiler crashed")

    with open_cache(cache_dir=tmp_path) as cache:
        with pytest.raises(RuntimeError, match="compiler crashed"):
            cache.get_or_build(key(5), boom)
        assert cache.lookup(key(5)) is None
        assert cache.get_or_build(key(5), Builder(key(5))).cached is False


def test_n_threads_one_cold_key_build_once(tmp_path: Path) -> None:
    k, b = key(6), Builder(key(6), delay=0.2)
    results = []
    with open_cache(cache_dir=tmp_path) as cache:
        barrier = threading.Barrier(8)

        def worker() -> None:
            barrier.wait()
            results.append(cache.get_or_build(k, b))

        threads = [threading.Thread(target=worker) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert b.calls == 1
    assert len(results) == 8 and {r.data for r in results} == {payload(k)}
    assert sum(not r.cached for r in results) == 1


def test_asyncio_tasks_one_cold_key_build_once(tmp_path: Path) -> None:
    k, b = key(7), Builder(key(7), delay=0.2)

    async def main() -> list[bytes | None]:
        with open_cache(cache_dir=tmp_path) as cache:
            rs = await asyncio.gather(*(cache.get_or_build_async(k, b) for _ in range(5)))
        return [r.data for r in rs]

    assert asyncio.run(main()) == [payload(k)] * 5
    assert b.calls == 1


def _entry_files(root: Path) -> list[Path]:
    return [
        p for p in (root / "v1").rglob("*") if p.is_file() and p.parent.parent.name in ("cas", "ac")
    ]


def test_eviction_keeps_the_bound_and_never_evicts_pins(tmp_path: Path) -> None:
    bound = 64 * 1024
    with open_cache(cache_dir=tmp_path, max_size=bound) as cache:
        pinned = key(100)
        cache.pin(pinned)
        cache.get_or_build(pinned, Builder(pinned, size=10_000))
        for i in range(25):
            cache.get_or_build(key(i), Builder(key(i), size=10_000))
            assert sum(p.stat().st_size for p in _entry_files(tmp_path)) <= bound
        assert cache.lookup(pinned) is not None
        assert cache.lookup(key(0)) is None  # the oldest went
        assert cache.lookup(key(24)) is not None  # the newest stayed
        report = cache.verify()
        assert (report.corrupt, report.dangling) == (0, 0)  # no record names a missing blob
        cache.unpin(pinned)
        cache.gc(0)
        assert cache.lookup(pinned) is None


def test_gc_evicts_least_recently_used_first(tmp_path: Path) -> None:
    disk = DiskStorage(tmp_path, touch_interval=0.0)
    with open_cache(cache_dir=tmp_path) as cache:
        cache.disk.touch_interval = 0.0  # type: ignore[union-attr]
        for i in range(4):
            cache.get_or_build(key(i), Builder(key(i), size=10_000))
        now = time.time()
        for n, p in enumerate(sorted(_entry_files(tmp_path))):
            os.utime(p, (now - 1000 + n, now - 1000 + n))
        for i in (1, 2, 3):  # make key(0) the most recently *created* but least recently used
            assert cache.lookup(key(i)) is not None
        report = cache.gc(3 * 10_500)
        assert report.removed_blobs == 1
        assert cache.lookup(key(0)) is None
        assert all(cache.lookup(key(i)) is not None for i in (1, 2, 3))
    assert disk.stats().records == 3


def test_pinned_entries_survive_even_when_they_alone_exceed_the_bound(tmp_path: Path) -> None:
    with open_cache(cache_dir=tmp_path) as cache:
        for i in range(3):
            cache.pin(key(i))
            cache.get_or_build(key(i), Builder(key(i), size=10_000))
        report = cache.gc(1000)
        assert report.size_after > 1000 and report.removed_blobs == 0
        assert all(cache.lookup(key(i)) is not None for i in range(3))


def test_verify_removes_corrupt_and_dangling_entries(tmp_path: Path) -> None:
    with open_cache(cache_dir=tmp_path) as cache:
        d = [cache.get_or_build(key(i), Builder(key(i))).digest for i in range(3)]
        f = _blob_file(tmp_path, d[0])
        f.write_bytes(b"garbage")
        _blob_file(tmp_path, d[1]).unlink()
        report = cache.verify()
        assert (report.ok_blobs, report.corrupt, report.dangling, report.ok_records) == (1, 1, 2, 1)
        assert cache.verify().corrupt == 0
        assert cache.lookup(key(2)) is not None


def test_stale_temp_files_are_invisible_and_collected(tmp_path: Path) -> None:
    with open_cache(cache_dir=tmp_path) as cache:
        cache.get_or_build(key(1), Builder(key(1)))
        shard = next((tmp_path / "v1" / "cas").iterdir())
        (shard / ".tmp-dead-writer").write_bytes(b"partial")
        assert cache.stats().backends[0].blobs == 1  # type: ignore[union-attr]
        cache.gc(10**9)
        assert not (shard / ".tmp-dead-writer").exists()


def test_invalid_digests_are_not_found_not_paths(tmp_path: Path) -> None:
    with open_cache(cache_dir=tmp_path) as cache:
        for bad in ("../../etc/passwd", "sha256:xyz", ""):
            assert cache.blob_path(bad) is None
            with pytest.raises(NotFound):
                cache.read_blob(bad)


def test_default_directory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("KILN_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "kiln"
    monkeypatch.setenv("KILN_CACHE_DIR", str(tmp_path / "explicit"))
    assert default_cache_dir() == tmp_path / "explicit"
    with open_cache() as cache:
        cache.get_or_build(key(1), Builder(key(1)))
    assert (tmp_path / "explicit" / "v1" / "ac").is_dir()
