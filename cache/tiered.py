"""Disk in front of a shared tier (Redis, or S3 for blobs with Redis for records), as a wrapper
implementing the same Storage protocol.

Reads go to the local tier first, then the remote one; a remote hit is backfilled into the local
tier (blob before record) so the next read is local. Each tier authenticates the records it
reads (``authority``), so only a record that passed the remote tier's check is copied to disk,
and only one that passes the disk tier's is copied to Redis after an outage. Writes follow the
:class:`WritePolicy`.

Failure semantics: the remote tier's :class:`kiln.errors.CacheUnavailable` never escapes a write,
nor a read when it comes from Redis — such a read becomes a local-only read (a miss if the local
tier misses). When it comes from the object store holding the blobs
(:class:`~kiln.cache.store.BlobStoreUnavailable`, cache/s3.py) a read the local tier cannot answer
raises it: local hits are still served, the rest fails cleanly (503) rather than compiling what
could not be shared. A write the remote tier refused is kept locally and its key
is noted in the disk tier (``<root>/v1/remote-pending/<key>``, an empty file, so a restart keeps
the list). Once the remote tier answers again the noted entries are copied to it, blob before
record, one at a time in a background thread, so what was built during an outage reaches the
other replicas after it. Two things start a copy: the next cache operation (at most once a
second), and, with ``start_catch_up`` (``open_cache(catch_up_interval=)``; ``kiln serve`` and
``kiln worker`` use it), a timer that looks for noted entries every ``interval`` seconds without
waiting for traffic, backing off (doubling, up to ``max_interval``) while the remote tier still
refuses. ``close`` makes one last copy, bounded by ``flush_timeout`` seconds; what it could not
copy stays noted for the next start. Each failure
has already been logged and reported by the remote backend's ``on_error`` hook. Local-tier errors
(``OSError``) propagate to the facade, which logs and counts them (``store_errors``); a failed
backfill is only logged, the remote hit is still returned.

``accept_blob`` (``kiln.cache.kinds.is_known`` for Kiln's caches) guards the blobs copied
between the tiers: one it refuses is not backfilled from the remote tier (a miss), nor copied to
it after an outage (dropped from the list). A write goes to both tiers as it is: what is written
is the caller's.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from kiln.errors import CacheUnavailable

from .disk import DiskStorage
from .key import normalize_digest
from .kinds import HEAD_BYTES, kind_of
from .redis import RedisStorage
from .store import BlobStoreUnavailable
from .types import ActionRecord, Found, VerifyReport, WritePolicy

if TYPE_CHECKING:
    from .s3 import S3Storage

__all__ = ["TieredStorage"]

log = logging.getLogger("kiln.cache.tiered")
_BLOB = ".blob"  # a pending marker's suffix for a blob no record names (a parameter archive)
#: The catch-up timer's period and back-off bound, and how long ``close`` may spend copying.
CATCH_UP_INTERVAL = 2.0
CATCH_UP_MAX_INTERVAL = 5.0
FLUSH_TIMEOUT = 5.0


class TieredStorage:
    name = "tiered"

    def __init__(
        self,
        local: DiskStorage,
        remote: RedisStorage | S3Storage,
        *,
        write_policy: WritePolicy = WritePolicy.WRITE_THROUGH,
    ) -> None:
        self.local = local
        self.remote = remote
        self.write_policy = write_policy
        self.pending_dir = local.base / "remote-pending"
        self._pending = self.pending_dir.is_dir() and any(self.pending_dir.iterdir())
        #: Blobs copied between tiers must pass this (``kiln.cache.kinds.is_known`` on their
        #: head); None copies any blob that verifies.
        self.accept_blob: Callable[[bytes], bool] | None = None
        self.flush_timeout = FLUSH_TIMEOUT
        self._catch_up_lock = threading.Lock()
        self._catch_up_at = 0.0
        self._timer: threading.Thread | None = None
        self._stop = threading.Event()

    def location(self) -> str:
        return f"{self.local.location()} + {self.remote.location()}"

    def find(self, key: str, *, load: bool = False) -> Found | None:
        self._maybe_catch_up()
        hit = self.local.find(key, load=load)
        if hit is not None:
            return hit
        try:
            hit = self.remote.find(key, load=True)
        except BlobStoreUnavailable:
            raise
        except CacheUnavailable:
            return None
        if hit is not None and hit.data is not None:
            if not self._acceptable(hit.data, hit.record.digest):
                return None
            try:
                self.local.put(hit.record, hit.data)  # backfill
            except OSError as exc:
                log.error("kiln cache: could not backfill %s into the disk tier: %s", key, exc)
        return hit

    def get_record(self, key: str) -> ActionRecord | None:
        rec = self.local.get_record(key)
        if rec is None:
            try:
                rec = self.remote.get_record(key)
            except CacheUnavailable:
                return None
        return rec

    def get_provenance(self, digest: str) -> str | None:
        """A blob's stored provenance envelope (unverified), local tier first."""
        env = self.local.get_provenance(digest)
        if env is None:
            try:
                env = self.remote.get_provenance(digest)
            except CacheUnavailable:
                return None
        return env

    def get_blob(self, digest: str) -> bytes | None:
        data = self.local.get_blob(digest)
        if data is not None:
            return data
        try:
            data = self.remote.get_blob(digest)
        except BlobStoreUnavailable:
            raise
        except CacheUnavailable:
            return None
        if data is not None and not self._acceptable(data, digest):
            return None
        if data is not None:
            self.local.put_blob(digest, data)
        return data

    def _acceptable(self, data: bytes, digest: str) -> bool:
        if self.accept_blob is None or self.accept_blob(data):
            return True
        log.warning("kiln cache: not copying blob %s between tiers: the guard refused it "
                    "(a blob of no known kind: %s)", digest,
                    "looks like a " + k.name if (k := kind_of(data)) is not None else "unknown")
        return False

    def blob_path(self, digest: str) -> Path | None:
        """The local file, fetching the blob from the remote tier first if needed."""
        path = self.local.blob_path(digest)
        if path is None and self.get_blob(digest) is not None:
            path = self.local.blob_path(digest)
        return path

    def put(self, record: ActionRecord, data: bytes) -> None:
        self.local.put(record, data)
        if not self._remote_write(lambda: self.remote.put(record, data)):
            self._note_pending(record.key)

    def put_blob(self, digest: str, data: bytes) -> None:
        """A blob no record names (a parameter archive), on both tiers; noted for the remote
        tier (``<hex>.blob``) when it refused the write, like a record."""
        self.local.put_blob(digest, data)
        if not self._remote_write(lambda: self.remote.put_blob(digest, data)):
            self._note_pending(digest, suffix=_BLOB)

    def put_blob_file(self, digest: str, path: str | os.PathLike[str]) -> None:
        """``put_blob`` from a file: copied into the local tier, then sent to the remote one
        from that copy (both streamed)."""
        self.local.put_blob_file(digest, path)
        local = self.local.blob_file(digest)
        if not self._remote_write(lambda: self.remote.put_blob_file(digest, local)):
            self._note_pending(digest, suffix=_BLOB)

    def put_provenance(self, digest: str, provenance: str) -> None:
        self.local.put_provenance(digest, provenance)
        if not self._remote_write(lambda: self.remote.put_provenance(digest, provenance)):
            self._note_pending(digest, suffix=_BLOB)

    def verify(self) -> VerifyReport:
        rep = self.local.verify()
        try:
            rep = rep.merge(self.remote.verify())
        except CacheUnavailable:
            log.warning("kiln cache: %s unavailable; verified the local tier only", self.remote.name)
        return rep

    def close(self) -> None:
        """Stop the catch-up timer, copy what is still noted (at most ``flush_timeout`` s: the
        rest stays noted), close both tiers."""
        self._stop.set()
        if self._timer is not None:
            self._timer.join(self.flush_timeout)
        if self.has_pending():
            self.flush(self.flush_timeout)
        self.local.close()
        self.remote.close()

    def _remote_write(self, fn: Callable[[], None]) -> bool:
        """Run a remote write; False if Redis was unavailable (the local tier has the entry)."""
        if self.write_policy is WritePolicy.LOCAL_ONLY:
            return True
        try:
            fn()
        except CacheUnavailable:
            return False  # logged and counted by the backend
        return True

    # -- catching Redis up after an outage ---------------------------------------------------

    def _note_pending(self, key: str, *, suffix: str = "") -> None:
        try:
            name = normalize_digest(key).removeprefix("sha256:") + suffix  # never a path
            self.pending_dir.mkdir(parents=True, exist_ok=True)
            (self.pending_dir / name).touch()
            self._pending = True
        except (OSError, ValueError) as exc:
            log.error("kiln cache: could not note %s for redis: %s", key, exc)

    def _maybe_catch_up(self) -> None:
        if not self._pending or time.monotonic() < self._catch_up_at:
            return
        if not self._catch_up_lock.acquire(blocking=False):
            return  # a catch-up is running
        self._catch_up_at = time.monotonic() + 1.0
        threading.Thread(target=self._catch_up_locked, name="kiln-redis-catch-up",
                         daemon=True).start()

    def has_pending(self) -> bool:
        """Whether entries are noted for the remote tier (by this process or another one
        sharing the disk tier)."""
        try:
            return self._pending or any(self.pending_dir.iterdir())
        except FileNotFoundError:
            return False

    def start_catch_up(self, interval: float = CATCH_UP_INTERVAL, *,
                       max_interval: float = CATCH_UP_MAX_INTERVAL) -> None:
        """Copy noted entries on a timer: every ``interval`` s while none are noted or the last
        copy finished; after a copy stopped by the remote tier, twice the last wait, up to
        ``max_interval`` s. A daemon thread, stopped by ``close``; a second call does nothing."""
        if self._timer is not None or self.write_policy is WritePolicy.LOCAL_ONLY:
            return
        self._timer = threading.Thread(target=self._catch_up_loop, args=(interval, max_interval),
                                       name="kiln-cache-catch-up", daemon=True)
        self._timer.start()

    def _catch_up_loop(self, interval: float, max_interval: float) -> None:
        wait = interval
        while not self._stop.wait(wait):
            if not self.has_pending():
                wait = interval
                continue
            with self._catch_up_lock:
                if self._stop.is_set():
                    return
                try:
                    n = self._copy_pending()
                except Exception:
                    log.exception("kiln cache: catching %s up failed", self.remote.name)
                    n = 0
            if n:
                log.warning("kiln cache: copied %d entries made during the outage to %s", n,
                            self.remote.name)
            wait = min(2 * wait, max_interval) if self._pending else interval

    def flush(self, timeout: float) -> bool:
        """Copy the noted entries now, trying again (every ``remote.retry_interval`` s: its
        fail-fast window after an outage) while the remote tier refuses, for ``timeout`` s at
        most; a copy still under way then goes on in a daemon thread until the process exits.
        What is not copied stays noted. True when nothing is left noted."""
        done = threading.Event()
        deadline = time.monotonic() + timeout
        pause = max(0.05, float(getattr(self.remote, "retry_interval", 0.5)))

        def copy() -> None:
            try:
                while True:
                    self.catch_up()
                    left = deadline - time.monotonic()
                    if not self._pending or left <= 0:
                        return
                    time.sleep(min(pause, left))
            except Exception:
                log.exception("kiln cache: catching %s up failed", self.remote.name)
            finally:
                done.set()

        threading.Thread(target=copy, name="kiln-cache-flush", daemon=True).start()
        if not done.wait(timeout + 0.5) or self._pending:
            log.warning("kiln cache: entries made during the outage are still not in %s after "
                        "%.1f s; they stay noted for the next start", self.remote.name, timeout)
            return False
        return not self._pending

    def catch_up(self) -> int:
        """Copy every noted entry to Redis now; returns how many were copied. Stops at the first
        Redis failure (the rest stay noted). Entries evicted from the local tier meanwhile are
        dropped from the list."""
        with self._catch_up_lock:
            return self._copy_pending()

    def _catch_up_locked(self) -> None:
        try:
            n = self._copy_pending()
            if n:
                log.warning("kiln cache: copied %d entries made during the outage to %s", n,
                            self.remote.name)
        except Exception:
            log.exception("kiln cache: catching redis up failed")
        finally:
            self._catch_up_lock.release()

    def _copy_pending(self) -> int:
        copied = 0
        try:
            names = [p.name for p in self.pending_dir.iterdir()]
        except FileNotFoundError:
            names = []
        if names:
            self._pending = True  # noted by another process sharing the disk tier, perhaps
        for key in names:
            marker = self.pending_dir / key
            if key.endswith(_BLOB):
                if not self._copy_blob("sha256:" + key.removesuffix(_BLOB)):
                    return copied
                copied += 1
                with contextlib.suppress(FileNotFoundError):
                    marker.unlink()
                continue
            rec = self.local.get_record(key)
            data = self.local.get_blob(rec.digest) if rec is not None else None
            if rec is not None and data is not None and not self._acceptable(data, rec.digest):
                data = None
            if rec is not None and data is not None:
                try:
                    self.remote.put(rec, data)
                except CacheUnavailable:
                    return copied  # still down: try again later
                copied += 1
            with contextlib.suppress(FileNotFoundError):
                marker.unlink()
        self._pending = False
        return copied

    def _copy_blob(self, digest: str) -> bool:
        """Copy a record-less blob and its provenance to the remote tier; False if it is still
        down. A blob evicted locally meanwhile, or one the guard refuses, is dropped. The blob
        is sent from its file (streamed, ``put_blob_file``)."""
        path = self.local.blob_path(digest)
        if path is None:
            return True
        try:
            with open(path, "rb") as f:
                head = f.read(HEAD_BYTES)
        except FileNotFoundError:
            return True
        if not self._acceptable(head, digest):
            return True
        prov = self.local.get_provenance(digest)
        try:
            self.remote.put_blob_file(digest, path)
            if prov:
                self.remote.put_provenance(digest, prov)
        except FileNotFoundError:  # evicted locally meanwhile
            return True
        except CacheUnavailable:
            return False
        return True
