"""A model with its side files, uploaded as a tar (``Content-Type: application/x-tar``).

The first member whose name ends in ``.onnx`` is the model; every other regular file is an
external-data file the model names by its relative path (ONNX ``location``). The body streams
through ``limits.stream_body`` (the request limit, the upload budget, the client's share and the
pace, as for any body) into Python's ``tarfile`` reading in a worker thread, and each side file
is written, as it arrives, into the request's own directory and nowhere else: the body is never
held whole, only the model member is (it is bounded by the request limit, as a raw body is).

Refused with 400 ``invalid_graph``, before a byte of the member is written: a name that is
absolute (``/x``, ``C:x``), holds ``..``, a backslash or a NUL; a link (symbolic or hard), a
device, a fifo or a sparse file; a name given twice; more than ``MAX_MEMBERS`` members; a tar
without an ``.onnx`` member; a body that is not a tar. A member larger than the request limit
is 413 ``too_large``. Files are created with ``O_EXCL | O_NOFOLLOW`` under directories this
module made, so nothing can redirect a write outside the directory. That every side file is
named by the model, and that no ``location`` leaves the directory, is checked where the model
is parsed (``kiln.dialects.onnx.load_model``, in a prepare worker), before any side file is
opened for reading.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import tarfile
from collections.abc import AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any

import anyio.from_thread
import anyio.to_thread
from starlette.requests import Request

from kiln.errors import InvalidGraph, TooLarge

from .limits import ByteBudget, stream_body

__all__ = ["EXTERNAL_PARAMS_BYTES", "MAX_MEMBERS", "TAR_TYPES", "ModelUpload", "receive_tar"]

#: Content types of the tar upload.
TAR_TYPES = frozenset({"application/x-tar", "application/tar"})
#: Side files of at least this many bytes in all make ``params: "external"`` the default (the
#: weights then never pass through the executable or the canonical MLIR text).
EXTERNAL_PARAMS_BYTES = 64 << 20
#: The most members one tar may hold (an ONNX model names at most one file per initializer).
MAX_MEMBERS = 4096
_COPY = 1 << 20
_DRIVE = re.compile(r"^[A-Za-z]:")


@dataclass(frozen=True)
class ModelUpload:
    """What a tar upload left: the model's bytes and, in ``directory``, its side files."""

    model: bytes
    directory: str
    #: The side files' names, relative to ``directory`` (``/``-separated, normalized).
    names: tuple[str, ...]
    #: sha256 over every side file's name and content digest, in name order: the side files'
    #: part of a request's fingerprint (the same model bytes with other weights differ).
    digest: str
    #: Bytes of all side files.
    size: int


async def receive_tar(
    request: Request, *, directory: str, limit: int, budget: ByteBudget | None
) -> ModelUpload:
    """Read the request's tar body into ``directory`` (which must exist and be empty; the
    caller removes it). Raises as ``stream_body`` does (413, 503, 408), and ``InvalidGraph``
    for a tar this module refuses (module docstring)."""
    async with aclosing(stream_body(request, limit=limit, budget=budget)) as chunks:
        reader = io.BufferedReader(_BodyReader(chunks), buffer_size=_COPY)
        return await anyio.to_thread.run_sync(_extract, reader, directory, limit)


class _BodyReader(io.RawIOBase):
    """A blocking file over the async body, for a worker thread started by anyio (each read
    runs one step of the body's generator in the event loop)."""

    def __init__(self, chunks: AsyncIterator[bytes]) -> None:
        self._chunks = chunks
        self._buf = memoryview(b"")
        self._eof = False

    def readable(self) -> bool:
        return True

    async def _next(self) -> bytes | None:
        try:
            return await self._chunks.__anext__()
        except StopAsyncIteration:
            return None

    def readinto(self, b: Any) -> int:
        if not self._buf and not self._eof:
            chunk = anyio.from_thread.run(self._next)
            if chunk is None:
                self._eof = True
            else:
                self._buf = memoryview(chunk)
        n = min(len(b), len(self._buf))
        b[:n] = self._buf[:n]
        self._buf = self._buf[n:]
        return n


def member_name(raw: str) -> str:
    """The normalized relative name of a tar member or an ONNX ``location`` (``./a//b`` →
    ``a/b``; ``""`` for the directory itself), or ``InvalidGraph`` for one that could leave
    the directory."""
    if "\x00" in raw or "\\" in raw:
        raise InvalidGraph(f"tar member {raw[:128]!r}: NUL or backslash in the name")
    if raw.startswith("/") or _DRIVE.match(raw):
        raise InvalidGraph(f"tar member {raw[:128]!r}: absolute name (names are relative)")
    parts = [p for p in raw.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise InvalidGraph(f"tar member {raw[:128]!r}: '..' in the name")
    return "/".join(parts)


def _extract(reader: io.BufferedReader, directory: str, limit: int) -> ModelUpload:
    model: bytes | None = None
    seen: set[str] = set()
    digests: dict[str, str] = {}
    size = 0
    count = 0
    try:
        with tarfile.open(fileobj=reader, mode="r|") as tar:
            for m in tar:
                count += 1
                if count > MAX_MEMBERS:
                    raise InvalidGraph(f"the tar holds more than {MAX_MEMBERS} members",
                                       detail={"max_members": MAX_MEMBERS})
                name = member_name(m.name)
                if m.isdir():
                    continue
                if not m.isreg() or m.issparse():
                    kind = ("a symbolic link" if m.issym() else "a hard link" if m.islnk()
                            else "a fifo" if m.isfifo() else "a device" if m.isdev()
                            else "not a regular file")
                    raise InvalidGraph(f"tar member {m.name[:128]!r} is {kind}; only regular "
                                       "files are accepted", detail={"member": m.name[:128]})
                if not name:
                    raise InvalidGraph(f"tar member {m.name[:128]!r} has no name")
                if name in seen:
                    raise InvalidGraph(f"tar member {name[:128]!r} appears twice",
                                       detail={"member": name[:128]})
                seen.add(name)
                if m.size > limit:
                    raise TooLarge(f"tar member {name[:128]!r} is {m.size} bytes, more than the "
                                   f"request limit of {limit}", detail={"max_request_bytes": limit})
                src = tar.extractfile(m)
                assert src is not None  # a regular file
                if model is None and name.endswith(".onnx"):
                    model = src.read()
                    continue
                digests[name] = _write(src, directory, name)
                size += m.size
    except tarfile.TarError as exc:
        raise InvalidGraph(f"the body is not a valid tar archive: {exc}") from None
    if model is None:
        raise InvalidGraph("the tar holds no .onnx member (the model)")
    h = hashlib.sha256()
    for name in sorted(digests):
        h.update(f"{name}\0{digests[name]}\n".encode())
    return ModelUpload(model=model, directory=directory, names=tuple(sorted(digests)),
                       digest=h.hexdigest(), size=size)


def _write(src: Any, directory: str, name: str) -> str:
    """Copy one member to ``directory/name``; its sha256 (hex)."""
    parent, _, leaf = name.rpartition("/")
    root = os.path.realpath(directory)
    where = os.path.join(root, parent) if parent else root
    try:
        os.makedirs(where, mode=0o700, exist_ok=True)
        if os.path.realpath(where) != os.path.normpath(where):  # never through a link
            raise InvalidGraph(f"tar member {name[:128]!r} cannot be placed")
        fd = os.open(os.path.join(where, leaf),
                     os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except (FileExistsError, NotADirectoryError, IsADirectoryError) as exc:
        raise InvalidGraph(f"tar member {name[:128]!r} collides with another: {exc}") from None
    h = hashlib.sha256()
    with os.fdopen(fd, "wb") as out:
        while True:
            block = src.read(_COPY)
            if not block:
                break
            h.update(block)
            out.write(block)
    return h.hexdigest()
