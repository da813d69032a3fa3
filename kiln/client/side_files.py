"""An ONNX model whose weights live in side files, and the tar that carries it to a server.

``onnx_files(data, base_dir)`` finds the external-data files the model names (its tensors'
``location`` fields, relative to ``base_dir``: the model file's folder); only those are sent,
never another file of the folder. A location that is absolute or leaves the folder (``..``, or
a link pointing out) is ``InvalidGraph`` here, before any file is opened: the client never
reads, let alone uploads, a file the model names outside its folder.

The body (docs/api.md, "Models with side files") is a ustar/pax tar: the model first, as
``model.onnx``, then each side file under its location, in name order. Its length is known in
advance (``OnnxFiles.tar_size``), so it is sent with a ``Content-Length`` and streamed from
disk chunk by chunk (``iter_tar`` / ``aiter_tar``): a multi-gigabyte model is never held in
memory, and a retried request re-reads the files.
"""

from __future__ import annotations

import hashlib
import os
import re
import tarfile
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from kiln.errors import InvalidGraph

__all__ = ["OnnxFiles", "onnx_files", "with_side_files"]

_BLOCK = 512
_CHUNK = 1 << 20
_DRIVE = re.compile(r"^[A-Za-z]:")
# (real path, size, mtime ns) -> sha256 hex: a model loaded again is not hashed again
_DIGESTS: dict[tuple[str, int, int], str] = {}
_DIGESTS_LOCK = threading.Lock()
G = TypeVar("G")


@dataclass(frozen=True)
class OnnxFiles:
    """An ONNX model's bytes and the side files it names (``names``, relative to
    ``base_dir``); ``digest``: sha256 over every name and its content's sha256, in name order
    (a local cache key input: the same model with other weights is another graph)."""

    model: bytes
    base_dir: str
    names: tuple[str, ...]
    sizes: tuple[int, ...]
    digest: str

    @property
    def model_name(self) -> str:
        name = "model.onnx"
        while name in self.names:
            name = "_" + name
        return name

    def _headers(self) -> list[tuple[bytes, str | None, int]]:
        out: list[tuple[bytes, str | None, int]] = []
        for name, path, size in [(self.model_name, None, len(self.model)),
                                 *((n, os.path.join(self.base_dir, n), s)
                                   for n, s in zip(self.names, self.sizes, strict=True))]:
            info = tarfile.TarInfo(name)
            info.size = size
            info.mode = 0o644
            info.mtime = 0
            out.append((info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape"), path, size))
        return out

    @property
    def tar_size(self) -> int:
        return sum(len(h) + _padded(size) for h, _, size in self._headers()) + 2 * _BLOCK

    def iter_tar(self) -> Iterator[bytes]:
        """The tar body, read from disk as it is sent; a side file that changed size since
        ``onnx_files`` is ``InvalidGraph`` (the declared length would lie)."""
        for header, path, size in self._headers():
            yield header
            if path is None:
                yield self.model
            else:
                sent = 0
                with open(path, "rb") as f:
                    while sent < size:
                        block = f.read(min(_CHUNK, size - sent))
                        if not block:
                            break
                        sent += len(block)
                        yield block
                if sent != size or os.path.getsize(path) != size:
                    raise InvalidGraph(f"the side file {path} changed while it was sent")
            if _padded(size) > size:
                yield bytes(_padded(size) - size)
        yield bytes(2 * _BLOCK)

    async def aiter_tar(self) -> AsyncIterator[bytes]:
        for chunk in self.iter_tar():
            yield chunk


class TarBody:
    """An ``OnnxFiles``' tar as httpx ``content``: each send (a retry too) reads the files
    again. The SDK's runners turn it into an iterator of the right kind (``chunks``)."""

    def __init__(self, files: OnnxFiles) -> None:
        self.files = files

    def chunks(self, *, asynchronous: bool) -> Iterator[bytes] | AsyncIterator[bytes]:
        return self.files.aiter_tar() if asynchronous else self.files.iter_tar()


def _padded(n: int) -> int:
    return -(-n // _BLOCK) * _BLOCK


def onnx_files(data: bytes, base_dir: str | os.PathLike[str]) -> OnnxFiles | None:
    """The model in ``data`` with the side files it names in ``base_dir``; None when it names
    none (or ``data`` is not ONNX). ``InvalidGraph`` for a location outside ``base_dir``, or a
    named file that is missing."""
    import onnx
    from google.protobuf.message import DecodeError
    from onnx.external_data_helper import _get_all_tensors

    try:
        model = onnx.load_model_from_string(data)
    except (DecodeError, ValueError, RuntimeError):
        return None
    root = Path(base_dir).resolve()
    names: set[str] = set()
    for t in _get_all_tensors(model):
        if t.data_location != onnx.TensorProto.EXTERNAL:
            continue
        loc = next((e.value for e in t.external_data if e.key == "location"), "")
        parts = [p for p in loc.split("/") if p not in ("", ".")]
        if (not parts or loc.startswith("/") or _DRIVE.match(loc) or "\\" in loc
                or "\x00" in loc or ".." in parts):
            raise InvalidGraph(f"tensor {t.name[:64]!r}: external data location {loc[:128]!r} "
                               "must be a relative path inside the model's folder")
        name = "/".join(parts)
        if not (root / name).resolve().is_relative_to(root):
            raise InvalidGraph(f"tensor {t.name[:64]!r}: external data location {loc[:128]!r} "
                               "points outside the model's folder")
        names.add(name)
    del model
    if not names:
        return None
    ordered = tuple(sorted(names))
    sizes = []
    h = hashlib.sha256()
    for name in ordered:
        path = root / name
        try:
            st = path.stat()
        except OSError as exc:
            raise InvalidGraph(f"the model names the side file {name!r}, which cannot be read "
                               f"beside it: {exc.strerror}") from None
        sizes.append(st.st_size)
        h.update(f"{name}\0{_file_digest(path, st)}\n".encode())
    return OnnxFiles(model=data, base_dir=str(root), names=ordered, sizes=tuple(sizes),
                     digest=h.hexdigest())


def _file_digest(path: Path, st: os.stat_result) -> str:
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    with _DIGESTS_LOCK:
        hit = _DIGESTS.get(key)
    if hit is not None:
        return hit
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(_CHUNK):
            h.update(block)
    with _DIGESTS_LOCK:
        _DIGESTS[key] = h.hexdigest()
    return h.hexdigest()


def with_side_files(graph: G) -> G | OnnxFiles:
    """``graph`` as ``OnnxFiles`` when it is the path of an ONNX file that names side files
    beside it; else ``graph`` unchanged."""
    if isinstance(graph, OnnxFiles) or not isinstance(graph, str | os.PathLike):
        return graph
    path = Path(os.fspath(graph))  # type: ignore[arg-type]  # narrowed above
    try:
        if not path.is_file():
            return graph
    except (OSError, ValueError):  # MLIR text, not a path: too long a name, a NUL byte
        return graph
    try:
        data = path.read_bytes()
    except OSError:
        return graph  # read_graph reports it
    from kiln.dialects.detect import detect_format
    from kiln.dialects.types import GraphFormat

    try:
        if detect_format(data) is not GraphFormat.ONNX:
            return graph
    except Exception:  # noqa: BLE001 - undetectable: read_graph and the server say why
        return graph
    return onnx_files(data, path.resolve().parent) or graph
