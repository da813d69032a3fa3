"""Single-flight: identical in-flight builds run once — per process, per host, per cluster.

Three layers, always taken in this order (the lock order of the whole cache):

1. :class:`LocalFlight` — threads of one process (asyncio callers come in through
   ``run_in_executor``). The first caller for a key runs the build; the others block on an Event
   and receive the same result, or the same exception.
2. :func:`disk_key_lock` — processes sharing a cache directory: an exclusive ``fcntl.flock`` on
   ``DIR/v1/locks/ab/<key>.lock``. The kernel drops it when the holder dies, so a crashed
   compiler never blocks the key. The holder re-checks the cache after acquiring it.
3. :class:`RedisLeases` — processes and replicas sharing Redis: a lease key
   ``<prefix>lease:<key>`` set with ``SET NX PX`` and a random token, renewed by a thread every
   third of its lifetime while the build runs, and released by a Lua compare-and-delete (so a
   holder whose lease expired never deletes its successor's). Waiters poll with exponential
   backoff, re-checking the cache at each poll; if the holder dies its lease expires and the first
   waiter to ``SET NX`` takes over (after one more cache check).

Failure semantics: if Redis is unreachable, leases degrade to "build without a lease" (duplicate
work is possible, wrong results are not: entries are content-addressed and verified). A waiter
that has waited ``max_wait`` seconds builds without the lease. Lock files are never unlinked by
their users; gc prunes them only while holding them, and acquirers re-check the inode.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import random
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Generic, Self, TypeVar

from kiln.errors import CacheUnavailable

from .redis import RedisStorage

__all__ = ["LocalFlight", "RedisLeases", "disk_key_lock", "prune_lock_files"]

log = logging.getLogger("kiln.cache.singleflight")

T = TypeVar("T")
R = TypeVar("R")

_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0
"""
_RENEW = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end
return 0
"""


class _Call(Generic[T]):
    __slots__ = ("done", "exc", "result")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.result: T | None = None
        self.exc: BaseException | None = None


class LocalFlight(Generic[T]):
    """Per-key deduplication of concurrent calls inside one process."""

    def __init__(self) -> None:
        self._mu = threading.Lock()
        self._calls: dict[str, _Call[T]] = {}

    def do(self, key: str, fn: Callable[[], T]) -> tuple[T, bool]:
        """Run ``fn`` once for all concurrent callers of ``key``; returns (result, shared).

        ``shared`` is True for callers that waited for another's run. An exception raised by the
        leader's ``fn`` is raised in every caller of that flight.
        """
        with self._mu:
            call = self._calls.get(key)
            leader = call is None
            if call is None:
                call = self._calls[key] = _Call()
        if not leader:
            call.done.wait()
            if call.exc is not None:
                raise call.exc
            return call.result, True  # type: ignore[return-value]
        try:
            call.result = fn()
        except BaseException as exc:
            call.exc = exc
            raise
        finally:
            with self._mu:
                del self._calls[key]
            call.done.set()
        return call.result, False

    def in_flight(self) -> int:
        with self._mu:
            return len(self._calls)


@contextlib.contextmanager
def disk_key_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive flock on ``path`` (created if missing) for the ``with`` body."""
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if os.fstat(fd).st_ino == os.stat(path).st_ino:
                break
        except FileNotFoundError:
            pass  # pruned between open and flock: lock the new file instead
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
    try:
        yield
    finally:
        os.close(fd)


def prune_lock_files(locks_dir: Path) -> int:
    """Unlink lock files nobody holds (each only while holding it). Returns how many."""
    n = 0
    for shard in list(locks_dir.glob("??")):
        for p in list(shard.iterdir()):
            try:
                fd = os.open(p, os.O_RDWR)
            except FileNotFoundError:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                p.unlink()
                n += 1
            except (BlockingIOError, FileNotFoundError):
                pass
            finally:
                os.close(fd)
    return n


class _Renewer:
    """Extends a held lease every ``period`` seconds until stopped."""

    def __init__(self, leases: RedisLeases, lkey: str, token: str) -> None:
        self._leases, self._lkey, self._token = leases, lkey, token
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"kiln-lease-{lkey[-8:]}", daemon=True
        )

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        period = self._leases.lease_ms / 3000.0
        while not self._stop.wait(period):
            try:
                ok = self._leases.storage.call(
                    self._leases._renew,
                    keys=[self._lkey],
                    args=[self._token, self._leases.lease_ms],
                )
            except CacheUnavailable:
                continue  # keep building; a duplicate build is harmless
            if not ok:
                log.warning(
                    "kiln cache: lost lease %s (expired); finishing the build anyway", self._lkey
                )
                return


class RedisLeases:
    """Cluster-wide single-flight over one Redis (see the module docstring)."""

    def __init__(
        self,
        storage: RedisStorage,
        *,
        lease_seconds: float = 30.0,
        poll_initial: float = 0.02,
        poll_max: float = 0.5,
        max_wait: float | None = 3600.0,
    ) -> None:
        self.storage = storage
        self.lease_ms = max(1, int(lease_seconds * 1000))
        self.poll_initial = poll_initial
        self.poll_max = poll_max
        self.max_wait = max_wait
        self._release = storage.client.register_script(_RELEASE)
        self._renew = storage.client.register_script(_RENEW)

    def lease_key(self, key: str) -> str:
        return f"{self.storage.prefix}lease:{key}"

    def run(self, key: str, *, recheck: Callable[[], R | None], build: Callable[[], T]) -> T | R:
        """``recheck()`` if another holder produced the entry meanwhile, else ``build()``.

        ``recheck`` must return None on a miss. It is called while waiting and once more right
        after the lease is acquired. ``build`` runs at most once per call.
        """
        lkey, token = self.lease_key(key), uuid.uuid4().hex
        delay = self.poll_initial
        deadline = None if self.max_wait is None else time.monotonic() + self.max_wait
        while True:
            try:
                got = self.storage.call(
                    self.storage.client.set, lkey, token, nx=True, px=self.lease_ms
                )
            except CacheUnavailable:
                return build()  # no coordination possible; never fail the request for it
            if got:
                break
            hit = recheck()
            if hit is not None:
                return hit
            if deadline is not None and time.monotonic() > deadline:
                log.warning("kiln cache: waited %.0fs for lease %s; building", self.max_wait, lkey)
                return build()
            time.sleep(delay * random.uniform(0.5, 1.0))
            delay = min(delay * 2, self.poll_max)
        try:
            hit = recheck()  # the previous holder may have stored it just before we got the lease
            if hit is not None:
                return hit
            with _Renewer(self, lkey, token):
                return build()
        finally:
            with contextlib.suppress(CacheUnavailable):
                self.storage.call(self._release, keys=[lkey], args=[token])
