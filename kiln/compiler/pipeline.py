"""The compile engine: graph bytes in, executables out. Embedded mode, the daemon and ``kiln
build`` all run this one path:

    parse targets (allow-list)  →  prepare in a worker (detect, import, verify, canonicalize)
      →  per target, in parallel: plan (flags, rewrites) → key → cache (single-flight)
         → compile in a worker  →  collect

Errors: a bad target or option fails the whole request before any work (``unsupported_target``,
``invalid_request``); a bad graph fails it after ``prepare`` (``invalid_graph``); a target whose
compile fails lands in ``CompileResult.errors`` while the other targets succeed.

Failures are remembered: a (graph digest, target, options) whose compile timed out or failed
answers the same error for ``failure_ttl`` seconds without running the compiler again (a
600-byte graph can hold a worker for the whole timeout, and re-sending it would cost the same
again). Only the graph's own failures are (``kiln.compiler.workers.graph_fault``): a full disk
(``InsufficientStorage``, 507) or a worker killed from outside is answered once and never
remembered. The remembered error says so in ``detail.remembered`` with the seconds it is still
kept.
"""

from __future__ import annotations

import concurrent.futures
import contextvars
import copy
import dataclasses
import hashlib
import json
import os
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kiln.compiler import frontend, kernels
from kiln.compiler.tasks import Compiled, CompileJob, PrepareJob
from kiln.compiler.workers import WorkerPool, graph_fault
from kiln.dialects.types import FunctionSignature, InputDialect, PreparedGraph
from kiln.errors import (
    CompileError,
    CompileTimeout,
    InvalidGraph,
    InvalidRequest,
    KilnError,
    Overloaded,
)
from kiln.targets import TargetSpec, normalize_options, parse_target
from kiln.targets.cpu import cpu_model
from kiln.targets.options import CompileOptions
from kiln.targets.presets import merge_flags, preset_flags, preset_rewrites
from kiln.targets.toolchain import CompilerIdentity, compiler_identity

if TYPE_CHECKING:
    from kiln.cache import ArtifactCache
    from kiln.cache.key import CompileKey

__all__ = ["MAX_TARGETS", "Artifact", "CompileResult", "Params", "Pipeline", "TargetError"]

MAX_TARGETS = 16


class _Blob:
    """A content-addressed blob the engine hands out: its bytes when this process holds them,
    else read on demand from the cache (which checks them against ``digest``)."""

    digest: str  # "sha256:<hex>"
    _data: bytes | None
    _load: Callable[[str], bytes] | None

    @property
    def data(self) -> bytes:
        if self._data is not None:
            return self._data
        if self._load is None:  # pragma: no cover - every blob the engine makes has one
            raise KilnError(f"{self.digest} is not available")
        return self._load(self.digest)

    @property
    def hex(self) -> str:
        return self.digest.split(":", 1)[1]


@dataclass(frozen=True)
class Artifact(_Blob):
    target: str
    key: str
    digest: str  # "sha256:<hex>" of the executable's bytes
    size: int
    cached: bool
    compile_seconds: float
    flags: tuple[str, ...]
    warnings: tuple[str, ...] = ()
    rewrites: tuple[str, ...] = ()  # Kiln's linalg rewrites (kiln.lowering.rewrites), if any
    #: The signed provenance envelope (JSON text, kiln.provenance) when the cache signs; not
    #: part of the compile answer (GET /v1/artifacts/{hex}/provenance serves it).
    provenance: str = field(default="", repr=False, compare=False)
    #: The bytes when this process built them; else ``read()`` loads them from the cache.
    _data: bytes | None = field(default=None, repr=False, compare=False)
    _load: Callable[[str], bytes] | None = field(default=None, repr=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "key": self.key,
            "digest": self.digest,
            "size": self.size,
            "cached": self.cached,
            "compile_seconds": round(self.compile_seconds, 4),
            "flags": list(self.flags),
            "rewrites": list(self.rewrites),
            "warnings": list(self.warnings),
        }


@dataclass(frozen=True)
class Params(_Blob):
    """The parameter archive of a graph compiled with ``params: "external"``: its weights, one
    ``.irpa`` for every target (the executables hold code only)."""

    digest: str  # "sha256:<hex>" of the archive's bytes
    size: int
    scope: str = "model"
    #: The bytes when there is no cache to read them from; else ``data`` reads them.
    _data: bytes | None = field(default=None, repr=False, compare=False)
    _load: Callable[[str], bytes] | None = field(default=None, repr=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        return {"digest": self.digest, "size": self.size, "scope": self.scope, "format": "irpa"}


@dataclass(frozen=True)
class TargetError:
    target: str
    error: KilnError

    def to_json(self) -> dict[str, Any]:
        return {"target": self.target, "error": self.error.to_json()}


@dataclass(frozen=True)
class CompileResult:
    graph_digest: str
    input_dialect: InputDialect
    functions: tuple[str, ...]
    compiler: CompilerIdentity
    artifacts: list[Artifact]
    errors: list[TargetError]
    signatures: tuple[FunctionSignature, ...] = ()  # the public functions' types, as imported
    #: The weights' archive (option ``params: "external"`` on an ONNX model), else None.
    params: Params | None = None

    def to_json(self) -> dict[str, Any]:
        out = {
            "graph_digest": self.graph_digest,
            "input_dialect": self.input_dialect.value,
            "functions": list(self.functions),
            "signatures": [s.to_json() for s in self.signatures],
            "compiler": {"name": self.compiler.name, "version": self.compiler.version},
            "artifacts": [a.to_json() for a in self.artifacts],
            "errors": [e.to_json() for e in self.errors],
        }
        if self.params is not None:
            out["params"] = self.params.to_json()
        return out


def parse_targets(targets: Sequence[str]) -> list[TargetSpec]:
    """Parse, normalize and de-duplicate (keeping order); raise on the first bad one."""
    if isinstance(targets, str) or not isinstance(targets, Sequence):
        raise InvalidRequest("targets must be a list of target strings")
    if not targets:
        raise InvalidRequest("at least one target is required")
    if len(targets) > MAX_TARGETS:
        raise InvalidRequest(f"at most {MAX_TARGETS} targets per request")
    specs: dict[str, TargetSpec] = {}
    for t in targets:
        spec = parse_target(t)
        specs.setdefault(spec.target, spec)
    return list(specs.values())


class Pipeline:
    """The compile engine: owns the worker pools and (optionally) an artifact cache. Thread-safe;
    share one per process (the service and embedded use alike).

    ``prepare_pool``: graphs are imported there (the service keeps imports off the compile
    workers); by default in ``pool``.
    """

    def __init__(
        self,
        *,
        cache: ArtifactCache | None = None,
        pool: WorkerPool | None = None,
        prepare_pool: WorkerPool | None = None,
        workers: int | None = None,
        compile_timeout: float = 300.0,
        prepare_timeout: float = 120.0,
        memory_limit: int | None = 8 << 30,
        engine: str | None = None,
        max_queue: int = 1024,
        failure_ttl: float = 0.0,
        fanout_threads: int = MAX_TARGETS * 4,
    ) -> None:
        self.cache = cache
        self.pool = pool or WorkerPool(workers, memory_limit=memory_limit, max_queue=max_queue)
        self.prepare_pool = prepare_pool or self.pool
        self.compile_timeout = compile_timeout
        self.prepare_timeout = prepare_timeout
        self.engine = engine or os.environ.get("KILN_COMPILE_ENGINE", "session")
        if self.engine not in ("session", "cli"):
            raise ValueError("engine must be 'session' or 'cli'")
        self.failure_ttl = failure_ttl
        # (graph digest, target, options) -> (monotonic expiry, the error); bounded, oldest out
        self._failures: OrderedDict[tuple[str, str, str], tuple[float, CompileError]] = (
            OrderedDict()
        )
        self._failures_lock = threading.Lock()
        self._fanout = concurrent.futures.ThreadPoolExecutor(
            max_workers=fanout_threads, thread_name_prefix="kiln-target"
        )
        self.on_compile: Callable[[str, str, float], None] | None = None  # (kind, outcome, s)
        # outcome: ok | error | timeout | rejected (compile queue full: no compiler ran)
        #: (kind, result) per kernel of a GPU/Vulkan compile: hit | miss | fallback (kernels.py)
        self.on_kernel: Callable[[str, str], None] | None = None
        #: Called with ``hit`` (a compile started from the graph's cached input phase) or
        #: ``miss`` (one stored it), kiln.compiler.frontend.
        self.on_frontend: Callable[[str], None] | None = None
        #: Called with each ``compile_graph`` result and its wall time in seconds (the service's
        #: status page lists them); must not block or raise.
        self.on_result: Callable[[CompileResult, float], None] | None = None

    @property
    def compiler(self) -> CompilerIdentity:
        return compiler_identity()

    # -- stages ----------------------------------------------------------------------------

    def prepare(
        self, data: bytes, *, format: str | None = None, external_data_dir: str | None = None,
        params: str = "embedded", side_files: Sequence[str] | None = None,
    ) -> PreparedGraph:
        """Detect, import, verify and canonicalize ``data`` in a worker (``invalid_graph``).
        ``params="external"``: weights apart (``PreparedGraph.params``; ``invalid_request`` for
        MLIR holding its weights inline). ``side_files``: the files of ``external_data_dir``
        (an upload's), each of which the model must name (else ``invalid_graph``)."""
        sides = tuple(side_files) if side_files is not None else None
        scratch = self.cache.scratch_dir() if self.cache is not None else None
        try:
            graph: PreparedGraph = self.prepare_pool.run(
                PrepareJob(data, format, external_data_dir, params, sides,
                           str(scratch) if scratch is not None else None),
                timeout=self.prepare_timeout,
                command_hint=["kiln-import"],
            )
        except CompileTimeout:
            raise
        except CompileError as exc:
            # The parser or importer crashed its process: the graph is what it cannot read.
            raise InvalidGraph(
                f"the graph crashed the importer/parser: {exc.message}", detail=exc.detail
            ) from None
        if graph.params is not None:
            # The archive file lives as long as the graph that names it (a job's graph outlives
            # its request); the cache keeps its own copy (store_params).
            weakref.finalize(graph, _remove, graph.params.path)
        return graph

    def flags_for(
        self, spec: TargetSpec, options: CompileOptions, *, graph: PreparedGraph | None = None
    ) -> tuple[str, ...]:
        """Target flags, then the preset's (chosen from ``graph.traits``), then option flags.

        A later flag with the same name replaces an earlier one (``merge_flags``), so an explicit
        option such as ``opt_level`` wins over the preset. Without ``graph`` the traits are
        unknown and the CPU ``default`` preset adds nothing (IREE's defaults).
        """
        traits = graph.traits.to_json() if graph is not None else None
        cpu, features = cpu_model(spec)
        preset = preset_flags(spec.kind, options.preset, arch=spec.arch, cpu=cpu,
                              features=features, traits=traits)
        return merge_flags(spec.flags, preset, options.flags())

    def rewrites_for(
        self, spec: TargetSpec, options: CompileOptions, *, graph: PreparedGraph | None = None
    ) -> tuple[str, ...]:
        """Kiln's linalg rewrites for this graph and target (``kiln.lowering.rewrites``)."""
        traits = graph.traits.to_json() if graph is not None else None
        cpu, features = cpu_model(spec)
        return preset_rewrites(spec.kind, options.preset, arch=spec.arch, cpu=cpu,
                               features=features, traits=traits)

    def key_for(
        self, graph: PreparedGraph, spec: TargetSpec, options: CompileOptions
    ) -> CompileKey:
        """The compile key: everything that decides the executable's bytes (docs/caching.md)."""
        from kiln.cache.key import CompileKey

        ident = self.compiler
        return CompileKey(
            graph_digest=graph.digest,
            target=spec.target,
            options=tuple(sorted(options.to_json().items())),
            flags=self.flags_for(spec, options, graph=graph),
            compiler_version=ident.version,
            compiler_hash=ident.hash,
            rewrites=self.rewrites_for(spec, options, graph=graph),
        )

    def compile_prepared(
        self, graph: PreparedGraph, spec: TargetSpec, options: CompileOptions
    ) -> Artifact:
        """One target: the cache's answer, or a compile in a worker (single-flight per key)."""
        ckey = self.key_for(graph, spec, options)
        flags, rewrites = ckey.flags, ckey.rewrites

        def build() -> Compiled:
            t0 = time.perf_counter()
            outcome = "error"
            try:
                # the graph's input phase, shared by its targets (kiln.compiler.frontend)
                fkey, front = None, None
                if self.cache is not None and frontend.enabled(len(graph.mlir),
                                                               engine=self.engine):
                    fkey = frontend.frontend_key(graph.digest, flags=flags,
                                                 module_attr=spec.module_attr,
                                                 compiler=self.compiler)
                    front = frontend.lookup(self.cache, fkey)
                want = fkey is not None and front is None
                out: Compiled | None = None
                if (self.cache is not None and not rewrites
                        and kernels.enabled(spec.kind, len(graph.mlir))):
                    out = kernels.compile_with_kernels(  # None: fall back to one CompileJob
                        pool=self.pool, cache=self.cache, mlir=graph.mlir, spec=spec, flags=flags,
                        compiler=self.compiler, timeout=self.compile_timeout,
                        on_kernel=self.on_kernel, front=front, want_front=want)
                if out is None:
                    out = self.pool.run(
                        CompileJob(graph.mlir, tuple(flags), spec.module_attr, self.engine,
                                   self.compile_timeout, tuple(rewrites), front, want),
                        timeout=self.compile_timeout + 5,
                        command_hint=_command(flags),
                    )
                if want and out.front is not None and self.cache is not None and fkey:
                    frontend.store(self.cache, fkey, out.front)
                if self.on_frontend is not None and (front is not None or out.front is not None):
                    # a compile the command line ran (flags the session lacks) used neither
                    self.on_frontend("hit" if front is not None else "miss")
                outcome = "ok"
            except CompileTimeout:
                outcome = "timeout"
                raise
            except Overloaded:
                outcome = "rejected"  # the queue was full: no compiler ran
                raise
            finally:
                if self.on_compile is not None:
                    self.on_compile(spec.kind, outcome, time.perf_counter() - t0)
            return out

        if self.cache is None:
            out = build()
            return Artifact(
                spec.target, ckey.digest(), "sha256:" + hashlib.sha256(out.data).hexdigest(),
                len(out.data), False, out.seconds, tuple(flags), out.warnings,
                rewrites=tuple(rewrites), _data=out.data,
            )
        from kiln.cache import Built

        held: list[bytes] = []

        def built() -> Built:
            out = build()
            held.append(out.data)
            return Built(data=out.data, compile_seconds=out.seconds, warnings=list(out.warnings))

        res = self.cache.get_or_build(ckey, built)
        return self._artifact(spec.target, ckey.digest(), res.record, cached=res.cached,
                              data=held[0] if held and not res.cached else None)

    def store_params(self, graph: PreparedGraph) -> Params | None:
        """Keep the graph's parameter archive (in the cache, beside the executables; signed
        there), or None when it has none. Stored on every compile that produces it, so a
        compile answer never names an archive the cache has dropped."""
        if graph.params is None:
            return None
        f = graph.params
        if self.cache is None:
            return Params(f.digest, f.size, _data=Path(f.path).read_bytes())
        # streamed from the worker's file into every tier: never held here whole
        digest = self.cache.put_params_file(f.path, digest=f.digest, graph_digest=graph.digest)
        return Params(digest, f.size, _load=self.cache.read_blob)

    def lookup(self, target: str, key: str) -> Artifact | None:
        """The cached artifact under a known compile key (verified), or None."""
        if self.cache is None:
            return None
        hit = self.cache.lookup(key)
        if hit is None:
            return None
        return self._artifact(target, key, hit.record, cached=True)

    def _artifact(self, target: str, key: str, rec: Any, *, cached: bool,
                  data: bytes | None = None) -> Artifact:
        assert self.cache is not None
        return Artifact(
            target=target,
            key=key,
            digest=rec.digest,
            size=rec.size,
            cached=cached,
            compile_seconds=rec.compile_seconds,
            flags=tuple(rec.flags),
            warnings=tuple(rec.warnings),
            rewrites=tuple(rec.rewrites),
            provenance=rec.provenance,
            _data=data,
            _load=self.cache.read_blob,
        )

    # -- the whole request -----------------------------------------------------------------

    def compile(
        self,
        data: bytes,
        *,
        targets: Sequence[str],
        options: Mapping[str, Any] | None = None,
        format: str | None = None,
        external_data_dir: str | None = None,
    ) -> CompileResult:
        specs = parse_targets(targets)
        opts = normalize_options(options)
        graph = self.prepare(data, format=format, external_data_dir=external_data_dir,
                             params=opts.params)
        return self.compile_graph(graph, specs, opts)

    def compile_graph(
        self, graph: PreparedGraph, specs: Sequence[TargetSpec], options: CompileOptions
    ) -> CompileResult:
        """Every target of a prepared graph, in parallel; per-target errors collected."""
        okey = json.dumps(options.to_json(), sort_keys=True)
        t0 = time.perf_counter()

        def one(spec: TargetSpec) -> Artifact:
            fkey = (graph.digest, spec.target, okey)
            known = self._failure(fkey)
            if known is None:
                try:
                    return self.compile_prepared(graph, spec, options)
                except CompileError as exc:  # compile_failed, compile_timeout
                    if not graph_fault(exc):  # a worker killed from outside: not the graph's
                        raise
                    self._remember_failure(fkey, exc)
                    known = exc
            return self._as_baseline(graph, spec, options, known)

        params = self.store_params(graph)
        # Each target runs in the caller's context (the fair queue's client is a context variable).
        futures = [self._fanout.submit(contextvars.copy_context().run, one, spec) for spec in specs]
        artifacts: list[Artifact] = []
        errors: list[TargetError] = []
        for spec, fut in zip(specs, futures, strict=True):
            try:
                artifacts.append(fut.result())
            except KilnError as exc:
                errors.append(TargetError(spec.target, exc))
        result = CompileResult(
            graph_digest=graph.digest,
            input_dialect=graph.input_dialect,
            functions=graph.functions,
            signatures=graph.signatures,
            compiler=self.compiler,
            artifacts=artifacts,
            errors=errors,
            params=params,
        )
        if self.on_result is not None:
            self.on_result(result, time.perf_counter() - t0)
        return result

    def _as_baseline(self, graph: PreparedGraph, spec: TargetSpec, options: CompileOptions,
                     failed: CompileError) -> Artifact:
        """Kiln's ``default`` preset failed to compile ``graph`` (``failed``): the executable of
        IREE's own defaults (preset ``baseline``) with a warning saying so, when those flags
        and rewrites differ and compile; else ``failed`` is raised. Kiln's tuned flags must
        never make a graph fail that raw IREE compiles (zoo ``regnet_y_400mf`` at
        ``x86-64-v2``: im2col + O3 hit an IREE codegen error, ``bench/RESULTS.md``). Timeouts
        are not retried."""
        if options.preset != "default" or isinstance(failed, CompileTimeout):
            raise failed
        base = normalize_options({**options.to_json(), "preset": "baseline"})
        if (self.flags_for(spec, base, graph=graph), self.rewrites_for(spec, base, graph=graph)) \
                == (self.flags_for(spec, options, graph=graph),
                    self.rewrites_for(spec, options, graph=graph)):
            raise failed
        try:
            art = self.compile_prepared(graph, spec, base)
        except CompileError:
            raise failed from None
        note = (f"Kiln's default flags for {spec.target} failed to compile this graph "
                f"({failed.message.splitlines()[0][:200]}); this executable was compiled with "
                "IREE's own defaults (preset baseline)")
        return dataclasses.replace(art, warnings=(*art.warnings, note))

    def _failure(self, fkey: tuple[str, str, str]) -> CompileError | None:
        """The remembered error for ``fkey`` (a copy saying so), or None."""
        with self._failures_lock:
            entry = self._failures.get(fkey)
            if entry is None:
                return None
            expires, exc = entry
            left = expires - time.monotonic()
            if left <= 0:
                del self._failures[fkey]
                return None
        err = copy.copy(exc)
        detail = dict(exc.detail) if isinstance(exc.detail, dict) else {}
        detail["remembered"] = {"seconds_left": round(left, 1)}
        err.detail = detail
        return err

    def _remember_failure(self, fkey: tuple[str, str, str], exc: CompileError) -> None:
        if self.failure_ttl <= 0:
            return
        with self._failures_lock:
            self._failures[fkey] = (time.monotonic() + self.failure_ttl, exc)
            self._failures.move_to_end(fkey)
            while len(self._failures) > 4096:
                self._failures.popitem(last=False)

    def close(self) -> None:
        self._fanout.shutdown(wait=False, cancel_futures=True)
        self.pool.close()
        if self.prepare_pool is not self.pool:
            self.prepare_pool.close()

    def __enter__(self) -> Pipeline:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _command(flags: Sequence[str]) -> list[str]:
    from kiln.compiler.tasks import cli_command

    return cli_command(list(flags))
