"""``Service``: everything one daemon process owns — cache, worker pools, metrics, auth — built
from ``Settings`` and closed once. Built by ``create_app``'s lifespan in the process that serves
(so each HTTP worker process has its own pools, all sharing one cache directory / Redis).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from kiln.cache import ArtifactCache, default_cache_dir, open_cache
from kiln.cache.kinds import PARAMETER_ARCHIVE, is_known
from kiln.cache.tiered import CATCH_UP_INTERVAL
from kiln.compiler.pipeline import Pipeline
from kiln.compiler.workers import WorkerPool, default_pool_size
from kiln.provenance import Authority, split_paths
from kiln.targets import describe_targets
from kiln.targets.options import OPTIONS
from kiln.targets.toolchain import compiler_identity, iree_compile_path

from .artifacts import PARAMS_MEDIA_TYPE, ArtifactServer
from .auth import TokenAuth
from .compiles import CompileService
from .idle_tuning import IdleTuner
from .jobs import Jobs, job_store
from .limits import UploadBudget
from .metrics import Metrics
from .settings import Settings
from .tuning import DiskTuningStore, RedisTuningStore, TuningService, token_submitter

__all__ = ["Service"]


class Service:
    def __init__(self, settings: Settings, *, metrics: Metrics, auth: TokenAuth) -> None:
        s = self.settings = settings
        self.metrics = metrics
        self.auth = auth
        self.cache_dir = s.cache_dir if s.cache_dir is not None else default_cache_dir()
        #: Signs each new record's provenance; authenticates every record read (docs/trust.md).
        self.authority = Authority.from_files(
            s.signing_key_file, split_paths(s.verify_keys_files)
        )
        self.cache: ArtifactCache = open_cache(
            authority=self.authority,
            accept_blob=is_known,
            catch_up_interval=CATCH_UP_INTERVAL,
            cache_dir=self.cache_dir,
            redis_url=s.redis_url,
            s3_url=s.s3_url,
            s3_endpoint_url=s.s3_endpoint_url,
            max_size=s.cache_max_bytes,
            metrics_hook=metrics.on_cache_event,
        )
        total = s.workers or default_pool_size()
        per_process = max(1, total // s.http_workers)
        # Every temporary file of the workers and their compilers lives under the cache dir.
        tmp_root = Path(self.cache_dir) / "tmp"
        prepare_pool = WorkerPool(
            s.prepare_workers, memory_limit=s.worker_memory_bytes,
            max_queue=s.max_prepare_queue, tmp_root=tmp_root,
        )
        self.queue = None
        if s.compile == "remote":  # compiles go to `kiln worker`s (kiln.cluster)
            from kiln.cluster.queue import CompileQueue
            from kiln.cluster.remote import RemotePipeline

            assert s.redis_url is not None
            self.queue = CompileQueue(s.redis_url, visibility_timeout=s.visibility,
                                      wait_timeout=s.queue_wait_timeout, stash_ttl=s.job_ttl)
            compile_pool = prepare_pool
            self.pipeline = RemotePipeline(
                queue=self.queue, cache=self.cache, pool=prepare_pool, prepare_pool=prepare_pool,
                compile_timeout=s.compile_timeout, prepare_timeout=s.prepare_timeout,
                failure_ttl=s.failure_ttl, fanout_threads=256,
            )
        else:
            compile_pool = WorkerPool(
                per_process, memory_limit=s.worker_memory_bytes, max_queue=s.max_queue,
                max_queue_per_client=s.max_queue_per_client, tmp_root=tmp_root,
            )
            self.pipeline = Pipeline(
                cache=self.cache, pool=compile_pool, prepare_pool=prepare_pool,
                compile_timeout=s.compile_timeout, prepare_timeout=s.prepare_timeout,
                failure_ttl=s.failure_ttl, fanout_threads=256,
            )
        self.pipeline.on_compile = metrics.on_compile
        self.pipeline.on_kernel = metrics.on_kernel
        self.pipeline.on_frontend = metrics.on_frontend
        self.compiles = CompileService(
            pipeline=self.pipeline,
            retry_after=s.retry_after,
            memo_entries=s.hit_memo_entries,
            max_prepared_bytes=s.max_prepared_bytes_in_flight,
        )
        self.jobs = Jobs(
            store=job_store(s.redis_url, ttl=s.job_ttl, orphan_after=s.job_orphan_after,
                            max_connections=s.redis_max_connections,
                            pool_timeout=s.redis_pool_timeout),
            compiles=self.compiles, retry_after=s.retry_after,
            max_per_client=s.max_jobs_per_client, orphan_after=s.job_orphan_after,
            **_graph_stash(s, self.queue))
        #: Who may read and cancel every client's jobs (hashed like ``routes._tenant``).
        self.jobs_admins = frozenset(
            token_submitter(t) for t in s.jobs_admin_tokens.split(",") if t.strip())
        self.artifacts = ArtifactServer(
            self.cache, metrics, max_bytes=s.blob_memory_bytes, max_item=s.blob_memory_max_item
        )
        self.params = ArtifactServer(  # parameter archives: GET /v1/params/{hex}
            self.cache, metrics, max_bytes=s.blob_memory_bytes, max_item=s.blob_memory_max_item,
            media_type=PARAMS_MEDIA_TYPE, accept=PARAMETER_ARCHIVE, what="parameter archive",
        )
        # Tuning records: in Redis when configured (cluster-wide), else beside the disk cache.
        self.tuning = TuningService(
            RedisTuningStore(self.cache.redis) if self.cache.redis is not None
            else DiskTuningStore(self.cache_dir),
            self.authority, auth_enabled=auth.enabled, accept_any=s.tuning_accept == "any",
            max_reports=s.tuning_max_reports, quorum=s.tuning_quorum,
            trusted_submitters=frozenset(
                token_submitter(t) for t in s.tuning_trusted_tokens.split(",") if t.strip()),
            hook=metrics.on_tuning,
        )
        #: Tunes recently compiled CPU targets when the server is idle (off by default).
        self.idle_tuning = IdleTuner(s, pipeline=self.pipeline, tuning=self.tuning,
                                     tmp_root=tmp_root, hook=metrics.on_idle_tuning)
        metrics.idle_candidates.set_function(self.idle_tuning.pending)
        self.pipeline.on_result = self._on_result
        metrics.track(
            queue_depth=lambda: compile_pool.queue_depth,
            in_flight=lambda: compile_pool.in_flight,
            prepare_queue_depth=lambda: prepare_pool.queue_depth,
        )
        self.uploads = UploadBudget(s.max_upload_bytes_in_flight, retry_after=s.retry_after)
        self._targets_json: bytes | None = None

    def start(self) -> None:
        """Start the worker processes (they load the compiler on their first job) and the idle
        tuner (when enabled)."""
        self.pipeline.pool.start()
        self.pipeline.prepare_pool.start()
        self.idle_tuning.start()

    def _on_result(self, result: Any, seconds: float) -> None:
        """Each compile answered (requests and jobs alike): the status page, and the idle
        period starts again."""
        self.idle_tuning.touch()
        self.metrics.on_result(result, seconds)

    def close(self) -> None:
        """Cancel queued compiles, give running ones the pool's grace period (then kill them),
        close the cache. Cache writes are atomic, so no partial entry is left behind. A tuning
        in progress is abandoned first."""
        self.idle_tuning.close()
        self.compiles.close()
        self.cache.close()

    def targets_json(self) -> bytes:
        if self._targets_json is None:
            self._targets_json = json.dumps(
                {
                    "compiler": compiler_identity().to_json(),
                    "kinds": [k.to_json() for k in describe_targets()],
                    "options": {k: list(v) for k, v in OPTIONS.items()},
                },
                separators=(",", ":"),
            ).encode()
        return self._targets_json

    def readiness(self) -> dict[str, str]:
        """Each check → "ok" or why not. Blocking (file system, Redis): call from a thread."""
        checks: dict[str, str] = {}
        try:
            path = iree_compile_path()
            checks["compiler"] = (
                "ok" if os.access(path, os.X_OK) and compiler_identity().version != "unknown"
                else f"{path} is not a usable iree-compile"
            )
        except Exception as exc:
            checks["compiler"] = str(exc)
        checks["workers"] = "ok" if not _closed(self.pipeline.pool) else "worker pool closed"
        try:
            fd, tmp = tempfile.mkstemp(dir=self.cache_dir, prefix=".tmp-ready-")
            os.close(fd)
            os.unlink(tmp)
            checks["cache"] = "ok"
        except OSError as exc:
            checks["cache"] = f"cache directory not writable: {exc.strerror or exc}"
        if self.cache.redis is not None:
            with contextlib.suppress(Exception):
                checks["redis"] = "ok" if self.cache.redis.ping() else "unreachable"
            checks.setdefault("redis", "unreachable")
        if self.cache.s3 is not None:  # the blobs' home: a replica without it cannot serve
            checks["s3"] = "ok" if self.cache.s3.ping() else "unreachable"
        return checks


def _graph_stash(s: Settings, queue: Any) -> dict[str, Any]:
    """Where jobs keep their canonical text for other replicas: Redis (the queue's stash in
    cluster mode), nowhere without Redis (jobs are then this process's own)."""
    if not s.redis_url:
        return {}
    if queue is None:
        from kiln.cluster.queue import GraphStash, redis_client

        stash = GraphStash(redis_client(s.redis_url, max_connections=s.redis_max_connections,
                                        pool_timeout=s.redis_pool_timeout), ttl=s.job_ttl)
    else:
        stash = queue.stash
    return {"stash": stash.put, "unstash": stash.get}


def _closed(pool: WorkerPool) -> bool:
    closed: Any = getattr(pool, "_closed", False)
    return bool(closed)
