"""Prometheus metrics of one app, in its own ``CollectorRegistry`` (never the global one, so that
several apps in one process — tests — do not collide).

    kiln_compiles_total{kind,outcome}       real compiler runs (outcome: ok, error, timeout)
    kiln_compile_seconds{kind}              their wall time (histogram)
    kiln_cache_requests_total{result}       cache lookups: hit | miss
    kiln_cache_redis_errors_total           Redis failures the cache absorbed
    kiln_cache_corrupt_total                corrupt entries found and removed
    kiln_cache_forged_records_total         action records refused: edited, foreign or unsigned
    kiln_compile_queue_depth                compile jobs waiting for a worker
    kiln_compiles_in_flight                 compile jobs running
    kiln_prepare_queue_depth                graphs waiting for a prepare worker
    kiln_requests_total{route,status,code}  HTTP requests answered: route template, status, and
                                            the error envelope's code (empty for a success)
    kiln_artifact_bytes_served_total        executable bytes sent by GET /v1/artifacts
    kiln_tuning_records_total{result}       tuning records (POST /v1/tuning): accepted | rejected;
                                            forged: stored ones refused on read (bad signature)
    kiln_tuned_serves_total                 GET /v1/tuning answers that held a choice
    kiln_tuning_gets_total                  GET /v1/tuning answers (with a choice or not)
    kiln_kernel_cache_total{kind,result}    per-kernel lookups of the kernel cache (vulkan, cuda,
                                            rocm where KILN_KERNEL_CACHE turns it on): hit | miss, and
                                            fallback (the kernel path failed: one whole compile)
    kiln_frontend_cache_total{result}       whole-executable misses that started from the graph's
                                            cached input phase (hit) or stored it (miss);
                                            kiln/compiler/frontend.py
    kiln_idle_tunings_total{result}         the idle tuner's attempts (service/idle_tuning.py):
                                            tuned | skipped | failed | preempted
    kiln_idle_tuning_candidates             the targets it still means to tune or judge (0 with
                                            idle tuning off: nothing is remembered)

With several HTTP workers each process has its own registry; ``/metrics`` shows the process that
answered (label ``pid`` on ``kiln_process_info`` says which). Every hook here is non-blocking and
never raises. The same hooks feed ``activity``, the status page's per-minute counts and recent
compiles (``Activity``, at the end of this module; service/status.py renders it).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from kiln.compiler.kernels import KERNEL_KINDS

if TYPE_CHECKING:
    from kiln.compiler.pipeline import CompileResult

__all__ = ["CONTENT_TYPE_LATEST", "IDLE_RESULTS", "Activity", "Answer", "Metrics", "Minute"]

IDLE_RESULTS = ("tuned", "skipped", "failed", "preempted")

log = logging.getLogger("kiln.service")

_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600)


class Metrics:
    def __init__(self) -> None:
        r = self.registry = CollectorRegistry(auto_describe=True)
        self.compiles = Counter(
            "kiln_compiles", "Real compiler runs", ["kind", "outcome"], registry=r
        )
        self.compile_seconds = Histogram(
            "kiln_compile_seconds", "Wall time of compiler runs", ["kind"],
            buckets=_BUCKETS, registry=r,
        )
        self.cache_requests = Counter(
            "kiln_cache_requests", "Cache lookups by result", ["result"], registry=r
        )
        for result in ("hit", "miss"):
            self.cache_requests.labels(result)
        self.redis_errors = Counter(
            "kiln_cache_redis_errors", "Redis failures absorbed by the cache", registry=r
        )
        self.corrupt = Counter(
            "kiln_cache_corrupt", "Corrupt cache entries found and removed", registry=r
        )
        self.forged = Counter(
            "kiln_cache_forged_records",
            "Action records refused because their signed provenance did not match", registry=r,
        )
        self.requests = Counter(
            "kiln_requests", "HTTP requests answered (code: the error envelope's code)",
            ["route", "status", "code"], registry=r,
        )
        self.bytes_served = Counter(
            "kiln_artifact_bytes_served", "Executable bytes sent", registry=r
        )
        self.tuning_records = Counter(
            "kiln_tuning_records", "Tuning records by result (accepted, rejected, forged)",
            ["result"], registry=r,
        )
        for result in ("accepted", "rejected"):
            self.tuning_records.labels(result)
        self.tuned_serves = Counter(
            "kiln_tuned_serves", "GET /v1/tuning answers that held a choice", registry=r
        )
        self.tuning_gets = Counter(
            "kiln_tuning_gets", "GET /v1/tuning answers, with a choice or not", registry=r
        )
        self.kernel_cache = Counter(
            "kiln_kernel_cache", "Kernel cache lookups per kernel (hit, miss) and fallbacks",
            ["kind", "result"], registry=r,
        )
        for kind in sorted(KERNEL_KINDS):
            for result in ("hit", "miss", "fallback"):
                self.kernel_cache.labels(kind, result)
        self.frontend_cache = Counter(
            "kiln_frontend_cache", "Compiles that started from a graph's cached input phase "
            "(hit) or stored it (miss)", ["result"], registry=r,
        )
        for result in ("hit", "miss"):
            self.frontend_cache.labels(result)
        self.idle_tunings = Counter(
            "kiln_idle_tunings", "The idle tuner's attempts by result", ["result"], registry=r
        )
        for result in IDLE_RESULTS:
            self.idle_tunings.labels(result)
        self.idle_candidates = Gauge(
            "kiln_idle_tuning_candidates", "Compiled CPU targets the idle tuner still means to "
            "tune or judge", registry=r,
        )
        self.queue_depth = Gauge(
            "kiln_compile_queue_depth", "Compile jobs waiting for a worker", registry=r
        )
        self.in_flight = Gauge("kiln_compiles_in_flight", "Compile jobs running", registry=r)
        self.prepare_queue_depth = Gauge(
            "kiln_prepare_queue_depth", "Graphs waiting for a prepare worker", registry=r
        )
        info = Gauge("kiln_process_info", "The process answering", ["pid"], registry=r)
        info.labels(str(os.getpid())).set(1)
        self.activity = Activity()

    def on_compile(self, kind: str, outcome: str, seconds: float) -> None:
        """``Pipeline.on_compile`` hook; ``rejected`` (queue full) ran no compiler: not counted."""
        if outcome == "rejected":
            return
        self.compiles.labels(kind, outcome).inc()
        self.compile_seconds.labels(kind).observe(seconds)
        self.activity.compiled(outcome)

    def on_cache_event(self, event: str) -> None:
        """``ArtifactCache.metrics_hook``."""
        if event in ("hit", "miss"):
            self.cache_requests.labels(event).inc()
            self.activity.looked_up(event)
        elif event == "redis_error":
            self.redis_errors.inc()
        elif event == "corrupt":
            self.corrupt.inc()
        elif event == "forged":
            self.forged.inc()

    def on_tuning(self, event: str) -> None:
        """``TuningService`` hook: accepted | rejected | forged records; asked (a GET answered),
        served (that answer held a choice)."""
        if event == "served":
            self.tuned_serves.inc()
        elif event == "asked":
            self.tuning_gets.inc()
        else:
            self.tuning_records.labels(event).inc()

    def on_kernel(self, kind: str, result: str) -> None:
        """``Pipeline.on_kernel`` hook: one kernel's ``hit`` or ``miss``, or a ``fallback``."""
        self.kernel_cache.labels(kind, result).inc()

    def on_frontend(self, result: str) -> None:
        """``Pipeline.on_frontend`` hook: ``hit`` or ``miss`` of the front-end cache."""
        self.frontend_cache.labels(result).inc()

    def on_idle_tuning(self, result: str) -> None:
        """``IdleTuner`` hook: ``tuned``, ``skipped``, ``failed`` or ``preempted``."""
        self.idle_tunings.labels(result).inc()

    def on_result(self, result: CompileResult, seconds: float) -> None:
        """``Pipeline.on_result`` hook: each target's answer, for the status page."""
        try:
            self.activity.answered(result, seconds)
        except Exception:  # a status page must never fail a compile
            log.exception("status page: could not record a compile result")

    def track(
        self,
        *,
        queue_depth: Callable[[], float],
        in_flight: Callable[[], float],
        prepare_queue_depth: Callable[[], float],
    ) -> None:
        """Gauges read live at scrape time."""
        self.queue_depth.set_function(queue_depth)
        self.in_flight.set_function(in_flight)
        self.prepare_queue_depth.set_function(prepare_queue_depth)

    def render(self) -> bytes:
        return generate_latest(self.registry)


# -- the status page's model: the last hour per minute, the last answers ----------


@dataclass
class Minute:
    """Counts of one wall-clock minute (``start``: epoch seconds // 60)."""

    start: int
    compiles: int = 0  # compiler runs that succeeded
    failed: int = 0  # compiler runs that failed or timed out
    hits: int = 0
    misses: int = 0


@dataclass(frozen=True)
class Answer:
    """One target of one answered compile. ``outcome``: ``ok`` or the error's code."""

    at: float  # epoch seconds
    target: str
    outcome: str
    cached: bool
    compile_seconds: float | None  # None when nothing was compiled for it
    answer_seconds: float  # the whole compile_graph call (all its targets, in parallel)
    graph_digest: str
    message: str = ""


class Activity:
    """Per-minute counts of the last ``minutes`` minutes and the last ``recent`` answers.
    Thread-safe (fed from the pipeline's threads); every method is O(1) but ``series``."""

    def __init__(self, *, minutes: int = 60, recent: int = 50,
                 clock: Callable[[], float] = time.time) -> None:
        self.minutes = minutes
        self._clock = clock
        self._lock = threading.Lock()
        self._ring: deque[Minute] = deque(maxlen=minutes)
        self._recent: deque[Answer] = deque(maxlen=recent)

    def _now(self) -> Minute:
        m = int(self._clock() // 60)
        if not self._ring or self._ring[-1].start < m:
            self._ring.append(Minute(m))
        return self._ring[-1]  # a clock stepped back counts into the newest minute

    def compiled(self, outcome: str) -> None:
        """A compiler run ended: ``ok``, ``error`` or ``timeout``."""
        with self._lock:
            bucket = self._now()
            if outcome == "ok":
                bucket.compiles += 1
            else:
                bucket.failed += 1

    def looked_up(self, result: str) -> None:
        """A cache lookup: ``hit`` or ``miss``."""
        with self._lock:
            bucket = self._now()
            if result == "hit":
                bucket.hits += 1
            else:
                bucket.misses += 1

    def answered(self, result: CompileResult, seconds: float) -> None:
        now = self._clock()
        rows = [
            Answer(now, a.target, "ok", a.cached, None if a.cached else a.compile_seconds,
                   seconds, result.graph_digest)
            for a in result.artifacts
        ] + [
            Answer(now, e.target, e.error.code, False, None, seconds, result.graph_digest,
                   e.error.message[:300])
            for e in result.errors
        ]
        with self._lock:
            self._recent.extend(rows)

    def series(self) -> list[Minute]:
        """The last ``minutes`` minutes, oldest first, empty minutes included."""
        now = int(self._clock() // 60)
        with self._lock:
            seen = {m.start: Minute(**m.__dict__) for m in self._ring}
        return [seen.get(m, Minute(m)) for m in range(now - self.minutes + 1, now + 1)]

    def recent(self) -> list[Answer]:
        """Newest first."""
        with self._lock:
            return list(reversed(self._recent))
