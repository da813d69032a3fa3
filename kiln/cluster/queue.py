"""The shared compile queue: Celery over the Redis the cache already uses.

    API replica (CompileQueue.compile)                 kiln worker (kiln.cluster.worker)
      stash the canonical text  kiln:v1:mlir:<sha>  ─►   fetch it, check its sha256
      SET kiln:v1:queued:<key> NX  (one message per key, cluster-wide)
      send CompileTask to queue kiln.<kind>         ─►   engine: compile_prepared (lease, cache)
      wait: the cache record, or kiln:v1:failed:<key>◄─   record in Redis (blob: Redis/S3/disk),
            woken by PUBLISH kiln:v1:done                  or the error under failed:<key>

Results never go through Celery's result backend (there is none): a compile's outcome is the
action-cache record, which every replica can read, or a short-lived failure record. So a
waiter survives the replica that enqueued (another replica waits on the same key), the worker
(``task_acks_late`` + ``task_reject_on_worker_lost``: the message goes back to the queue and
another worker takes it once the visibility timeout has passed; the new worker finds any lease
of the dead one expired), and a Redis restart (the waiter keeps polling; Redis must persist,
``appendonly yes``, for queued messages to survive it; what was already compiled is in the
stores either way).

Failure semantics of ``compile``: the compile's own error (``compile_failed``,
``compile_timeout``, ...) as the worker filed it; ``overloaded`` when no worker produced a
result within ``wait_timeout`` seconds (no worker for that queue, or a queue far behind).
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from typing import TYPE_CHECKING, Any, cast

import redis

from kiln.errors import CacheUnavailable, KilnError, Overloaded

from .types import CompileTask, error_from_json, mlir_ref, queue_for

if TYPE_CHECKING:
    from celery import Celery

    from kiln.cache import ArtifactCache, CacheResult

__all__ = ["PREFIX", "CompileQueue", "GraphStash", "celery_app", "redis_client"]

log = logging.getLogger("kiln.cluster")

PREFIX = "kiln:v1:"
DONE_CHANNEL = PREFIX + "done"
COMPILES_KEY = PREFIX + "cluster:compiles"  # hash "kind:outcome" -> count (every worker)
WORKERS_KEY = PREFIX + "cluster:worker:"  # + name -> heartbeat JSON, expiring


def redis_client(url: str, *, socket_timeout: float = 5.0, max_connections: int = 64,
                 pool_timeout: float = 10.0) -> redis.Redis:
    """A client on a blocking pool of ``max_connections``: a thread that finds them all busy
    waits up to ``pool_timeout`` s for one (then ``redis.ConnectionError``) instead of opening
    connections without bound."""
    pool = redis.BlockingConnectionPool.from_url(
        url, max_connections=max_connections, timeout=pool_timeout,
        socket_timeout=socket_timeout, socket_connect_timeout=1.0, health_check_interval=0)
    return redis.Redis(connection_pool=pool)


def celery_app(redis_url: str, *, visibility_timeout: float, name: str = "kiln") -> Celery:
    """The Celery app of both sides (the API replica sends, the worker consumes).

    The settings that make a killed worker lose nothing: a message is acknowledged only after
    its task ran (``task_acks_late``), a task whose worker died goes back to the queue
    (``task_reject_on_worker_lost``), a worker holds no more messages than it runs
    (``worker_prefetch_multiplier=1``), and an unacknowledged message is handed out again once
    ``visibility_timeout`` seconds have passed since its delivery — checked every second
    (``unacked_restore_interval=1``, ``unacked_restore_throttle=1``). Set the visibility
    timeout a few times the longest compile: a compile that outlives it is delivered a second
    time, and the second worker then waits on the first one's lease (no second compile).
    """
    from celery import Celery

    app = Celery(name, broker=redis_url, set_as_current=False)
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        task_acks_on_failure_or_timeout=True,
        worker_prefetch_multiplier=1,
        task_ignore_result=True,
        result_backend=None,
        task_serializer="json",
        accept_content=["json"],
        task_default_queue=queue_for("cpu"),
        broker_connection_retry_on_startup=True,
        broker_connection_max_retries=None,
        broker_transport_options={
            "visibility_timeout": float(visibility_timeout),
            "unacked_restore_interval": 1,
            "unacked_restore_throttle": 1,
            "global_keyprefix": PREFIX + "celery:",
            "socket_timeout": 5.0,
            "socket_connect_timeout": 2.0,
        },
        worker_hijack_root_logger=False,
        worker_redirect_stdouts=False,
        worker_send_task_events=False,
        worker_enable_remote_control=False,
        worker_cancel_long_running_tasks_on_connection_loss=False,
        broker_pool_limit=64,
    )
    return app


class GraphStash:
    """Canonical MLIR texts by sha256, in Redis for ``ttl`` seconds (refreshed on every put)."""

    def __init__(self, client: redis.Redis, *, ttl: float) -> None:
        self.client = client
        self.ttl = max(60, int(ttl))

    def put(self, mlir: str) -> str:
        ref = mlir_ref(mlir)
        key = PREFIX + "mlir:" + ref
        try:
            if not self.client.expire(key, self.ttl):
                self.client.set(key, mlir.encode("utf-8"), ex=self.ttl)
        except redis.RedisError as exc:
            raise CacheUnavailable(f"redis: cannot stash the graph: {exc}") from exc
        return ref

    def get(self, ref: str) -> str | None:
        """The text, or None when it has expired (or does not match its name)."""
        raw = self.client.get(PREFIX + "mlir:" + ref)
        if raw is None:
            return None
        text = raw.decode("utf-8") if isinstance(raw, bytes) else str(raw)
        return text if mlir_ref(text) == ref else None


class _Doorbell:
    """One subscriber thread per process on ``kiln:v1:done``: wakes the waiters of a key as soon
    as a worker publishes it. Waiters poll anyway (a lost message or a Redis restart only costs
    up to ``poll_max``)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._mu = threading.Lock()
        self._events: dict[str, list[threading.Event]] = {}
        self._thread: threading.Thread | None = None
        self._stop = False

    def watch(self, key: str) -> threading.Event:
        ev = threading.Event()
        with self._mu:
            self._events.setdefault(key, []).append(ev)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="kiln-doorbell",
                                                 daemon=True)
                self._thread.start()
        return ev

    def unwatch(self, key: str, ev: threading.Event) -> None:
        with self._mu:
            evs = self._events.get(key, [])
            if ev in evs:
                evs.remove(ev)
            if not evs:
                self._events.pop(key, None)

    def _run(self) -> None:
        while not self._stop:
            try:
                client = redis.Redis.from_url(self.url, socket_connect_timeout=1.0,
                                              socket_timeout=None)
                # redis-py's PubSub is partly typed, differently from release to release.
                ps: Any = cast(Any, client).pubsub(ignore_subscribe_messages=True)
                ps.subscribe(DONE_CHANNEL)
                for msg in ps.listen():
                    if self._stop:
                        return
                    data = msg.get("data")
                    key = data.decode() if isinstance(data, bytes) else str(data)
                    with self._mu:
                        evs = list(self._events.get(key, ()))
                    for ev in evs:
                        ev.set()
            except Exception:
                time.sleep(0.5)

    def close(self) -> None:
        self._stop = True


class CompileQueue:
    """The API replica's side: hand one target's compile to the workers and wait for its record.

    ``wait_timeout``: seconds a compile may take from enqueue to result (queue wait included)
    before the caller gets ``overloaded``. ``failure_ttl``: how long workers keep a failure.
    """

    def __init__(
        self,
        redis_url: str,
        *,
        visibility_timeout: float,
        wait_timeout: float = 3600.0,
        stash_ttl: float = 86400.0,
        poll_max: float = 0.5,
    ) -> None:
        self.redis_url = redis_url
        self.client = redis_client(redis_url)
        self.stash = GraphStash(self.client, ttl=stash_ttl)
        self.visibility_timeout = visibility_timeout
        self.wait_timeout = wait_timeout
        self.poll_max = poll_max
        self.app = celery_app(redis_url, visibility_timeout=visibility_timeout)
        self._doorbell = _Doorbell(redis_url)
        self.enqueued = 0  # messages this process sent (tests, bench)

    def stash_graph(self, mlir: str) -> str:
        return self.stash.put(mlir)

    def compile(self, task: CompileTask, *, kind: str, cache: ArtifactCache) -> CacheResult:
        """The verified cache entry for ``task.key`` once a worker has built it (or it was
        there); the worker's error if it failed. Blocks; call from a thread."""
        key = task.key
        ev = self._doorbell.watch(key)
        try:
            deadline = time.monotonic() + self.wait_timeout
            delay = 0.01
            while True:
                hit = cache.lookup(key) if self._recorded(key, cache) else None
                if hit is not None:
                    return hit
                failed = self._failed(key)
                if failed is not None:
                    raise failed
                self._enqueue_once(task, kind)
                if time.monotonic() > deadline:
                    raise Overloaded(
                        f"no compile worker finished {task.target} within {self.wait_timeout:g} s "
                        f"(is a kiln worker consuming queue {queue_for(kind)}?)",
                        retry_after=30, detail={"queue": queue_for(kind), "key": key},
                    )
                ev.wait(delay)
                ev.clear()
                delay = min(delay * 2, self.poll_max)
        finally:
            self._doorbell.unwatch(key, ev)

    def _recorded(self, key: str, cache: ArtifactCache) -> bool:
        """A cheap check before the verified lookup (which counts a miss each time)."""
        try:
            if cache.redis is not None:
                return bool(self.client.exists(f"{cache.redis.prefix}ac:{key}"))
        except redis.RedisError:
            return False
        return True

    def _failed(self, key: str) -> KilnError | None:
        try:
            raw = self.client.get(PREFIX + "failed:" + key)
        except redis.RedisError:
            return None
        if raw is None:
            return None
        try:
            return error_from_json(json.loads(raw))
        except (ValueError, TypeError):
            return KilnError("a compile worker filed an unreadable error")

    def _enqueue_once(self, task: CompileTask, kind: str) -> None:
        """Send the task unless a message for this key is already out (cluster-wide). The marker
        lives a visibility timeout and a bit: past that, a lost message is sent again."""
        marker = PREFIX + "queued:" + task.key
        try:
            ttl = int(self.visibility_timeout * 2) + 30
            if not self.client.set(marker, uuid.uuid4().hex, nx=True, ex=ttl):
                return
        except redis.RedisError:
            return  # Redis is down: try again on the next poll
        try:
            self.app.send_task("kiln.compile", args=[task.to_json()], queue=queue_for(kind),
                               ignore_result=True)
            self.enqueued += 1
        except Exception as exc:
            log.warning("kiln cluster: could not enqueue %s: %s", task.key[:12], exc)
            try:
                self.client.delete(marker)
            except redis.RedisError:
                pass

    def depth(self) -> dict[str, int]:
        """Messages waiting per queue (the status page, KEDA)."""
        out: dict[str, int] = {}
        for kind in ("cpu", "cuda", "rocm", "vulkan", "metal"):
            q = queue_for(kind)
            try:
                out[q] = int(self.client.llen(PREFIX + "celery:" + q))
            except redis.RedisError:
                out[q] = -1
        return out

    def close(self) -> None:
        self._doorbell.close()
        try:
            self.client.close()
        except Exception:
            pass


def file_failure(client: redis.Redis, key: str, err: KilnError, *, ttl: float) -> None:
    """What a worker does when a compile fails: every waiter on ``key`` gets ``err``."""
    client.set(PREFIX + "failed:" + key, json.dumps(err.to_json()), ex=max(5, int(ttl)))
    client.delete(PREFIX + "queued:" + key)
    client.publish(DONE_CHANNEL, key)


def announce_done(client: redis.Redis, key: str) -> None:
    client.delete(PREFIX + "queued:" + key)
    client.publish(DONE_CHANNEL, key)


def worker_heartbeat(client: redis.Redis, name: str, info: dict[str, Any], *, ttl: int) -> None:
    client.set(WORKERS_KEY + name, json.dumps(info), ex=ttl)
