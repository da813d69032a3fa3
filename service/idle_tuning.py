"""Idle tuning: when no compile has come for a while, the server autotunes, on its own CPU, a CPU
target it compiled recently and can execute, and keeps the result as a tuning record
(service/tuning.py), so the next client with that graph, target and runtime gets the choice
without tuning (kiln/client/tuning.py). Off by default (``KILN_IDLE_TUNING``).

    POST /v1/compile (cpu target) ─► remember (graph bytes, target, declared runtime), bounded LRU
    idle for idle_tuning_after s ─► pick the newest one that
                                      - this host can execute: the same arch, and every ISA
                                        feature the target's CPU enables is one this CPU's
                                        kernel reports (``host_can_execute``; x86-64-v2,
                                        haswell, skylake-avx512 on any AVX-512 host, AMD or
                                        Intel; never aarch64/riscv64 on an x86-64 one)
                                      - has no tuning record yet for (graph, target, runtime)
                                  ─► prepare and compile each preset worth timing
                                     (``autotune_presets``) through the server's own pipeline
                                     and cache, checking between presets that it is still idle
                                  ─► time them in a child process (``kiln.client.autotune``,
                                     iree.runtime on ``local-task``), at the lowest priority
                                     (nice 19), under the workers' address-space cap, killed
                                     when a compile request arrives or at idle_tuning_timeout
                                  ─► ``TuningService.submit(..., trusted=True)``: a client's
                                     record's checks but the outlier one, signed by the
                                     server, submitter ``kiln-server``; a trusted record,
                                     its choice is served without a quorum

Yielding to real work: it starts only when no ``/v1/compile`` or ``/v1/jobs`` request is being
answered, none has arrived for ``idle_tuning_after`` seconds and the worker pools are idle; it
checks again before each preset's compile and every 0.1 s while the child times them, and gives
the tuning up (``preempted``) at the first sign of work; the candidate is tried again at the next
idle period. One tuning at a time, at most ``idle_tuning_per_hour`` started per rolling hour.

Outcomes (``kiln_idle_tunings_total{result}``): ``tuned`` (a record kept), ``skipped`` (a
candidate dropped without timing: not executable here, a record exists already, or fewer than
two distinct executables to compare), ``failed`` (the default preset does not compile, the child
crashed or ran past its timeout, or the record was refused), ``preempted``. A failed or skipped
candidate is not tried again by this process.

Where it runs: only in a server that compiles locally with one HTTP worker process
(``compile=local``, ``http_workers=1``); otherwise another process's or machine's compiles would
be invisible to its idleness check, and it stays off (logged at start). Its graphs are held in
memory, ``idle_tuning_memory_bytes`` in all (the oldest dropped first; a larger graph is not
remembered). Its temporary files live under the cache directory's ``tmp/``.

The runtime a record is for: the ``X-Kiln-Runtime`` the compile request declared (the compile
route has checked that it is this compiler's series), else the runtime installed here.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kiln.errors import KilnError

if TYPE_CHECKING:
    from kiln.compiler.pipeline import Pipeline

    from .settings import Settings
    from .tuning import TuningService

__all__ = ["SUBMITTER", "IdleTuner", "host_can_execute"]

log = logging.getLogger("kiln.service.idle_tuning")

SUBMITTER = "kiln-server"
REPEATS = 10  # timed calls per preset (a record needs at least tuning.MIN_SAMPLES)
_POLL = 0.1  # seconds between checks while the child times


@dataclass(frozen=True)
class Candidate:
    """A graph and CPU target a client compiled, and the runtime it declared."""

    graph_digest: str  # "sha256:<hex>"
    target: str  # normalized
    runtime: str
    data: bytes
    format: str | None

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.graph_digest, self.target, self.runtime)


class _Preempted(Exception):
    """A compile request arrived: the tuning is given up."""


def host_can_execute(target: str, *, host: Any = None) -> bool:
    """Whether code compiled for ``target`` (a normalized ``cpu:ARCH:CPU[:FEATURES]``) runs on
    ``host``, a ``kiln.client.resolver.CpuInfo`` (default: this machine's, whose arch is this
    machine's): the same arch, and every ISA feature the target's CPU enables, with its explicit
    ``+f``/``-f`` applied, one the host's kernel reports (``kiln.client.isa``: target from LLVM's
    list, host from ``/proc/cpuinfo``, both closed under LLVM's implications). False when the
    host's kernel reported nothing or the compiler cannot read the target's features. Blocking:
    it may run the compiler (~0.1 s per CPU name, cached per process)."""
    from kiln.client import isa
    from kiln.client.resolver import detect_cpu

    parts = target.split(":")
    if parts[0] != "cpu" or len(parts) < 3:
        return False
    host = host if host is not None else detect_cpu()
    if parts[1] != host.arch:
        return False
    feats = tuple(f for f in (parts[3] if len(parts) > 3 else "").split(",") if f)
    try:
        want = isa.target_isa(parts[1], parts[2], feats)
    except (RuntimeError, OSError, subprocess.SubprocessError, KeyError) as exc:
        log.warning("idle tuning: cannot compare %s with this CPU: %s", target, exc)
        return False
    return isa.runs(frozenset(host.isa), want)


class IdleTuner:
    """The worker of the module docstring: a daemon thread started by ``start`` and stopped by
    ``close``. ``remember``, ``touch`` and ``working`` are called from the event loop: they only
    update a few fields under a lock. ``hook(result)`` counts each outcome."""

    def __init__(
        self,
        settings: Settings,
        *,
        pipeline: Pipeline,
        tuning: TuningService,
        tmp_root: Path,
        hook: Callable[[str], None] | None = None,
    ) -> None:
        s = settings
        self.enabled = s.idle_tuning and s.compile == "local" and s.http_workers == 1
        if s.idle_tuning and not self.enabled:
            log.warning("idle tuning stays off: it needs compile=local and http_workers=1 (it "
                        "cannot see the compiles of other processes)")
        self.idle_after = s.idle_tuning_after
        self.per_hour = s.idle_tuning_per_hour
        self.timeout = s.idle_tuning_timeout
        self.max_bytes = s.idle_tuning_memory_bytes
        self.memory_limit = s.worker_memory_bytes
        self.pipeline = pipeline
        self.tuning = tuning
        self.tmp_root = tmp_root
        self.hook = hook
        self._lock = threading.Lock()
        self._candidates: OrderedDict[tuple[str, str, str], Candidate] = OrderedDict()
        self._held = 0
        self._done: set[tuple[str, str, str]] = set()
        self._requests = 0
        self._last = time.monotonic()
        self._started: deque[float] = deque()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._child: subprocess.Popen[bytes] | None = None
        self._host: Any = None
        self._executable: dict[str, bool] = {}

    # -- the event loop's side ---------------------------------------------------------------

    def pending(self) -> int:
        """How many remembered targets are still to be tuned or judged unfit."""
        with self._lock:
            return len(self._candidates)

    def touch(self) -> None:
        """A compile request arrived or ended: the idle period starts again."""
        self._last = time.monotonic()

    @contextlib.contextmanager
    def working(self) -> Iterator[None]:
        """Around a compile request: no tuning runs while one is answered."""
        with self._lock:
            self._requests += 1
        self.touch()
        try:
            yield
        finally:
            with self._lock:
                self._requests -= 1
            self.touch()

    def remember(self, data: bytes, *, format: str | None, options: Mapping[str, Any] | None,
                 answer: Mapping[str, Any], runtime: str | None) -> None:
        """Note the CPU targets of a successful compile answer as candidates (newest last)."""
        if not self.enabled or len(data) > self.max_bytes:
            return
        if (options or {}).get("params") == "external":
            return  # a client tunes the graph with its weights inside
        rt = runtime.strip() if runtime else _local_runtime()
        if not rt:
            return
        digest = str(answer.get("graph_digest", ""))
        with self._lock:
            for art in answer.get("artifacts", []):
                target = str(art.get("target", ""))
                if not target.startswith("cpu:"):
                    continue
                c = Candidate(digest, target, rt, data, format)
                if c.key in self._done:
                    continue
                old = self._candidates.pop(c.key, None)
                self._held -= len(old.data) if old is not None else 0
                self._candidates[c.key] = c
                self._held += len(data)
            while self._held > self.max_bytes and self._candidates:
                _, old = self._candidates.popitem(last=False)
                self._held -= len(old.data)

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        if self.enabled and self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="kiln-idle-tuning",
                                            daemon=True)
            self._thread.start()

    def close(self) -> None:
        """Stop the thread (waiting at most 5 s; it is a daemon); a timing child is killed."""
        self._stop.set()
        self._kill_child()
        if self._thread is not None:  # a compile of its own ends when the pools close
            self._thread.join(timeout=5)

    # -- the thread --------------------------------------------------------------------------

    def busy(self) -> bool:
        """True while a compile request is answered or arrived within ``idle_after`` seconds,
        or a worker pool has work (the tuner's own compiles are over whenever it asks)."""
        if self._requests or time.monotonic() - self._last < self.idle_after:
            return True
        return self._pools_busy()

    def _pools_busy(self) -> bool:
        pools = {id(p): p for p in (self.pipeline.pool, self.pipeline.prepare_pool)}.values()
        # A worker slot is marked idle just after its caller got the result: look a few times.
        for _ in range(10):
            if not any(p.in_flight or p.queue_depth for p in pools):
                return False
            time.sleep(0.05)
        return True

    def _loop(self) -> None:
        wait = max(0.05, min(1.0, self.idle_after / 4))
        while not self._stop.wait(wait):
            try:
                if self.busy() or not self._budget_left():
                    continue
                cand = self._pick()
                if cand is not None and not self.busy():
                    self._started.append(time.monotonic())
                    self._emit(self._tune(cand))
            except Exception:  # the server goes on without it; a minute later, again
                log.exception("idle tuning: unexpected error")
                self._stop.wait(60)

    def _budget_left(self) -> bool:
        now = time.monotonic()
        while self._started and now - self._started[0] > 3600:
            self._started.popleft()
        return len(self._started) < self.per_hour

    def _pick(self) -> Candidate | None:
        """The newest candidate worth tuning; the others met on the way are dropped (skipped)."""
        while True:
            with self._lock:
                if not self._candidates:
                    return None
                key, cand = next(reversed(self._candidates.items()))
            why = self._unfit(cand)
            if why is None:
                return cand
            log.info("idle tuning: not tuning %s for %s: %s", cand.graph_digest[:19],
                     cand.target, why)
            self._drop(cand)
            self._emit("skipped")

    def _unfit(self, cand: Candidate) -> str | None:
        if cand.target not in self._executable:
            if self._host is None:
                from kiln.client.resolver import detect_cpu

                self._host = detect_cpu()
            self._executable[cand.target] = host_can_execute(cand.target, host=self._host)
        if not self._executable[cand.target]:
            return f"this host's CPU ({self._host.target}) cannot execute it"
        if self.tuning.has_records(cand.graph_digest.removeprefix("sha256:"), cand.target,
                                   cand.runtime):
            return "it has tuning records already"
        return None

    def _drop(self, cand: Candidate) -> None:
        with self._lock:
            self._done.add(cand.key)
            old = self._candidates.pop(cand.key, None)
            self._held -= len(old.data) if old is not None else 0

    def _emit(self, result: str) -> None:
        if self.hook is not None:
            self.hook(result)

    def _tune(self, cand: Candidate) -> str:
        """One tuning; its outcome (module docstring)."""
        t0 = time.monotonic()
        try:
            result = self._measure(cand, deadline=t0 + self.timeout)
        except _Preempted:
            log.info("idle tuning: %s for %s given up: a compile request arrived",
                     cand.graph_digest[:19], cand.target)
            return "preempted"
        except Exception as exc:
            if self._stop.is_set():  # the server is stopping: its pools are closed under it
                return "preempted"
            log.warning("idle tuning: %s for %s failed: %s", cand.graph_digest[:19],
                        cand.target, _why(exc))
            self._drop(cand)
            return "failed"
        self._drop(cand)
        if result is None or len(result.timings_ms) < 2:
            log.info("idle tuning: %s for %s: fewer than two distinct executables to compare",
                     cand.graph_digest[:19], cand.target)
            return "skipped"
        from kiln.client.tuning import record_of

        record = record_of(result, graph_digest=cand.graph_digest, target=cand.target,
                           runtime=cand.runtime)
        try:
            self.tuning.submit(record, runtime=cand.runtime, submitter=SUBMITTER, trusted=True)
        except Exception as exc:
            log.warning("idle tuning: the record of %s for %s was refused: %s",
                        cand.graph_digest[:19], cand.target, _why(exc))
            return "failed"
        log.info("idle tuning: %s for %s: %s (%s) in %.1f s", cand.graph_digest[:19],
                 cand.target, result.preset, result.timings_ms, time.monotonic() - t0)
        return "tuned"

    def _measure(self, cand: Candidate, *, deadline: float) -> Any:
        """Compile the presets here, time them in a child; the child's ``TuneResult``, or None
        when fewer than two distinct executables came out."""
        from kiln.client.autotune import TuneResult
        from kiln.targets import normalize_options, parse_target
        from kiln.targets.cpu import cpu_model
        from kiln.targets.presets import autotune_presets

        spec = parse_target(cand.target)
        blobs: dict[str, bytes] = {}
        graph = self.pipeline.prepare(cand.data, format=cand.format)
        cpu, feats = cpu_model(spec)
        names = autotune_presets("cpu", graph.traits.to_json(), arch=spec.arch, cpu=cpu,
                                 features=feats)
        log.info("idle tuning: tuning %s for %s (runtime %s): presets %s", cand.graph_digest[:19],
                 cand.target, cand.runtime, ", ".join(names))
        seen: set[str] = set()
        for name in names:
            if self._stop.is_set() or self.busy():
                raise _Preempted
            if time.monotonic() > deadline:
                raise TimeoutError(f"compiling the presets took over {self.timeout:g} s")
            opts = normalize_options({} if name == "default" else {"preset": name})
            try:
                art = self.pipeline.compile_prepared(graph, spec, opts)
            except KilnError:
                if name == "default":
                    raise
                continue
            if art.digest not in seen:
                seen.add(art.digest)
                blobs[name] = art.data
        if len(blobs) < 2:
            return None
        if self.busy():
            raise _Preempted
        doc = self._time(cand, blobs, deadline=deadline)
        return TuneResult(**doc)

    def _time(self, cand: Candidate, blobs: Mapping[str, bytes], *,
              deadline: float) -> dict[str, Any]:
        self.tmp_root.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix="idle-tuning-", dir=self.tmp_root))
        try:
            (work / "graph").write_bytes(cand.data)
            for name, data in blobs.items():
                (work / f"{name}.vmfb").write_bytes(data)
            (work / "job.json").write_text(json.dumps({
                "target": cand.target, "presets": list(blobs), "repeats": REPEATS,
                "memory_limit": self.memory_limit, "server": os.getpid()}))
            with open(work / "stderr", "wb") as err:
                self._child = child = subprocess.Popen(
                    [sys.executable, "-m", "kiln.service.idle_tuning", str(work)],
                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                    env={**os.environ, "TMPDIR": str(work)}, start_new_session=True,
                )
            try:
                while child.poll() is None:
                    if self.busy() or self._stop.is_set():
                        raise _Preempted
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"timing ran past {self.timeout:g} s")
                    time.sleep(_POLL)
            finally:
                self._kill_child()
            if child.returncode != 0:
                tail = (work / "stderr").read_bytes()[-2000:].decode(errors="replace")
                raise RuntimeError(f"the timing process exited with {child.returncode}: {tail}")
            doc: dict[str, Any] = json.loads((work / "result.json").read_text())
            return doc
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def _kill_child(self) -> None:
        child, self._child = self._child, None
        if child is not None and child.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)
            child.wait(10)


def _local_runtime() -> str:
    from kiln.client.sdk import runtime_version

    return runtime_version() or ""


def _why(exc: BaseException) -> str:
    return f"{exc.code}: {exc.message}" if isinstance(exc, KilnError) else repr(exc)


# -- the timing child: python -m kiln.service.idle_tuning DIR ------------------------------------


def _child_main(argv: Sequence[str]) -> int:
    """Time the executables in DIR (``job.json``, ``graph``, ``<preset>.vmfb``) with
    ``kiln.client.autotune`` and write ``result.json`` (a ``TuneResult``'s JSON)."""
    import ctypes
    import resource

    work = Path(argv[0])
    job = json.loads((work / "job.json").read_text())
    with contextlib.suppress(OSError, AttributeError):  # die with the server (Linux)
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != job["server"]:
        return 1  # the server is gone already
    os.nice(19)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if job.get("memory_limit"):
        limit = int(job["memory_limit"])
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    from kiln.client.autotune import autotune

    blobs = {p: (work / f"{p}.vmfb").read_bytes() for p in job["presets"]}

    def compiled(options: Mapping[str, Any]) -> bytes:
        return blobs[str(options.get("preset", "default"))]

    result = autotune((work / "graph").read_bytes(), target=job["target"], compile=compiled,
                      driver="local-task", candidates=job["presets"],
                      repeats=int(job["repeats"]), cache_dir=work / "choices", refresh=True)
    (work / "result.json").write_text(json.dumps(result.to_json()))
    return 0


if __name__ == "__main__":
    sys.exit(_child_main(sys.argv[1:]))
