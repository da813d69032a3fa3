"""``kiln worker``: a compile worker on the shared queue (Celery over Redis).

One worker process runs Celery's consumer with a thread pool of ``concurrency`` threads; each
task runs the engine (``Pipeline.compile_prepared``) whose compiles run in this process's Kiln
worker pool (``concurrency`` child processes: crash isolation, memory cap, timeouts, exactly as
in ``kiln serve``). The cache is the cluster's: the local disk tier in front of Redis (records,
leases) and, when configured, S3 (blobs). A result is filed there and announced on
``kiln:v1:done``; a failure is filed under ``kiln:v1:failed:<key>`` (``kiln.cluster.queue``).
Each compile's JSON log line says what the kernel and front-end caches gave it (``"kernels":
{"hit": 3, "miss": 1}``, ``"frontend": "hit"``); the heartbeat sums them since start.

Failure semantics:

| what happens | the job |
|---|---|
| the compile fails or times out | every waiter gets that error (kept ``failure_ttl`` s) |
| the worker is SIGKILLed mid-compile | its heartbeat (every second) stops; within ``HEARTBEAT_TTL`` + 2 s another worker's reaper puts the messages the dead one had received back on their queue, and a worker takes them; the dead worker's lease runs out after ``lease_seconds``. Without a live worker, the visibility timeout hands them out again |
| Redis restarts | Celery reconnects; a result built meanwhile stays on the local disk and is copied to Redis when it answers (the task is acknowledged only then) |
| this worker's compiler differs from the API replica's | refused, since the key would not describe the executable: the waiters get that error (kept 5 s) |

No compiler outlives its worker: the worker leads its own process group, and a sentinel child
(forked before anything else starts) kills that group as soon as the worker is gone, whatever
killed it — the compile workers and any ``iree-compile`` they started go with it.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

from kiln.compiler.workers import graph_fault
from kiln.errors import CacheUnavailable, CompileError, InsufficientStorage, KilnError

from .queue import (
    COMPILES_KEY,
    PREFIX,
    WORKERS_KEY,
    GraphStash,
    announce_done,
    celery_app,
    file_failure,
    redis_client,
    worker_heartbeat,
)
from .types import CompileTask, graph_from_json, queues_for

__all__ = ["WorkerSettings", "guard_process_group", "run_worker"]

log = logging.getLogger("kiln.worker")

#: Seconds without a heartbeat after which a worker counts as dead (it beats every second).
HEARTBEAT_TTL = 4
_KNOWN = PREFIX + "cluster:workers"  # set of worker names
_RUNNING = PREFIX + "cluster:running:"  # + name -> set of Celery task ids received
_UNACKED = PREFIX + "celery:unacked"  # kombu's hash: delivery tag -> [message, exchange, key]


@dataclass(frozen=True)
class WorkerSettings:
    redis_url: str
    queues: str = "cpu,gpu"
    concurrency: int = 1
    cache_dir: str | None = None
    #: Bound of the local disk tier (LRU-evicted past it); None = unbounded.
    cache_max_bytes: int | None = None
    s3_url: str | None = None
    s3_endpoint_url: str | None = None
    compile_timeout: float = 300.0
    #: Seconds before an unacknowledged message is handed to another worker; None = three
    #: times ``compile_timeout`` plus a minute.
    visibility_timeout: float | None = None
    #: The cache's single-flight lease: a dead worker's lease is gone after this long.
    lease_seconds: float = 10.0
    failure_ttl: float = 600.0
    worker_memory_bytes: int = 8 << 30
    signing_key_file: str | None = None
    verify_keys_files: str = ""
    name: str = field(default_factory=lambda: f"kiln@{socket.gethostname()}.{os.getpid()}")
    log_level: str = "info"

    @property
    def visibility(self) -> float:
        if self.visibility_timeout is not None:
            return self.visibility_timeout
        return 3 * self.compile_timeout + 60


class WorkerRuntime:
    """What one worker process owns: the cache, the engine and its pool, the Redis client."""

    def __init__(self, s: WorkerSettings) -> None:
        from kiln.cache import open_cache
        from kiln.cache.kinds import is_known
        from kiln.cache.tiered import CATCH_UP_INTERVAL
        from kiln.compiler.pipeline import Pipeline
        from kiln.compiler.workers import WorkerPool
        from kiln.provenance import Authority, split_paths

        self.settings = s
        self.client = redis_client(s.redis_url)
        self.stash = GraphStash(self.client, ttl=86400)
        authority = Authority.from_files(s.signing_key_file, split_paths(s.verify_keys_files))
        self.cache = open_cache(
            cache_dir=s.cache_dir, max_size=s.cache_max_bytes, redis_url=s.redis_url,
            s3_url=s.s3_url,
            s3_endpoint_url=s.s3_endpoint_url, authority=authority, accept_blob=is_known,
            catch_up_interval=CATCH_UP_INTERVAL,
            lease_seconds=s.lease_seconds, lease_poll_max=0.25,
        )
        from kiln.cache import default_cache_dir

        tmp_root = Path(s.cache_dir or default_cache_dir()) / "tmp"
        pool = WorkerPool(s.concurrency, memory_limit=s.worker_memory_bytes,
                          max_queue=max(1024, s.concurrency), tmp_root=tmp_root)
        self.pipeline = Pipeline(cache=self.cache, pool=pool, compile_timeout=s.compile_timeout,
                                 failure_ttl=0)
        self.pipeline.on_compile = self._on_compile
        self.pipeline.on_kernel = self._on_kernel
        self.pipeline.on_frontend = self._on_frontend
        self.compiles = 0
        #: Since start: kernel-cache results (hit | miss | fallback) and front-end cache results
        #: (hit | miss), in the heartbeat; each compile's own are in its log line.
        self.kernels: dict[str, int] = {}
        self.frontends: dict[str, int] = {}
        self._counts_lock = threading.Lock()
        self._mine = threading.local()  # this thread's compile: its kernel and front-end results
        self._stop = threading.Event()

    # -- the task ----------------------------------------------------------------------------

    def run(self, payload: dict[str, Any]) -> None:
        """One ``CompileTask``: compile (or find) it, file the outcome, announce it."""
        task = CompileTask.from_json(payload)
        t0 = time.perf_counter()
        try:
            self._compile(task)
        except KilnError as exc:
            failure = exc
        else:
            log.info(json.dumps({"event": "task", "key": task.key, "target": task.target,
                                 "outcome": "ok", "seconds": round(time.perf_counter() - t0, 3)}))
            self._retry_redis(lambda: announce_done(self.client, task.key))
            return
        # Deterministic failures are kept like the API's failure memory; a cache that is down
        # or full, or a refusal of this worker's, only briefly (the next message retries).
        transient = isinstance(failure, (CacheUnavailable, InsufficientStorage)) or (
            not isinstance(failure, CompileError) and failure.code == "internal") or (
            isinstance(failure, CompileError) and not graph_fault(failure))
        ttl = 5 if transient else self.settings.failure_ttl
        log.info(json.dumps({"event": "task", "key": task.key, "target": task.target,
                             "outcome": failure.code,
                             "seconds": round(time.perf_counter() - t0, 3)}))
        self._retry_redis(lambda: file_failure(self.client, task.key, failure, ttl=ttl))

    def _compile(self, task: CompileTask) -> None:
        from kiln.targets import normalize_options, parse_target

        mlir = self._retry_redis(lambda: self.stash.get(task.mlir))
        if mlir is None:
            raise KilnError("the graph's canonical text is no longer stashed in Redis "
                            "(expired, or Redis lost it); submit the compile again")
        graph = graph_from_json(task.graph, mlir)
        spec = parse_target(task.target)
        opts = normalize_options(task.options)
        key = self.pipeline.key_for(graph, spec, opts).digest()
        if key != task.key:
            raise KilnError(
                f"this worker's compile key {key[:12]} differs from the API replica's "
                f"{task.key[:12]}: another compiler or Kiln version; run workers and API "
                "replicas from the same build",
                detail={"worker_key": key, "key": task.key},
            )
        self.pipeline.compile_prepared(graph, spec, opts)
        self._until_shared(key)

    def _until_shared(self, key: str) -> None:
        """Return once the record is in Redis, where every replica finds it. A result built
        while Redis was down is on the local disk only; the cache's catch-up timer copies it up
        when Redis answers again."""
        assert self.cache.redis is not None
        rkey = f"{self.cache.redis.prefix}ac:{key}"
        deadline = time.monotonic() + self.settings.visibility
        while True:
            try:
                if self.client.exists(rkey):
                    return
            except redis.RedisError:
                pass
            if time.monotonic() > deadline:
                raise CacheUnavailable("the compiled executable could not be shared: Redis "
                                       "stayed unreachable")
            time.sleep(0.5)

    def _retry_redis(self, fn: Any) -> Any:
        """``fn()``, retried while Redis is unreachable (bounded by the visibility timeout:
        past it the message is someone else's anyway)."""
        deadline = time.monotonic() + self.settings.visibility
        while True:
            try:
                return fn()
            except redis.RedisError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    def _pending(self) -> tuple[dict[str, int], dict[str, int]]:
        """This thread's (kernel, front-end) results since its last compile ended."""
        if not hasattr(self._mine, "kernels"):
            self._mine.kernels, self._mine.frontends = {}, {}
        return self._mine.kernels, self._mine.frontends

    def _on_kernel(self, kind: str, result: str) -> None:
        """``Pipeline.on_kernel``: called in the thread running the compile."""
        mine = self._pending()[0]
        mine[result] = mine.get(result, 0) + 1
        with self._counts_lock:
            self.kernels[result] = self.kernels.get(result, 0) + 1

    def _on_frontend(self, result: str) -> None:
        """``Pipeline.on_frontend``: called in the thread running the compile."""
        mine = self._pending()[1]
        mine[result] = mine.get(result, 0) + 1
        with self._counts_lock:
            self.frontends[result] = self.frontends.get(result, 0) + 1

    def _on_compile(self, kind: str, outcome: str, seconds: float) -> None:
        kernels, frontends = self._pending()
        self._mine.kernels, self._mine.frontends = {}, {}
        if outcome == "rejected":
            return
        self.compiles += 1
        line: dict[str, Any] = {"event": "compile", "kind": kind, "outcome": outcome,
                                "seconds": round(seconds, 3), "worker": self.settings.name}
        if kernels:
            line["kernels"] = kernels  # e.g. {"hit": 3, "miss": 1}
        if frontends:
            line["frontend"] = next(iter(frontends)) if len(frontends) == 1 else frontends
        log.info(json.dumps(line))
        try:
            self.client.hincrby(COMPILES_KEY, f"{kind}:{outcome}", 1)
        except redis.RedisError:
            pass

    # -- life --------------------------------------------------------------------------------

    def received(self, task_id: str) -> None:
        """A message of ours: noted so that a reaper can requeue it if this worker dies."""
        self._retry_redis(lambda: self.client.sadd(_RUNNING + self.settings.name, task_id))

    def finished(self, task_id: str) -> None:
        try:
            self.client.srem(_RUNNING + self.settings.name, task_id)
        except redis.RedisError:
            pass  # a stale entry: requeued only if this worker dies, and then a cache hit

    def heartbeat(self, queues: list[str], app: Any) -> None:
        """Every second: ``kiln:v1:cluster:worker:<name>`` (expires after ``HEARTBEAT_TTL``),
        then reap: requeue what dead workers had received."""
        s = self.settings
        started = time.time()
        alive_since = [0.0]

        def beat() -> None:
            while not self._stop.wait(1.0):
                if self._beat(s, queues, started):
                    alive_since[0] = alive_since[0] or time.monotonic()
                else:
                    alive_since[0] = 0.0
                # Judge others only after beating steadily ourselves (after a Redis outage
                # every heartbeat may have lapsed at once).
                if alive_since[0] and time.monotonic() - alive_since[0] > 2 * HEARTBEAT_TTL:
                    try:
                        self.reap(app)
                    except Exception as exc:  # retried in a second
                        log.warning(json.dumps({"event": "reap_failed", "error": str(exc)}))

        self._beat(s, queues, started)
        threading.Thread(target=beat, name="kiln-heartbeat", daemon=True).start()

    def _beat(self, s: WorkerSettings, queues: list[str], started: float) -> bool:
        with self._counts_lock:
            kernels, frontends = dict(self.kernels), dict(self.frontends)
        try:
            worker_heartbeat(self.client, s.name, {
                "name": s.name, "pid": os.getpid(), "host": socket.gethostname(),
                "queues": queues, "concurrency": s.concurrency, "started": started,
                "compiles": self.compiles, "busy": self.pipeline.pool.in_flight,
                "kernels": kernels, "frontend": frontends,
            }, ttl=HEARTBEAT_TTL)
            self.client.sadd(_KNOWN, s.name)
            return True
        except redis.RedisError:
            return False

    def reap(self, app: Any) -> int:
        """Put the messages that dead workers had received back at the head of their queues
        (kombu's own restore: the message leaves the unacknowledged set and is pushed back in
        one transaction, so two reapers never both requeue it). Returns how many."""
        restored = 0
        for raw_name in self.client.smembers(_KNOWN):
            name = raw_name.decode() if isinstance(raw_name, bytes) else str(raw_name)
            if name == self.settings.name or self.client.exists(WORKERS_KEY + name):
                continue
            ids = {i.decode() if isinstance(i, bytes) else str(i)
                   for i in self.client.smembers(_RUNNING + name)}
            if ids:
                tags = [tag for tag, raw in self.client.hscan_iter(_UNACKED)
                        if _task_id(raw) in ids]
                if tags:
                    with app.connection_for_write() as conn:
                        qos = conn.default_channel.qos
                        for tag in tags:
                            # Pushed on the end the consumers pop from (publishing pushes on
                            # the other): the next message any worker takes.
                            qos.restore_by_tag(tag.decode() if isinstance(tag, bytes) else tag)
                    restored += len(tags)
                    log.info(json.dumps({"event": "requeued", "dead_worker": name,
                                         "messages": len(tags)}))
            self.client.delete(_RUNNING + name)
            self.client.srem(_KNOWN, name)
        return restored

    def close(self) -> None:
        self._stop.set()
        self.pipeline.close()
        self.cache.close()


def _task_id(raw: bytes | str) -> str | None:
    try:
        message = json.loads(raw)[0]
        return str(message["headers"]["id"])
    except (ValueError, KeyError, IndexError, TypeError):
        return None


def guard_process_group() -> None:
    """Make this process lead its own process group and fork a sentinel that SIGKILLs the group
    once this process is gone (a pipe's EOF tells it, whatever the cause of death). Call before
    any thread or child is started."""
    if os.getpgrp() != os.getpid():
        os.setpgid(0, 0)
    pgid = os.getpgrp()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the sentinel
        try:
            os.close(w)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            while True:
                try:
                    if not os.read(r, 1):
                        break
                except InterruptedError:
                    continue
        finally:
            os.killpg(pgid, signal.SIGKILL)
            os._exit(0)
    os.close(r)
    _SENTINEL.append(w)  # held open (close-on-exec: compile workers do not inherit it)


_SENTINEL: list[int] = []


def run_worker(s: WorkerSettings) -> int:
    """Consume ``s.queues`` until SIGTERM/SIGINT (Celery's warm shutdown: running tasks finish).
    Blocks; returns the exit status."""
    queues = queues_for(s.queues)
    guard_process_group()
    logging.basicConfig(level=s.log_level.upper(), format="%(message)s", stream=sys.stderr)
    runtime = WorkerRuntime(s)
    app = celery_app(s.redis_url, visibility_timeout=s.visibility)

    @app.task(  # type: ignore[untyped-decorator]
        name="kiln.compile", bind=True, acks_late=True, reject_on_worker_lost=True,
        ignore_result=True)
    def compile_task(self: Any, payload: dict[str, Any]) -> None:
        try:
            runtime.run(payload)
        finally:
            runtime.finished(self.request.id)

    from celery.signals import task_received

    def on_received(sender: Any = None, request: Any = None, **_kw: Any) -> None:
        if request is not None:
            runtime.received(request.id)

    task_received.connect(on_received, weak=False)
    runtime.pipeline.pool.start()
    runtime.heartbeat(queues, app)
    log.info(json.dumps({"event": "worker_ready", "name": s.name, "queues": queues,
                         "concurrency": s.concurrency, "pid": os.getpid(),
                         "visibility_timeout": s.visibility}))
    try:
        app.worker_main([
            "worker", "--pool=threads", f"--concurrency={s.concurrency}",
            f"--queues={','.join(queues)}", f"--hostname={s.name}",
            f"--loglevel={s.log_level.upper()}", "--without-gossip", "--without-mingle",
            "--without-heartbeat",
        ])
    except SystemExit as exc:
        return int(exc.code or 0)
    finally:
        runtime.close()
    return 0
