"""The one storage protocol every backend implements (sccache ``src/cache`` style).

Two namespaces, bazel-remote style:

* **CAS** — blobs addressed by ``sha256:<hex>`` of their bytes. Immutable; writing the same digest
  twice is a no-op. Every read verifies the digest: a blob whose bytes do not match is deleted and
  reported as absent (``None``), never returned.
* **AC** — action records addressed by the hex compile key. ``find(key)`` is the only way to get a
  *hit*: it returns a record only if the blob it names exists and verifies; a record whose blob is
  missing (evicted) or corrupt is deleted and reported as a miss.

Writers put the blob before the record, so a crash between the two leaves an orphan blob (collected
by gc), never a record pointing at nothing.

Failure semantics: local backends raise ``OSError`` only for real I/O failures (disk full,
permissions). Remote backends raise :class:`kiln.errors.CacheUnavailable` when the server cannot be
reached; they never raise it for a miss. A store that is the *home* of the blobs (S3) raises
:class:`BlobStoreUnavailable`: Redis down is a miss (compile and keep the result locally), the
object store down is not (what the local tier does not hold cannot be served, see cache/s3.py).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NoReturn, Protocol, runtime_checkable

from kiln.errors import CacheUnavailable

from .key import sha256_hex
from .types import ActionRecord, Found, StoreStats, VerifyReport

log = logging.getLogger("kiln.cache")

__all__ = [
    "BlobStoreUnavailable",
    "Outage",
    "Storage",
    "Tier",
    "blob_digest",
    "check_blob",
    "decode_record",
    "encode_record",
    "file_chunks",
    "file_digest",
]


class BlobStoreUnavailable(CacheUnavailable):
    """The object store holding the blobs cannot be reached (same ``cache_unavailable`` code and
    503 as its base). Unlike a Redis outage it is never turned into a miss: the facade and the
    tiered wrapper let it through, so a request the local tier cannot answer fails cleanly."""


def blob_digest(data: bytes) -> str:
    """``sha256:<hex>`` of ``data``."""
    return "sha256:" + sha256_hex(data)


def encode_record(record: ActionRecord) -> bytes:
    return json.dumps(record.to_json(), sort_keys=True, separators=(",", ":")).encode()


def decode_record(raw: bytes, *, key: str) -> ActionRecord | None:
    """Parse a stored record; None if it is malformed or stored under the wrong key."""
    try:
        rec = ActionRecord.from_json(json.loads(raw))
    except (ValueError, UnicodeDecodeError):
        return None
    return rec if rec.key == key else None


@runtime_checkable
class Storage(Protocol):
    """What the cache facade (``ArtifactCache``) uses: a CAS + AC store, one backend or tiers of
    them. Methods are thread-safe; several processes may share one store."""

    name: str

    def location(self) -> str:
        """Where it lives, for messages (a directory, a Redis URL, a bucket)."""
        ...

    def find(self, key: str, *, load: bool = False) -> Found | None:
        """A verified AC hit (record + existing, verified blob) or None.

        With ``load=True`` the returned ``Found.data`` holds the blob's bytes; backends that had to
        read them anyway (Redis) return them regardless.
        """
        ...

    def get_record(self, key: str) -> ActionRecord | None:
        """The stored record, unverified against its blob (use :meth:`find` for hits), but
        authenticated like a hit when the backend has an ``authority``."""
        ...

    def get_provenance(self, digest: str) -> str | None:
        """The provenance envelope (JSON text) last stored for a blob, unverified."""
        ...

    def put(self, record: ActionRecord, data: bytes) -> None:
        """Store a new entry: the blob first, then the record (the normal write path).

        On disk both happen under the shared gc lock, so gc never sees the blob as an orphan.
        """
        ...

    def get_blob(self, digest: str) -> bytes | None:
        """The blob's bytes, verified; None if absent or corrupt (a corrupt blob is deleted)."""
        ...

    def put_blob(self, digest: str, data: bytes) -> None:
        """Store a blob that no record names (a parameter archive: ``ArtifactCache.put_params``).
        ValueError if the bytes do not match the digest."""
        ...

    def put_blob_file(self, digest: str, path: str | os.PathLike[str]) -> None:
        """``put_blob`` from a file, read in chunks (a parameter archive larger than memory
        should be). ValueError if the file's bytes do not match the digest; nothing stored then."""
        ...

    def put_provenance(self, digest: str, provenance: str) -> None:
        """Store the provenance envelope of a blob that no record names."""
        ...

    def blob_path(self, digest: str) -> Path | None:
        """A verified local file holding the blob, for zero-copy serving; None without a disk."""
        ...

    def verify(self) -> VerifyReport:
        """Re-hash every blob and check every record; delete what is bad."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class Tier(Storage, Protocol):
    """One backend (disk, Redis, S3): a ``Storage`` that ``TieredStorage`` can also copy entries
    into and out of, one part at a time."""

    def put_record(self, record: ActionRecord) -> None: ...

    def delete_record(self, key: str) -> None: ...

    def has_blob(self, digest: str) -> bool:
        """Presence only (no verification): cheap pre-check, e.g. to skip an upload."""
        ...

    def delete_blob(self, digest: str) -> None: ...

    def iter_records(self) -> Iterator[ActionRecord]: ...

    def iter_blobs(self) -> Iterator[tuple[str, int]]:
        """``(digest, size)`` of every stored blob."""
        ...

    def stats(self) -> StoreStats: ...


class Outage:
    """A remote tier's health, shared by the Redis and S3 backends: after a lost connection every
    call fails fast for ``retry_interval`` seconds, the outage is logged once as a warning (again
    when it ends), and each failure goes to the backend's ``on_error`` hook."""

    def __init__(self, error: type[CacheUnavailable]) -> None:
        self.error = error
        self._mu = threading.Lock()
        self._down = False
        self._down_until = 0.0

    def check(self, where: str) -> None:
        """Raise at once while a recent outage is still within its retry interval."""
        with self._mu:
            if time.monotonic() < self._down_until:
                raise self.error(f"{where} is unavailable; retrying shortly",
                                 detail={"url": where})

    def failed(self, message: str, where: str, exc: Exception, *, connection_lost: bool,
               retry_interval: float, on_error: Callable[[Exception], None] | None) -> NoReturn:
        err = self.error(message, detail={"url": where})
        with self._mu:
            first = not self._down
            if connection_lost:
                self._down = True
                self._down_until = time.monotonic() + retry_interval
        (log.warning if first else log.debug)("kiln cache: %s", err.message)
        if on_error is not None:
            on_error(err)
        raise err from exc

    def ok(self, where: str) -> None:
        with self._mu:
            if self._down:
                self._down = False
                log.warning("kiln cache: %s is reachable again", where)


#: Bytes per read when a blob is hashed or copied from a file.
CHUNK = 8 << 20


def file_chunks(path: str | os.PathLike[str], digest: str) -> Iterator[bytes]:
    """The file's bytes, ``CHUNK`` at a time; after the last chunk, ValueError unless they hash
    to ``digest`` (a consumer must not commit what it wrote before the iterator is exhausted)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
            yield chunk
    actual = "sha256:" + h.hexdigest()
    if actual != digest:
        raise ValueError(f"blob file {os.fspath(path)!r} hashes to {actual}, not {digest}")


def file_digest(path: str | os.PathLike[str]) -> str:
    """``sha256:<hex>`` of a file, read in chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
    return "sha256:" + h.hexdigest()


def check_blob(digest: str, data: bytes) -> None:
    """ValueError unless ``data`` hashes to ``digest`` (guards puts against caller bugs)."""
    actual = blob_digest(data)
    if actual != digest:
        raise ValueError(f"blob bytes hash to {actual}, not {digest}")
