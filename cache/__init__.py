"""Kiln's artifact cache: a content-addressed store (CAS) plus an action cache (AC).

    from kiln.cache import open_cache, CompileKey, Built

    cache = open_cache()                                   # ~/.cache/kiln, or $KILN_CACHE_DIR
    result = cache.get_or_build(key, lambda: Built(data, compile_seconds=0.6))
    result.cached, result.source, result.record.digest, result.data

Backends (one file each): ``disk`` (embedded default), ``redis`` (shared), ``s3`` (blobs in an
object store, records in Redis or in the bucket), ``tiered`` (disk in front of Redis or S3). The
kinds of blob (executables, parameter archives, kernels, front-end phases) and their guards are
declared once, in ``kinds``. The
facade adds what is common to all of them: verified hits only, single-flight builds, counters and a
metrics hook, and — given an ``authority`` (``kiln.provenance.Authority``) — a signed provenance on
every new record, checked on every hit in every tier (an edited or foreign record is a miss, counted
as ``forged``). See ``docs/caching.md`` and ``docs/trust.md``.

Failure semantics of the facade: a cache that cannot be read is a miss and one that cannot be
written is skipped — ``get_or_build`` fails only if ``build`` does (its exception propagates,
unchanged, to every caller waiting on the same key). Redis failures are logged and counted
(``counters.redis_errors``); local write failures are logged and counted (``store_errors``).
The one exception: with an object store (S3) holding the blobs, a lookup the disk tier cannot
answer while that store is down raises :class:`kiln.errors.CacheUnavailable` (503; counted in
``s3_errors``) — hits already on disk are still served, and the store is tried again by itself.
"""

from __future__ import annotations

import asyncio
import dataclasses
import errno
import functools
import json
import logging
import os
import threading
import time
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any, Self

from kiln.errors import CacheUnavailable, InsufficientStorage, InvalidRequest, NotFound

from .disk import DiskStorage, default_cache_dir
from .key import KEY_VERSION, CompileKey, normalize_digest
from .redis import RedisStorage
from .s3 import S3Storage, endpoint_from_env
from .singleflight import LocalFlight, RedisLeases, disk_key_lock
from .store import BlobStoreUnavailable, Storage, blob_digest
from .tiered import TieredStorage
from .types import (
    ActionRecord,
    Built,
    CacheResult,
    CacheStats,
    CompilerInfo,
    Found,
    GcReport,
    RecordAuthority,
    StoreStats,
    VerifyReport,
    WritePolicy,
)

__all__ = [
    "KEY_VERSION",
    "ActionRecord",
    "ArtifactCache",
    "Built",
    "CacheResult",
    "CacheStats",
    "CompileKey",
    "CompilerInfo",
    "Counters",
    "GcReport",
    "Storage",
    "StoreStats",
    "VerifyReport",
    "WritePolicy",
    "default_cache_dir",
    "open_cache",
]

log = logging.getLogger("kiln.cache")

#: Events passed to the metrics hook (and the counter each one increments).
EVENTS = (
    "hit", "miss", "build", "inflight_join", "corrupt", "redis_error", "store_error", "forged",
    "s3_error",
)


@dataclasses.dataclass
class Counters:
    """Monotonic per-process counters; read them as attributes (or :meth:`snapshot`)."""

    hits: int = 0
    misses: int = 0
    builds: int = 0
    inflight_joins: int = 0
    corrupt: int = 0
    redis_errors: int = 0
    store_errors: int = 0
    forged: int = 0  # records refused by the authority (edited, foreign or unsigned)
    s3_errors: int = 0  # object store requests that failed (cache/s3.py)

    def snapshot(self) -> dict[str, int]:
        return dataclasses.asdict(self)


_FIELD = {
    "hit": "hits",
    "miss": "misses",
    "build": "builds",
    "inflight_join": "inflight_joins",
    "corrupt": "corrupt",
    "redis_error": "redis_errors",
    "store_error": "store_errors",
    "forged": "forged",
    "s3_error": "s3_errors",
}


class ArtifactCache:
    """The cache facade used by ``kiln compile`` and the daemon. Thread-safe.

    ``metrics_hook(event)`` is called once per event in ``EVENTS`` (e.g. to increment a Prometheus
    counter); it must not raise or block.
    """

    def __init__(
        self,
        storage: Storage,
        *,
        disk: DiskStorage | None = None,
        redis: RedisStorage | None = None,
        s3: S3Storage | None = None,
        lease_seconds: float = 30.0,
        lease_poll_max: float = 0.5,
        compiler_name: str = "iree",
        metrics_hook: Callable[[str], None] | None = None,
        authority: RecordAuthority | None = None,
    ) -> None:
        self.storage = storage
        self.authority = authority
        self.disk = disk
        self.redis = redis
        self.s3 = s3
        self.compiler_name = compiler_name
        self.metrics_hook = metrics_hook
        self.counters = Counters()
        self._mu = threading.Lock()
        self._flight: LocalFlight[CacheResult] = LocalFlight()
        self._leases = (
            RedisLeases(redis, lease_seconds=lease_seconds, poll_max=lease_poll_max)
            if redis is not None
            else None
        )
        if disk is not None:
            disk.on_corrupt = lambda _what: self._count("corrupt")
            disk.authority = authority
            disk.on_forged = lambda _what: self._count("forged")
        if redis is not None:
            redis.on_corrupt = lambda _what: self._count("corrupt")
            redis.on_error = lambda _exc: self._count("redis_error")
            redis.authority = authority
            redis.on_forged = lambda _what: self._count("forged")
        if s3 is not None:
            s3.on_corrupt = lambda _what: self._count("corrupt")
            s3.on_error = lambda _exc: self._count("s3_error")
            s3.authority = authority
            s3.on_forged = lambda _what: self._count("forged")

    # -- lookups and builds ------------------------------------------------------------------

    def lookup(self, key: CompileKey | str, *, load: bool = False) -> CacheResult | None:
        """A verified hit, or None. ``load=True`` fills ``result.data``. Counts a hit or a miss."""
        found = self._find(_key_hex(key), load=load)
        self._count("hit" if found else "miss")
        return None if found is None else _result(found)

    def get_or_build(self, key: CompileKey, build: Callable[[], Built]) -> CacheResult:
        """The cached artifact for ``key``, else ``build()``'s, stored blob-then-record.

        ``build`` runs at most once across all concurrent callers for the same key in this
        process, in every process sharing the cache directory, and in every replica sharing Redis
        (see singleflight.py). ``result.data`` is always set (verified bytes).
        """
        kh = key.digest()
        found = self._find(kh, load=True)
        if found is not None:
            self._count("hit")
            return _result(found)
        self._count("miss")
        result, shared = self._flight.do(kh, lambda: self._build_once(key, kh, build))
        if shared:
            self._count("inflight_join")
            return dataclasses.replace(result, cached=True, source="inflight")
        return result

    async def get_or_build_async(self, key: CompileKey, build: Callable[[], Built]) -> CacheResult:
        """:meth:`get_or_build` on the default executor (``build`` runs in that thread)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, functools.partial(self.get_or_build, key, build))

    def _build_once(self, key: CompileKey, kh: str, build: Callable[[], Built]) -> CacheResult:
        lock = disk_key_lock(self.disk.lock_file(kh)) if self.disk is not None else nullcontext()
        with lock:
            found = self._find(kh, load=True)  # another process may have built it while we waited
            if found is not None:
                return _result(found)
            if self._leases is None:
                return self._build_and_store(key, kh, build)
            out = self._leases.run(
                kh,
                recheck=lambda: self._find(kh, load=True),
                build=lambda: self._build_and_store(key, kh, build),
            )
            return _result(out) if isinstance(out, Found) else out

    def _build_and_store(self, key: CompileKey, kh: str, build: Callable[[], Built]) -> CacheResult:
        built = build()
        self._count("build")
        data = bytes(built.data)
        record = ActionRecord(
            key=kh,
            digest=blob_digest(data),
            size=len(data),
            target=key.target,
            flags=key.flags,
            rewrites=key.rewrites,
            compiler=CompilerInfo(self.compiler_name, key.compiler_version, key.compiler_hash),
            compile_seconds=float(built.compile_seconds),
            created=time.time(),
            warnings=tuple(built.warnings),
        )
        if self.authority is not None:
            record = dataclasses.replace(record, provenance=self.authority.seal(key, record))
        try:
            self.storage.put(record, data)
        except CacheUnavailable:
            pass  # redis-only cache with Redis down: counted by the backend
        except OSError as exc:
            self._count("store_error")
            log.error("kiln cache: could not store %s: %s", kh, exc)
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                # Nothing was kept (writes are atomic), so a URL for it would answer 404.
                raise InsufficientStorage(
                    f"the cache has no space left for the {len(data)}-byte executable",
                    detail={"size": len(data), "target": key.target},
                ) from exc
        return CacheResult(record, cached=False, source="compiled", data=data)

    def _find(self, kh: str, *, load: bool) -> Found | None:
        try:
            return self.storage.find(kh, load=load)
        except BlobStoreUnavailable:
            raise  # not a miss: what is not on disk cannot be served now (logged and counted)
        except CacheUnavailable:
            return None  # logged and counted by the backend
        except OSError as exc:  # an unreadable local cache is a miss, not a failed request
            self._count("store_error")
            log.error("kiln cache: could not read %s: %s", kh, exc)
            return None

    # -- parameter archives ------------------------------------------------------------------

    def put_params(self, data: bytes, *, graph_digest: str) -> str:
        """Store a parameter archive (``.irpa``; weights apart from code, docs/caching.md) and
        return its ``sha256:<hex>``. It is a CAS blob like an executable, in every tier, but no
        record names it: it is kept (and evicted) as its own LRU unit, never collected as an
        orphan, and stored again by every compile that produces it. With an authority it gets a
        signed provenance (``Authority.seal_params``; once per blob: the first graph that
        produced it is named). Failure semantics as for a build's store: a full disk raises
        ``InsufficientStorage``, other write failures are logged and counted; an unreachable
        remote tier is a local-only write, caught up later."""
        digest = blob_digest(data)
        self._put_params(digest, len(data), lambda: self.storage.put_blob(digest, data),
                         graph_digest=graph_digest)
        return digest

    def put_params_file(self, path: str | os.PathLike[str], *, digest: str,
                        graph_digest: str) -> str:
        """``put_params`` from a file whose bytes hash to ``digest`` (as a prepare worker wrote
        it): every tier reads it in chunks (disk: a copy hashed as it goes; Redis, S3: a chunked
        or streamed upload), so the archive is never held in memory whole. The file is left in
        place. ValueError if its bytes do not match ``digest`` (nothing stored)."""
        digest = normalize_digest(digest)
        size = os.path.getsize(path)
        self._put_params(digest, size, lambda: self.storage.put_blob_file(digest, path),
                         graph_digest=graph_digest)
        return digest

    def scratch_dir(self) -> Path | None:
        """A directory for files on their way into this cache (on the disk tier's file system,
        gc removes a dead writer's leftovers), or None without a disk tier."""
        local = self.storage.local if isinstance(self.storage, TieredStorage) else self.storage
        return local.scratch_dir if isinstance(local, DiskStorage) else None

    def _put_params(self, digest: str, size: int, put: Callable[[], None], *,
                    graph_digest: str) -> None:
        try:
            fresh = self.storage.get_provenance(digest) is None
            put()
            if fresh and self.authority is not None:
                text = self.authority.seal_params(digest, size, graph_digest=graph_digest)
                if text:
                    self.storage.put_provenance(digest, text)
        except CacheUnavailable:
            pass  # a remote-only cache with its remote down: counted by the backend
        except OSError as exc:
            self._count("store_error")
            log.error("kiln cache: could not store the parameter archive %s: %s", digest, exc)
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise InsufficientStorage(
                    f"the cache has no space left for the {size}-byte parameter archive",
                    detail={"size": size},
                ) from exc

    # -- blobs -------------------------------------------------------------------------------

    def read_blob(self, digest: str) -> bytes:
        """The verified bytes of a blob (``sha256:<hex>`` or bare hex). NotFound if absent, corrupt
        (the corrupt copy is deleted) or not a digest at all; CacheUnavailable if it is not on
        disk and the object store holding the blobs is down."""
        try:
            data = self.storage.get_blob(normalize_digest(digest))
        except ValueError as exc:
            raise NotFound(f"no artifact {digest!r}") from exc
        except BlobStoreUnavailable:
            raise
        except CacheUnavailable as exc:
            raise NotFound(f"no artifact {digest!r} (cache unavailable)") from exc
        if data is None:
            raise NotFound(f"no artifact {digest!r}", detail={"digest": digest})
        return data

    def provenance(self, digest: str, *, key: str | None = None) -> dict[str, Any] | None:
        """The provenance envelope of the blob ``digest``: the one of the record ``key`` when
        given (it must name this blob), else the last one stored for the blob. With an
        authority only an envelope that verifies and is about this blob is returned. None if
        there is none (or the cache is unreachable)."""
        try:
            digest = normalize_digest(digest)
            if key is not None:
                rec = self.storage.get_record(_key_hex(key))
                text = rec.provenance if rec is not None and rec.digest == digest else None
            else:
                text = self.storage.get_provenance(digest)
        except (ValueError, CacheUnavailable):
            return None
        if not text:
            return None
        if self.authority is not None:
            return self.authority.envelope_for(text, digest)
        try:
            env = json.loads(text)
        except ValueError:
            return None
        return env if isinstance(env, dict) else None

    def blob_path(self, digest: str) -> Path | None:
        """A verified local file holding the blob (fetched from the remote tier first when tiered),
        for zero-copy serving; None if absent/corrupt or when there is no disk tier.
        CacheUnavailable if it is not on disk and the object store holding the blobs is down."""
        try:
            return self.storage.blob_path(digest)
        except BlobStoreUnavailable:
            raise
        except (ValueError, CacheUnavailable):
            return None

    # -- maintenance -------------------------------------------------------------------------

    def stats(self) -> CacheStats:
        backends: list[StoreStats | None] = []
        for s in (self.disk, self.redis, self.s3):
            if s is None:
                continue
            try:
                backends.append(s.stats())
            except CacheUnavailable:
                backends.append(None)
        c = self.counters
        return CacheStats(
            c.hits, c.misses, c.builds, c.inflight_joins, c.corrupt, c.redis_errors,
            tuple(backends), forged=c.forged,
        )

    def verify(self) -> VerifyReport:
        """Re-hash every blob, check every record, remove what is bad (see VerifyReport).

        Raises CacheUnavailable only for a Redis-only cache whose Redis is down.
        """
        return self.storage.verify()

    def gc(self, max_size: int | None = None) -> GcReport:
        """Evict the disk tier down to ``max_size`` bytes (default: the configured bound). Redis
        is bounded by its own ``maxmemory``. Without a disk tier this does nothing."""
        if self.disk is None:
            return GcReport()
        rep = self.disk.gc(max_size)
        assert rep is not None  # wait=True never skips
        return rep

    def pin(self, key: CompileKey | str) -> None:
        """Never evict this key's record nor its blob from the disk tier."""
        self._require_disk("pin").pin(_key_hex(key))

    def unpin(self, key: CompileKey | str) -> None:
        self._require_disk("unpin").unpin(_key_hex(key))

    def close(self) -> None:
        self.storage.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _require_disk(self, what: str) -> DiskStorage:
        if self.disk is None:
            raise InvalidRequest(f"{what} needs a disk cache (pins are local)")
        return self.disk

    def _count(self, event: str) -> None:
        with self._mu:
            setattr(self.counters, _FIELD[event], getattr(self.counters, _FIELD[event]) + 1)
        if self.metrics_hook is not None:
            self.metrics_hook(event)


def open_cache(
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    redis_url: str | None = None,
    s3_url: str | None = None,
    s3_endpoint_url: str | None = None,
    max_size: int | None = None,
    write_policy: WritePolicy = WritePolicy.WRITE_THROUGH,
    disk: bool = True,
    lease_seconds: float = 30.0,
    lease_poll_max: float = 0.5,
    redis_retry_interval: float = 1.0,
    s3_retry_interval: float = 1.0,
    metrics_hook: Callable[[str], None] | None = None,
    authority: RecordAuthority | None = None,
    accept_blob: Callable[[bytes], bool] | None = None,
    catch_up_interval: float | None = None,
) -> ArtifactCache:
    """Disk only (default; ``cache_dir`` or ``$KILN_CACHE_DIR`` or the user cache dir), tiered
    disk+Redis when ``redis_url`` is given, Redis only with ``disk=False``.

    ``s3_url`` (``s3://BUCKET[/PREFIX]``) puts the blobs in an object store behind the disk tier:
    disk + Redis + S3 keeps records and leases in Redis, disk + S3 keeps records in the bucket too.
    The endpoint is ``s3_endpoint_url``, else ``$KILN_S3_ENDPOINT_URL``, else boto3's default;
    credentials come from the standard ``AWS_*`` environment. S3 needs the disk tier.

    Opening never contacts Redis nor the object store, so it succeeds while they are down.
    ``authority`` signs new records and authenticates every record read
    (``kiln.provenance.Authority``); without one, records are neither signed nor checked.
    ``accept_blob`` (``kiln.cache.kinds.is_known``: Kiln's blob kinds) guards blobs crossing
    between the tiers; None lets any blob that verifies cross. ``catch_up_interval`` (seconds)
    starts a timer copying entries written during a remote outage to the remote tier without
    waiting for traffic (``TieredStorage.start_catch_up``); None leaves that to the next cache
    operation. ``close`` copies what is still noted, for a few seconds at most.
    """
    if s3_url and not disk:
        raise InvalidRequest("an S3 cache needs the disk tier in front of it (disk=True)")
    local = DiskStorage(cache_dir, max_size=max_size) if disk else None
    redis = RedisStorage(redis_url, retry_interval=redis_retry_interval) if redis_url else None
    s3 = (
        S3Storage(
            s3_url,
            endpoint_url=s3_endpoint_url or endpoint_from_env(),
            records=redis,
            retry_interval=s3_retry_interval,
        )
        if s3_url
        else None
    )
    remote: RedisStorage | S3Storage | None = s3 if s3 is not None else redis
    storage: Storage
    if local is not None and remote is not None:
        storage = TieredStorage(local, remote, write_policy=write_policy)
        storage.accept_blob = accept_blob
        if catch_up_interval is not None:
            storage.start_catch_up(catch_up_interval)
    elif local is not None:
        storage = local
    elif remote is not None:
        storage = remote
    else:
        raise InvalidRequest("a cache needs a disk directory, a Redis URL, or both")
    return ArtifactCache(
        storage,
        disk=local,
        redis=redis,
        s3=s3,
        lease_seconds=lease_seconds,
        lease_poll_max=lease_poll_max,
        metrics_hook=metrics_hook,
        authority=authority,
    )


def _key_hex(key: CompileKey | str) -> str:
    if isinstance(key, CompileKey):
        return key.digest()
    return normalize_digest(key)[len("sha256:") :]


def _result(found: Found) -> CacheResult:
    return CacheResult(found.record, cached=True, source=found.source, data=found.data)
