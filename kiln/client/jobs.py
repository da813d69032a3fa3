"""Asynchronous compiles from the SDK: ``POST /v1/jobs``, ``GET /v1/jobs/{id}?wait=``.

    job = client.submit("resnet.onnx", targets=["cpu", "cuda:sm_90"])   # 202: a Job, at once
    job = client.job(job.id, wait=30)                                   # long-poll for a change
    result = client.wait(job, on_progress=lambda j: print(j.targets_done, "/", j.targets_total))
    result = client.compile_job("resnet.onnx", targets=[...])           # submit + wait

``wait`` returns what ``compile`` returns (``RemoteCompileResult``) and raises what it raises: a
job whose every target failed raises that error (its class from the code). Nothing holds an
HTTP request open while the compile runs, so a long compile survives proxies' idle timeouts,
and a job outlives the replica that accepted it (any replica answers for it).

The methods are written once as plans (``kiln.client.sdk``'s request core) and attached to
``Client`` and ``AsyncClient`` by :func:`attach`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kiln.errors import KilnError

if TYPE_CHECKING:
    from kiln.client.sdk import RemoteCompileResult

__all__ = ["FINAL", "Job", "attach"]

FINAL = ("done", "failed")
#: Seconds one GET may long-poll (the server caps it at 60).
POLL = 30.0


@dataclass(frozen=True)
class Job:
    """One job as the server last described it."""

    id: str
    state: str  # queued | running | done | failed
    targets_done: int
    targets_total: int
    result: RemoteCompileResult | None = None
    error: KilnError | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def finished(self) -> bool:
        return self.state in FINAL

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Job:
        from kiln.client.sdk import RemoteCompileResult

        prog = data.get("progress") or {}
        res = data.get("result")
        err = data.get("error")
        return cls(
            id=str(data["id"]), state=str(data["state"]),
            targets_done=int(prog.get("targets_done", 0)),
            targets_total=int(prog.get("targets_total", 0)),
            result=RemoteCompileResult.from_json(res) if res else None,
            error=KilnError.from_json(err) if err else None,
            raw=data,
        )


Plan = Generator[Any, Any, Any]


def _submit(c: Any, graph: Any, targets: Any, options: dict[str, Any] | None,
            format: str | None) -> Plan:
    from kiln.client.sdk import graph_request

    req = graph_request(graph, format, targets, options, c.raw_threshold)
    resp = yield from c._request("POST", "/v1/jobs", **req)
    return Job.from_json(resp.json())


def _get(c: Any, job_id: str, wait: float) -> Plan:
    params = {"wait": f"{max(0.0, min(wait, 60.0)):g}"} if wait > 0 else None
    resp = yield from c._request("GET", f"/v1/jobs/{job_id}", params=params)
    return Job.from_json(resp.json())


def _wait(c: Any, job: Job | str, timeout: float | None,
          on_progress: Callable[[Job], None] | None) -> Plan:
    current = job if isinstance(job, Job) else (yield from _get(c, job, 0))
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        if on_progress is not None:
            on_progress(current)
        if current.state == "done" and current.result is not None:
            return current.result
        if current.state == "failed":
            raise current.error or KilnError(f"job {current.id} failed")
        left = POLL if deadline is None else deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"job {current.id} is still {current.state} "
                               f"({current.targets_done}/{current.targets_total} targets)")
        current = yield from _get(c, current.id, min(POLL, left))


def _compile_job(c: Any, graph: Any, targets: Any, options: dict[str, Any] | None,
                 format: str | None, timeout: float | None,
                 on_progress: Callable[[Job], None] | None) -> Plan:
    job = yield from _submit(c, graph, targets, options, format)
    return (yield from _wait(c, job, timeout, on_progress))


class _SyncJobs:
    def submit(self: Any, graph: Any, *, targets: Any, options: dict[str, Any] | None = None,
               format: str | None = None) -> Job:
        """Start compiling on the server; the job, at once (identical in-flight jobs share one)."""
        plan = _submit(self, graph, targets, options, format)
        return self._run(plan)  # type: ignore[no-any-return]

    def job(self: Any, job_id: str, *, wait: float = 0.0) -> Job:
        """The job now, or (``wait`` > 0, at most 60 s) as soon as its state or progress changes."""
        return self._run(_get(self, job_id, wait))  # type: ignore[no-any-return]

    def wait(self: Any, job: Job | str, *, timeout: float | None = None,
             on_progress: Callable[[Job], None] | None = None) -> RemoteCompileResult:
        """The job's compile answer once done (``on_progress(job)`` at each change); its error if
        it failed; ``TimeoutError`` after ``timeout`` seconds (the job keeps running)."""
        return self._run(_wait(self, job, timeout, on_progress))  # type: ignore[no-any-return]

    def compile_job(self: Any, graph: Any, *, targets: Any, options: dict[str, Any] | None = None,
                    format: str | None = None, timeout: float | None = None,
                    on_progress: Callable[[Job], None] | None = None) -> RemoteCompileResult:
        """``compile`` through a job: submit, then wait (for long compiles)."""
        return self._run(  # type: ignore[no-any-return]
            _compile_job(self, graph, targets, options, format, timeout, on_progress))


class _AsyncJobs:
    async def submit(self: Any, graph: Any, *, targets: Any,
                     options: dict[str, Any] | None = None, format: str | None = None) -> Job:
        plan = _submit(self, graph, targets, options, format)
        return await self._run(plan)  # type: ignore[no-any-return]

    async def job(self: Any, job_id: str, *, wait: float = 0.0) -> Job:
        return await self._run(_get(self, job_id, wait))  # type: ignore[no-any-return]

    async def wait(self: Any, job: Job | str, *, timeout: float | None = None,
                   on_progress: Callable[[Job], None] | None = None) -> RemoteCompileResult:
        plan = _wait(self, job, timeout, on_progress)
        return await self._run(plan)  # type: ignore[no-any-return]

    async def compile_job(self: Any, graph: Any, *, targets: Any,
                          options: dict[str, Any] | None = None, format: str | None = None,
                          timeout: float | None = None,
                          on_progress: Callable[[Job], None] | None = None) -> RemoteCompileResult:
        return await self._run(  # type: ignore[no-any-return]
            _compile_job(self, graph, targets, options, format, timeout, on_progress))


def attach(client_cls: type, async_client_cls: type) -> None:
    """Give ``Client`` and ``AsyncClient`` the job methods (kiln.client.sdk calls this)."""
    for name in ("submit", "job", "wait", "compile_job"):
        setattr(client_cls, name, getattr(_SyncJobs, name))
        setattr(async_client_cls, name, getattr(_AsyncJobs, name))
