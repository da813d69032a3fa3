"""Serving executables and parameter archives: ``GET``/``HEAD /v1/artifacts/{hex}`` and
``/v1/params/{hex}`` (one ``ArtifactServer`` each, differing in media type and format check).

Artifacts are immutable and content-addressed, so the answer for a digest never changes: it is
sent with ``ETag: "<hex>"`` and ``Cache-Control: public, max-age=31536000, immutable``, and an
``If-None-Match`` naming it is answered 304 without touching the disk.

Where the bytes come from, fastest first:

1. an in-memory copy (bounded LRU of blobs up to ``max_item`` bytes, ``max_bytes`` in all) made
   from a *verified* read; before each use the cache file is ``stat``-ed: if it is gone (evicted)
   or its (inode, size, mtime, ctime) changed, the copy is dropped and step 2 decides;
2. the cache's verified blob path (``ArtifactCache.blob_path``: sha256 checked, memoized by stat
   signature; a tiered cache first fetches the blob from Redis) — small blobs are read once and
   kept, large ones are streamed with ``FileResponse`` (which uses the server's ``pathsend``
   extension, i.e. zero-copy, where the ASGI server offers it).

The ``hex`` is checked against ``^[0-9a-f]{64}$`` before any file system access: anything else
(``../..``, ``%2e%2e``, upper case, a ``sha256:`` prefix) is 404 ``not_found`` and never becomes a
path. A blob that is absent or fails verification, or is not an IREE executable
(``kiln.cache.kinds.EXECUTABLE``: a kernel, a front-end phase, bytes someone stored under their
own sha256; for ``/v1/params``, not an ``.irpa``: ``PARAMETER_ARCHIVE``), is 404 ``not_found``.

``Range`` is honoured whatever the blob's size (a resumed download of a 47 MB executable and of a
13 kB one behave alike): one range ``bytes=a-b``, ``bytes=a-`` or ``bytes=-n`` answers 206 with
``Content-Range``; a range that starts past the end answers 416 ``invalid_request`` (the error
envelope) with ``Content-Range: bytes */N``;
several ranges, or an ``If-Range`` that is not this ETag, answer the whole blob (RFC 9110 lets a
server ignore them). Large blobs go through ``FileResponse``, which applies the same rules.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

from starlette.background import BackgroundTask
from starlette.responses import FileResponse, Response

from kiln.cache import ArtifactCache
from kiln.cache.kinds import EXECUTABLE, HEAD_BYTES
from kiln.errors import InvalidRequest, NotFound

from .errors import error_response
from .metrics import Metrics

__all__ = ["MEDIA_TYPE", "PARAMS_MEDIA_TYPE", "ArtifactServer"]

MEDIA_TYPE = "application/x-iree-vmfb"
PARAMS_MEDIA_TYPE = "application/x-iree-irpa"
CACHE_CONTROL = "public, max-age=31536000, immutable"
_HEX = re.compile(r"^[0-9a-f]{64}$")
_CACHE_CONTROL_B = CACHE_CONTROL.encode()

_Sig = tuple[int, int, int, int, int]


def _sig(st: os.stat_result) -> _Sig:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class ArtifactServer:
    """Answers artifact requests for one cache. Used from the event loop only (not thread-safe);
    every disk access it makes is a ``stat`` or one read of a small blob."""

    def __init__(
        self, cache: ArtifactCache, metrics: Metrics, *, max_bytes: int, max_item: int,
        media_type: str = MEDIA_TYPE, accept: Callable[[bytes], bool] = EXECUTABLE,
        what: str = "artifact",
    ) -> None:
        """``accept``: the blob kind served (its guard, on the first ``HEAD_BYTES`` bytes);
        ``what`` names the blobs in messages."""
        self.media_type = media_type
        self._media_type_b = media_type.encode()
        self._accept = accept
        self.what = what
        self.cache = cache
        self.metrics = metrics
        self.max_bytes = max_bytes
        self.max_item = min(max_item, max_bytes)
        self._mem: OrderedDict[str, tuple[bytes, _Sig]] = OrderedDict()
        self._mem_bytes = 0

    def respond(
        self,
        hex_digest: str,
        *,
        head: bool,
        if_none_match: str | None,
        range_header: str | None = None,
        if_range: str | None = None,
    ) -> Response:
        """The response for ``hex_digest``; raises ``NotFound``."""
        if not _HEX.match(hex_digest):
            raise NotFound(f"no such {self.what}: not a lowercase sha256 hex digest")
        etag = f'"{hex_digest}"'
        headers = {"ETag": etag, "Cache-Control": CACHE_CONTROL, "Accept-Ranges": "bytes"}
        if if_range is not None and if_range.strip() != etag:
            range_header = None
        if if_none_match is not None and _matches(if_none_match, etag) and self._exists(hex_digest):
            return Response(status_code=304, headers=headers)
        data = self._memory(hex_digest)
        if data is None:
            path = self.cache.blob_path(hex_digest)
            if path is None or not _accepted_file(path, self._accept):
                raise NotFound(f"no {self.what} sha256:{hex_digest}",
                               detail={"digest": hex_digest})
            data = self._load(hex_digest, path)
            if data is None:
                size = path.stat().st_size
                if range_header and _byte_range(range_header, size) == "unsatisfiable":
                    return _unsatisfiable(size, headers, self.what)
                if head:
                    headers["Content-Length"] = str(size)
                    return Response(status_code=200, headers=headers,
                                    media_type=self.media_type)
                resp = FileResponse(path, media_type=self.media_type, headers=headers)
                nbytes = int(resp.headers.get("content-length", "0"))
                resp.background = BackgroundTask(self.metrics.bytes_served.inc, nbytes)
                return resp
        span = _byte_range(range_header, len(data)) if range_header else None
        if span == "unsatisfiable":
            return _unsatisfiable(len(data), headers, self.what)
        status = 200
        if isinstance(span, tuple):
            first, last = span
            headers["Content-Range"] = f"bytes {first}-{last}/{len(data)}"
            data, status = data[first : last + 1], 206
        if head:
            headers["Content-Length"] = str(len(data))
            return Response(status_code=status, headers=headers, media_type=self.media_type)
        self.metrics.bytes_served.inc(len(data))
        return Response(data, status_code=status, headers=headers, media_type=self.media_type)

    def fast(
        self, hex_digest: str, *, head: bool, if_none_match: bytes | None
    ) -> tuple[int, list[tuple[bytes, bytes]], bytes] | None:
        """The raw ASGI answer when the blob is in the memory tier (the hot path: no routing, no
        Response object); None when the full path (``respond``) must decide."""
        if not _HEX.match(hex_digest):
            return None
        data = self._memory(hex_digest)
        if data is None:
            return None
        etag = f'"{hex_digest}"'.encode()
        headers = [
            (b"etag", etag), (b"cache-control", _CACHE_CONTROL_B), (b"accept-ranges", b"bytes")
        ]
        if if_none_match is not None and _matches(if_none_match.decode("latin-1"), etag.decode()):
            return 304, headers, b""
        headers += [
            (b"content-type", self._media_type_b),
            (b"content-length", str(len(data)).encode()),
        ]
        if head:
            return 200, headers, b""
        self.metrics.bytes_served.inc(len(data))
        return 200, headers, data

    # -- memory tier -----------------------------------------------------------------------

    def _blob_file(self, hex_digest: str) -> Path | None:
        disk = self.cache.disk
        return disk.blob_file(hex_digest) if disk is not None else None

    def _exists(self, hex_digest: str) -> bool:
        if hex_digest in self._mem:
            return self._memory(hex_digest) is not None
        return self.cache.blob_path(hex_digest) is not None

    def _memory(self, hex_digest: str) -> bytes | None:
        entry = self._mem.get(hex_digest)
        if entry is None:
            return None
        data, sig = entry
        f = self._blob_file(hex_digest)
        try:
            ok = f is not None and _sig(os.stat(f)) == sig
        except OSError:
            ok = False
        if not ok:
            self._drop(hex_digest)
            return None
        self._mem.move_to_end(hex_digest)
        return data

    def _load(self, hex_digest: str, path: Path) -> bytes | None:
        """Read a verified blob into memory if it is small enough; None if not kept."""
        try:
            with open(path, "rb") as f:
                st = os.fstat(f.fileno())
                if st.st_size > self.max_item:
                    return None
                data = f.read()
        except OSError:
            return None
        # Hash what was read (blob_path checked the file, but it may have been replaced since);
        # later uses re-check the (inode, size, mtime, ctime) signature recorded here.
        if len(data) != st.st_size or hashlib.sha256(data).hexdigest() != hex_digest:
            return None
        self._mem[hex_digest] = (data, _sig(st))
        self._mem_bytes += len(data)
        while self._mem_bytes > self.max_bytes and self._mem:
            _, (old, _) = self._mem.popitem(last=False)
            self._mem_bytes -= len(old)
        return data

    def _drop(self, hex_digest: str) -> None:
        entry = self._mem.pop(hex_digest, None)
        if entry is not None:
            self._mem_bytes -= len(entry[0])


def _unsatisfiable(size: int, headers: dict[str, str], what: str) -> Response:
    """416 with ``Content-Range: bytes */SIZE``, in the error envelope like every error."""
    err = InvalidRequest(
        f"the range starts past the end of the {what} ({size} bytes)",
        detail={"size": size},
    )
    headers = {**headers, "Content-Range": f"bytes */{size}"}
    return error_response(err, status=416, headers=headers)


def _accepted_file(path: Path, accept: Callable[[bytes], bool]) -> bool:
    try:
        with open(path, "rb") as f:
            return accept(f.read(HEAD_BYTES))
    except OSError:
        return False


def _byte_range(header: str, size: int) -> tuple[int, int] | str | None:
    """The inclusive span one ``bytes=`` range names in a blob of ``size`` bytes;
    ``"unsatisfiable"`` when it starts past the end; None when the header is to be ignored
    (several ranges, another unit, a malformed value: the whole blob is sent)."""
    unit, _, spec = header.strip().partition("=")
    if unit.strip().lower() != "bytes" or "," in spec:
        return None
    first_s, dash, last_s = spec.strip().partition("-")
    if not dash:
        return None
    try:
        if not first_s:  # a suffix: the last n bytes
            n = int(last_s)
            if n <= 0:
                return "unsatisfiable" if n == 0 else None
            return (max(0, size - n), size - 1) if size else "unsatisfiable"
        first = int(first_s)
        last = int(last_s) if last_s else size - 1
    except ValueError:
        return None
    if first >= size:
        return "unsatisfiable"
    if first < 0 or last < first:
        return None
    return first, min(last, size - 1)


def _matches(if_none_match: str, etag: str) -> bool:
    if if_none_match.strip() == "*":
        return True
    tags = (t.strip().removeprefix("W/") for t in if_none_match.split(","))
    return etag in tags
