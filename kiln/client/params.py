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
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kiln.errors import IntegrityError

if TYPE_CHECKING:
    from kiln.client.sdk import Plan, _Base

__all__ = ["IRPA_MAGIC", "PARAM_SCOPE", "ParamsArchive", "archive_plan", "is_archive"]

#: The first bytes of every ``.irpa`` (IREE's ``iree_io_parameter_archive_header_t`` magic).
IRPA_MAGIC = b"IRPA"
#: The scope the server's archives are written in (``#stream.parameter.named<"model"::...>``).
PARAM_SCOPE = "model"


def is_archive(head: bytes) -> bool:
    """Whether ``head`` (a file's first bytes, or all of it) starts an IREE parameter archive.
    A cheap format check, not a validation: the client's copy of
    ``kiln.cache.kinds.PARAMETER_ARCHIVE`` (tests/test_cache_kinds.py checks that they agree)."""
    return head[:4] == IRPA_MAGIC


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


def archive_plan(client: _Base, digest: str | None) -> Plan[ParamsArchive | None]:
    """The SDK's plan (``kiln.client.sdk``) for the archive ``digest`` (None: no archive): the
    client cache's copy (``<cache>/params/<hex>.irpa``) if it still verifies, else
    ``GET /v1/params/<hex>``, checked and kept. With trusted keys its signed provenance
    (``GET /v1/params/<hex>/provenance``, kept beside it as ``<hex>.json``) must verify first."""
    if not digest:
        return None
    from kiln.errors import NotFound
    from kiln.files import atomic_write

    hexd = digest.removeprefix("sha256:")
    if len(hexd) != 64 or any(ch not in "0123456789abcdef" for ch in hexd):
        raise IntegrityError(f"the server named a parameter archive {digest[:80]!r}")
    root = client.cache.root / "params"
    path, prov_path = root / f"{hexd}.irpa", root / f"{hexd}.json"
    if path.exists():
        try:
            archive = ParamsArchive.open(path, digest="sha256:" + hexd)
            if client.trusted is not None:
                _check_provenance(client, hexd, _read_json(prov_path))
            return archive
        except IntegrityError:
            path.unlink(missing_ok=True)  # changed in the cache, or unsigned: fetch it again
            prov_path.unlink(missing_ok=True)
    resp = yield from client._request("GET", f"/v1/params/{hexd}")
    data = resp.content
    actual = hashlib.sha256(data).hexdigest()
    if actual != hexd or not is_archive(data[:16]):
        raise IntegrityError(
            f"the parameter archive sha256:{hexd} arrived with sha256:{actual}"
            + ("" if actual != hexd else ", and it is not an .irpa") + "; refusing it",
            detail={"expected": "sha256:" + hexd, "actual": "sha256:" + actual},
        )
    if client.trusted is not None:
        try:
            env = yield from client._request("GET", f"/v1/params/{hexd}/provenance")
            envelope: dict[str, Any] | None = dict(env.json())
        except NotFound:
            envelope = None
        _check_provenance(client, hexd, envelope)
        atomic_write(prov_path, json.dumps(envelope).encode())
    atomic_write(path, data)
    return ParamsArchive(path, "sha256:" + hexd)


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _check_provenance(client: _Base, hexd: str, envelope: dict[str, Any] | None) -> None:
    """IntegrityError unless a trusted key signed a parameter-archive statement about
    ``sha256:hexd``."""
    from kiln.provenance import PARAMS_BUILD_TYPE, check_statement

    assert client.trusted is not None
    if envelope is None:
        raise IntegrityError(
            f"the parameter archive sha256:{hexd} has no provenance, and trusted keys are "
            "configured: refusing it")
    stmt = client.trusted.open(envelope)
    check_statement(stmt, sha256=hexd)
    build = stmt.get("predicate", {}).get("buildDefinition", {})
    if not isinstance(build, dict) or build.get("buildType") != PARAMS_BUILD_TYPE:
        raise IntegrityError(f"the provenance of sha256:{hexd} is not a parameter archive's")
