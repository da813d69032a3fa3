"""Compile requests: admission, the identical-request fast path, and the worker pools.

    request ─► parse targets + options (in the event loop: pure, cheap; 400 before any work)
            ─► memo hit? (sha256 of graph bytes + format + targets + options → compile keys)
                 every key still a verified cache hit → answer at once (no worker, no thread)
            ─► join an identical in-flight request, or start one:
                 prepare in a *prepare* worker (import, verify, canonicalize → graph digest)
                 per target, in parallel: cache lookup → hit, or compile in a *compile* worker
                 (the cache's single-flight: one compile per key across threads, processes and
                 replicas sharing Redis)

Failure semantics: ``unsupported_target`` / ``invalid_request`` / ``invalid_graph`` fail the
request (400); a target whose compile fails goes into ``errors`` while the others succeed; if
every target fails the request fails (422, first target's code, every target's error in
``detail.errors``). A full compile queue (or prepare queue) is ``overloaded`` (503 +
``Retry-After``) for the whole request; cache hits never enter a compile queue, so they keep being
served while every compile worker is busy. Compilers run only in worker processes; a crash, an
out-of-memory kill or a timeout is a clean per-target error and the pool replaces the worker.

Preparing, planning, fanning out and collecting are the compile engine's
(``kiln.compiler.pipeline.Pipeline``, shared with embedded use); this module adds what only a
server needs: admission, the identical-request fast path and coalescing, the prepared-bytes
budget, and the HTTP shape of an artifact (its ``url``).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

import anyio.to_thread
from anyio import CapacityLimiter

from kiln.compiler.pipeline import Artifact, CompileResult, Pipeline, TargetError, parse_targets
from kiln.dialects.types import PreparedGraph
from kiln.errors import CacheUnavailable, InsufficientStorage, KilnError, Overloaded
from kiln.targets import TargetSpec, normalize_options
from kiln.targets.options import CompileOptions

from .limits import ByteBudget
from .uploads import ModelUpload

__all__ = ["AllTargetsFailed", "CompileService", "artifact_json", "result_json"]

log = logging.getLogger("kiln.service")
T = TypeVar("T")


class AllTargetsFailed(KilnError):
    """Every target failed: 422 with the first target's code and all errors in ``detail``."""

    http_status = 422

    def __init__(self, errors: list[TargetError], *, graph_digest: str) -> None:
        first = errors[0].error
        if all(isinstance(e.error, InsufficientStorage) for e in errors):
            self.http_status = InsufficientStorage.http_status  # 507: nothing could be kept
        elif all(isinstance(e.error, CacheUnavailable) for e in errors):
            self.http_status = CacheUnavailable.http_status  # 503: a cache tier is down
        super().__init__(
            f"every target failed; {errors[0].target}: {first.message}",
            detail={
                "graph_digest": graph_digest,
                "errors": [e.to_json() for e in errors],
            },
        )
        self.code = first.code
        self.log_fields: dict[str, Any] = {}


@dataclass(frozen=True)
class _Memo:
    """What an all-success answer needs to be rebuilt from the cache alone."""

    head: dict[str, Any]  # graph_digest, input_dialect, functions, compiler[, params]
    keys: tuple[tuple[str, str], ...]  # (normalized target, hex compile key)


def artifact_json(a: Artifact) -> dict[str, Any]:
    """An artifact as the compile answer shows it (docs/api.md): the engine's fields and its URL."""
    return {**a.to_json(), "url": f"/v1/artifacts/{a.hex}"}


def result_json(result: CompileResult) -> dict[str, Any]:
    """The 200 body of ``/v1/compile``; with weights apart, the archive's URL too."""
    body = {**result.to_json(), "artifacts": [artifact_json(a) for a in result.artifacts]}
    if result.params is not None:
        body["params"] = {**result.params.to_json(), "url": f"/v1/params/{result.params.hex}"}
    return body


class CompileService:
    """The server's side of compiling, over the one engine. Thread-safe; one per app."""

    def __init__(
        self,
        *,
        pipeline: Pipeline,
        retry_after: float,
        memo_entries: int = 4096,
        threads: int = 256,
        max_prepared_bytes: int = 1 << 30,
    ) -> None:
        assert pipeline.cache is not None, "the service always has a cache"
        self.cache = pipeline.cache
        self.pipeline = pipeline
        self.retry_after = retry_after
        self.memo_entries = memo_entries
        self._memo: OrderedDict[str, _Memo] = OrderedDict()
        # Canonical texts held while their compiles run: bounded in total.
        self.prepared = ByteBudget(
            max_prepared_bytes, retry_after=retry_after,
            what="prepared graphs held in memory", setting="max_prepared_bytes_in_flight",
        )
        self._inflight: dict[str, asyncio.Future[tuple[dict[str, Any], dict[str, Any]]]] = {}
        self._limiter = CapacityLimiter(threads)
        self._inline_lookups = self.cache.redis is None  # disk reads only: no network in the loop

    # -- public ----------------------------------------------------------------------------

    async def compile(
        self,
        data: bytes,
        *,
        targets: Sequence[str],
        options: Mapping[str, Any] | None,
        format: str | None,
        log_fields: dict[str, Any],
        upload: ModelUpload | None = None,
    ) -> dict[str, Any]:
        """The 200 body of docs/api.md, or a ``KilnError`` (see the module docstring).
        ``upload``: ``data`` came in a tar with side files (its directory must outlive the
        call)."""
        specs = parse_targets(targets)
        opts = normalize_options(options)
        log_fields["targets"] = [s.target for s in specs]
        fp = _fingerprint(data, format, specs, opts, upload=upload)
        memo = self._memo.get(fp)
        if memo is not None:
            if self._inline_lookups:
                body = self._from_memo(fp, memo)
            else:
                body = await self._thread(partial(self._from_memo, fp, memo))
            if body is not None:
                log_fields.update(cache="hit", graph_digest=body["graph_digest"], fast_path=True)
                return body
        fut = self._inflight.get(fp)
        if fut is None:
            fut = asyncio.ensure_future(self._compile(fp, data, format, specs, opts, upload))
            self._inflight[fp] = fut
            fut.add_done_callback(partial(self._done, fp))
        try:
            body, fields = await asyncio.shield(fut)
        except AllTargetsFailed as exc:
            log_fields.update(exc.log_fields)
            raise
        log_fields.update(fields)
        return body

    def close(self) -> None:
        """Cancel queued jobs, give running ones the pools' grace period, stop the workers."""
        self.pipeline.close()

    # -- internals -------------------------------------------------------------------------

    def _done(self, fp: str, fut: asyncio.Future[Any]) -> None:
        self._inflight.pop(fp, None)
        if not fut.cancelled():
            fut.exception()  # retrieved: no "never retrieved" warning when nobody waits

    async def _thread(self, fn: Callable[[], T]) -> T:
        return await anyio.to_thread.run_sync(fn, limiter=self._limiter)

    async def _compile(
        self,
        fp: str,
        data: bytes,
        format: str | None,
        specs: list[TargetSpec],
        opts: CompileOptions,
        upload: ModelUpload | None = None,
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        graph = await self._thread(partial(self.pipeline.prepare, data, format=format,
                                           params=opts.params, **side_files(upload)))
        held = len(graph.mlir)  # a parameter archive waits in a file (PreparedGraph.params)
        self.prepared.take(held)  # Overloaded: too many large graphs waiting at once
        try:
            return await self._compile_prepared(fp, graph, specs, opts)
        finally:
            self.prepared.give(held)

    async def _compile_prepared(
        self, fp: str, graph: PreparedGraph, specs: list[TargetSpec], opts: CompileOptions
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        result = await self._thread(partial(self.pipeline.compile_graph, graph, specs, opts))
        artifacts, errors = result.artifacts, result.errors
        overloaded = [e.error for e in errors if isinstance(e.error, Overloaded)]
        if overloaded:
            raise Overloaded(
                overloaded[0].message,  # the queue, or this client's share of it, is full
                retry_after=self.retry_after,
                detail={"compiled_or_cached": [a.target for a in artifacts]},
            )
        fields = _fields(result)
        if not artifacts:
            err = AllTargetsFailed(errors, graph_digest=graph.digest)
            err.log_fields = fields
            raise err
        body = result_json(result)
        if not errors and self.memo_entries:
            head = {k: body[k] for k in ("graph_digest", "input_dialect", "functions", "compiler",
                                         "params") if k in body}
            self._remember(fp, _Memo(head, tuple((a.target, a.key) for a in artifacts)))
        return body, fields

    def _remember(self, fp: str, memo: _Memo) -> None:
        self._memo[fp] = memo
        self._memo.move_to_end(fp)
        while len(self._memo) > self.memo_entries:
            self._memo.popitem(last=False)

    def _from_memo(self, fp: str, memo: _Memo) -> dict[str, Any] | None:
        """The answer rebuilt from verified cache hits; None (and the memo dropped) if any entry
        has gone (evicted, corrupt, Redis flushed): the caller then takes the full path."""
        params = memo.head.get("params")
        if params is not None and self.cache.blob_path(params["digest"]) is None:
            self._memo.pop(fp, None)  # the archive was evicted: the full path stores it again
            return None
        arts = []
        for target, key in memo.keys:
            hit = self.pipeline.lookup(target, key)
            if hit is None:
                self._memo.pop(fp, None)
                return None
            arts.append(artifact_json(hit))
        if fp in self._memo:
            self._memo.move_to_end(fp)
        return {**memo.head, "artifacts": arts, "errors": []}


def side_files(upload: ModelUpload | None) -> dict[str, Any]:
    """``Pipeline.prepare``'s keywords for an upload's side files (none without one)."""
    if upload is None:
        return {}
    return {"external_data_dir": upload.directory, "side_files": upload.names}


def _fingerprint(
    data: bytes, format: str | None, specs: list[TargetSpec], opts: CompileOptions,
    *, upload: ModelUpload | None = None,
) -> str:
    h = hashlib.sha256(data).hexdigest()
    if upload is not None:  # the same model with other side files is another request
        h = hashlib.sha256(f"{h}:{upload.digest}".encode()).hexdigest()
    meta = json.dumps([format, [s.target for s in specs], opts.to_json()], sort_keys=True)
    return h + ":" + hashlib.sha256(meta.encode()).hexdigest()


def _fields(result: CompileResult) -> dict[str, Any]:
    cached = [a.cached for a in result.artifacts]
    cache = "hit" if cached and all(cached) else "miss" if not any(cached) else "mixed"
    secs = sum(a.compile_seconds for a in result.artifacts if not a.cached)
    out: dict[str, Any] = {"graph_digest": result.graph_digest, "cache": cache}
    if secs:
        out["compile_seconds"] = round(secs, 4)
    if result.errors:
        out["errors"] = {e.target: e.error.code for e in result.errors}
    return out

