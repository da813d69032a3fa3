"""The embedded default backend: a sharded, versioned directory shared by every Kiln process.

Layout (``LAYOUT`` is the on-disk format version, independent of ``KEY_VERSION``)::

    DIR/v1/cas/ab/ab12…ef          blob, named by the hex sha256 of its bytes
    DIR/v1/ac/cd/cd34…90.json      action record (canonical JSON), named by the hex compile key
    DIR/v1/prov/ab/ab12…ef.json    provenance envelope of the blob ab12…ef (GET …/provenance)
    DIR/v1/pins/cd34…90            empty file: this key (its record and blob) is never evicted
    DIR/v1/locks/cd/cd34…90.lock   single-flight lock files (see singleflight.py)
    DIR/v1/gc.lock                 writers hold it shared, gc/verify exclusive
    DIR/v1/scratch/.tmp-*          files on their way in (a prepare worker's parameter archive)

Invariants and failure semantics:

* Writes are atomic: a temp file ``.tmp-*`` in the destination's directory, fsync, ``os.replace``,
  fsync of the directory. A writer killed at any point leaves at most a ``.tmp-*`` file (removed by
  gc), never a partial file under a final name. The blob is written before the record.
* Every read verifies the sha256. A blob that does not match is deleted and reported absent; a
  record that does not parse, or names a missing/corrupt blob, is deleted and reported as a miss.
  To avoid re-hashing a large blob on every read, a successful verification is memoized in-process
  by ``(dev, inode, size, mtime_ns, ctime_ns)`` — but only once the file's ctime is more than
  ``RACY_SECONDS`` old (git's racy-clean rule), so an in-place modification can never share the
  signature of the verified content.
* With an ``authority`` (kiln.provenance), a record is a hit only if its signed provenance binds
  exactly this key to this blob under a trusted key; an edited, foreign or unsigned record is
  removed, reported to ``on_forged`` and is a miss.
* LRU: a hit touches the record's (and a blob read touches the blob's) mtime, at most once per
  ``touch_interval`` seconds. gc evicts least recently used entries — records first, then their
  blob — until the directory is under ``max_size``; pinned keys and the blobs they name are never
  evicted. A writer runs gc itself when its running estimate exceeds the bound; with several
  writing processes the directory can transiently exceed the bound by what the others wrote since
  their last scan.
* Lock order: the single-flight key lock (if any) → ``gc.lock``. Writers take ``gc.lock`` shared
  only around one blob+record write, so gc never observes a blob between its write and its
  record's; gc/verify take it exclusive. Nothing is locked while reading.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import logging
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from kiln.files import TMP_PREFIX, atomic_write, cache_home

from .key import normalize_digest
from .store import blob_digest, check_blob, decode_record, encode_record, file_chunks
from .types import ActionRecord, Found, GcReport, RecordAuthority, StoreStats, VerifyReport

__all__ = ["LAYOUT", "DiskStorage", "default_cache_dir"]

log = logging.getLogger("kiln.cache.disk")

LAYOUT = "v1"
RACY_SECONDS = 2.0
#: Age after which gc takes a scratch file for a dead writer's.
SCRATCH_SECONDS = 24 * 3600.0
_CHUNK = 1 << 20
_TMP_PREFIX = TMP_PREFIX
_UMASK = os.umask(0)
os.umask(_UMASK)


def default_cache_dir() -> Path:
    """``$KILN_CACHE_DIR``, else the platform user cache dir + ``kiln`` (``~/.cache/kiln`` on
    Linux, honouring ``$XDG_CACHE_HOME``): ``kiln.files.cache_home()``."""
    return cache_home("compile")


def _hex(digest: str) -> str:
    return normalize_digest(digest)[len("sha256:") :]


def _sig(st: os.stat_result) -> tuple[int, int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class DiskStorage:
    """CAS + AC in a directory. Thread-safe; several processes may share the directory."""

    name = "disk"

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        *,
        max_size: int | None = None,
        touch_interval: float = 60.0,
    ) -> None:
        self.root = Path(root).expanduser() if root is not None else default_cache_dir()
        self.base = self.root / LAYOUT
        self.cas_dir = self.base / "cas"
        self.ac_dir = self.base / "ac"
        self.pins_dir = self.base / "pins"
        self.locks_dir = self.base / "locks"
        self.prov_dir = self.base / "prov"
        #: Files written elsewhere before they are stored (same file system as ``cas_dir``);
        #: gc removes those older than ``SCRATCH_SECONDS``.
        self.scratch_dir = self.base / "scratch"
        for d in (self.cas_dir, self.ac_dir, self.pins_dir, self.locks_dir, self.prov_dir,
                  self.scratch_dir):
            d.mkdir(parents=True, exist_ok=True)
        self._cas, self._ac = str(self.cas_dir), str(self.ac_dir)  # hot-path string paths
        self.max_size = max_size
        self.touch_interval = touch_interval
        #: Called with the path of every corrupt file found and removed (metrics hook).
        self.on_corrupt: Callable[[str], None] | None = None
        #: Authenticates every record read (None: records are trusted as stored).
        self.authority: RecordAuthority | None = None
        #: Called with the path of every record refused by ``authority`` (and removed).
        self.on_forged: Callable[[str], None] | None = None
        self._memo: dict[str, tuple[int, int, int, int, int]] = {}
        self._mu = threading.Lock()
        self._approx_size: int | None = None
        self._writes_since_scan = 0
        self._last_scan = 0.0

    # -- paths -------------------------------------------------------------------------------

    def blob_file(self, digest: str) -> Path:
        h = _hex(digest)
        return self.cas_dir / h[:2] / h

    def record_file(self, key: str) -> Path:
        k = _hex(key)
        return self.ac_dir / k[:2] / f"{k}.json"

    def provenance_file(self, digest: str) -> Path:
        h = _hex(digest)
        return self.prov_dir / h[:2] / f"{h}.json"

    def lock_file(self, key: str) -> Path:
        k = _hex(key)
        return self.locks_dir / k[:2] / f"{k}.lock"

    def location(self) -> str:
        return str(self.root)

    # -- reads -------------------------------------------------------------------------------

    def _bpath(self, h: str) -> str:
        return f"{self._cas}/{h[:2]}/{h}"

    def _rpath(self, k: str) -> str:
        return f"{self._ac}/{k[:2]}/{k}.json"

    def find(self, key: str, *, load: bool = False) -> Found | None:
        kh = _hex(key)
        rpath = self._rpath(kh)
        try:
            with open(rpath, "rb") as f:
                rst = os.fstat(f.fileno())
                raw = f.read()
        except FileNotFoundError:
            return None
        rec = decode_record(raw, key=kh)
        if rec is None:
            self._discard(rpath, None, "unreadable record")
            return None
        if not self._authentic(rec, rpath, rst):
            return None
        data: bytes | None = None
        if load:
            data = self.get_blob(rec.digest)
            ok = data is not None
        else:
            ok = self.blob_path(rec.digest) is not None
        if not ok:  # blob evicted or corrupt: the record must not count as a hit
            with contextlib.suppress(FileNotFoundError):
                os.unlink(rpath)
            return None
        self._touch(rpath, rst)
        return Found(rec, "disk", data)

    def get_record(self, key: str) -> ActionRecord | None:
        return self._read_record_file(self.record_file(key))

    def get_provenance(self, digest: str) -> str | None:
        """The stored provenance envelope (JSON text) of a blob, unverified; None if absent."""
        try:
            return self.provenance_file(digest).read_text()
        except (FileNotFoundError, UnicodeDecodeError):
            return None

    def get_blob(self, digest: str) -> bytes | None:
        digest = normalize_digest(digest)
        path = self._bpath(digest[7:])
        try:
            with open(path, "rb") as f:
                st = os.fstat(f.fileno())
                data = f.read()
        except FileNotFoundError:
            return None
        if self._memo.get(digest) != _sig(st):
            if blob_digest(data) != digest:
                self._discard(path, st, f"blob does not match {digest}")
                return None
            self._remember(digest, st)
        self._touch(path, st)
        return data

    def blob_path(self, digest: str) -> Path | None:
        """The verified blob's path, for zero-copy serving; None if absent, corrupt or invalid.

        The file may be evicted after this returns: open it promptly (an open file stays readable
        after eviction on POSIX).
        """
        try:
            digest = normalize_digest(digest)
        except ValueError:
            return None
        path = self._bpath(digest[7:])
        try:
            with open(path, "rb") as f:
                st = os.fstat(f.fileno())
                if self._memo.get(digest) != _sig(st):
                    h = _hash_stream(f)
                    if "sha256:" + h != digest:
                        self._discard(path, st, f"blob does not match {digest}")
                        return None
                    self._remember(digest, st)
        except FileNotFoundError:
            return None
        self._touch(path, st)
        return Path(path)

    def has_blob(self, digest: str) -> bool:
        return self.blob_file(digest).exists()

    # -- writes ------------------------------------------------------------------------------

    def put(self, record: ActionRecord, data: bytes) -> None:
        check_blob(record.digest, data)
        with self._gc_lock(exclusive=False):
            self._put_blob(record.digest, data)
            self._write_atomic(self.record_file(record.key), encode_record(record))
            if record.provenance:
                self._write_atomic(self.provenance_file(record.digest),
                                   record.provenance.encode())
        self._after_write(len(data))

    def put_blob(self, digest: str, data: bytes) -> None:
        digest = normalize_digest(digest)
        check_blob(digest, data)
        with self._gc_lock(exclusive=False):
            self._put_blob(digest, data)
        self._after_write(len(data))

    def put_blob_file(self, digest: str, path: str | os.PathLike[str]) -> None:
        """Copy the file into the CAS in chunks, hashing as it goes; the copy is committed
        (atomically, fsynced) only when its bytes match ``digest`` (else ValueError)."""
        digest = normalize_digest(digest)
        size = os.path.getsize(path)
        with self._gc_lock(exclusive=False):
            if self.blob_path(digest) is not None:  # present and verified
                return
            dest = self.blob_file(digest)
            dest.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=_TMP_PREFIX)
            try:
                os.fchmod(fd, 0o666 & ~_UMASK)
                with os.fdopen(fd, "wb") as out:
                    for chunk in file_chunks(path, digest):
                        out.write(chunk)
                    out.flush()
                    os.fsync(out.fileno())
                os.replace(tmp, dest)
            except BaseException:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
                raise
            dfd = os.open(dest.parent, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
        self._after_write(size)

    def put_record(self, record: ActionRecord) -> None:
        with self._gc_lock(exclusive=False):
            self._write_atomic(self.record_file(record.key), encode_record(record))

    def put_provenance(self, digest: str, provenance: str) -> None:
        """The provenance envelope of a blob stored without a record (a parameter archive)."""
        with self._gc_lock(exclusive=False):
            self._write_atomic(self.provenance_file(digest), provenance.encode())

    def _put_blob(self, digest: str, data: bytes) -> None:
        path = self.blob_file(digest)
        if self.blob_path(digest) is not None:  # present and verified: CAS writes are idempotent
            return
        self._write_atomic(path, data)

    def delete_record(self, key: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.record_file(key).unlink()

    def delete_blob(self, digest: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.blob_file(digest).unlink()
        self._memo.pop(normalize_digest(digest), None)

    def _write_atomic(self, path: Path, data: bytes) -> None:
        atomic_write(path, data, mode=0o666 & ~_UMASK, durable=True)

    # -- pins --------------------------------------------------------------------------------

    def pin(self, key: str) -> None:
        """Never evict ``key``'s record nor its blob (the record may be written later)."""
        (self.pins_dir / _hex(key)).touch()

    def unpin(self, key: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            (self.pins_dir / _hex(key)).unlink()

    def pinned(self) -> set[str]:
        return {p.name for p in self.pins_dir.iterdir() if not p.name.startswith(".")}

    # -- iteration, stats, verify, gc ----------------------------------------------------------

    def iter_blobs(self) -> Iterator[tuple[str, int]]:
        for path, st in _walk(self.cas_dir):
            yield "sha256:" + path.name, st.st_size

    def iter_records(self) -> Iterator[ActionRecord]:
        for path, _ in _walk(self.ac_dir):
            rec = self._read_record_file(path)
            if rec is not None:
                yield rec

    def stats(self) -> StoreStats:
        blobs = list(_walk(self.cas_dir))
        recs = list(_walk(self.ac_dir))
        size = sum(st.st_size for _, st in blobs) + sum(st.st_size for _, st in recs)
        return StoreStats(
            backend=self.name,
            location=self.location(),
            records=len(recs),
            blobs=len(blobs),
            bytes=size,
            pinned=len(self.pinned()),
            max_size=self.max_size,
        )

    def verify(self) -> VerifyReport:
        rep = VerifyReport()
        with self._gc_lock(exclusive=True):
            for path, st in _walk(self.cas_dir):
                with open(path, "rb") as f:
                    ok = _hash_stream(f) == path.name
                if ok:
                    rep.ok_blobs += 1
                else:
                    rep.corrupt += 1
                    rep.removed.append(str(path))
                    self._discard(path, st, "blob does not match its name")
            for path, _ in _walk(self.ac_dir):
                rec = self._read_record_file(path)
                if rec is None:
                    rep.corrupt += 1
                elif not self.blob_file(rec.digest).exists():
                    rep.dangling += 1
                else:
                    rep.ok_records += 1
                    continue
                rep.removed.append(str(path))
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
        return rep

    def gc(self, max_size: int | None = None, *, wait: bool = True) -> GcReport | None:
        """Evict LRU entries until blobs + records fit in ``max_size`` (default: ``self.max_size``).

        Also removes ``.tmp-*`` files of dead writers, unreadable records and records whose blob
        is missing. Returns None when ``wait=False`` and another process holds the gc lock.
        """
        bound = self.max_size if max_size is None else max_size
        try:
            with self._gc_lock(exclusive=True, wait=wait):
                rep = self._gc_locked(bound)
        except BlockingIOError:
            return None
        with self._mu:
            self._approx_size = rep.size_after
            self._writes_since_scan = 0
            self._last_scan = time.monotonic()
        return rep

    def _gc_locked(self, bound: int | None) -> GcReport:
        from .singleflight import prune_lock_files

        prune_lock_files(self.locks_dir)
        old = time.time() - SCRATCH_SECONDS
        with contextlib.suppress(FileNotFoundError):
            for p in self.scratch_dir.iterdir():
                with contextlib.suppress(FileNotFoundError):
                    if p.name.startswith(_TMP_PREFIX) and p.stat().st_mtime < old:
                        p.unlink()
        # Under the exclusive lock no writer is active, so every temp file belongs to a dead one.
        for top in (self.cas_dir, self.ac_dir, self.prov_dir):
            for shard in _dirs(top):
                for p in shard.iterdir():
                    if p.name.startswith(_TMP_PREFIX):
                        with contextlib.suppress(FileNotFoundError):
                            p.unlink()
        blobs = {path.name: (path, st) for path, st in _walk(self.cas_dir)}
        pins = self.pinned()
        records: list[tuple[Path, os.stat_result, ActionRecord]] = []
        rep = GcReport()
        for path, st in _walk(self.ac_dir):
            rec = self._read_record_file(path)
            if rec is None or _hex(rec.digest) not in blobs:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
                rep.removed_records += 1
                continue
            records.append((path, st, rec))
        total = sum(st.st_size for _, st in blobs.values()) + sum(
            st.st_size for _, st, _ in records
        )
        rep.size_before = total
        pinned_blobs = {_hex(r.digest) for _, _, r in records if r.key in pins}
        rep.pinned_bytes = sum(blobs[h][1].st_size for h in pinned_blobs) + sum(
            st.st_size for _, st, r in records if r.key in pins
        )
        if bound is not None and total > bound:
            # One eviction unit per blob: the blob plus every unpinned record naming it.
            units: dict[str, tuple[float, list[tuple[Path, os.stat_result]]]] = {
                h: (st.st_mtime, []) for h, (_, st) in blobs.items()
            }
            for path, st, rec in records:
                if rec.key in pins:
                    continue
                last, recs = units[_hex(rec.digest)]
                recs.append((path, st))
                units[_hex(rec.digest)] = (max(last, st.st_mtime), recs)
            for h, (_, recs) in sorted(units.items(), key=lambda kv: kv[1][0]):
                if total <= bound:
                    break
                for path, st in recs:  # records before the blob they name
                    with contextlib.suppress(FileNotFoundError):
                        path.unlink()
                    total -= st.st_size
                    rep.removed_records += 1
                if h not in pinned_blobs:
                    path, st = blobs[h]
                    with contextlib.suppress(FileNotFoundError):
                        path.unlink()
                    self._memo.pop("sha256:" + h, None)
                    total -= st.st_size
                    rep.removed_blobs += 1
        rep.size_after = total
        for path, _ in _walk(self.prov_dir):  # provenance of evicted blobs
            if not self.blob_file(path.name.removesuffix(".json")).exists():
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
        return rep

    def close(self) -> None:
        pass

    # -- internals ---------------------------------------------------------------------------

    def _after_write(self, nbytes: int) -> None:
        if self.max_size is None:
            return
        with self._mu:
            self._writes_since_scan += 1
            if self._approx_size is not None:
                self._approx_size += nbytes
            due = (
                self._approx_size is None
                or self._approx_size > self.max_size
                or self._writes_since_scan >= 64
                or time.monotonic() - self._last_scan > 30.0
            )
        if due:
            self.gc(wait=False)

    @contextlib.contextmanager
    def _gc_lock(self, *, exclusive: bool, wait: bool = True) -> Iterator[None]:
        fd = os.open(self.base / "gc.lock", os.O_RDWR | os.O_CREAT, 0o666 & ~_UMASK)
        try:
            op = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
            fcntl.flock(fd, op if wait else op | fcntl.LOCK_NB)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    def _read_record_file(self, path: Path) -> ActionRecord | None:
        try:
            with open(path, "rb") as f:
                st = os.fstat(f.fileno())
                raw = f.read()
        except FileNotFoundError:
            return None
        rec = decode_record(raw, key=path.name.removesuffix(".json"))
        return rec if rec is not None and self._authentic(rec, path, st) else None

    def _authentic(self, rec: ActionRecord, path: str | Path, st: os.stat_result) -> bool:
        """True without an authority or when it accepts ``rec``; else the record file is
        removed (unless replaced meanwhile), reported to ``on_forged``, and False."""
        if self.authority is None:
            return True
        why = self.authority.check(rec)
        if why is None:
            return True
        log.warning("kiln cache: refusing the record %s: %s", path, why)
        try:
            if os.stat(path).st_ino == st.st_ino:
                os.unlink(path)
        except FileNotFoundError:
            pass
        if self.on_forged is not None:
            self.on_forged(str(path))
        return False

    def _remember(self, digest: str, st: os.stat_result) -> None:
        if time.time() - st.st_ctime_ns / 1e9 > RACY_SECONDS:
            self._memo[digest] = _sig(st)

    def _touch(self, path: str | Path, st: os.stat_result) -> None:
        try:
            if time.time() - st.st_mtime > self.touch_interval:
                os.utime(path)
        except OSError:
            pass  # evicted meanwhile, or another user's file: LRU order is best-effort

    def _discard(self, path: str | Path, st: os.stat_result | None, why: str) -> None:
        """Remove a corrupt file — unless a writer has atomically replaced it meanwhile."""
        log.warning("kiln cache: removing %s: %s", path, why)
        try:
            if st is None or os.stat(path).st_ino == st.st_ino:
                os.unlink(path)
        except FileNotFoundError:
            pass
        self._memo.pop("sha256:" + os.path.basename(path), None)
        if self.on_corrupt is not None:
            self.on_corrupt(str(path))


def _hash_stream(f: BinaryIO) -> str:
    h = hashlib.sha256()
    while chunk := f.read(_CHUNK):
        h.update(chunk)
    return h.hexdigest()


def _dirs(top: Path) -> Iterator[Path]:
    try:
        entries = list(top.iterdir())
    except FileNotFoundError:
        return
    for p in entries:
        if len(p.name) == 2 and p.is_dir():
            yield p


def _walk(top: Path) -> Iterator[tuple[Path, os.stat_result]]:
    """Final (non-temp) files of a sharded tree with their stat; files vanishing midway skipped."""
    for shard in _dirs(top):
        for p in shard.iterdir():
            if p.name.startswith("."):
                continue
            try:
                yield p, p.stat()
            except OSError as exc:
                if exc.errno != errno.ENOENT:
                    raise
