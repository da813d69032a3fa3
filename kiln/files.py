"""Files every part of Kiln shares: the one atomic file write (the disk cache, the client cache,
the CLI's outputs, tuning entries, key files) and the one place caches live (``cache_home``)."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from pathlib import Path

__all__ = ["TMP_PREFIX", "atomic_write", "cache_home"]

#: Each cache's own override, and its folder under the user cache home.
_CACHES = {"compile": ("KILN_CACHE_DIR", ""), "client": ("KILN_CLIENT_CACHE_DIR", "client")}

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


def cache_home(which: str = "compile") -> Path:
    """Where a Kiln cache lives on this machine: ``"compile"`` (the embedded pipeline's and the
    daemon's disk cache) or ``"client"`` (the SDK's local cache; autotune keeps its choices in
    its ``tuning/`` folder).

    Its environment variable when set (``KILN_CACHE_DIR``, ``KILN_CLIENT_CACHE_DIR``), else
    under the platform's user cache folder: ``$XDG_CACHE_HOME/kiln`` (an absolute
    ``XDG_CACHE_HOME`` only, as the XDG spec says), else ``~/.cache/kiln``;
    ``~/Library/Caches/kiln`` on macOS. The client's is ``client/`` under that. Nothing is
    created here.
    """
    env, sub = _CACHES[which]
    override = os.environ.get(env)
    if override:
        return Path(override).expanduser()
    if sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "kiln" / sub if sub else base / "kiln"
