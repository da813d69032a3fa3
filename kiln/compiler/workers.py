"""The compile worker pool: every compiler and importer run happens in a child process.

IREE's compiler crashes its process on some inputs (an unregistered op, an unknown GPU name, LLVM
``exit`` on a bad CPU, deep recursion in AMDGPU passes), and its in-process global state is not
thread-safe. So neither the daemon nor ``kiln compile`` ever runs it in their own process: they hand a
job to a ``WorkerPool``, whose workers are long-lived child processes (warm: the compiler library is
loaded once per worker, not once per job).

Failure semantics, per job:
- the task raises a ``KilnError`` in the worker → the same error is raised to the caller;
- the worker dies (segfault, abort, LLVM ``exit``, the kernel's OOM killer, ``RLIMIT_AS``) →
  ``CompileError`` naming the signal or exit code; the pool starts a fresh worker;
- the job runs past its timeout → the worker is killed, ``CompileTimeout``; a fresh worker replaces it;
- the file system is full (ENOSPC, EDQUOT: the job's temporary files, the compiler's output, a
  "No space left on device" in its diagnostics) → ``InsufficientStorage`` (507), whichever way
  it surfaced.

Whose fault: ``graph_fault(exc)`` says whether a failure is the graph's, so that callers may
remember it (kiln/compiler/pipeline.py): a timeout, and a compiler that refused the graph or
crashed on its own (a diagnostic, an abort, a segfault, the worker's own memory cap). Not the
graph's: a worker killed from outside (SIGKILL without a timeout, so the kernel's OOM killer
for another process's sake or an operator; SIGTERM, SIGINT, SIGHUP) and a full disk.

Each worker runs under ``RLIMIT_AS = memory_limit`` (address space, bytes) and no core dumps.

Temporary files: each worker process (and the compilers it starts) gets a ``TMPDIR`` of its own,
``<tmp_root>/kiln-workers-<pid>-*/w<slot>``, emptied whenever its worker is killed or replaced (a
timed-out compile's ``input.mlir`` no longer stays behind for ever, issue 21) and removed with the
pool. The daemon puts ``tmp_root`` under the cache directory; ``sweep_stale_temps`` (run when a
pool starts, and by ``kiln cache gc``) removes the directories of pools whose process is gone.

Lock order: ``WorkerPool._lock`` is only held to start/stop slots; a slot's process is owned by the
one slot thread that runs it, so there is no lock around a running job.
"""

from __future__ import annotations

import concurrent.futures
import errno
import multiprocessing
import multiprocessing.connection
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Any

from kiln.compiler.fair_queue import LAST, TENANT, FairQueue
from kiln.errors import (
    CompileError,
    CompileFailure,
    CompileTimeout,
    InsufficientStorage,
    KilnError,
    Overloaded,
)

__all__ = ["WorkerPool", "default_pool_size", "graph_fault", "storage_error",
           "sweep_stale_temps"]

_STOP = object()


_TMP_PREFIX = "kiln-workers-"

#: What a full file system looks like in a compiler's or a runtime's message.
_NO_SPACE = ("No space left on device", "Disk quota exceeded", "ENOSPC", "EDQUOT")
#: Signals that come from outside a compile: the graph did not cause them.
_OUTSIDE = ("SIGKILL", "SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT")


def storage_error(exc: BaseException) -> InsufficientStorage | None:
    """``InsufficientStorage`` when ``exc`` is, or reports, a full file system, else None."""
    if isinstance(exc, InsufficientStorage):
        return exc
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return InsufficientStorage(
            f"the server's disk is full: {exc.strerror or exc} ({exc.filename or 'a file'})",
            detail={"errno": errno.errorcode.get(exc.errno or 0, "")})
    if isinstance(exc, KilnError):
        text = exc.message
        if isinstance(exc, CompileError):
            text += "\n" + exc.failure.stderr
        if any(m in text for m in _NO_SPACE):
            return InsufficientStorage(
                "the server's disk filled up while compiling (the compiler's temporary files "
                "or output): this is not the graph's fault; retry once there is space",
                detail={"message": exc.message[:2000]})
    return None


def graph_fault(exc: CompileError) -> bool:
    """Whether ``exc`` is the graph's doing and would happen again (module docstring)."""
    if isinstance(exc, CompileTimeout):
        return True
    if exc.failure.signal in _OUTSIDE:
        return False
    return storage_error(exc) is None


def sweep_stale_temps(tmp_root: str | os.PathLike[str]) -> int:
    """Remove the pool directories under ``tmp_root`` whose owning process is gone (a daemon
    killed with SIGKILL leaves its own). Returns how many were removed."""
    removed = 0
    try:
        entries = list(os.scandir(tmp_root))
    except FileNotFoundError:
        return 0
    for e in entries:
        if not e.name.startswith(_TMP_PREFIX) or not e.is_dir(follow_symlinks=False):
            continue
        pid_text = e.name[len(_TMP_PREFIX):].split("-", 1)[0]
        if not pid_text.isdigit() or _alive(int(pid_text)):
            continue
        shutil.rmtree(e.path, ignore_errors=True)
        removed += 1
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def default_pool_size() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


@dataclass
class _Job:
    job: Any  # one of kiln.compiler.tasks.JOBS
    timeout: float
    future: concurrent.futures.Future[Any]
    command_hint: list[str]


def _worker_main(
    conn: multiprocessing.connection.Connection, memory_limit: int | None, stderr_path: str
) -> None:
    """Entry point of a worker process: receive a job (``tasks.JOBS``), answer ("ok"|"err", value)."""
    import resource

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if memory_limit:
        resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
    from kiln.compiler import tasks as worker_tasks

    worker_tasks.STDERR_PATH = stderr_path
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        job = msg
        task = getattr(type(job), "name", type(job).__name__)
        try:
            if type(job) not in worker_tasks.JOBS:
                raise KilnError(f"not a worker job: {type(job).__name__}")
            result = job.run()
            conn.send(("ok", result))
        except KilnError as exc:
            conn.send(("err", storage_error(exc) or exc))
        except OSError as exc:
            full = storage_error(exc)
            conn.send(("err", full or KilnError(
                f"worker task {task} failed: {type(exc).__name__}: {exc}")))
        except MemoryError:
            conn.send(("err", CompileError("the compiler ran out of memory (worker memory cap)")))
        except BaseException as exc:  # noqa: BLE001 - report anything, keep the worker alive
            conn.send(("err", KilnError(f"worker task {task} failed: {type(exc).__name__}: {exc}")))


class _Slot:
    """One worker process and the thread that feeds it jobs."""

    def __init__(self, pool: WorkerPool, index: int) -> None:
        self.pool = pool
        self.index = index
        self.proc: subprocess.Popen[bytes] | None = None
        self.conn: multiprocessing.connection.Connection | None = None
        self.thread = threading.Thread(target=self._loop, name=f"kiln-worker-{index}", daemon=True)
        self.busy = False
        self.stderr_path = os.path.join(pool._tmpdir.name, f"worker-{index}.stderr")
        self.tmp = os.path.join(pool._tmpdir.name, f"w{index}")

    def start(self) -> None:
        self._spawn()
        self.thread.start()

    def _spawn(self) -> None:
        # A fresh interpreter (``python -m kiln.compiler.workers FD ...``) rather than multiprocessing's
        # spawn: it never re-imports the caller's __main__, and it starts no resource tracker.
        parent, child = multiprocessing.Pipe(duplex=True)
        cmd = [
            sys.executable,
            "-m",
            "kiln.compiler.workers",
            str(child.fileno()),
            str(self.pool.memory_limit or 0),
            self.stderr_path,
        ]
        os.makedirs(self.tmp, exist_ok=True)
        env = {**os.environ, "TMPDIR": self.tmp}
        proc = subprocess.Popen(
            cmd, pass_fds=[child.fileno()], stdin=subprocess.DEVNULL, env=env
        )
        child.close()
        self.proc, self.conn = proc, parent
        self.pool.workers_started += 1

    def _kill(self) -> None:
        proc, conn = self.proc, self.conn
        self.proc = self.conn = None
        if conn is not None:
            conn.close()
        if proc is not None:
            if proc.poll() is None:
                proc.kill()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:  # pragma: no cover - unkillable process
                pass
        # What the dead worker (or its compiler) left in its temporary directory.
        shutil.rmtree(self.tmp, ignore_errors=True)

    def _loop(self) -> None:
        while True:
            job = self.pool._queue.get()
            if job is _STOP:
                self._kill()
                return
            assert isinstance(job, _Job)
            if not job.future.set_running_or_notify_cancel():
                continue
            self.busy = True
            try:
                job.future.set_result(self._run(job))
            except BaseException as exc:  # noqa: BLE001 - every outcome goes to the caller
                job.future.set_exception(exc)
            finally:
                self.busy = False
            # the result is the caller's: it must not live on here until the next job
            del job

    def _run(self, job: _Job) -> Any:
        if self.proc is None or self.proc.poll() is not None:
            self._kill()
            self._spawn()
        assert self.conn is not None and self.proc is not None
        try:
            self.conn.send(job.job)
        except (BrokenPipeError, OSError):
            self._kill()
            self._spawn()
            self.conn.send(job.job)
        deadline = time.monotonic() + job.timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self._kill()
                self._spawn()
                raise CompileTimeout(
                    f"{job.job.name} ran past its {job.timeout:g} s timeout and was killed",
                    failure=CompileFailure(command=job.command_hint, signal="SIGKILL"),
                )
            try:
                ready = self.conn.poll(min(left, 0.5))
            except (EOFError, OSError):
                ready = True
            if ready:
                try:
                    status, value = self.conn.recv()
                except (EOFError, OSError):
                    died = self._died(job)
                    raise (storage_error(died) or died) from None
                if status == "ok":
                    return value
                raise storage_error(value) or value
            if self.proc.poll() is not None and not self.conn.poll(0):
                died = self._died(job)
                raise storage_error(died) or died

    def _died(self, job: _Job) -> CompileError:
        proc = self.proc
        assert proc is not None
        try:
            code: int | None = proc.wait(5)
        except subprocess.TimeoutExpired:
            code = None
        try:
            with open(self.stderr_path, "rb") as f:
                stderr = f.read()[-65536:].decode("utf-8", "replace")
        except OSError:
            stderr = ""
        self._kill()
        self._spawn()
        sig = None
        if code is not None and code < 0:
            try:
                sig = signal.Signals(-code).name
            except ValueError:
                sig = f"signal {-code}"
        what = f"killed by {sig}" if sig else f"exited with status {code}"
        from kiln.compiler.tasks import parse_diagnostics

        diags = parse_diagnostics(stderr)
        if any(m in stderr for m in ("out of memory", "bad_alloc", "pthread_create failed")):
            hint = f" (out of memory: the worker cap is {self.pool.memory_limit} bytes)"
        elif sig in _OUTSIDE:
            hint = (" (from outside the compile: possibly the out-of-memory killer; not "
                    "remembered as this graph's failure)")
        else:
            hint = " (a compiler crash: this input or target hits a compiler bug)"
        first = next((str(d) for d in diags if d.severity == "error"), None)
        return CompileError(
            f"the compiler process {what}{hint} while running {job.job.name}"
            + (f": {first}" if first else ""),
            failure=CompileFailure(
                command=job.command_hint, exit_code=code, signal=sig, stderr=stderr,
                diagnostics=diags,
            ),
        )


class WorkerPool:
    """A fixed pool of warm worker processes with a bounded queue.

    ``submit`` returns a ``concurrent.futures.Future``; ``run`` waits for it. ``max_queue`` bounds the
    jobs waiting for a worker (not counting running ones): past it, ``Overloaded`` is raised at once.
    Waiting jobs are served round-robin between clients (``kiln.compiler.fair_queue``: the ``TENANT``
    context variable names the client), and ``max_queue_per_client`` bounds one named client's
    waiting jobs (past it: ``Overloaded`` for that client only).
    """

    def __init__(
        self,
        size: int | None = None,
        *,
        memory_limit: int | None = 8 << 30,
        max_queue: int = 1024,
        max_queue_per_client: int | None = None,
        tmp_root: str | os.PathLike[str] | None = None,
    ) -> None:
        self.size = size or default_pool_size()
        self.memory_limit = memory_limit
        self.max_queue = max_queue
        self.max_queue_per_client = max_queue_per_client
        self.workers_started = 0
        self._queue: FairQueue[Any] = FairQueue()
        self._lock = threading.Lock()
        self._slots: list[_Slot] = []
        self._closed = False
        if tmp_root is not None:
            os.makedirs(tmp_root, exist_ok=True)
            sweep_stale_temps(tmp_root)
        self._tmpdir = tempfile.TemporaryDirectory(
            prefix=f"{_TMP_PREFIX}{os.getpid()}-", dir=tmp_root
        )

    def _ensure_started(self) -> None:
        with self._lock:
            if self._closed:
                raise KilnError("the worker pool is closed")
            if not self._slots:
                for i in range(self.size):
                    slot = _Slot(self, i)
                    slot.start()
                    self._slots.append(slot)

    def start(self) -> WorkerPool:
        self._ensure_started()
        return self

    @property
    def queue_depth(self) -> int:
        return self._queue.qsize()

    @property
    def in_flight(self) -> int:
        return sum(1 for s in self._slots if s.busy)

    def submit(
        self,
        job: Any,
        *,
        timeout: float,
        command_hint: list[str] | None = None,
    ) -> concurrent.futures.Future[Any]:
        from kiln.compiler.tasks import JOBS

        if type(job) not in JOBS:
            raise TypeError(f"not a worker job: {job!r}")
        self._ensure_started()
        # Jobs waiting beyond the idle workers count against max_queue (0: no waiting at all).
        if self._queue.qsize() + self.in_flight >= self.size + self.max_queue:
            raise Overloaded(
                f"the compile queue is full ({self.max_queue} jobs waiting)", retry_after=2.0
            )
        tenant = TENANT.get()
        cap = self.max_queue_per_client
        if tenant and cap is not None and self._queue.waiting(tenant) >= cap:
            raise Overloaded(
                f"this client already has {cap} compiles waiting; retry when they are done",
                retry_after=2.0,
            )
        fut: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._queue.put(_Job(job, timeout, fut, list(command_hint or [])), tenant=tenant)
        return fut

    def run(
        self,
        job: Any,
        *,
        timeout: float,
        command_hint: list[str] | None = None,
    ) -> Any:
        """Run ``job`` (a ``kiln.compiler.tasks`` job) in a worker; its result, or its error."""
        return self.submit(job, timeout=timeout, command_hint=command_hint).result()

    def close(self, *, cancel_pending: bool = True, wait: float = 10.0) -> None:
        """Stop the workers. Pending jobs are cancelled; running jobs get ``wait`` seconds."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            slots = list(self._slots)
        if cancel_pending:
            while True:
                try:
                    job = self._queue.get_nowait()
                except IndexError:
                    break
                if isinstance(job, _Job):
                    job.future.cancel()
        for _ in slots:
            self._queue.put(_STOP, tenant=LAST)  # after every job still queued
        deadline = time.monotonic() + wait
        for s in slots:
            s.thread.join(max(0.0, deadline - time.monotonic()))
            if s.thread.is_alive():
                s._kill()
        self._tmpdir.cleanup()

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


if __name__ == "__main__":
    _worker_main(
        multiprocessing.connection.Connection(int(sys.argv[1])),
        int(sys.argv[2]) or None,
        sys.argv[3],
    )
