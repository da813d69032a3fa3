"""The one atomic file write every part of Kiln uses (the disk cache, the client cache, the CLI's
outputs, tuning entries, key files)."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

__all__ = ["TMP_PREFIX", "atomic_write"]

#: Temporary files start with this; ``kiln cache gc`` removes dead writers' leftovers.
TMP_PREFIX = ".tmp-"


def atomic_write(
    path: str | os.PathLike[str], data: bytes | memoryview, *, mode: int = 0o644,
    durable: bool = False,
) -> Path:
    """Write ``data`` to ``path`` so a reader sees the old file or the whole new one, never a part.

    A uniquely named temporary file in the destination's directory (concurrent writers never
    share one), ``os.replace`` over the target. ``mode`` is applied before any byte is written
    (``0o600`` for secrets). ``durable``: fsync the file and the directory, for data that must
    survive a power cut (cache entries). On any failure the temporary file is removed and the
    error raised.
    """
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=TMP_PREFIX)
    try:
        os.fchmod(fd, mode)
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        if durable:
            os.fsync(fd)
        os.close(fd)
        fd = -1
        os.replace(tmp, p)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    if durable:
        dfd = os.open(p.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    return p
