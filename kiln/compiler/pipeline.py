"""The compile pipeline: graph bytes in, executables out. Embedded mode, the daemon and ``kiln
build`` all run this one path:

    parse targets (allow-list)  →  prepare in a worker (detect, import, verify, canonicalize)
      →  per target, in parallel: key → cache (single-flight) → compile in a worker

Errors: a bad target or option fails the whole request before any work (``unsupported_target``,
``invalid_request``); a bad graph fails it after ``prepare`` (``invalid_graph``); a target whose
compile fails lands in ``CompileResult.errors`` while the other targets succeed.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kiln.dialects.types import GraphFormat, GraphTraits, InputDialect, PreparedGraph
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
from kiln.workers import WorkerPool

if TYPE_CHECKING:
    from kiln.cache import ArtifactCache

__all__ = ["MAX_TARGETS", "Artifact", "CompileResult", "Pipeline", "TargetError"]

MAX_TARGETS = 16


@dataclass(frozen=True)
class Artifact:
    target: str
    key: str
    digest: str  # "sha256:<hex>" of the executable's bytes
    size: int
    cached: bool
    compile_seconds: float
    flags: tuple[str, ...]
    warnings: tuple[str, ...] = ()
    data: bytes | None = field(default=None, repr=False, compare=False)
    rewrites: tuple[str, ...] = ()  # Kiln's linalg rewrites (kiln.lowering.layout), if any
    #: The signed provenance envelope (JSON text, kiln.provenance) when the cache signs; not
    #: part of the compile answer (GET /v1/artifacts/{hex}/provenance serves it).
    provenance: str = field(default="", repr=False, compare=False)

    @property
    def hex(self) -> str:
        return self.digest.split(":", 1)[1]

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "key": self.key,
            "digest": self.digest,
            "size": self.size,
            "cached": self.cached,
            "compile_seconds": round(self.compile_seconds, 4),
            "url": f"/v1/artifacts/{self.hex}",
            "flags": list(self.flags),
            "rewrites": list(self.rewrites),
            "warnings": list(self.warnings),
        }


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

    def to_json(self) -> dict[str, Any]:
        return {
            "graph_digest": self.graph_digest,
            "input_dialect": self.input_dialect.value,
            "functions": list(self.functions),
            "compiler": {"name": self.compiler.name, "version": self.compiler.version},
            "artifacts": [a.to_json() for a in self.artifacts],
            "errors": [e.to_json() for e in self.errors],
        }


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
    """Owns a worker pool and (optionally) an artifact cache. Thread-safe; share one per process."""

    def __init__(
        self,
        *,
        cache: ArtifactCache | None = None,
        pool: WorkerPool | None = None,
        workers: int | None = None,
        compile_timeout: float = 300.0,
        prepare_timeout: float = 120.0,
        memory_limit: int | None = 8 << 30,
        engine: str | None = None,
        max_queue: int = 1024,
    ) -> None:
        self.cache = cache
        self.pool = pool or WorkerPool(workers, memory_limit=memory_limit, max_queue=max_queue)
        self.compile_timeout = compile_timeout
        self.prepare_timeout = prepare_timeout
        self.engine = engine or os.environ.get("KILN_COMPILE_ENGINE", "session")
        if self.engine not in ("session", "cli"):
            raise ValueError("engine must be 'session' or 'cli'")
        self._fanout = concurrent.futures.ThreadPoolExecutor(
            max_workers=MAX_TARGETS * 4, thread_name_prefix="kiln-target"
        )
        self.on_compile: Callable[[str, str, float], None] | None = None  # (kind, outcome, s)
        # outcome: ok | error | timeout | rejected (compile queue full: no compiler ran)

    @property
    def compiler(self) -> CompilerIdentity:
        return compiler_identity()

    # -- stages ----------------------------------------------------------------------------

    def prepare(
        self, data: bytes, *, format: str | None = None, external_data_dir: str | None = None
    ) -> PreparedGraph:
        try:
            out = self.pool.run(
                "prepare",
                {"data": data, "declared_format": format, "external_data_dir": external_data_dir},
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
        return PreparedGraph(
            mlir=out["mlir"],
            digest=out["digest"],
            input_format=GraphFormat(out["input_format"]),
            input_dialect=InputDialect(out["input_dialect"]),
            functions=tuple(out["functions"]),
            traits=GraphTraits.from_json(out.get("traits")),
        )

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
        """Kiln's linalg rewrites for this graph and target (``kiln.lowering.layout``)."""
        traits = graph.traits.to_json() if graph is not None else None
        cpu, features = cpu_model(spec)
        return preset_rewrites(spec.kind, options.preset, arch=spec.arch, cpu=cpu,
                               features=features, traits=traits)

    def compile_prepared(
        self, graph: PreparedGraph, spec: TargetSpec, options: CompileOptions
    ) -> Artifact:
        flags = self.flags_for(spec, options, graph=graph)
        rewrites = self.rewrites_for(spec, options, graph=graph)
        ident = self.compiler

        def build() -> tuple[bytes, float, list[str]]:
            t0 = time.perf_counter()
            outcome = "error"
            try:
                out = self.pool.run(
                    "compile_module",
                    {
                        "mlir": graph.mlir,
                        "flags": list(flags),
                        "module_attr": spec.module_attr,
                        "engine": self.engine,
                        "timeout": self.compile_timeout,
                        "rewrites": list(rewrites),
                    },
                    timeout=self.compile_timeout + 5,
                    command_hint=_command(flags),
                )
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
            return out["data"], out["seconds"], list(out["warnings"])

        if self.cache is None:
            data, seconds, warnings = build()
            digest = "sha256:" + hashlib.sha256(data).hexdigest()
            key = hashlib.sha256(
                repr((graph.digest, spec.target, flags, rewrites, ident.hash)).encode()
            ).hexdigest()
            return Artifact(
                spec.target, key, digest, len(data), False, seconds, flags, tuple(warnings), data,
                rewrites=rewrites,
            )
        from kiln.cache import Built
        from kiln.cache.key import CompileKey

        ckey = CompileKey(
            graph_digest=graph.digest,
            target=spec.target,
            options=tuple(sorted(options.to_json().items())),
            flags=flags,
            compiler_version=ident.version,
            compiler_hash=ident.hash,
            rewrites=rewrites,
        )

        def built() -> Built:
            data, seconds, warnings = build()
            return Built(data=data, compile_seconds=seconds, warnings=warnings)

        res = self.cache.get_or_build(ckey, built)
        rec = res.record
        return Artifact(
            target=spec.target,
            key=ckey.digest(),
            digest=rec.digest,
            size=rec.size,
            cached=res.cached,
            compile_seconds=rec.compile_seconds,
            flags=tuple(rec.flags),
            warnings=tuple(rec.warnings),
            rewrites=tuple(rec.rewrites),
            provenance=rec.provenance,
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
        graph = self.prepare(data, format=format, external_data_dir=external_data_dir)
        futures = [
            self._fanout.submit(self.compile_prepared, graph, spec, opts) for spec in specs
        ]
        artifacts: list[Artifact] = []
        errors: list[TargetError] = []
        for spec, fut in zip(specs, futures, strict=True):
            try:
                artifacts.append(fut.result())
            except KilnError as exc:
                errors.append(TargetError(spec.target, exc))
        return CompileResult(
            graph_digest=graph.digest,
            input_dialect=graph.input_dialect,
            functions=graph.functions,
            compiler=self.compiler,
            artifacts=artifacts,
            errors=errors,
        )

    def close(self) -> None:
        self._fanout.shutdown(wait=False, cancel_futures=True)
        self.pool.close()

    def __enter__(self) -> Pipeline:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _command(flags: Sequence[str]) -> list[str]:
    from kiln.worker_tasks import cli_command

    return cli_command(list(flags))
