"""Parameter archives: an executable's weights apart from its code (option ``params: "external"``).

The server answers such a compile with ``"params": {"digest", "size", "url", "scope", "format"}``:
one ``.irpa`` (IREE's parameter archive) for every target. ``Client.load()`` fetches it once per
digest into the client's local cache (``kiln.client.cache``, sha256-verified on the way in and
again when read), and the executable is loaded with an ``io_parameters`` module whose provider
reads the archive through ``iree.runtime.ParameterIndex.load`` — memory-mapped, so the weights
are paged in from the cached file rather than copied into the process. A new weight set for an
architecture already cached costs one archive download: the executables are shared.

Failure semantics: bytes whose sha256 is not the digest asked for raise ``IntegrityError`` (and
are never written to the cache); a cached file that no longer verifies is removed and fetched
again; with trusted keys, an archive whose signed provenance does not verify (or is missing)
raises ``IntegrityError`` before anything is loaded.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kiln.errors import IntegrityError

__all__ = ["IRPA_MAGIC", "PARAM_SCOPE", "ParamsArchive", "is_archive", "is_stored_blob"]

#: The first bytes of every ``.irpa`` (IREE's ``iree_io_parameter_archive_header_t`` magic).
IRPA_MAGIC = b"IRPA"
#: The scope the server's archives are written in (``#stream.parameter.named<"model"::...>``).
PARAM_SCOPE = "model"


def is_archive(head: bytes) -> bool:
    """Whether ``head`` (a file's first bytes, or all of it) starts an IREE parameter archive.
    A cheap format check, not a validation."""
    return head[:4] == IRPA_MAGIC


def is_stored_blob(head: bytes) -> bool:
    """What Kiln's cache holds and copies between its tiers: an executable or a parameter
    archive (``open_cache(accept_blob=...)``)."""
    from kiln.client.runtime import is_executable

    return is_executable(head) or is_archive(head)


def sha256_file(path: str | os.PathLike[str]) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


@dataclass
class ParamsArchive:
    """A verified ``.irpa`` on local disk, loaded into a ``ParameterIndex`` on first use.

    ``module(instance)`` is the ``io_parameters`` VM module that serves its parameters under
    ``scope``; add it to a context before the executable (``kiln.client.runtime.load_vmfb``'s
    ``params=``). The index (and its mapping of the file) lives as long as this object."""

    path: Path
    digest: str
    scope: str = PARAM_SCOPE
    _index: Any = field(default=None, repr=False)

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, digest: str | None = None,
             scope: str = PARAM_SCOPE) -> ParamsArchive:
        """The archive at ``path``; with ``digest`` (``sha256:<hex>``) its bytes are checked
        first (IntegrityError if they differ or are not an archive)."""
        p = Path(path)
        actual = "sha256:" + sha256_file(p)
        if digest is not None and actual != digest:
            raise IntegrityError(
                f"the parameter archive {p} hashes to {actual}, not {digest}",
                detail={"expected": digest, "actual": actual},
            )
        with open(p, "rb") as f:
            if not is_archive(f.read(16)):
                raise IntegrityError(f"{p} is not an IREE parameter archive (.irpa)")
        return cls(p, actual, scope)

    def index(self) -> Any:
        if self._index is None:
            import iree.runtime as rt

            index = rt.ParameterIndex()
            index.load(str(self.path), format="irpa", mmap=True)
            self._index = index
        return self._index

    def module(self, instance: Any) -> Any:
        """An ``io_parameters`` VM module serving this archive on ``instance``."""
        import iree.runtime as rt

        provider = self.index().create_provider(scope=self.scope)
        return rt.create_io_parameters_module(instance, provider)


def fetch_archive(
    digest: str, *, cache_dir: Path, download: Callable[[str], bytes],
) -> ParamsArchive:
    """The archive ``digest`` from ``cache_dir`` (``params/<hex>.irpa``), downloaded with
    ``download(hex)`` when absent or no longer intact; IntegrityError when the downloaded bytes
    are not ``digest`` (nothing is written then)."""
    from kiln.files import atomic_write

    hexd = digest.removeprefix("sha256:")
    path = cache_dir / "params" / f"{hexd}.irpa"
    if path.exists():
        try:
            return ParamsArchive.open(path, digest="sha256:" + hexd)
        except IntegrityError:
            path.unlink(missing_ok=True)  # corrupted in the cache: fetch it again
    data = download(hexd)
    actual = hashlib.sha256(data).hexdigest()
    if actual != hexd:
        raise IntegrityError(
            f"the parameter archive sent for sha256:{hexd} hashes to sha256:{actual}",
            detail={"expected": "sha256:" + hexd, "actual": "sha256:" + actual},
        )
    if not is_archive(data[:16]):
        raise IntegrityError(f"sha256:{hexd} is not an IREE parameter archive (.irpa)")
    atomic_write(path, data)
    return ParamsArchive(path, "sha256:" + hexd)
