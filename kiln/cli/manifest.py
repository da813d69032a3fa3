"""``kiln build``: compile a TOML manifest's model × target matrix into a directory (docs/api.md).

    [[models]]
    name = "mlp"
    path = "mlp.onnx"                 # relative to the manifest
    targets = ["cpu", "vulkan", "cuda:sm_80"]
    options = {opt_level = "O3"}      # optional, allow-listed compile options

Output: ``DIR/<model>.<target>.vmfb`` per success, beside it its signed provenance
``DIR/<model>.<target>.vmfb.provenance.json`` (a DSSE envelope: ``kiln verify`` checks it), and
``DIR/manifest.json``: ``{"artifacts": [{model, target, path, provenance, digest, key, cached,
flags, rewrites[, params]}], "errors": [{model, target, error}]}`` in manifest order
(``provenance`` is null when the cache or server signed nothing). With ``options = {params =
"external"}`` the executables hold code only and the model's weights are written once, to
``DIR/<model>.irpa``; each of its entries then has ``"params": {"path", "digest"}``. Embedded (``kiln.compiler.pipeline`` with the
disk cache) or remote (``Client``).

Failure semantics: a bad manifest (unreadable, not TOML, missing fields) raises ``InvalidRequest``
before any work. Everything else fails per model × target — an unreadable or invalid graph fails
all of that model's targets, a bad target or a failed compile only its own — and lands in
``errors`` while every other artifact is still built and written. Files are written atomically.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import os
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kiln.errors import InvalidRequest, KilnError
from kiln.files import atomic_write

if TYPE_CHECKING:
    from kiln.cli.backends import Backend

__all__ = ["BuildEntry", "BuildError", "BuildReport", "Model", "build", "read_manifest"]


@dataclass(frozen=True)
class Model:
    name: str
    path: Path
    targets: tuple[str, ...]
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class BuildEntry:
    model: str
    target: str  # normalized
    path: str  # relative to the output directory
    digest: str
    key: str
    cached: bool
    flags: tuple[str, ...]
    rewrites: tuple[str, ...] = ()  # Kiln's linalg rewrites (docs/caching.md)
    provenance: str | None = None  # the envelope's path, relative to the output directory
    #: With ``params = "external"``: the weights' archive, ``{"path", "digest"}`` (shared by
    #: the model's targets; the path is relative to the output directory).
    params: dict[str, str] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "model": self.model, "target": self.target, "path": self.path,
            "provenance": self.provenance,
            "digest": self.digest, "key": self.key, "cached": self.cached,
            "flags": list(self.flags), "rewrites": list(self.rewrites)}
        if self.params is not None:
            out["params"] = dict(self.params)
        return out


@dataclass(frozen=True)
class BuildError:
    model: str
    target: str  # as written in the manifest when it could not be normalized
    error: KilnError

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "target": self.target, "error": self.error.to_json()}


@dataclass
class BuildReport:
    artifacts: list[BuildEntry]
    errors: list[BuildError]

    @property
    def ok(self) -> bool:
        return not self.errors

    def to_json(self) -> dict[str, Any]:
        return {"artifacts": [a.to_json() for a in self.artifacts],
                "errors": [e.to_json() for e in self.errors]}


_NAME_OK = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")


def read_manifest(path: str | os.PathLike[str]) -> list[Model]:
    """Parse and check a manifest; paths are resolved against its directory."""
    mpath = Path(path)
    try:
        doc = tomllib.loads(mpath.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InvalidRequest(f"cannot read the manifest {mpath}: {exc.strerror}") from exc
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InvalidRequest(f"the manifest {mpath} is not valid TOML: {exc}") from exc
    entries = doc.get("models")
    if not isinstance(entries, list) or not entries:
        raise InvalidRequest(f"{mpath}: expected one or more [[models]] tables")
    models: list[Model] = []
    seen: set[str] = set()
    for i, m in enumerate(entries):
        where = f"{mpath}: models[{i}]"
        if not isinstance(m, dict):
            raise InvalidRequest(f"{where} is not a table")
        name, gpath, targets = m.get("name"), m.get("path"), m.get("targets")
        if not isinstance(name, str) or not name or not set(name) <= _NAME_OK:
            raise InvalidRequest(f"{where}: 'name' must be a non-empty [A-Za-z0-9._-] string")
        if name in seen:
            raise InvalidRequest(f"{where}: duplicate model name {name!r}")
        seen.add(name)
        if not isinstance(gpath, str) or not gpath:
            raise InvalidRequest(f"{where}: 'path' must be a string")
        if (not isinstance(targets, list) or not targets
                or not all(isinstance(t, str) for t in targets)):
            raise InvalidRequest(f"{where}: 'targets' must be a non-empty list of strings")
        options = m.get("options", {})
        if not isinstance(options, dict):
            raise InvalidRequest(f"{where}: 'options' must be a table")
        graph = mpath.parent / gpath
        if not graph.is_file():
            raise InvalidRequest(f"{where}: the model file {graph} does not exist")
        models.append(Model(name, graph, tuple(targets), dict(options)))
    return models


def artifact_name(model: str, target: str) -> str:
    """``<model>.<target>.vmfb`` with ``:`` and ``,`` made file-safe; long names get a hash."""
    safe = target.replace(":", "_").replace(",", "_").replace("+", "")
    name = f"{model}.{safe}.vmfb"
    if len(name) > 200:
        h = hashlib.sha256(target.encode()).hexdigest()[:12]
        name = f"{model}.{safe[:120]}-{h}.vmfb"
    return name


def params_name(model: str) -> str:
    """``<model>.irpa``: the weights' archive of a model built with ``params = "external"``."""
    return f"{model}.irpa"


def build(
    models: Sequence[Model],
    out_dir: str | os.PathLike[str],
    backend: Backend,
    *,
    jobs: int = 2,
    on_done: Callable[[str, int], None] | None = None,
) -> BuildReport:
    """Build every model × target (``jobs`` models at a time), write artifacts and manifest.json.

    ``on_done(model, n)`` is called as each model finishes with its number of model × targets.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)

    def one(m: Model) -> tuple[list[BuildEntry], list[BuildError]]:
        entries: list[BuildEntry] = []
        errors: list[BuildError] = []
        try:
            data = m.path.read_bytes()
            res = backend.compile(data, targets=m.targets, options=m.options or None,
                                  source_dir=str(m.path.resolve().parent))
        except OSError as exc:
            err = InvalidRequest(f"cannot read {m.path}: {exc.strerror}")
            return [], [BuildError(m.name, t, err) for t in m.targets]
        except KilnError as exc:
            return [], [BuildError(m.name, t, exc) for t in m.targets]
        params = None
        if res.params is not None and res.artifacts:
            params = {"path": params_name(m.name), "digest": res.params.digest}
            atomic_write(out / params["path"], res.params.data)
        for a in res.artifacts:
            rel = artifact_name(m.name, a.target)
            atomic_write(out / rel, a.data)
            prov = None
            if a.provenance is not None:
                prov = rel + ".provenance.json"
                atomic_write(out / prov, (json.dumps(a.provenance, indent=2) + "\n").encode())
            entries.append(BuildEntry(m.name, a.target, rel, a.digest, a.key, a.cached, a.flags,
                                      a.rewrites, prov, params))
        errors.extend(BuildError(m.name, t, e) for t, e in res.errors)
        return entries, errors

    results: dict[str, tuple[list[BuildEntry], list[BuildError]]] = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
        futs = {ex.submit(one, m): m for m in models}
        for fut in concurrent.futures.as_completed(futs):
            m = futs[fut]
            results[m.name] = fut.result()
            if on_done is not None:
                on_done(m.name, len(m.targets))
    report = BuildReport([], [])
    for m in models:  # manifest order, whatever the completion order
        report.artifacts.extend(results[m.name][0])
        report.errors.extend(results[m.name][1])
    atomic_write(out / "manifest.json", (json.dumps(report.to_json(), indent=2) + "\n").encode())
    return report
