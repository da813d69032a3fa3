"""Disk in front of Redis, as a wrapper implementing the same Storage protocol.

Reads go to the local tier first, then the remote one; a remote hit is backfilled into the local
tier (blob before record) so the next read is local. Writes follow the :class:`WritePolicy`.

Failure semantics: the remote tier's :class:`kiln.errors.CacheUnavailable` never escapes — a read
becomes a local-only read (a miss if the local tier misses), a write is kept locally. Each failure
has already been logged and reported by the remote backend's ``on_error`` hook. Local-tier errors
(``OSError``) propagate to the facade, which logs and counts them (``store_errors``); a failed
backfill is only logged, the remote hit is still returned.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path

from kiln.errors import CacheUnavailable

from .disk import DiskStorage
from .redis import RedisStorage
from .types import ActionRecord, Found, StoreStats, VerifyReport, WritePolicy

__all__ = ["TieredStorage"]

log = logging.getLogger("kiln.cache.tiered")


class TieredStorage:
    name = "tiered"

    def __init__(
        self,
        local: DiskStorage,
        remote: RedisStorage,
        *,
        write_policy: WritePolicy = WritePolicy.WRITE_THROUGH,
    ) -> None:
        self.local = local
        self.remote = remote
        self.write_policy = write_policy

    def location(self) -> str:
        return f"{self.local.location()} + {self.remote.location()}"

    def find(self, key: str, *, load: bool = False) -> Found | None:
        hit = self.local.find(key, load=load)
        if hit is not None:
            return hit
        try:
            hit = self.remote.find(key, load=True)
        except CacheUnavailable:
            return None
        if hit is not None and hit.data is not None:
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

    def get_blob(self, digest: str) -> bytes | None:
        data = self.local.get_blob(digest)
        if data is not None:
            return data
        try:
            data = self.remote.get_blob(digest)
        except CacheUnavailable:
            return None
        if data is not None:
            self.local.put_blob(digest, data)
        return data

    def blob_path(self, digest: str) -> Path | None:
        """The local file, fetching the blob from Redis into the local tier first if needed."""
        path = self.local.blob_path(digest)
        if path is None and self.get_blob(digest) is not None:
            path = self.local.blob_path(digest)
        return path

    def has_blob(self, digest: str) -> bool:
        if self.local.has_blob(digest):
            return True
        try:
            return self.remote.has_blob(digest)
        except CacheUnavailable:
            return False

    def put(self, record: ActionRecord, data: bytes) -> None:
        self.local.put(record, data)
        self._remote_write(lambda: self.remote.put(record, data))

    def put_blob(self, digest: str, data: bytes) -> None:
        self.local.put_blob(digest, data)
        self._remote_write(lambda: self.remote.put_blob(digest, data))

    def put_record(self, record: ActionRecord) -> None:
        self.local.put_record(record)
        self._remote_write(lambda: self.remote.put_record(record))

    def delete_record(self, key: str) -> None:
        self.local.delete_record(key)
        self._remote_write(lambda: self.remote.delete_record(key))

    def delete_blob(self, digest: str) -> None:
        self.local.delete_blob(digest)
        self._remote_write(lambda: self.remote.delete_blob(digest))

    def iter_records(self) -> Iterator[ActionRecord]:
        return self.local.iter_records()

    def iter_blobs(self) -> Iterator[tuple[str, int]]:
        return self.local.iter_blobs()

    def stats(self) -> StoreStats:
        return self.local.stats()

    def verify(self) -> VerifyReport:
        rep = self.local.verify()
        try:
            rep = rep.merge(self.remote.verify())
        except CacheUnavailable:
            log.warning("kiln cache: redis unavailable; verified the local tier only")
        return rep

    def close(self) -> None:
        self.local.close()
        self.remote.close()

    def _remote_write(self, fn: Callable[[], None]) -> None:
        if self.write_policy is WritePolicy.LOCAL_ONLY:
            return
        try:
            fn()
        except CacheUnavailable:
            pass  # logged and counted by the backend; the local tier has the entry
