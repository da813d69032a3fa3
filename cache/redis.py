"""Redis backend: the cache shared by every replica of a cluster.

Keys are namespaced ``<prefix>cas:<hex>`` (blob bytes), ``<prefix>ac:<key>`` (record JSON) and
``<prefix>prov:<hex>`` (a blob's provenance envelope);
the default prefix ``kiln:v1:`` carries the layout version. Designed for a Redis with
``maxmemory`` + an ``allkeys-*`` eviction policy: Redis may drop any key at any time, so a record
whose blob is gone is a miss (and is deleted), and every blob is re-hashed on read — a mismatch is
deleted with its record and reported as a miss, never returned. With an ``authority`` a record
whose signed provenance does not bind its key to its blob under a trusted key (edited in Redis,
copied from another key, unsigned) is deleted, reported to ``on_forged`` and is a miss.

Failure semantics: any ``redis.RedisError`` becomes :class:`kiln.errors.CacheUnavailable`
(``raise ... from exc``), logged and reported to ``on_error`` (the metrics hook) — callers fall back
to the local tier and the compiler. After a connection failure the backend fails fast for
``retry_interval`` seconds (so a dead Redis costs one connect timeout per interval, not one per
request), then tries again: sharing resumes by itself when Redis returns; nothing is ever
permanently disabled. Socket timeouts are short and configurable.

Large blobs: a blob from a file (``put_blob_file``, a parameter archive) is sent in ``CHUNK``
pieces (``SET`` then ``APPEND`` to a temporary key that expires on its own, then ``RENAME``), so
neither side holds a second copy and no reader sees part of it. Redis keeps no string larger than
its ``proto-max-bulk-len`` (512 MiB by default): a blob over ``max_blob_bytes`` is not sent at
all (logged once per blob, counted as ``skipped_large``): it stays in the disk tier of the replica
that made it, and other replicas miss it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import uuid
from collections.abc import Callable, Iterator
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from kiln.errors import CacheUnavailable

from .key import normalize_digest
from .store import Outage, blob_digest, check_blob, decode_record, encode_record, file_chunks
from .types import ActionRecord, Found, RecordAuthority, StoreStats, VerifyReport

__all__ = ["DEFAULT_PREFIX", "RedisStorage"]

log = logging.getLogger("kiln.cache.redis")

DEFAULT_PREFIX = "kiln:v1:"
#: Redis's default ``proto-max-bulk-len``: the largest string it keeps.
MAX_BLOB_BYTES = 512 << 20
#: How long a half-sent blob's temporary key lives if its writer dies.
_PARTIAL_TTL_MS = 600_000
T = TypeVar("T")


def _hex(digest: str) -> str:
    return normalize_digest(digest)[len("sha256:") :]


@contextlib.contextmanager
def _suppress_unavailable() -> Iterator[None]:
    try:
        yield
    except CacheUnavailable:
        pass


def redact(url: str) -> str:
    """The URL without its password (for logs and stats)."""
    parts = urlsplit(url)
    if parts.password:
        host = parts.hostname or ""
        netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
        return urlunsplit(parts._replace(netloc=netloc))
    return url


class RedisStorage:
    """CAS + AC in Redis. Thread-safe (redis-py's connection pool)."""

    name = "redis"

    def __init__(
        self,
        url: str,
        *,
        prefix: str = DEFAULT_PREFIX,
        socket_timeout: float = 2.0,
        connect_timeout: float = 0.5,
        retry_interval: float = 1.0,
        ttl: float | None = None,
        on_error: Callable[[Exception], None] | None = None,
    ) -> None:
        """``ttl`` (seconds) optionally expires entries; None relies on maxmemory eviction."""
        self.url = url
        self.prefix = prefix
        self.retry_interval = retry_interval
        self.ttl_ms = int(ttl * 1000) if ttl else None
        #: Called with each failure (already translated to CacheUnavailable) — the metrics hook.
        self.on_error = on_error
        #: Called with the key of every corrupt blob found and removed.
        self.on_corrupt: Callable[[str], None] | None = None
        #: Authenticates every record read (None: records are trusted as stored).
        self.authority: RecordAuthority | None = None
        #: Called with the Redis key of every record refused by ``authority`` (and deleted).
        self.on_forged: Callable[[str], None] | None = None
        # One immediate retry absorbs a pooled connection that died with a restarted server.
        self.client = redis.Redis.from_url(
            url,
            socket_timeout=socket_timeout,
            socket_connect_timeout=connect_timeout,
            retry=Retry(NoBackoff(), 1),
            health_check_interval=0,
        )
        self._outage = Outage(CacheUnavailable)
        #: Blobs larger than this are not stored (see the module doc); set it to the server's
        #: ``proto-max-bulk-len`` when that was raised.
        self.max_blob_bytes = MAX_BLOB_BYTES
        #: Blobs not stored for their size.
        self.skipped_large = 0

    def location(self) -> str:
        return redact(self.url)

    def _k_blob(self, digest: str) -> str:
        return f"{self.prefix}cas:{_hex(digest)}"

    def _k_rec(self, key: str) -> str:
        return f"{self.prefix}ac:{_hex(key)}"

    def _k_prov(self, digest: str) -> str:
        return f"{self.prefix}prov:{_hex(digest)}"

    def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run one redis-py call, translating failures to CacheUnavailable (see module doc)."""
        where = f"redis at {self.location()}"
        self._outage.check(where)
        try:
            result = fn(*args, **kwargs)
        except redis.RedisError as exc:
            self._outage.failed(
                f"{where}: {type(exc).__name__}: {exc}", where, exc,
                connection_lost=isinstance(exc, (redis.ConnectionError, redis.TimeoutError)),
                retry_interval=self.retry_interval, on_error=self.on_error)
        self._outage.ok(where)
        return result

    def _get(self, rkey: str) -> bytes | None:
        value = self.call(self.client.get, rkey)
        return value.encode() if isinstance(value, str) else value

    def ping(self) -> bool:
        """True if Redis answers (readiness probes); never raises."""
        try:
            return bool(self.call(self.client.ping))
        except CacheUnavailable:
            return False

    # -- reads -------------------------------------------------------------------------------

    def find(self, key: str, *, load: bool = False) -> Found | None:
        rkey = self._k_rec(key)
        raw = self._get(rkey)
        if raw is None:
            return None
        rec = decode_record(raw, key=_hex(key))
        if rec is None:
            self._corrupt(rkey, [rkey])
            return None
        if not self._authentic(rec, rkey):
            return None
        data = self.get_blob(rec.digest)
        if data is None:  # evicted by maxmemory, or corrupt: the record is not a hit
            self.call(self.client.delete, rkey)
            return None
        return Found(rec, "redis", data)

    def get_record(self, key: str) -> ActionRecord | None:
        rkey = self._k_rec(key)
        raw = self._get(rkey)
        rec = None if raw is None else decode_record(raw, key=_hex(key))
        return rec if rec is not None and self._authentic(rec, rkey) else None

    def get_provenance(self, digest: str) -> str | None:
        """The stored provenance envelope (JSON text) of a blob, unverified; None if absent."""
        raw = self._get(self._k_prov(digest))
        try:
            return None if raw is None else raw.decode()
        except UnicodeDecodeError:
            return None

    def _authentic(self, rec: ActionRecord, rkey: str) -> bool:
        if self.authority is None:
            return True
        why = self.authority.check(rec)
        if why is None:
            return True
        log.warning("kiln cache: refusing the redis record %s: %s", rkey, why)
        self.call(self.client.delete, rkey)
        if self.on_forged is not None:
            self.on_forged(rkey)
        return False

    def get_blob(self, digest: str) -> bytes | None:
        digest = normalize_digest(digest)
        bkey = self._k_blob(digest)
        data = self._get(bkey)
        if data is None:
            return None
        if blob_digest(data) != digest:
            self._corrupt(bkey, [bkey])
            return None
        return data

    def has_blob(self, digest: str) -> bool:
        return bool(self.call(self.client.exists, self._k_blob(digest)))

    def blob_path(self, digest: str) -> None:
        return None

    # -- writes ------------------------------------------------------------------------------

    def put(self, record: ActionRecord, data: bytes) -> None:
        """Blob then record in one pipeline (Redis runs them in order)."""
        check_blob(record.digest, data)
        pipe = self.client.pipeline(transaction=False)
        pipe.set(self._k_blob(record.digest), data, px=self.ttl_ms)
        pipe.set(self._k_rec(record.key), encode_record(record), px=self.ttl_ms)
        if record.provenance:
            pipe.set(self._k_prov(record.digest), record.provenance.encode(), px=self.ttl_ms)
        self.call(pipe.execute)

    def put_blob(self, digest: str, data: bytes) -> None:
        digest = normalize_digest(digest)
        check_blob(digest, data)
        if self._too_large(digest, len(data)):
            return
        self.call(self.client.set, self._k_blob(digest), data, px=self.ttl_ms)

    def put_blob_file(self, digest: str, path: str | os.PathLike[str]) -> None:
        """The file in ``CHUNK`` pieces to a temporary key, renamed to the blob's key once all
        of it has arrived and matched ``digest`` (else ValueError, the temporary key deleted)."""
        digest = normalize_digest(digest)
        if self._too_large(digest, os.path.getsize(path)) or self.has_blob(digest):
            return
        tmp = f"{self.prefix}partial:{uuid.uuid4().hex}"
        try:
            first = True
            for chunk in file_chunks(path, digest):
                if first:
                    self.call(self.client.set, tmp, chunk, px=_PARTIAL_TTL_MS)
                    first = False
                else:
                    self.call(self.client.append, tmp, chunk)
            if first:  # an empty file
                self.call(self.client.set, tmp, b"", px=_PARTIAL_TTL_MS)
            pipe = self.client.pipeline(transaction=True)
            pipe.rename(tmp, self._k_blob(digest))
            if self.ttl_ms:
                pipe.pexpire(self._k_blob(digest), self.ttl_ms)
            else:
                pipe.persist(self._k_blob(digest))
            self.call(pipe.execute)
        except BaseException:
            with _suppress_unavailable():
                self.call(self.client.delete, tmp)
            raise

    def _too_large(self, digest: str, size: int) -> bool:
        if size <= self.max_blob_bytes:
            return False
        self.skipped_large += 1
        log.warning("kiln cache: not storing blob %s in redis: %d bytes is over the %d-byte limit "
                    "(max_blob_bytes); it stays in the local tier", digest, size,
                    self.max_blob_bytes)
        return True

    def put_provenance(self, digest: str, provenance: str) -> None:
        """The provenance envelope of a blob stored without a record (a parameter archive)."""
        self.call(self.client.set, self._k_prov(digest), provenance.encode(), px=self.ttl_ms)

    def put_record(self, record: ActionRecord) -> None:
        """The record and its provenance envelope (when signed), without the blob (which may live
        in Redis already, or in an object store: cache/s3.py)."""
        pipe = self.client.pipeline(transaction=False)
        if record.provenance:
            pipe.set(self._k_prov(record.digest), record.provenance.encode(), px=self.ttl_ms)
        pipe.set(self._k_rec(record.key), encode_record(record), px=self.ttl_ms)
        self.call(pipe.execute)

    def delete_record(self, key: str) -> None:
        self.call(self.client.delete, self._k_rec(key))

    def delete_blob(self, digest: str) -> None:
        self.call(self.client.delete, self._k_blob(digest))

    # -- iteration, stats, verify ------------------------------------------------------------

    def _scan(self, kind: str) -> Iterator[str]:
        it = self.call(self.client.scan_iter, match=f"{self.prefix}{kind}:*", count=500)
        while True:
            try:
                k = self.call(next, it)
            except StopIteration:
                return
            yield k.decode() if isinstance(k, bytes) else k

    def iter_blobs(self) -> Iterator[tuple[str, int]]:
        for k in self._scan("cas"):
            size = self.call(self.client.strlen, k)
            if size:
                yield "sha256:" + k.rsplit(":", 1)[1], int(size)

    def iter_records(self) -> Iterator[ActionRecord]:
        for k in self._scan("ac"):
            raw = self._get(k)
            rec = None if raw is None else decode_record(raw, key=k.rsplit(":", 1)[1])
            if rec is not None and self._authentic(rec, k):
                yield rec

    def stats(self) -> StoreStats:
        blobs = list(self.iter_blobs())
        nrec, rbytes = 0, 0
        for k in self._scan("ac"):
            nrec += 1
            rbytes += int(self.call(self.client.strlen, k))
        return StoreStats(
            backend=self.name,
            location=self.location(),
            records=nrec,
            blobs=len(blobs),
            bytes=sum(s for _, s in blobs) + rbytes,
        )

    def verify(self) -> VerifyReport:
        rep = VerifyReport()
        for k in self._scan("cas"):
            data = self._get(k)
            if data is None:
                continue
            if blob_digest(data) == "sha256:" + k.rsplit(":", 1)[1]:
                rep.ok_blobs += 1
            else:
                rep.corrupt += 1
                rep.removed.append(k)
                self._corrupt(k, [k])
        for k in self._scan("ac"):
            raw = self._get(k)
            if raw is None:
                continue
            rec = decode_record(raw, key=k.rsplit(":", 1)[1])
            if rec is None or not self._authentic(rec, k):
                rep.corrupt += 1
            elif not self.call(self.client.exists, self._k_blob(rec.digest)):
                rep.dangling += 1
            else:
                rep.ok_records += 1
                continue
            rep.removed.append(k)
            self.call(self.client.delete, k)
        return rep

    def close(self) -> None:
        self.client.close()

    def _corrupt(self, what: str, keys: list[str]) -> None:
        log.warning("kiln cache: removing corrupt redis entry %s", what)
        self.call(self.client.delete, *keys)
        if self.on_corrupt is not None:
            self.on_corrupt(what)
