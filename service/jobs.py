"""Asynchronous compiles: ``POST /v1/jobs``, ``GET /v1/jobs/{id}[?wait=SECONDS]`` and
``DELETE /v1/jobs/{id}``.

    POST ─► parse targets + options (400 before any work) ─► identical job in flight? its id
         ─► prepare the graph (400 invalid_graph here, as for /v1/compile) ─► record the job
            (state queued, its plan: the prepared graph, targets, options) ─► 202
    driver (an asyncio task of the replica that holds the job's driver lease):
         running ─► per target, in parallel: the engine's compile_graph (cache hit, local
         compile, or in cluster mode a message to the workers), progress after each one
         ─► done (the /v1/compile 200 body) | failed (the error envelope /v1/compile would send)

Where jobs live: in Redis when the service has one (``kiln:v1:job:<id>``, the plan under
``kiln:v1:jobplan:<id>``, the canonical text stashed by sha256; all expiring after
``job_ttl`` s), so every replica answers for every job; else in this process's memory.

A job outlives the replica that accepted it: the driver holds a lease
(``kiln:v1:jobdriver:<id>``, renewed every few seconds); when the replica dies the lease runs
out, and the next replica asked about the job takes the lease and drives it from its plan. The
compiles themselves are not repeated: finished ones are cache hits, and in cluster mode the
ones still running on workers are waited on, not re-sent. Identical jobs in flight (same graph
bytes, format, targets and options) are one job: the second POST gets the first one's id.

A job is not started twice in one replica, and a compile queue that is full delays a job's
target (retried every ``retry_after`` s) instead of failing it: that is what jobs are for.

Jobs belong to their client (``owner``: the bearer token's hash, else the address). A viewer
other than the owner (and not an admin token) gets 404 for another's job, exactly as for an
unknown id, so ids cannot be probed. Identical jobs are shared per owner only; their compiles
are still shared by everyone (the cache's single flight, the cluster queue). One owner keeps at
most ``max_per_client`` jobs queued or running: past it, 429 ``overloaded`` with
``Retry-After`` (the count is read, then the job created: concurrent replicas may overshoot by
a few). ``DELETE`` by the owner removes the job at once (204): its driver is cancelled (on
another replica, at its next lease renewal, when it finds the job gone), its targets still
waiting for a queue slot are not compiled, and a compile already running in a worker finishes
into the cache for whoever else needs it. A job whose driver is gone and that has not changed
for ``orphan_after`` s (a replica stopped long ago) expires when it is next asked about (404)
instead of compiling for a client that is most likely gone too.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, Protocol

import anyio.to_thread

from kiln.compiler.pipeline import CompileResult, parse_targets
from kiln.dialects.types import PreparedGraph
from kiln.errors import CacheUnavailable, KilnError, NotFound, Overloaded
from kiln.targets import TargetSpec, normalize_options
from kiln.targets.options import CompileOptions

from .compiles import AllTargetsFailed, CompileService, _fingerprint, result_json, side_files
from .uploads import ModelUpload

__all__ = ["FINAL", "Jobs", "MemoryJobStore", "RedisJobStore", "job_store"]

log = logging.getLogger("kiln.service")

FINAL = ("done", "failed")
_PREFIX = "kiln:v1:"
#: Longest ``?wait=`` a GET may ask for, seconds.
MAX_WAIT = 60.0


class JobStore(Protocol):
    """Where job documents and plans live. Every method may raise ``CacheUnavailable``."""

    shared: bool  # other replicas see these jobs

    async def by_fingerprint(self, fp: str) -> dict[str, Any] | None: ...
    async def reserve(self, owner: str, job_id: str, cap: int) -> bool:
        """Count ``job_id`` among ``owner``'s jobs in flight, in one step with the check that
        fewer than ``cap`` are (orphans older than the store's ``orphan_after`` not counted).
        False: the cap is reached, nothing reserved."""
        ...
    async def unreserve(self, owner: str, job_id: str) -> None: ...
    async def delete(self, doc: dict[str, Any], fp: str) -> None:
        """Forget the job: its document, plan and name; further ``put`` do not bring it back."""
        ...
    async def create(self, doc: dict[str, Any], plan: dict[str, Any]) -> dict[str, Any]:
        """Store a new job, unless an identical one (same ``plan["fingerprint"]``) is in
        flight: then that one's document."""
        ...
    async def get(self, job_id: str) -> dict[str, Any] | None: ...
    async def plan(self, job_id: str) -> dict[str, Any] | None: ...
    async def put(self, doc: dict[str, Any]) -> None:
        """Update a job that exists (a deleted one stays deleted)."""
        ...
    async def finish(self, doc: dict[str, Any], fp: str) -> None: ...
    async def claim(self, job_id: str, owner: str, ttl: float) -> bool: ...
    async def release(self, job_id: str, owner: str) -> None: ...
    async def close(self) -> None: ...


class MemoryJobStore:
    """Jobs of this process only (no Redis configured); expired lazily."""

    shared = False

    def __init__(self, *, ttl: float, orphan_after: float = 900.0) -> None:
        self.ttl = ttl
        self.orphan_after = orphan_after
        self._docs: dict[str, tuple[float, dict[str, Any], dict[str, Any]]] = {}
        self._fps: dict[str, str] = {}
        self._pending: dict[str, set[str]] = {}  # owner -> job ids reserved, not yet created

    def _expire(self) -> None:
        now = time.monotonic()
        for jid in [j for j, (exp, _d, _p) in self._docs.items() if exp < now]:
            _exp, _doc, plan = self._docs.pop(jid)
            if self._fps.get(plan.get("fingerprint", "")) == jid:
                del self._fps[plan["fingerprint"]]

    async def by_fingerprint(self, fp: str) -> dict[str, Any] | None:
        self._expire()
        jid = self._fps.get(fp)
        return None if jid is None else await self.get(jid)

    async def reserve(self, owner: str, job_id: str, cap: int) -> bool:
        self._expire()
        pending = self._pending.setdefault(owner, set())
        active = sum(1 for _e, d, _p in self._docs.values()
                     if d.get("owner") == owner and d["state"] not in FINAL)
        if active + len(pending) >= cap:
            return False
        pending.add(job_id)
        return True

    async def unreserve(self, owner: str, job_id: str) -> None:
        self._pending.get(owner, set()).discard(job_id)

    async def delete(self, doc: dict[str, Any], fp: str) -> None:
        self._docs.pop(doc["id"], None)
        if self._fps.get(fp) == doc["id"]:
            del self._fps[fp]

    async def create(self, doc: dict[str, Any], plan: dict[str, Any]) -> dict[str, Any]:
        self._expire()
        fp = plan["fingerprint"]
        other = self._fps.get(fp)
        if other is not None and other in self._docs and \
                self._docs[other][1]["state"] not in FINAL:
            return dict(self._docs[other][1])
        self._docs[doc["id"]] = (time.monotonic() + self.ttl, dict(doc), plan)
        self._fps[fp] = doc["id"]
        await self.unreserve(doc.get("owner", ""), doc["id"])  # counted as a job from now on
        return doc

    async def get(self, job_id: str) -> dict[str, Any] | None:
        entry = self._docs.get(job_id)
        if entry is None or entry[0] < time.monotonic():
            return None
        return dict(entry[1])

    async def plan(self, job_id: str) -> dict[str, Any] | None:
        entry = self._docs.get(job_id)
        return None if entry is None else entry[2]

    async def put(self, doc: dict[str, Any]) -> None:
        entry = self._docs.get(doc["id"])
        if entry is not None:
            self._docs[doc["id"]] = (time.monotonic() + self.ttl, dict(doc), entry[2])

    async def finish(self, doc: dict[str, Any], fp: str) -> None:
        await self.put(doc)
        if self._fps.get(fp) == doc["id"]:
            del self._fps[fp]

    async def claim(self, job_id: str, owner: str, ttl: float) -> bool:
        return True

    async def release(self, job_id: str, owner: str) -> None:
        return None

    async def close(self) -> None:
        return None


_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0
"""
# KEYS[1]: the owner's jobs in flight; ARGV: job id, cap, orphan cutoff, now, ttl.
_RESERVE = """
redis.call('zremrangebyscore', KEYS[1], '-inf', ARGV[3])
if redis.call('zcard', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('zadd', KEYS[1], ARGV[4], ARGV[1])
redis.call('expire', KEYS[1], ARGV[5])
return 1
"""
_RENEW = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end
return 0
"""


class RedisJobStore:
    """Jobs in Redis, visible to every replica; each key expires after ``ttl`` seconds. Each
    owner's jobs in flight are a sorted set (``kiln:v1:jobsof:<owner>``, id → last sign of
    life), pruned past ``orphan_after`` s.

    Connections: a blocking pool of ``max_connections``; a request that finds them all busy
    waits up to ``pool_timeout`` s for one (then ``CacheUnavailable``, 503), rather than
    opening one connection per concurrent request until Redis or the process runs out."""

    shared = True

    def __init__(self, url: str, *, ttl: float, orphan_after: float = 900.0,
                 max_connections: int = 64, pool_timeout: float = 10.0) -> None:
        import redis.asyncio as aioredis

        self.url = url
        self.ttl = int(ttl)
        self.orphan_after = orphan_after
        pool = aioredis.BlockingConnectionPool.from_url(
            url, max_connections=max_connections, timeout=pool_timeout, socket_timeout=5.0,
            socket_connect_timeout=1.0)
        self.client = aioredis.Redis(connection_pool=pool)

    async def _call(self, fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
        import redis

        try:
            return await fn(*args, **kw)
        except redis.RedisError as exc:
            raise CacheUnavailable(f"the job store (redis) is unavailable: {exc}") from exc

    async def by_fingerprint(self, fp: str) -> dict[str, Any] | None:
        jid = await self._call(self.client.get, _PREFIX + "jobfp:" + fp)
        return None if jid is None else await self.get(jid.decode())

    def _owned(self, owner: str) -> str:
        return _PREFIX + "jobsof:" + owner

    async def reserve(self, owner: str, job_id: str, cap: int) -> bool:
        now = time.time()
        return bool(await self._call(self.client.eval, _RESERVE, 1, self._owned(owner), job_id,
                                     cap, now - self.orphan_after, now, self.ttl))

    async def unreserve(self, owner: str, job_id: str) -> None:
        with contextlib.suppress(CacheUnavailable):
            await self._call(self.client.zrem, self._owned(owner), job_id)

    async def touch(self, doc: dict[str, Any]) -> None:
        """A sign of life of a job in flight (its driver renews it)."""
        if doc.get("owner"):
            await self._call(self.client.zadd, self._owned(doc["owner"]),
                             {doc["id"]: time.time()}, xx=True)

    async def delete(self, doc: dict[str, Any], fp: str) -> None:
        jid = doc["id"]
        await self._call(self.client.delete, _PREFIX + "job:" + jid, _PREFIX + "jobplan:" + jid)
        await self._call(self.client.eval, _RELEASE, 1, _PREFIX + "jobfp:" + fp, jid)
        if doc.get("owner"):
            await self._call(self.client.zrem, self._owned(doc["owner"]), jid)

    async def create(self, doc: dict[str, Any], plan: dict[str, Any]) -> dict[str, Any]:
        # The job is written before it is named under its fingerprint, so a replica that finds
        # the name always finds the job.
        jid = doc["id"]
        await self._call(self.client.set, _PREFIX + "jobplan:" + jid,
                         json.dumps(plan, separators=(",", ":")), ex=self.ttl)
        await self._call(self.client.set, _PREFIX + "job:" + jid,
                         json.dumps(doc, separators=(",", ":")), ex=self.ttl)
        fkey = _PREFIX + "jobfp:" + plan["fingerprint"]
        if await self._call(self.client.set, fkey, jid, nx=True, ex=self.ttl):
            return doc
        other = await self.by_fingerprint(plan["fingerprint"])
        if other is not None and other["state"] not in FINAL:
            await self._call(self.client.delete, _PREFIX + "job:" + jid, _PREFIX + "jobplan:" + jid)
            return other
        await self._call(self.client.set, fkey, jid, ex=self.ttl)  # a finished job's name
        return doc

    async def get(self, job_id: str) -> dict[str, Any] | None:
        raw = await self._call(self.client.get, _PREFIX + "job:" + job_id)
        return None if raw is None else dict(json.loads(raw))

    async def plan(self, job_id: str) -> dict[str, Any] | None:
        raw = await self._call(self.client.get, _PREFIX + "jobplan:" + job_id)
        return None if raw is None else dict(json.loads(raw))

    async def put(self, doc: dict[str, Any]) -> None:
        await self._call(self.client.set, _PREFIX + "job:" + doc["id"],
                         json.dumps(doc, separators=(",", ":")), ex=self.ttl, xx=True)

    async def finish(self, doc: dict[str, Any], fp: str) -> None:
        await self.put(doc)
        await self._call(self.client.eval, _RELEASE, 1, _PREFIX + "jobfp:" + fp, doc["id"])
        if doc.get("owner"):
            await self._call(self.client.zrem, self._owned(doc["owner"]), doc["id"])

    async def claim(self, job_id: str, owner: str, ttl: float) -> bool:
        key = _PREFIX + "jobdriver:" + job_id
        if await self._call(self.client.set, key, owner, nx=True, px=int(ttl * 1000)):
            return True
        return bool(await self._call(self.client.eval, _RENEW, 1, key, owner, int(ttl * 1000)))

    async def release(self, job_id: str, owner: str) -> None:
        with contextlib.suppress(CacheUnavailable):
            await self._call(self.client.eval, _RELEASE, 1, _PREFIX + "jobdriver:" + job_id,
                             owner)

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.client.aclose()


def job_store(redis_url: str | None, *, ttl: float, orphan_after: float = 900.0,
              max_connections: int = 64,
              pool_timeout: float = 10.0) -> MemoryJobStore | RedisJobStore:
    if redis_url:
        return RedisJobStore(redis_url, ttl=ttl, orphan_after=orphan_after,
                             max_connections=max_connections, pool_timeout=pool_timeout)
    return MemoryJobStore(ttl=ttl, orphan_after=orphan_after)


def _progress(doc: Mapping[str, Any]) -> tuple[str, int]:
    return str(doc["state"]), int(doc["progress"]["targets_done"])


class Jobs:
    """The jobs of one app: submit, look up (long-poll), drive. One per process."""

    LEASE = 10.0  # seconds a driver's lease lasts without renewal
    UNAVAILABLE_GRACE = 300.0  # seconds a job waits for a shared cache that is down

    def __init__(
        self,
        *,
        store: MemoryJobStore | RedisJobStore,
        compiles: CompileService,
        stash: Callable[[str], str] | None = None,
        unstash: Callable[[str], str | None] | None = None,
        retry_after: float = 2.0,
        max_per_client: int = 32,
        orphan_after: float = 900.0,
    ) -> None:
        """``stash(mlir) -> ref`` / ``unstash(ref) -> mlir | None`` keep the canonical text
        where other replicas find it (needed with a shared store)."""
        self.store = store
        self.compiles = compiles
        self.stash = stash
        self.unstash = unstash
        self.retry_after = retry_after
        self.max_per_client = max_per_client
        self.orphan_after = orphan_after
        self.owner = uuid.uuid4().hex
        self._drivers: dict[str, asyncio.Task[None]] = {}
        self._changed: dict[str, asyncio.Event] = {}

    # -- the routes' calls -------------------------------------------------------------------

    async def submit(
        self, data: bytes, *, targets: Sequence[str], options: Mapping[str, Any] | None,
        format: str | None, log_fields: dict[str, Any], owner: str = "",
        upload: ModelUpload | None = None,
    ) -> dict[str, Any]:
        """The new (or the owner's identical in-flight) job's document; errors as
        /v1/compile's 4xx, and 429 ``overloaded`` past ``max_per_client`` jobs in flight."""
        specs = parse_targets(targets)
        opts = normalize_options(options)
        log_fields["targets"] = [s.target for s in specs]
        fp = hashlib.sha256(
            f"{owner}\0{_fingerprint(data, format, specs, opts, upload=upload)}".encode()
        ).hexdigest()
        same = await self.store.by_fingerprint(fp)
        if same is not None and same["state"] not in FINAL and await self._ensure_driven(same):
            log_fields["job"] = same["id"]
            return same
        jid = uuid.uuid4().hex
        if not await self.store.reserve(owner, jid, self.max_per_client):
            err = Overloaded(
                f"this client has {self.max_per_client} jobs queued or running, the most it "
                "may; wait for one to finish, or cancel one (DELETE /v1/jobs/{id})",
                retry_after=self.retry_after,
                detail={"max_jobs_per_client": self.max_per_client})
            err.http_status = 429
            raise err
        try:
            stored = await self._create(jid, data, format, specs, opts, fp, owner, log_fields,
                                        upload)
        except BaseException:
            await self.store.unreserve(owner, jid)
            raise
        if stored["id"] != jid:  # an identical job of this owner won the race
            await self.store.unreserve(owner, jid)
        return stored

    async def _create(self, jid: str, data: bytes, format: str | None,
                      specs: list[TargetSpec], opts: CompileOptions, fp: str, owner: str,
                      log_fields: dict[str, Any],
                      upload: ModelUpload | None = None) -> dict[str, Any]:
        pipeline = self.compiles.pipeline
        # the upload's directory is needed only here: the job's plan holds the prepared graph
        graph: PreparedGraph = await anyio.to_thread.run_sync(
            partial(pipeline.prepare, data, format=format, params=opts.params,
                    **side_files(upload)))
        ref = await anyio.to_thread.run_sync(partial(self.stash, graph.mlir)) \
            if self.stash is not None else None
        from kiln.cluster.types import graph_to_json

        plan = {"fingerprint": fp, "graph": graph_to_json(graph), "mlir": ref,
                "targets": [s.target for s in specs], "options": opts.to_json()}
        now = time.time()
        doc: dict[str, Any] = {
            "id": jid, "state": "queued",
            "progress": {"targets_done": 0, "targets_total": len(specs)},
            "result": None, "error": None, "graph_digest": graph.digest,
            "created": now, "updated": now, "owner": owner,
        }
        stored = await self.store.create(doc, plan)
        log_fields.update(job=stored["id"], graph_digest=graph.digest)
        if stored["id"] == doc["id"]:
            await self._start(doc, plan, graph, specs, opts)
        else:
            await self._ensure_driven(stored)
        return stored

    async def get(self, job_id: str, *, wait: float = 0.0,
                  viewer: str | None = None) -> dict[str, Any]:
        """The job's document; with ``wait`` > 0, once it changes (state or progress) or after
        ``wait`` seconds, whichever is first. ``not_found`` for an unknown or expired id, or a
        job that is not ``viewer``'s (None: anyone's)."""
        doc = await self._doc(job_id, viewer)
        if doc["state"] in FINAL:
            return doc
        if not await self._ensure_driven(doc):
            raise _not_found(job_id)
        if wait <= 0:
            return doc
        mark = _progress(doc)
        deadline = time.monotonic() + min(wait, MAX_WAIT)
        poll = 0.1 if self.store.shared else None
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return doc
            ev = self._changed.setdefault(job_id, asyncio.Event())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(ev.wait(), timeout=left if poll is None else
                                       min(poll, left))
            doc = await self._doc(job_id, viewer)
            if _progress(doc) != mark or doc["state"] in FINAL:
                return doc
            if poll is not None:
                poll = min(poll * 1.5, 0.5)

    async def cancel(self, job_id: str, *, viewer: str | None = None) -> None:
        """Remove ``viewer``'s job (None: anyone's): a queued or running one is cancelled first
        (module docstring), a finished one is forgotten. ``not_found`` as for ``get``."""
        doc = await self._doc(job_id, viewer)
        plan = await self.store.plan(job_id)
        await self.store.delete(doc, plan["fingerprint"] if plan else "")
        task = self._drivers.get(job_id)
        if task is not None:
            task.cancel()
        log.info("job cancelled", extra={"job": job_id})
        ev = self._changed.pop(job_id, None)
        if ev is not None:
            ev.set()

    async def close(self) -> None:
        """Stop driving (another replica takes the jobs over when asked about them)."""
        for jid, task in list(self._drivers.items()):
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
            await self.store.release(jid, self.owner)
        await self.store.close()

    # -- driving -----------------------------------------------------------------------------

    async def _doc(self, job_id: str, viewer: str | None = None) -> dict[str, Any]:
        doc = await self.store.get(job_id) if _is_id(job_id) else None
        if doc is None or (viewer is not None and doc.get("owner", "") != viewer):
            raise _not_found(job_id)
        return doc

    async def _ensure_driven(self, doc: dict[str, Any]) -> bool:
        """Take over a job whose driver is gone (its lease ran out). Cheap when it is alive.
        False when the job was an orphan and expired instead (module docstring)."""
        jid = doc["id"]
        if jid in self._drivers or doc["state"] in FINAL or not self.store.shared:
            return True
        placeholder = asyncio.get_running_loop().create_future()  # no second claim meanwhile
        self._drivers[jid] = placeholder  # type: ignore[assignment]
        try:
            return await self._take_over(doc)
        finally:
            if self._drivers.get(jid) is placeholder:
                del self._drivers[jid]

    async def _take_over(self, doc: dict[str, Any]) -> bool:
        jid = doc["id"]
        if not await self.store.claim(jid, self.owner, self.LEASE):
            return True
        plan = await self.store.plan(jid)
        if time.time() - float(doc.get("updated", 0)) > self.orphan_after:
            log.info("orphaned job expired", extra={"job": jid})
            await self.store.delete(doc, plan["fingerprint"] if plan else "")
            await self.store.release(jid, self.owner)
            return False
        mlir = None
        if plan is not None and plan.get("mlir") and self.unstash is not None:
            mlir = await anyio.to_thread.run_sync(partial(self.unstash, plan["mlir"]))
        if plan is None or mlir is None:
            doc.update(state="failed", updated=time.time(), error=KilnError(
                "the replica that ran this job stopped, and the job's graph is no longer "
                "stored; submit it again").to_json())
            await self.store.finish(doc, plan["fingerprint"] if plan else "")
            await self.store.release(jid, self.owner)
            return True
        from kiln.cluster.types import graph_from_json

        log.info("job taken over from a stopped replica", extra={"job": jid})
        graph = graph_from_json(plan["graph"], mlir)
        specs = parse_targets(plan["targets"])
        await self._start(doc, plan, graph, specs, normalize_options(plan["options"]),
                          claimed=True)
        return True

    async def _start(self, doc: dict[str, Any], plan: dict[str, Any], graph: PreparedGraph,
                     specs: list[TargetSpec], opts: CompileOptions, *,
                     claimed: bool = False) -> None:
        if not claimed and not await self.store.claim(doc["id"], self.owner, self.LEASE):
            return  # pragma: no cover - a fresh id is nobody else's
        jid: str = doc["id"]
        task = asyncio.ensure_future(self._drive(doc, plan, graph, specs, opts))
        self._drivers[jid] = task
        task.add_done_callback(lambda _t: self._drivers.pop(jid, None))

    async def _drive(self, doc: dict[str, Any], plan: dict[str, Any], graph: PreparedGraph,
                     specs: list[TargetSpec], opts: CompileOptions) -> None:
        jid = doc["id"]
        renew = asyncio.ensure_future(self._renew(doc))
        pending: dict[asyncio.Future[CompileResult], TargetSpec] = {}
        try:
            await self._update(doc, state="running")
            results: dict[str, CompileResult] = {}
            pending = {asyncio.ensure_future(self._one(graph, spec, opts)): spec
                       for spec in specs}
            while pending:
                finished, _ = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for fut in finished:
                    spec = pending.pop(fut)
                    results[spec.target] = fut.result()
                if pending:  # the last one is written together with the outcome
                    await self._update(doc, progress={"targets_done": len(results),
                                                      "targets_total": len(specs)})
            merged = CompileResult(
                graph_digest=graph.digest, input_dialect=graph.input_dialect,
                functions=graph.functions, signatures=graph.signatures,
                compiler=self.compiles.pipeline.compiler,
                artifacts=[a for s in specs for a in results[s.target].artifacts],
                errors=[e for s in specs for e in results[s.target].errors],
                params=next((r.params for r in results.values() if r.params), None),
            )
            doc["progress"] = {"targets_done": len(specs), "targets_total": len(specs)}
            if merged.artifacts:
                await self._update(doc, state="done", result=result_json(merged), final=plan)
            else:
                err = AllTargetsFailed(merged.errors, graph_digest=graph.digest)
                await self._update(doc, state="failed", error=err.to_json(), final=plan)
        except asyncio.CancelledError:
            raise
        except KilnError as exc:
            await self._fail(doc, plan, exc)
        except Exception as exc:
            log.exception("job failed", extra={"job": jid})
            await self._fail(doc, plan, KilnError(f"the job failed: {type(exc).__name__}"))
        finally:
            renew.cancel()
            for fut in pending:  # cancelled: targets still waiting for a queue slot stop here
                fut.cancel()
        await self.store.release(jid, self.owner)

    async def _fail(self, doc: dict[str, Any], plan: dict[str, Any], exc: KilnError) -> None:
        with contextlib.suppress(CacheUnavailable):
            await self._update(doc, state="failed", error=exc.to_json(), final=plan)

    async def _one(self, graph: PreparedGraph, spec: TargetSpec,
                   opts: CompileOptions) -> CompileResult:
        """One target through the engine. A full compile queue is waited out, not failed; so is
        a shared cache (Redis, the object store) that is down, for ``UNAVAILABLE_GRACE`` s."""
        pipeline = self.compiles.pipeline
        down_since: float | None = None
        while True:
            res: CompileResult = await self.compiles._thread(
                partial(pipeline.compile_graph, graph, [spec], opts))
            err = res.errors[0].error if res.errors else None
            if isinstance(err, Overloaded):
                await asyncio.sleep(self.retry_after)
                continue
            if isinstance(err, CacheUnavailable):
                down_since = down_since or time.monotonic()
                if time.monotonic() - down_since < self.UNAVAILABLE_GRACE:
                    await asyncio.sleep(1.0)
                    continue
            return res

    async def _update(self, doc: dict[str, Any], *, final: dict[str, Any] | None = None,
                      **fields: Any) -> None:
        doc.update(fields, updated=time.time())
        for _ in range(120):  # Redis restarting: keep the outcome, write it once it answers
            try:
                if final is not None:
                    await self.store.finish(doc, final["fingerprint"])
                else:
                    await self.store.put(doc)
                break
            except CacheUnavailable:
                if final is None:
                    break  # progress only: the next update carries it
                await asyncio.sleep(0.5)
        ev = self._changed.pop(doc["id"], None)
        if ev is not None:
            ev.set()

    async def _renew(self, doc: dict[str, Any]) -> None:
        """Renew the driver's lease; a job that is gone from the store (cancelled through
        another replica) cancels its driver."""
        jid = doc["id"]
        while True:
            await asyncio.sleep(self.LEASE / 3)
            with contextlib.suppress(CacheUnavailable):
                await self.store.claim(jid, self.owner, self.LEASE)
                if isinstance(self.store, RedisJobStore):
                    await self.store.touch(doc)
                if await self.store.get(jid) is None:
                    task = self._drivers.get(jid)
                    if task is not None:
                        task.cancel()
                    return


def _not_found(job_id: str) -> NotFound:
    return NotFound(f"no job {job_id[:64]!r} (unknown, expired, or another client's)",
                    detail={"id": job_id[:64]})


def _is_id(job_id: str) -> bool:
    return len(job_id) == 32 and all(c in "0123456789abcdef" for c in job_id)
