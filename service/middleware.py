"""One pure-ASGI layer in front of every route (no per-request task or body buffering, unlike
Starlette's ``BaseHTTPMiddleware``): request id, auth, the declared-size check, exception
containment, the access log and request metrics.

Each answered request counts once in ``kiln_requests_total{route,status,code}``: ``route`` is the
route template (also for the 401 and 413 answered here, before routing; ``unmatched`` when no
route has the path), ``code`` the error envelope's ``code`` (empty for a success).

Order per request: assign ``X-Request-ID`` → 401 if a token is needed and missing/wrong → 413 if
``Content-Length`` exceeds the limit (the body is never read; bodies without a length are counted
while they stream, see ``limits.read_body``) → the app. An exception escaping the app is logged
with its traceback and answered 500 ``internal`` if no response has started; the client never
sees the traceback.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Sequence
from typing import Any

from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kiln.errors import TooLarge, Unauthorized

from .auth import TokenAuth
from .errors import CODE_KEY, internal_error, note_code, send_error
from .logs import log_fields
from .metrics import Metrics

__all__ = ["KilnMiddleware"]

log = logging.getLogger("kiln.service.access")
_RID_OK = re.compile(rb"^[A-Za-z0-9._:\-]{1,128}$")


class KilnMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        *,
        auth: TokenAuth,
        metrics: Metrics,
        max_request_bytes: int,
        access_log: bool = True,
        routes: Sequence[BaseRoute] = (),
    ) -> None:
        """``routes``: the app's routes, to name the route of a request answered here."""
        self.app = app
        self.routes = tuple(routes)
        self.auth = auth
        self.metrics = metrics
        self.max_request_bytes = max_request_bytes
        self.access_log = access_log

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        t0 = time.perf_counter()
        rid = b""
        authz: bytes | None = None
        length: bytes | None = None
        for k, v in scope["headers"]:
            if k == b"x-request-id":
                rid = v
            elif k == b"authorization":
                authz = v
            elif k == b"content-length":
                length = v
        if not _RID_OK.match(rid):
            rid = uuid.uuid4().hex.encode()
        fields = log_fields(scope)
        fields["request_id"] = rid.decode()
        status = 0
        started = False

        async def send_wrapped(message: Message) -> None:
            nonlocal status, started
            if message["type"] == "http.response.start":
                started = True
                status = message["status"]
                message["headers"] = [*message.get("headers", ()), (b"x-request-id", rid)]
            await send(message)

        head = scope["method"] == "HEAD"
        fast_template: str | None = None
        try:
            if self.auth.needed(scope["path"]) and not self.auth.allows(authz):
                note_code(scope, Unauthorized.code)
                await send_error(
                    send_wrapped,
                    Unauthorized("a valid 'Authorization: Bearer <token>' header is required"),
                    head=head,
                )
            elif length is not None and _too_long(length, self.max_request_bytes):
                note_code(scope, TooLarge.code)
                await send_error(
                    send_wrapped,
                    TooLarge(
                        f"the request body exceeds {self.max_request_bytes} bytes",
                        detail={"max_request_bytes": self.max_request_bytes},
                    ),
                    head=head,
                )
            elif (fast := self._fast_artifact(scope, head)) is not None:
                # Hot path: an artifact already in the memory tier, answered without routing.
                fast_template = "/v1/artifacts/{hex}"
                code, headers, body = fast
                await send_wrapped(
                    {"type": "http.response.start", "status": code, "headers": headers}
                )
                await send_wrapped({"type": "http.response.body", "body": body})
            else:
                await self.app(scope, receive, send_wrapped)
        except Exception:
            log.exception("unhandled error", extra={"request_id": rid.decode()})
            if not started:
                note_code(scope, "internal")
                await send_error(send_wrapped, internal_error(), head=head)
            status = status or 500
        finally:
            template = fast_template or _template(scope, self.routes)
            error_code = str(scope.get(CODE_KEY, "")) if status >= 400 else ""
            self.metrics.requests.labels(template, str(status), error_code).inc()
            if self.access_log:
                _log_access(scope, template, status, time.perf_counter() - t0, fields)


    def _fast_artifact(
        self, scope: Scope, head: bool
    ) -> tuple[int, list[tuple[bytes, bytes]], bytes] | None:
        if scope["method"] not in ("GET", "HEAD"):
            return None
        path: str = scope["path"]
        if not path.startswith(_ARTIFACTS) or len(path) != _ARTIFACT_PATH_LEN:
            return None
        app = scope.get("app")
        service = getattr(getattr(app, "state", None), "kiln", None)
        if service is None:
            return None
        inm = None
        for k, v in scope["headers"]:
            if k == b"if-none-match":
                inm = v
            elif k == b"range":
                return None  # a partial answer: ArtifactServer.respond decides
        return service.artifacts.fast(path[len(_ARTIFACTS) :], head=head, if_none_match=inm)


def _template(scope: Scope, routes: Sequence[BaseRoute]) -> str:
    """The path template of the route that answered, or of the route the path names when the
    answer came before routing (401, 413); ``unmatched`` when no route has this path."""
    path = getattr(scope.get("route"), "path", None)
    if path:
        return str(path)
    for route in routes:
        regex = getattr(route, "path_regex", None)
        if regex is not None and regex.match(scope["path"]):
            return str(getattr(route, "path", "unmatched"))
    return "unmatched"


_ARTIFACTS = "/v1/artifacts/"
_ARTIFACT_PATH_LEN = len(_ARTIFACTS) + 64


def _too_long(length: bytes, limit: int) -> bool:
    try:
        return int(length) > limit
    except ValueError:
        return False  # the HTTP server has already refused a malformed Content-Length


def _log_access(
    scope: Scope, template: str, status: int, seconds: float, fields: dict[str, Any]
) -> None:
    extra = dict(fields)
    extra.update(
        method=scope["method"], route=template, status=status, seconds=round(seconds, 6)
    )
    log.info("request", extra=extra)
