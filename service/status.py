"""The status page: ``GET /`` in a browser, server-rendered HTML (no script, no network).

What it shows, and where each figure comes from:

    compiles, hit rate   per minute, the last hour: ``Activity``, fed by the same hooks as the
                         Prometheus counters (``Metrics.on_compile``, ``Metrics.on_cache_event``)
    totals, queues       the Prometheus registry itself, so the page and ``/metrics`` agree;
    and shares           also the kernel cache's hit share (hits / (hits + misses)), the share
                         of ``GET /v1/tuning`` answers that held a choice, and the tunings the
                         server ran itself when idle (service/idle_tuning.py)
    recent compiles      the last 50 targets ``Pipeline.compile_graph`` answered (``/v1/compile``
                         and jobs): target, outcome, cached, compile and answer seconds
    cluster              ``cluster_view``: queue depth per queue and the workers' heartbeats in
                         cluster mode (``kiln serve --compile remote``); "local compiles" otherwise (``--compile local``)
    cache                the disk tier's entries and bytes (``StoreStats``, re-read every 15 s)
    targets              the data of ``GET /v1/targets``

Each HTTP worker process keeps its own figures (like ``/metrics``); the page names the process.
An identical request answered from the memo of verified hits (service/compiles.py) counts in
the hit rate but is not listed: no compile ran for it.

Auth: service/sessions.py (a login form and a session cookie when tokens are configured).
Everything rendered is escaped; ``Content-Security-Policy`` allows no script, no request and
only inline styles.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio.to_thread
from fastapi import APIRouter, FastAPI, Request
from starlette.responses import Response

from kiln import __version__

from .auth import TokenAuth
from .errors import error_responses
from .metrics import Answer, Minute
from .pages import OPENAPI_HTML, e, html_response, login_page, page
from .sessions import Login

if TYPE_CHECKING:
    from .service import Service

__all__ = ["ClusterView", "cluster_view", "install_status"]

_STATS_SECONDS = 15.0


# -- cluster mode ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClusterView:
    queues: dict[str, int]  # queue name -> messages waiting (-1: Redis did not answer)
    workers: list[dict[str, Any]] = field(default_factory=list)  # heartbeats, by name
    error: str = ""


def cluster_view(svc: Service) -> ClusterView | None:
    """Cluster mode's queues and workers; None with local compiles (compiles run in this process's
    own worker pool). The one hook the page has for cluster mode: ``Service.queue`` (a
    ``kiln.cluster.queue.CompileQueue``, present with ``--compile remote``) gives the depth per
    queue; the workers are its ``workers()`` if it has one, else the heartbeats ``kiln worker``
    writes under ``kiln.cluster.queue.WORKERS_KEY``. Blocking (Redis): call from a thread."""
    queue = getattr(svc, "queue", None)
    if queue is None:
        return None
    try:
        depths = dict(queue.depth())
        listing = getattr(queue, "workers", None)
        workers = list(listing()) if callable(listing) else _heartbeats(queue.client)
    except Exception as exc:
        return ClusterView(queues={}, error=f"{type(exc).__name__}: {exc}"[:300])
    return ClusterView(queues=depths, workers=sorted(workers, key=lambda w: str(w.get("name"))))


def _heartbeats(client: Any, *, limit: int = 500) -> list[dict[str, Any]]:
    from kiln.cluster.queue import WORKERS_KEY

    keys = []
    for key in client.scan_iter(match=WORKERS_KEY + "*", count=200):
        keys.append(key)
        if len(keys) >= limit:
            break
    out = []
    for raw in client.mget(keys) if keys else []:
        try:
            beat = json.loads(raw) if raw else None
        except ValueError:
            beat = None
        if isinstance(beat, dict):
            out.append(beat)
    return out


# -- the routes --------------------------------------------------------------------------------


def install_status(app: FastAPI, *, auth: TokenAuth) -> APIRouter:
    """Serve ``GET /``, ``POST /login`` and ``POST /logout`` from ``app``; returns their router."""
    login = Login(auth)
    disk = _DiskStats()
    router = APIRouter()

    @router.get(
        "/",
        response_class=Response,
        responses={200: {**OPENAPI_HTML, "description": "the status page; with tokens configured "
                         "and no session cookie (or bearer header), a login form and nothing "
                         "else"},
                   **error_responses(500, 503)},
        summary="The status page (HTML): compiles, hit rate, queues, workers, cache, targets",
        description="For a browser. With tokens configured, sign in with POST /login; the "
        "session cookie it sets is good for this page only.",
        operation_id="status_page",
    )
    async def status_page(request: Request) -> Response:
        if not login.signed_in(request):
            return html_response(login_page())
        svc: Service = request.app.state.kiln
        text = await anyio.to_thread.run_sync(partial(_render, svc, disk, signed=auth.enabled))
        return html_response(text)

    login.install(router)
    app.include_router(router)
    return router


# -- rendering ---------------------------------------------------------------------------------


class _DiskStats:
    """The disk tier's ``StoreStats``, re-read at most every 15 s (it walks the directory)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._at = -1e9
        self._value: Any = None
        self._error = ""

    def get(self, svc: Service) -> tuple[Any, str]:
        with self._lock:
            if time.monotonic() - self._at >= _STATS_SECONDS:
                disk = getattr(svc.cache, "disk", None)
                try:
                    self._value, self._error = (disk.stats() if disk is not None else None), ""
                except Exception as exc:
                    self._value, self._error = None, f"{type(exc).__name__}: {exc}"[:300]
                self._at = time.monotonic()
            return self._value, self._error


def _total(metric: Any, **labels: str) -> float:
    """The sum of a metric's ``_total``/gauge samples whose labels include ``labels``."""
    out = 0.0
    for family in metric.collect():
        for s in family.samples:
            if s.name.endswith(("_created", "_bucket", "_count", "_sum")):
                continue
            if all(s.labels.get(k) == v for k, v in labels.items()):
                out += s.value
    return out


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.3g}"


def _share(part: float, whole: float) -> str:
    """``part`` of ``whole`` in percent; "—" when ``whole`` is 0."""
    return f"{100 * part / whole:.0f}%" if whole else "—"


def _size(n: int | None) -> str:
    if n is None:
        return "unbounded"
    f = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if f < 1024 or unit == "TiB":
            return f"{f:.0f} {unit}" if unit == "B" else f"{f:.1f} {unit}"
        f /= 1024
    return f"{n} B"  # pragma: no cover


def _tile(ident: str, value: str, label: str, cls: str = "") -> str:
    return (f'<div class="tile"><b id="{e(ident)}" class="{e(cls)}">{e(value)}</b>'
            f"<small>{e(label)}</small></div>")


def _render(svc: Service, disk: _DiskStats, *, signed: bool) -> str:
    m = svc.metrics
    ok = _total(m.compiles, outcome="ok")
    err = _total(m.compiles, outcome="error")
    timeout = _total(m.compiles, outcome="timeout")
    hits = _total(m.cache_requests, result="hit")
    misses = _total(m.cache_requests, result="miss")
    rate = _share(hits, hits + misses)
    k_hits = _total(m.kernel_cache, result="hit")
    k_misses = _total(m.kernel_cache, result="miss")
    served = _total(m.tuned_serves)
    queue, in_flight = _total(m.queue_depth), _total(m.in_flight)
    prepare = _total(m.prepare_queue_depth)
    cluster = cluster_view(svc)
    stats, stats_error = disk.get(svc)
    targets = json.loads(svc.targets_json())
    workers = getattr(svc.settings, "http_workers", 1)
    mode = "cluster mode" if cluster is not None else "local compiles"
    clock = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    proc = f"process {os.getpid()}" + (f" (one of {workers} HTTP workers)" if workers > 1 else "")
    series = svc.metrics.activity.series()
    body = [
        f'<header><h1>Kiln</h1><span>{e(__version__)}</span>'
        f'<span>IREE {e(targets["compiler"].get("version", "?"))}</span>'
        f'<span id="mode">{e(mode)}</span><span>{e(proc)}</span><span>{e(clock)}</span>'
        "</header><main>",
        '<section class="wide"><h2>Now</h2><div class="tiles">',
        _tile("compiles-ok", _num(ok), "compiles ok", "ok"),
        _tile("compiles-error", _num(err), "compile errors", "bad" if err else ""),
        _tile("compiles-timeout", _num(timeout), "timeouts", "bad" if timeout else ""),
        _tile("cache-hits", _num(hits), "cache hits since start"),
        _tile("cache-misses", _num(misses), "cache misses since start"),
        _tile("hit-rate", rate, "hit rate since start"),
        _tile("queue-depth", _num(queue), "compile queue"),
        _tile("in-flight", _num(in_flight), "compiling now"),
        _tile("prepare-queue", _num(prepare), "prepare queue"),
        _tile("tuning-accepted", _num(_total(m.tuning_records, result="accepted")),
              "tuning records kept"),
        _tile("tuned-serves", _num(served), "tuned choices served"),
        _tile("tuned-share", _share(served, _total(m.tuning_gets)),
              "tuning answers with a choice"),
        _tile("kernel-hit-share", _share(k_hits, k_hits + k_misses), "kernel cache hits"),
        _tile("idle-tuned", _num(_total(m.idle_tunings, result="tuned")),
              "tuned by the server when idle"),
        "</div></section>",
        '<section class="wide"><h2>The last hour, per minute</h2>',
        _chart(series),
        "</section>",
        _recent(svc.metrics.activity.recent()),
        _cluster(cluster, svc),
        _cache(stats, stats_error),
        _targets(targets),
        "</main>",
    ]
    if signed:
        body.append('<form method="post" action="/logout" class="muted" '
                    'style="padding:0 24px">Signed in: the session ends after 12 hours, when the '
                    'server restarts, or <button type="submit" id="logout">now</button>.</form>')
    return page("Kiln status", "".join(body), refresh=True)


def _chart(series: list[Minute]) -> str:
    """Compiles per minute as bars (failed ones stacked in red) and the hit rate as a line."""
    w, h, top, left, right, bottom = 1180, 150, 14, 34, 40, 18
    n = len(series)
    step = (w - left - right) / max(n, 1)
    peak = max([m.compiles + m.failed for m in series] + [1])
    ph = h - top - bottom

    def y(v: float, scale: float) -> float:
        return top + ph - ph * v / scale

    out = [f'<svg id="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" '
           f'width="100%" role="img" aria-label="compiles and cache hit rate per minute, '
           f'the last {n} minutes">',
           f'<line x1="{left}" y1="{top + ph}" x2="{w - right}" y2="{top + ph}" '
           'stroke="#c9ceda"/>',
           f'<text x="{left - 4}" y="{top + 4}" text-anchor="end" font-size="11" '
           f'fill="#5a6275">{peak}</text>',
           f'<text x="{left - 4}" y="{top + ph}" text-anchor="end" font-size="11" '
           'fill="#5a6275">0</text>',
           f'<text x="{w - right + 4}" y="{top + 4}" font-size="11" fill="#e07b00">100%</text>',
           f'<text x="{w - right + 4}" y="{top + ph}" font-size="11" fill="#e07b00">0%</text>',
           f'<text x="{left}" y="{h - 3}" font-size="11" fill="#5a6275">{n} min ago</text>',
           f'<text x="{w - right}" y="{h - 3}" text-anchor="end" font-size="11" '
           'fill="#5a6275">now</text>']
    line: list[str] = []
    runs: list[list[str]] = []
    for i, m in enumerate(series):
        x = left + i * step + 1
        if m.compiles:
            out.append(f'<rect x="{x:.1f}" y="{y(m.compiles, peak):.1f}" width="{step - 2:.1f}" '
                       f'height="{top + ph - y(m.compiles, peak):.1f}" fill="#3563c9">'
                       f"<title>{m.compiles} compiled</title></rect>")
        if m.failed:
            y0 = y(m.compiles, peak)
            y1 = y(m.compiles + m.failed, peak)
            out.append(f'<rect x="{x:.1f}" y="{y1:.1f}" width="{step - 2:.1f}" '
                       f'height="{y0 - y1:.1f}" fill="#c62828"><title>{m.failed} failed'
                       "</title></rect>")
        if m.hits + m.misses:
            rate = m.hits / (m.hits + m.misses)
            line.append(f"{x + (step - 2) / 2:.1f},{y(rate, 1.0):.1f}")
        elif line:
            runs.append(line)
            line = []
    if line:
        runs.append(line)
    for run in runs:
        if len(run) == 1:
            cx, cy = run[0].split(",")
            out.append(f'<circle cx="{cx}" cy="{cy}" r="3" fill="#e07b00"/>')
        else:
            out.append(f'<polyline points="{" ".join(run)}" fill="none" stroke="#e07b00" '
                       'stroke-width="2"/>')
    out.append("</svg>")
    legend = ('<p class="muted"><span style="color:#3563c9">■</span> compiled '
              '<span style="color:#c62828">■</span> failed or timed out '
              '<span style="color:#e07b00">━</span> cache hit rate</p>')
    return "".join(out) + legend


def _recent(rows: Iterable[Answer]) -> str:
    body = []
    for r in rows:
        cls = "ok" if r.outcome == "ok" else "bad"
        secs = f"{r.compile_seconds:.2f}" if r.compile_seconds is not None else "—"
        body.append(
            f'<tr><td>{e(time.strftime("%H:%M:%S", time.gmtime(r.at)))}</td>'
            f"<td><code>{e(r.target)}</code></td>"
            f'<td class="{cls}" title="{e(r.message)}">{e(r.outcome)}</td>'
            f'<td>{"yes" if r.cached else "no"}</td><td class="n">{e(secs)}</td>'
            f'<td class="n">{e(f"{r.answer_seconds:.2f}")}</td>'
            f"<td><code>{e(r.graph_digest.split(':')[-1][:12])}</code></td>"
            f"<td>{e(r.message[:120])}</td></tr>"
        )
    if not body:
        body.append('<tr><td colspan="8" class="muted">no compiles yet</td></tr>')
    return ('<section class="wide"><h2>Recent compiles</h2><p class="muted" id="recent-note">'
            "The last 50 targets answered. The tiles above count every cache lookup since the "
            "process started, repeats answered from memory included; those are not listed."
            '</p><table id="recent"><tr><th>time (UTC)</th><th>target</th><th>outcome</th>'
            "<th>cached</th><th>compile s</th><th>answer s</th><th>graph</th><th>error</th></tr>"
            + "".join(body)
            + "</table></section>")


def _cluster(view: ClusterView | None, svc: Service) -> str:
    if view is None:
        pool = svc.pipeline.pool
        size = getattr(pool, "size", None) or getattr(pool, "workers", None)
        what = (f"{e(size)} compile worker process{'es' if size != 1 else ''}"
                if isinstance(size, int) else "its own compile worker processes")
        return ('<section><h2>Workers</h2><p id="cluster">Local compiles (--compile local): this '
                f"process compiles in {what}; no queue is shared.</p></section>")
    if view.error:
        return (f'<section><h2>Workers</h2><p id="cluster" class="bad">cluster mode: '
                f"{e(view.error)}</p></section>")
    queues = "".join(
        f'<tr><td><code>{e(q)}</code></td><td class="n">{e(d if d >= 0 else "?")}</td></tr>'
        for q, d in sorted(view.queues.items()))
    now = time.time()
    workers = "".join(
        f"<tr><td>{e(w.get('name', '?'))}</td><td>{e(w.get('host', ''))}</td>"
        f"<td>{e(', '.join(map(str, w.get('queues', []))))}</td>"
        f'<td class="n">{e(w.get("busy", "?"))}/{e(w.get("concurrency", "?"))}</td>'
        f'<td class="n">{e(w.get("compiles", "?"))}</td>'
        f'<td class="n">{e(_age(now, w.get("started")))}</td></tr>'
        for w in view.workers) or '<tr><td colspan="6" class="bad">no worker is alive</td></tr>'
    return ('<section><h2>Workers</h2><p id="cluster">Cluster mode: compiles go to kiln workers '
            'over the shared queue.</p><table id="queues"><tr><th>queue</th><th>waiting</th>'
            f"</tr>{queues}</table><table><tr><th>worker</th><th>host</th><th>queues</th>"
            "<th>busy</th><th>compiles</th><th>up</th></tr>"
            f"{workers}</table></section>")


def _age(now: float, since: object) -> str:
    if not isinstance(since, int | float):
        return "?"
    s = max(0, int(now - since))
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def _cache(stats: Any, error: str) -> str:
    if stats is None:
        text = f'<p class="bad">{e(error)}</p>' if error else "<p>no disk tier</p>"
        return f'<section><h2>Cache (disk tier)</h2>{text}</section>'
    return (
        '<section><h2>Cache (disk tier)</h2><table id="cache">'
        f'<tr><th>blobs</th><td class="n" id="cache-blobs">{e(stats.blobs)}</td></tr>'
        f'<tr><th>records</th><td class="n" id="cache-records">{e(stats.records)}</td></tr>'
        f'<tr><th>size</th><td class="n" id="cache-bytes" data-bytes="{e(stats.bytes)}">'
        f"{e(_size(stats.bytes))}</td></tr>"
        f'<tr><th>bound</th><td class="n">{e(_size(stats.max_size))}</td></tr>'
        f'<tr><th>pinned</th><td class="n">{e(stats.pinned)}</td></tr>'
        f"<tr><th>where</th><td><code>{e(stats.location)}</code></td></tr>"
        "</table></section>"
    )


def _targets(doc: dict[str, Any]) -> str:
    rows = "".join(
        f"<tr><td><b>{e(k.get('kind'))}</b></td><td><code>{e(k.get('default'))}</code></td>"
        f"<td>{e(', '.join(map(str, k.get('archs', []))))}</td>"
        f"<td>{e(len(k.get('aliases', {})))}</td></tr>"
        for k in doc.get("kinds", []))
    opts = "; ".join(f"{k}: {', '.join(map(str, v))}" for k, v in doc.get("options", {}).items())
    return ('<section class="wide"><h2>Targets</h2><table id="targets"><tr><th>kind</th>'
            "<th>default</th><th>archs</th><th>aliases</th></tr>"
            f'{rows}</table><p class="muted">options: {e(opts)}</p></section>')
