"""``kiln build``: compile a TOML manifest's model × target matrix into a directory (API.md).

    [[models]]
    name = "mlp"
    path = "mlp.onnx"                 # relative to the manifest
    targets = ["cpu", "vulkan", "cuda:sm_80"]
    options = {opt_level = "O3"}      # optional, allow-listed compile options

Output: ``DIR/<model>.<target>.vmfb`` per success, beside it its signed provenance
``DIR/<model>.<target>.vmfb.provenance.json`` (a DSSE envelope: ``kiln verify`` checks it), and
``DIR/manifest.json``: ``{"artifacts": [{model, target, path, provenance, digest, key, cached,
flags, rewrites}], "errors": [{model, target, error}]}`` in manifest order (``provenance`` is
null when the cache or server signed nothing). Embedded (``kiln.pipeline`` with the
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
from typing import Any, Protocol

from kiln.errors import InvalidRequest, KilnError

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

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "target": self.target, "path": self.path,
                "provenance": self.provenance,
                "digest": self.digest, "key": self.key, "cached": self.cached,
                "flags": list(self.flags), "rewrites": list(self.rewrites)}


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
        models.append(Model(name, mpath.parent / gpath, tuple(targets), dict(options)))
    return models


class Backend(Protocol):
    """Compiles one model for its targets.

    ``compile`` returns ``(artifacts, errors)``, where artifacts are ``(target, digest, key,
    cached, flags, rewrites, data, provenance)`` (``provenance``: the DSSE envelope, or None)
    and errors ``(target, KilnError)``; it raises only for failures of the whole model (its
    graph).
    """

    def compile(self, model: Model, data: bytes) -> tuple[list[BuiltArtifact],
                                                          list[tuple[str, KilnError]]]: ...


def artifact_name(model: str, target: str) -> str:
    """``<model>.<target>.vmfb`` with ``:`` and ``,`` made file-safe; long names get a hash."""
    safe = target.replace(":", "_").replace(",", "_").replace("+", "")
    name = f"{model}.{safe}.vmfb"
    if len(name) > 200:
        h = hashlib.sha256(target.encode()).hexdigest()[:12]
        name = f"{model}.{safe[:120]}-{h}.vmfb"
    return name


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
            arts, errs = backend.compile(m, data)
        except OSError as exc:
            err = InvalidRequest(f"cannot read {m.path}: {exc.strerror}")
            return [], [BuildError(m.name, t, err) for t in m.targets]
        except KilnError as exc:
            return [], [BuildError(m.name, t, exc) for t in m.targets]
        for target, digest, key, cached, flags, rewrites, blob, envelope in arts:
            rel = artifact_name(m.name, target)
            _write(out / rel, blob)
            prov = None
            if envelope is not None:
                prov = rel + ".provenance.json"
                _write(out / prov, (json.dumps(envelope, indent=2) + "\n").encode())
            entries.append(BuildEntry(m.name, target, rel, digest, key, cached, flags, rewrites,
                                      prov))
        errors.extend(BuildError(m.name, t, e) for t, e in errs)
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
    _write(out / "manifest.json", (json.dumps(report.to_json(), indent=2) + "\n").encode())
    return report


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


# -- backends -------------------------------------------------------------------------------------

def _split_targets(m: Model) -> tuple[list[str], list[tuple[str, KilnError]]]:
    """Targets the local registry accepts (normalized, de-duplicated) and those it refuses."""
    from kiln.targets import parse_target

    good: list[str] = []
    bad: list[tuple[str, KilnError]] = []
    for t in m.targets:
        try:
            norm = parse_target(t).target
        except KilnError as exc:
            bad.append((t, exc))
            continue
        if norm not in good:
            good.append(norm)
    return good, bad


#: One built artifact: (target, digest, key, cached, flags, rewrites, bytes, provenance).
BuiltArtifact = tuple[
    str, str, str, bool, tuple[str, ...], tuple[str, ...], bytes, dict[str, Any] | None
]


class EmbeddedBackend:
    """The in-process pipeline with the shared disk cache (``kiln compile``'s default)."""

    def __init__(self, pipeline: Any, cache: Any) -> None:
        self.pipeline = pipeline
        self.cache = cache

    def compile(self, model: Model, data: bytes) -> tuple[list[BuiltArtifact],
                                                          list[tuple[str, KilnError]]]:
        good, errors = _split_targets(model)
        if not good:
            return [], errors
        res = self.pipeline.compile(data, targets=good, options=model.options or None,
                                    external_data_dir=str(model.path.resolve().parent))
        arts = []
        for a in res.artifacts:
            blob = a.data if a.data is not None else self.cache.read_blob(a.digest)
            envelope = json.loads(a.provenance) if a.provenance else None
            arts.append((a.target, a.digest, a.key, a.cached, tuple(a.flags), tuple(a.rewrites),
                         blob, envelope))
        errors += [(e.target, e.error) for e in res.errors]
        return arts, errors


class RemoteBackend:
    """A ``kiln serve`` daemon through ``kiln.client.Client`` (one request per model; when the
    server refuses a target the others are retried one request each, so one bad target costs only
    itself)."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def compile(self, model: Model, data: bytes) -> tuple[list[BuiltArtifact],
                                                          list[tuple[str, KilnError]]]:
        from kiln.errors import InvalidRequest, UnsupportedTarget
        from kiln.provenance import verify_artifact

        opts = model.options or None
        try:
            results = [self.client.compile(data, targets=list(model.targets), options=opts)]
            errors: list[tuple[str, KilnError]] = []
        except (UnsupportedTarget, InvalidRequest):
            if len(model.targets) == 1:
                raise
            results, errors = [], []
            for t in model.targets:
                try:
                    results.append(self.client.compile(data, targets=[t], options=opts))
                except KilnError as exc:
                    errors.append((t, exc))
        arts = []
        for res in results:
            for a in res.artifacts:
                blob = self.client.fetch(a.digest)
                envelope = self.client.provenance(a.digest, key=a.key)
                if self.client.trusted is not None:  # IntegrityError: this target fails
                    try:
                        verify_artifact(self.client.trusted, blob, envelope, target=a.target,
                                        graph_digest=res.graph_digest)
                    except KilnError as exc:
                        errors.append((a.target, exc))
                        continue
                arts.append((a.target, a.digest, a.key, a.cached, tuple(a.flags),
                             tuple(a.rewrites), blob, envelope))
            errors += [(e.target, e.error) for e in res.errors]
        return arts, errors
