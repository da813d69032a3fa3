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

Auth. Without tokens the page is public. With tokens, ``GET /`` shows a login form and nothing
else until ``POST /login`` (a form with ``token``) has set a session cookie: ``HttpOnly``,
``SameSite=Strict``, ``Path=/``, the value a random session id and its HMAC under a key of this
process. Sessions live here (``Sessions``: at most 1024, each 12 hours, oldest out first); a
restart ends them all, and with ``--http-workers N`` each process knows only its own, so another
process asks for the token again. The cookie grants the page and nothing else: the middleware
never reads it, every API route keeps requiring the bearer header (which ``GET /`` accepts too).
``POST /logout`` ends the session and clears the cookie. Both form posts refuse a cross-site
request (403: a ``Sec-Fetch-Site`` other than ``same-origin``, or an ``Origin`` other than the
page's own; see ``_cross_site``), so another site can neither sign a browser in with its own
token nor out. Wrong tokens are throttled (``LoginThrottle``): 429 with ``Retry-After`` after 5
failures from one address within a minute, or 100 from all addresses, until the minute has
passed. Without tokens there is nothing to sign in to: ``POST /login`` still wants the form (400
without it) and answers 303 to the public page.
Everything rendered is escaped; ``Content-Security-Policy`` allows no script, no request and
only inline styles.
"""

from __future__ import annotations

import hashlib
import hmac
import html
import json
import os
import secrets
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

import anyio.to_thread
from fastapi import APIRouter, FastAPI, Request
from starlette.responses import HTMLResponse, Response

from kiln import __version__

from .auth import TokenAuth
from .errors import error_responses, note_code
from .limits import read_body

if TYPE_CHECKING:
    from kiln.compiler.pipeline import CompileResult

    from .service import Service

__all__ = ["Activity", "Answer", "ClusterView", "Sessions", "cluster_view", "install_status"]

COOKIE = "kiln_session"
CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
_HEADERS = {
    "Content-Security-Policy": CSP,
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
_REFRESH_SECONDS = 15
_LOGIN_MAX_BYTES = 4096
_STATS_SECONDS = 15.0


# -- what the page remembers ------------------------------------------------------------------


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


class Sessions:
    """Status-page sessions (see the module docstring). The cookie is ``<id>.<hmac>``: a forged
    or edited one fails the HMAC before any lookup; an unknown, expired or evicted id is no
    session."""

    def __init__(self, *, ttl: float = 12 * 3600, max_entries: int = 1024,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self.max_entries = max_entries
        self._clock = clock
        self._key = secrets.token_bytes(32)
        self._lock = threading.Lock()
        self._live: OrderedDict[str, float] = OrderedDict()  # id -> expiry (clock seconds)

    def _sign(self, sid: str) -> str:
        return hmac.new(self._key, sid.encode(), hashlib.sha256).hexdigest()

    def new(self) -> str:
        """A new session; returns the cookie value."""
        sid = secrets.token_urlsafe(32)
        now = self._clock()
        with self._lock:
            for old in [s for s, exp in self._live.items() if exp <= now]:
                del self._live[old]
            self._live[sid] = now + self.ttl
            while len(self._live) > self.max_entries:
                self._live.popitem(last=False)
        return f"{sid}.{self._sign(sid)}"

    def valid(self, cookie: str | None) -> bool:
        if not cookie or len(cookie) > 256:
            return False
        sid, dot, sig = cookie.partition(".")
        if not dot or not hmac.compare_digest(sig.encode(), self._sign(sid).encode()):
            return False
        with self._lock:
            exp = self._live.get(sid)
            if exp is None:
                return False
            if exp <= self._clock():
                del self._live[sid]
                return False
        return True

    def end(self, cookie: str | None) -> None:
        """Forget the session of ``cookie`` (a valid one; anything else is ignored)."""
        if self.valid(cookie):
            assert cookie is not None
            with self._lock:
                self._live.pop(cookie.partition(".")[0], None)

    def __len__(self) -> int:
        return len(self._live)


class LoginThrottle:
    """Failed sign-ins per address and in all, over a sliding ``window`` (seconds). ``retry_after``
    is 0 while an address may try again, else the seconds until its oldest counted failure (or the
    oldest of all, past ``total``) leaves the window. Remembers at most ``max_addresses``
    addresses (oldest out first)."""

    def __init__(self, *, per_address: int = 5, total: int = 100, window: float = 60.0,
                 max_addresses: int = 4096, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_address = per_address
        self.total = total
        self.window = window
        self.max_addresses = max_addresses
        self._clock = clock
        self._lock = threading.Lock()
        self._by_address: OrderedDict[str, deque[float]] = OrderedDict()
        self._all: deque[float] = deque()

    def _expire(self, times: deque[float], now: float) -> None:
        while times and times[0] <= now - self.window:
            times.popleft()

    def retry_after(self, address: str) -> float:
        now = self._clock()
        with self._lock:
            self._expire(self._all, now)
            mine = self._by_address.get(address, deque())
            self._expire(mine, now)
            waits = [0.0]
            if len(mine) >= self.per_address:
                waits.append(mine[0] + self.window - now)
            if len(self._all) >= self.total:
                waits.append(self._all[0] + self.window - now)
            return max(waits)

    def failed(self, address: str) -> None:
        now = self._clock()
        with self._lock:
            mine = self._by_address.pop(address, None) or deque()
            self._expire(mine, now)
            mine.append(now)
            self._by_address[address] = mine
            self._all.append(now)
            while len(self._by_address) > self.max_addresses:
                self._by_address.popitem(last=False)


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


_HTML = {"content": {"text/html": {"schema": {"type": "string"}}}}


def install_status(app: FastAPI, *, auth: TokenAuth) -> APIRouter:
    """Serve ``GET /``, ``POST /login`` and ``POST /logout`` from ``app``; returns their router."""
    sessions = Sessions()
    throttle = LoginThrottle()
    disk = _DiskStats()
    router = APIRouter()

    def signed_in(request: Request) -> bool:
        if not auth.enabled:
            return True
        header = request.headers.get("authorization")
        if header and auth.allows(header.encode()):
            return True
        return sessions.valid(request.cookies.get(COOKIE))

    @router.get(
        "/",
        response_class=Response,
        responses={200: {**_HTML, "description": "the status page; with tokens configured and "
                         "no session cookie (or bearer header), a login form and nothing else"},
                   **error_responses(500, 503)},
        summary="The status page (HTML): compiles, hit rate, queues, workers, cache, targets",
        description="For a browser. With tokens configured, sign in with POST /login; the "
        "session cookie it sets is good for this page only.",
        operation_id="status_page",
    )
    async def status_page(request: Request) -> Response:
        if not signed_in(request):
            return _html(_login_page())
        svc: Service = request.app.state.kiln
        page = await anyio.to_thread.run_sync(partial(_render, svc, disk, signed=auth.enabled))
        return _html(page)

    @router.post(
        "/login",
        response_class=Response,
        status_code=303,
        responses={
            303: {**_HTML, "description": "signed in: to / with the session cookie",
                  "headers": {
                      "Location": {"schema": {"type": "string"}, "required": True},
                      "Set-Cookie": {"schema": {"type": "string"},
                                     "description": "kiln_session=...; HttpOnly; "
                                     "SameSite=Strict; Path=/ (only with tokens configured)"},
                  }},
            400: {**_HTML, "description": "not a form with one token"},
            403: {**_HTML, "description": "that token is not accepted (the form again), or a "
                  "cross-site request"},
            429: {**_HTML, "description": "too many wrong tokens lately: try again after "
                  "Retry-After seconds",
                  "headers": {"Retry-After": {"schema": {"type": "integer"}, "required": True}}},
            **error_responses(408, 413, 500, 503),
        },
        summary="Sign in to the status page with one of the server's tokens",
        operation_id="status_login",
        openapi_extra={"requestBody": {"required": True, "content": {
            "application/x-www-form-urlencoded": {"schema": {
                "type": "object", "required": ["token"],
                "properties": {"token": {"type": "string", "minLength": 1,
                                         "maxLength": 1024}}}}}}},
    )
    async def login(request: Request) -> Response:
        if _cross_site(request):
            note_code(request.scope, "unauthorized")
            return _html(_login_page("Sign in from this server's own page."), status=403)
        address = request.client.host if request.client else ""
        wait = throttle.retry_after(address)
        if wait > 0:
            note_code(request.scope, "unauthorized")
            resp = _html(_login_page("Too many wrong tokens: try again later."), status=429)
            resp.headers["Retry-After"] = str(max(1, round(wait)))
            return resp
        body = await read_body(request, limit=_LOGIN_MAX_BYTES)
        ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
        token = _form_token(body) if ctype == "application/x-www-form-urlencoded" else None
        if token is None:
            note_code(request.scope, "invalid_request")
            return _html(_login_page("Send the form with one token."), status=400)
        if not auth.enabled:
            return _signed_in_redirect(None)
        if not auth.allows(b"Bearer " + token.encode()):
            throttle.failed(address)
            note_code(request.scope, "unauthorized")
            return _html(_login_page("That token is not accepted."), status=403)
        cookie = sessions.new()
        return _signed_in_redirect(
            f"{COOKIE}={cookie}; Max-Age={int(sessions.ttl)}; Path=/; HttpOnly; "
            "SameSite=Strict" + ("; Secure" if request.url.scheme == "https" else "")
        )

    @router.post(
        "/logout",
        response_class=Response,
        status_code=303,
        responses={
            303: {**_HTML, "description": "signed out: to / with the session cookie cleared",
                  "headers": {"Location": {"schema": {"type": "string"}, "required": True}}},
            403: {**_HTML, "description": "a cross-site request"},
            **error_responses(500, 503),
        },
        summary="Sign out of the status page: the session ends, the cookie is cleared",
        operation_id="status_logout",
    )
    async def logout(request: Request) -> Response:
        if _cross_site(request):
            note_code(request.scope, "unauthorized")
            return _html(_login_page("Sign out from this server's own page."), status=403)
        sessions.end(request.cookies.get(COOKIE))
        resp = _html('<!doctype html><meta charset="utf-8"><title>Kiln</title>'
                     '<a href="/">Signed out</a>', status=303)
        resp.headers["Location"] = "/"
        resp.headers["Set-Cookie"] = (f"{COOKIE}=; Max-Age=0; Path=/; HttpOnly; SameSite=Strict"
                                      + ("; Secure" if request.url.scheme == "https" else ""))
        return resp

    app.include_router(router)
    return router


def _cross_site(request: Request) -> bool:
    """A form post another site made the browser send. A browser's ``Sec-Fetch-Site`` decides
    when present (only ``same-origin`` and ``none``, a typed address, pass: the page's own
    ``Referrer-Policy: no-referrer`` makes browsers send ``Origin: null`` even from this page);
    else an ``Origin`` must be this server's own scheme, host and port. A request with neither
    (curl, an old browser) is not judged cross-site."""
    fetch_site = request.headers.get("sec-fetch-site")
    if fetch_site is not None:
        return fetch_site.strip().lower() not in ("same-origin", "none")
    origin = request.headers.get("origin")
    if origin is None:
        return False
    host = request.headers.get("host", "")
    return origin.rstrip("/").lower() != f"{request.url.scheme}://{host}".lower()


def _form_token(body: bytes) -> str | None:
    try:
        form = parse_qs(body.decode("utf-8"), max_num_fields=8, strict_parsing=False)
    except (UnicodeDecodeError, ValueError):
        return None
    values = form.get("token", [])
    if len(values) != 1 or not values[0].strip():
        return None
    return values[0].strip()


def _signed_in_redirect(cookie: str | None) -> Response:
    resp = _html('<!doctype html><meta charset="utf-8"><title>Kiln</title>'
                 '<a href="/">Signed in: the status page</a>', status=303)
    resp.headers["Location"] = "/"
    if cookie:
        resp.headers["Set-Cookie"] = cookie
    return resp


def _html(page: str, *, status: int = 200) -> Response:
    return HTMLResponse(page, status_code=status, headers=_HEADERS)


# -- rendering ---------------------------------------------------------------------------------


def e(value: object) -> str:
    """Every value that reaches the page goes through here."""
    return html.escape(str(value), quote=True)


_STYLE = """
body{font:14px/1.4 "DejaVu Sans",system-ui,sans-serif;margin:0;color:#1d2330;background:#f4f5f8}
header{background:#1d2330;color:#fff;padding:10px 24px;display:flex;gap:24px;align-items:baseline}
header h1{font-size:20px;margin:0}header span{color:#b8c0d0}
main{padding:12px 24px;display:grid;grid-template-columns:1fr 1fr;gap:16px}
section{background:#fff;border:1px solid #dde1ea;border-radius:6px;padding:10px 14px}
section.wide{grid-column:1/3}h2{font-size:15px;margin:0 0 8px}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:3px 8px 3px 0;
border-bottom:1px solid #eef0f4;font-size:13px;vertical-align:top}th{color:#5a6275;font-weight:600}
td.n{text-align:right;font-variant-numeric:tabular-nums}
.tiles{display:flex;gap:10px;flex-wrap:wrap}.tile{border:1px solid #dde1ea;border-radius:6px;
padding:6px 12px;flex:1 1 0;min-width:80px}.tile b{display:block;font-size:22px}.tile small{color:#5a6275}
.ok{color:#1a7f37}.bad{color:#c62828}.muted{color:#5a6275}code{font-size:12px}
form{display:flex;gap:8px;align-items:center}input{font:inherit;padding:4px 8px;width:320px}
"""


def _page(title: str, body: str, *, refresh: bool) -> str:
    meta = f'<meta http-equiv="refresh" content="{_REFRESH_SECONDS}">' if refresh else ""
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8">{meta}'
            f'<meta name="viewport" content="width=device-width">'
            f"<title>{e(title)}</title><style>{_STYLE}</style></head><body>{body}</body></html>")


def _login_page(problem: str = "") -> str:
    note = f'<p class="bad" id="login-error">{e(problem)}</p>' if problem else ""
    return _page("Kiln: sign in", (
        '<header><h1>Kiln</h1><span>status</span></header><main><section class="wide">'
        "<h2>Sign in</h2><p>This server needs a token to show its status.</p>"
        f'{note}<form method="post" action="/login"><label for="token">Token</label>'
        '<input id="token" name="token" type="password" autocomplete="current-password" '
        'required autofocus><button type="submit">Sign in</button></form></section></main>'
    ), refresh=False)


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
        _tile("cache-hits", _num(hits), "cache hits"),
        _tile("cache-misses", _num(misses), "cache misses"),
        _tile("hit-rate", rate, "hit rate"),
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
    return _page("Kiln status", "".join(body), refresh=True)


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
    return ('<section class="wide"><h2>Recent compiles</h2><table id="recent"><tr><th>time '
            "(UTC)</th><th>target</th><th>outcome</th><th>cached</th><th>compile s</th>"
            "<th>answer s</th><th>graph</th><th>error</th></tr>" + "".join(body)
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
