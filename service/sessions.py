"""Signing in to the status page: ``Sessions`` (the cookie), ``LoginThrottle`` (wrong tokens),
and ``Login``, which serves ``POST /login`` and ``POST /logout`` and says whether a request is
signed in.

Auth. Without tokens the page is public. With tokens, ``GET /`` shows a login form and nothing
else until ``POST /login`` (a form with ``token``) has set a session cookie: ``HttpOnly``,
``SameSite=Strict``, ``Path=/``, the value a random session id and its HMAC under a key of this
process. Sessions live here (``Sessions``: at most 1024, each 12 hours, oldest out first); a
restart ends them all, and with ``--http-workers N`` each process knows only its own, so another
process asks for the token again. The cookie grants the page and nothing else: the middleware
never reads it, every API route keeps requiring the bearer header (which ``GET /`` accepts too).
``POST /logout`` ends the session and clears the cookie. Both form posts refuse a cross-site
request (403: a ``Sec-Fetch-Site`` other than ``same-origin``, or an ``Origin`` other than the
page's own; see ``cross_site``), so another site can neither sign a browser in with its own
token nor out. Wrong tokens are throttled (``LoginThrottle``): 429 with ``Retry-After`` after 5
failures from one address within a minute, or 100 from all addresses, until the minute has
passed. Without tokens there is nothing to sign in to: ``POST /login`` still wants the form (400
without it) and answers 303 to the public page.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from urllib.parse import parse_qs

from fastapi import APIRouter, Request
from starlette.responses import Response

from .auth import TokenAuth
from .errors import error_responses, note_code
from .limits import read_body
from .pages import OPENAPI_HTML, html_response, login_page

__all__ = ["COOKIE", "Login", "LoginThrottle", "Sessions", "cross_site"]

COOKIE = "kiln_session"
LOGIN_MAX_BYTES = 4096


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


class Login:
    """The sign-in of one process: its sessions and throttle, for ``auth``'s tokens."""

    def __init__(self, auth: TokenAuth) -> None:
        self.auth = auth
        self.sessions = Sessions()
        self.throttle = LoginThrottle()

    def signed_in(self, request: Request) -> bool:
        """No tokens configured, a bearer header with one, or a live session cookie."""
        if not self.auth.enabled:
            return True
        header = request.headers.get("authorization")
        if header and self.auth.allows(header.encode()):
            return True
        return self.sessions.valid(request.cookies.get(COOKIE))

    def install(self, router: APIRouter) -> None:
        """``POST /login`` and ``POST /logout`` on ``router``."""
        @router.post(
            "/login",
            response_class=Response,
            status_code=303,
            responses={
                303: {**OPENAPI_HTML, "description": "signed in: to / with the session cookie",
                      "headers": {
                          "Location": {"schema": {"type": "string"}, "required": True},
                          "Set-Cookie": {"schema": {"type": "string"},
                                         "description": "kiln_session=...; HttpOnly; "
                                         "SameSite=Strict; Path=/ (only with tokens configured)"},
                      }},
                400: {**OPENAPI_HTML, "description": "not a form with one token"},
                403: {**OPENAPI_HTML, "description": "that token is not accepted (the form again), or a "
                      "cross-site request"},
                429: {**OPENAPI_HTML, "description": "too many wrong tokens lately: try again after "
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
            if cross_site(request):
                note_code(request.scope, "unauthorized")
                return html_response(login_page("Sign in from this server's own page."), status=403)
            address = request.client.host if request.client else ""
            wait = self.throttle.retry_after(address)
            if wait > 0:
                note_code(request.scope, "unauthorized")
                resp = html_response(login_page("Too many wrong tokens: try again later."), status=429)
                resp.headers["Retry-After"] = str(max(1, round(wait)))
                return resp
            body = await read_body(request, limit=LOGIN_MAX_BYTES)
            ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
            token = form_token(body) if ctype == "application/x-www-form-urlencoded" else None
            if token is None:
                note_code(request.scope, "invalid_request")
                return html_response(login_page("Send the form with one token."), status=400)
            if not self.auth.enabled:
                return signed_in_redirect(None)
            if not self.auth.allows(b"Bearer " + token.encode()):
                self.throttle.failed(address)
                note_code(request.scope, "unauthorized")
                return html_response(login_page("That token is not accepted."), status=403)
            cookie = self.sessions.new()
            return signed_in_redirect(
                f"{COOKIE}={cookie}; Max-Age={int(self.sessions.ttl)}; Path=/; HttpOnly; "
                "SameSite=Strict" + ("; Secure" if request.url.scheme == "https" else "")
            )

        @router.post(
            "/logout",
            response_class=Response,
            status_code=303,
            responses={
                303: {**OPENAPI_HTML, "description": "signed out: to / with the session cookie cleared",
                      "headers": {"Location": {"schema": {"type": "string"}, "required": True}}},
                403: {**OPENAPI_HTML, "description": "a cross-site request"},
                **error_responses(500, 503),
            },
            summary="Sign out of the status page: the session ends, the cookie is cleared",
            operation_id="status_logout",
        )
        async def logout(request: Request) -> Response:
            if cross_site(request):
                note_code(request.scope, "unauthorized")
                return html_response(login_page("Sign out from this server's own page."), status=403)
            self.sessions.end(request.cookies.get(COOKIE))
            resp = html_response('<!doctype html><meta charset="utf-8"><title>Kiln</title>'
                         '<a href="/">Signed out</a>', status=303)
            resp.headers["Location"] = "/"
            resp.headers["Set-Cookie"] = (f"{COOKIE}=; Max-Age=0; Path=/; HttpOnly; SameSite=Strict"
                                          + ("; Secure" if request.url.scheme == "https" else ""))
            return resp


def cross_site(request: Request) -> bool:
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


def form_token(body: bytes) -> str | None:
    try:
        form = parse_qs(body.decode("utf-8"), max_num_fields=8, strict_parsing=False)
    except (UnicodeDecodeError, ValueError):
        return None
    values = form.get("token", [])
    if len(values) != 1 or not values[0].strip():
        return None
    return values[0].strip()


def signed_in_redirect(cookie: str | None) -> Response:
    resp = html_response('<!doctype html><meta charset="utf-8"><title>Kiln</title>'
                 '<a href="/">Signed in: the status page</a>', status=303)
    resp.headers["Location"] = "/"
    if cookie:
        resp.headers["Set-Cookie"] = cookie
    return resp
