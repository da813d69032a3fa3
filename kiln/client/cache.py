"""The client's local cache: artifacts by digest (CAS) and compile results by request (AC).

    root/blobs/<hex[:2]>/<hex>          an executable, named by the sha256 of its bytes
    root/results/<key[:2]>/<key>.json   {"target": ..., "digest": ..., ...} for one request key

Root: ``cache_dir`` or ``$KILN_CLIENT_CACHE_DIR`` or ``~/.cache/kiln/client``. Writes are atomic
(temporary file + ``os.replace``), so concurrent clients and crashes never leave a partial file.

Failure semantics: the cache is an optimization. A blob that does not verify is deleted and reads
as a miss; an unreadable or corrupt result record is a miss; a failed write is logged and skipped.
No method raises for cache trouble.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any

from kiln.files import atomic_write, cache_home

__all__ = ["LocalCache", "default_client_cache_dir", "request_key"]

log = logging.getLogger(__name__)

# Bump when an input of request_key changes, or when the server's answer to the same request
# does (2: MLIR inputs get asynchronous entry points, kiln.lowering.entry_points).
KEY_VERSION = 2


def default_client_cache_dir() -> Path:
    """``kiln.files.cache_home("client")``: ``$KILN_CLIENT_CACHE_DIR`` or ``~/.cache/kiln/client``."""
    return cache_home("client")


def request_key(
    *, server: str, graph: bytes, target: str, options: dict[str, Any] | None, format: str | None,
    side_files: str | None = None,
) -> str:
    """The key of one compile request: sha256 over canonical JSON of everything that shapes it
    (``side_files``: the digest of an ONNX model's external-data files, when it has some)."""
    doc: dict[str, Any] = {
        "v": KEY_VERSION,
        "server": server.rstrip("/"),
        "graph": hashlib.sha256(graph).hexdigest(),
        "target": target,
        "options": options or {},
        "format": format,
    }
    if side_files is not None:
        doc["side_files"] = side_files
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _hex(digest: str) -> str:
    return digest.split(":", 1)[1] if ":" in digest else digest


class LocalCache:
    """Thread- and process-safe (every write is an atomic rename of a complete file)."""

    def __init__(self, cache_dir: str | os.PathLike[str] | None = None) -> None:
        self.root = Path(cache_dir) if cache_dir is not None else default_client_cache_dir()

    def _blob_path(self, digest: str) -> Path:
        h = _hex(digest)
        return self.root / "blobs" / h[:2] / h

    def _result_path(self, key: str) -> Path:
        return self.root / "results" / key[:2] / f"{key}.json"

    def get_blob(self, digest: str) -> bytes | None:
        """The blob's bytes if present and their sha256 matches ``digest``; else ``None``."""
        path = self._blob_path(digest)
        try:
            data = path.read_bytes()
        except OSError:
            return None
        if hashlib.sha256(data).hexdigest() != _hex(digest):
            log.warning("local cache blob %s does not verify; removing it", path)
            path.unlink(missing_ok=True)
            return None
        return data

    def put_blob(self, digest: str, data: bytes) -> None:
        """Store verified bytes (the caller checked the digest)."""
        self._write(self._blob_path(digest), data)

    def get_result(self, key: str) -> dict[str, Any] | None:
        try:
            doc = json.loads(self._result_path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return doc if isinstance(doc, dict) and "digest" in doc and "target" in doc else None

    def put_result(self, key: str, record: dict[str, Any]) -> None:
        self._write(self._result_path(key), json.dumps(record, sort_keys=True).encode())

    def _write(self, path: Path, data: bytes) -> None:
        try:
            atomic_write(path, data)
        except OSError as exc:
            log.warning("cannot write the local cache at %s: %s", path, exc)
