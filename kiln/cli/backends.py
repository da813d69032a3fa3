"""Where a command compiles: in this process (``EmbeddedBackend``: the compile engine with the
local cache) or on a Kiln server (``RemoteBackend``: ``kiln.client.Client``). ``kiln compile``,
``kiln build`` and autotune all go through the one ``Backend`` protocol."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kiln.errors import InvalidRequest, KilnError, NotFound, UnsupportedTarget

__all__ = [
    "Backend", "Built", "BuiltParams", "EmbeddedBackend", "Outcome", "RemoteBackend", "compile_fn",
    "open_backend",
]


@dataclass(frozen=True)
class Built:
    """One executable, with its bytes and (when the cache or server signs) its provenance."""

    target: str  # normalized
    digest: str
    key: str
    size: int
    cached: bool
    compile_seconds: float
    flags: tuple[str, ...]
    rewrites: tuple[str, ...]
    data: bytes
    provenance: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"target": self.target, "digest": self.digest, "key": self.key, "size": self.size,
                "cached": self.cached, "compile_seconds": round(self.compile_seconds, 4),
                "flags": list(self.flags), "rewrites": list(self.rewrites)}


@dataclass(frozen=True)
class BuiltParams:
    """The weights of executables compiled with ``params: "external"``: one parameter archive
    (``.irpa``) for all of a graph's targets."""

    digest: str
    data: bytes = field(repr=False)

    def to_json(self) -> dict[str, Any]:
        return {"digest": self.digest, "size": len(self.data), "scope": "model", "format": "irpa"}


@dataclass
class Outcome:
    """One graph compiled for its targets: what was built and what failed, per target."""

    graph_digest: str | None
    artifacts: list[Built] = field(default_factory=list)
    errors: list[tuple[str, KilnError]] = field(default_factory=list)
    #: The compile answer's other fields: input_dialect, functions, compiler.
    info: dict[str, Any] = field(default_factory=dict)
    #: The weights' archive when the artifacts hold code only; None otherwise.
    params: BuiltParams | None = None

    def to_json(self) -> dict[str, Any]:
        out = {"graph_digest": self.graph_digest, **self.info,
               "artifacts": [a.to_json() for a in self.artifacts],
               "errors": [{"target": t, "error": e.to_json()} for t, e in self.errors]}
        if self.params is not None:
            out["params"] = self.params.to_json()
        return out


class Backend(Protocol):
    def compile(
        self, data: bytes, *, targets: Sequence[str], options: Mapping[str, Any] | None = None,
        format: str | None = None, source_dir: str | None = None,
    ) -> Outcome:
        """Compile ``data`` for every target. A bad target or a failed compile lands in
        ``Outcome.errors`` and costs only itself; a graph that cannot be read at all raises."""
        ...


_INFO = ("input_dialect", "functions", "compiler")


def _split_targets(targets: Sequence[str]) -> tuple[list[str], list[tuple[str, KilnError]]]:
    """Targets the local registry accepts (normalized, de-duplicated) and those it refuses."""
    from kiln.targets import parse_target

    good: list[str] = []
    bad: list[tuple[str, KilnError]] = []
    for t in targets:
        try:
            norm = parse_target(t).target
        except KilnError as exc:
            bad.append((t, exc))
            continue
        if norm not in good:
            good.append(norm)
    return good, bad


class EmbeddedBackend:
    """The in-process compile engine (``kiln.compiler.pipeline.Pipeline``), its cache if any."""

    def __init__(self, pipeline: Any) -> None:
        self.pipeline = pipeline

    def compile(
        self, data: bytes, *, targets: Sequence[str], options: Mapping[str, Any] | None = None,
        format: str | None = None, source_dir: str | None = None,
    ) -> Outcome:
        good, errors = _split_targets(targets)
        if not good:
            return Outcome(None, [], errors)
        res = self.pipeline.compile(data, targets=good, options=dict(options or {}) or None,
                                    format=format, external_data_dir=source_dir)
        head = res.to_json()
        out = Outcome(res.graph_digest, [], errors, {k: head[k] for k in _INFO if k in head})
        if res.params is not None:
            out.params = BuiltParams(res.params.digest, res.params.data)
        for a in res.artifacts:
            envelope = json.loads(a.provenance) if a.provenance else None
            out.artifacts.append(Built(a.target, a.digest, a.key, a.size, a.cached,
                                       a.compile_seconds, tuple(a.flags), tuple(a.rewrites),
                                       a.data, envelope))
        out.errors += [(e.target, e.error) for e in res.errors]
        return out


class RemoteBackend:
    """A ``kiln serve`` daemon. One job per graph (``POST /v1/jobs``, long-polled: no request
    is held open for a long compile; a server without jobs gets ``/v1/compile``); when the
    server refuses a target, the others are retried one request each, so one bad target costs
    only itself. With trusted keys (``KILN_TRUSTED_KEYS``) an executable whose signature does
    not verify is an error, never written. ``on_progress(n)`` is told of every ``n`` more
    targets finished."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.on_progress: Callable[[int], None] | None = None
        self._jobs = True

    def _compile(self, data: Any, targets: list[str], opts: dict[str, Any] | None,
                 format: str | None) -> Any:
        if self._jobs:
            seen = [0]

            def progress(job: Any) -> None:
                if self.on_progress is not None and job.targets_done > seen[0]:
                    self.on_progress(job.targets_done - seen[0])
                    seen[0] = job.targets_done

            try:
                job = self.client.submit(data, targets=targets, options=opts, format=format)
            except NotFound:
                self._jobs = False  # a server without /v1/jobs
            else:
                return self.client.wait(job, on_progress=progress)
        return self.client.compile(data, targets=targets, options=opts, format=format)

    def compile(
        self, data: bytes, *, targets: Sequence[str], options: Mapping[str, Any] | None = None,
        format: str | None = None, source_dir: str | None = None,
    ) -> Outcome:
        from kiln.provenance import verify_artifact

        opts = dict(options or {}) or None
        graph: Any = data
        if source_dir is not None and format in (None, "onnx"):
            from kiln.client.side_files import onnx_files

            # the side files the model names go with it (a tar body)
            graph = onnx_files(data, source_dir) or data
        try:
            results = [self._compile(graph, list(targets), opts, format)]
            errors: list[tuple[str, KilnError]] = []
        except (UnsupportedTarget, InvalidRequest):
            if len(targets) == 1:
                raise
            results, errors = [], []
            for t in targets:
                try:
                    results.append(self._compile(graph, [t], opts, format))
                except KilnError as exc:
                    errors.append((t, exc))
        head = results[0].to_json() if results else {}
        out = Outcome(results[0].graph_digest if results else None, [], errors,
                      {k: head[k] for k in _INFO if k in head})
        digest = next((r.params["digest"] for r in results if r.params), None)
        if digest is not None:  # sha256-verified, signed when keys are trusted (params.py)
            out.params = BuiltParams(digest, self.client.fetch_params(digest).path.read_bytes())
        for res in results:
            for a in res.artifacts:
                blob = self.client.fetch(a.digest)
                envelope = self.client.provenance(a.digest, key=a.key)
                if self.client.trusted is not None:
                    try:
                        verify_artifact(self.client.trusted, blob, envelope, target=a.target,
                                        graph_digest=res.graph_digest)
                    except KilnError as exc:
                        out.errors.append((a.target, exc))
                        continue
                out.artifacts.append(Built(a.target, a.digest, a.key, a.size, a.cached,
                                           a.compile_seconds, tuple(a.flags), tuple(a.rewrites),
                                           blob, envelope))
            out.errors += [(e.target, e.error) for e in res.errors]
        return out


def compile_fn(backend: Backend, graph: bytes, *, target: str) -> Any:
    """Autotune's ``CompileFn`` (``options -> executable bytes``) over any backend."""

    def compile_with(options: Mapping[str, Any]) -> bytes:
        res = backend.compile(graph, targets=[target], options=options)
        if res.errors:
            raise res.errors[0][1]
        return res.artifacts[0].data

    return compile_with


@contextlib.contextmanager
def open_backend(
    *, server: str | None = None, token: str | None = None, cache_dir: str | None = None,
    redis_url: str | None = None, no_cache: bool = False, workers: int | None = None,
    timeout: float = 300.0,
) -> Iterator[Backend]:
    """The backend the command-line flags ask for: ``--server`` remote, else embedded with the
    local cache (signed with the same key file as ``kiln serve``; docs/trust.md). With
    ``redis_url`` the cache is tiered like the service's: only Kiln's blob kinds cross between
    the tiers (``kiln.cache.kinds``), and entries written while Redis was down are copied up on
    the catch-up timer (a ``kiln build`` of many models outlives an outage) and on close."""
    if server:
        from kiln.client import Client

        with Client(server, token=token) as client:
            yield RemoteBackend(client)
        return
    from kiln.compiler.pipeline import Pipeline

    cache = None
    if not no_cache:
        from kiln.cache import open_cache
        from kiln.cache.kinds import is_known
        from kiln.cache.tiered import CATCH_UP_INTERVAL
        from kiln.provenance import Authority

        cache = open_cache(cache_dir=cache_dir, redis_url=redis_url,
                           authority=Authority.from_env(), accept_blob=is_known,
                           catch_up_interval=CATCH_UP_INTERVAL if redis_url else None)
    try:
        with Pipeline(cache=cache, workers=workers, compile_timeout=timeout) as pipe:
            yield EmbeddedBackend(pipe)
    finally:
        if cache is not None:  # the pipeline leaves its cache open
            cache.close()
