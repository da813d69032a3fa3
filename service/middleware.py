"""One pure-ASGI layer in front of every route (no per-request task or body buffering, unlike
Starlette's ``BaseHTTPMiddleware``): request id, auth, the declared-size check, exception
containment, the access log and request metrics.

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
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kiln.errors import TooLarge, Unauthorized

from .auth import TokenAuth
from .errors import internal_error, send_error
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
    ) -> None:
        self.app = app
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
                await send_error(
                    send_wrapped,
                    Unauthorized("a valid 'Authorization: Bearer <token>' header is required"),
                    head=head,
                )
            elif length is not None and _too_long(length, self.max_request_bytes):
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
        except Exception:  # noqa: BLE001 - contain everything; the log has the traceback
            log.exception("unhandled error", extra={"request_id": rid.decode()})
            if not started:
                await send_error(send_wrapped, internal_error(), head=head)
            status = status or 500
        finally:
            route = scope.get("route")
            template = (
                fast_template
                or getattr(route, "path", None)
                or ("unmatched" if status == 404 else "-")
            )
            self.metrics.requests.labels(template, str(status)).inc()
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
