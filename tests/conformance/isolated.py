"""Work the conformance runner must not do in its own process: run executables, raw IREE imports.

A node test can crash iree.runtime (a bad executable, a driver fault) or the ONNX importer (native
code). Each ``IsolatedChild`` is one long-lived child interpreter (``python -m
tests.conformance.isolated FD``) fed one task at a time over a pipe, like ``kiln.compiler.workers``:

- the task raises → ``TaskFailed`` with the exception's words; the child lives on;
- the child dies (signal, abort) → ``TaskCrashed`` naming the signal; a fresh child is started;
- the task runs past ``timeout`` seconds → the child is killed, ``TaskTimeout``; a fresh one starts.

Tasks return plain, picklable values (numpy arrays, str).
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import signal
import subprocess
import sys
import time
from typing import Any

import numpy as np

__all__ = ["IsolatedChild", "TaskFailed", "TaskCrashed", "TaskTimeout"]

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class TaskFailed(Exception):
    """The task raised in the child; the message is its ``Type: words``."""


class TaskCrashed(Exception):
    """The child process died while running the task."""


class TaskTimeout(Exception):
    """The task ran past its timeout; the child was killed."""


# -- tasks (run in the child) ------------------------------------------------------------------

_modules: dict[tuple[str, str], Any] = {}


def _module(vmfb: bytes, driver: str) -> Any:
    from kiln.client.runtime import LoadedModule

    return LoadedModule(vmfb, driver=driver)


def execute(
    *, vmfb: bytes, driver: str, function: str, data_sets: list[list[np.ndarray]]
) -> list[list[np.ndarray]]:
    """Load ``vmfb`` on ``driver`` and call ``function`` once per input list; outputs as lists."""
    mod = _module(vmfb, driver)
    fn = mod[function]
    results = []
    for inputs in data_sets:
        out = fn(*inputs)
        if out is None:
            outs = []
        elif isinstance(out, (tuple, list)):
            outs = [np.asarray(o) for o in out]
        else:
            outs = [np.asarray(out)]
        results.append(outs)
    del fn, mod
    return results


def raw_import(*, model_path: str) -> str:
    """IREE's own ``iree-import-onnx MODEL`` (its ``main``, default flags); the MLIR text."""
    import tempfile

    from iree.compiler.tools.import_onnx import __main__ as cli

    with tempfile.TemporaryDirectory(prefix="kiln-raw-import-") as tmp:
        out = os.path.join(tmp, "model.mlir")
        cli.main(cli.parse_arguments([model_path, "-o", out]))
        with open(out, encoding="utf-8") as f:
            return f.read()


_TASKS = {"execute": execute, "raw_import": raw_import}


def _child_main(fd: int) -> None:
    import resource

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    conn = multiprocessing.connection.Connection(fd)
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        task, kwargs = msg
        try:
            conn.send(("ok", _TASKS[task](**kwargs)))
        except BaseException as exc:  # noqa: BLE001 - every failure goes back as words
            conn.send(("err", f"{type(exc).__name__}: {str(exc)[:2000]}"))


# -- the parent side ---------------------------------------------------------------------------


class IsolatedChild:
    """One child process; not thread-safe (one task at a time). Use as a context manager."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.conn: multiprocessing.connection.Connection | None = None
        self.restarts = 0

    def _spawn(self) -> None:
        parent, child = multiprocessing.Pipe(duplex=True)
        env = dict(os.environ)
        env["PYTHONPATH"] = _ROOT + os.pathsep + env.get("PYTHONPATH", "")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.conformance.isolated", str(child.fileno())],
            pass_fds=[child.fileno()],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=_ROOT,
            env=env,
        )
        child.close()
        self.conn = parent

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
            except subprocess.TimeoutExpired:  # pragma: no cover - unkillable
                pass

    def call(self, task: str, *, timeout: float, **kwargs: Any) -> Any:
        if self.proc is None or self.proc.poll() is not None:
            self._kill()
            self._spawn()
        assert self.conn is not None and self.proc is not None
        try:
            self.conn.send((task, kwargs))
        except (BrokenPipeError, OSError):
            self._kill()
            self._spawn()
            assert self.conn is not None
            self.conn.send((task, kwargs))
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self._kill()
                self.restarts += 1
                raise TaskTimeout(f"{task} ran past {timeout:g} s and was killed")
            try:
                ready = self.conn.poll(min(left, 0.5))
            except (EOFError, OSError):
                ready = True
            if ready:
                try:
                    status, value = self.conn.recv()
                except (EOFError, OSError):
                    raise self._crashed(task) from None
                if status == "ok":
                    return value
                raise TaskFailed(value)
            if self.proc.poll() is not None and not self.conn.poll(0):
                raise self._crashed(task)

    def _crashed(self, task: str) -> TaskCrashed:
        assert self.proc is not None
        try:
            code = self.proc.wait(5)
        except subprocess.TimeoutExpired:
            code = None
        self._kill()
        self.restarts += 1
        if code is not None and code < 0:
            try:
                what = f"killed by {signal.Signals(-code).name}"
            except ValueError:
                what = f"killed by signal {-code}"
        else:
            what = f"exited with status {code}"
        return TaskCrashed(f"the {task} process {what}")

    def close(self) -> None:
        if self.conn is not None:
            try:
                self.conn.send(None)
            except (BrokenPipeError, OSError):
                pass
        self._kill()

    def __enter__(self) -> IsolatedChild:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


if __name__ == "__main__":
    _child_main(int(sys.argv[1]))
