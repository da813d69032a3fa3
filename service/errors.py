"""The one place where errors become HTTP responses: ``{"error": {"code", "message", "detail"}}``.

Every route answers errors in this envelope, whatever raised them:

* a :class:`kiln.errors.KilnError` → its ``http_status`` and ``code`` (``Overloaded`` adds
  ``Retry-After``, ``Unauthorized`` adds ``WWW-Authenticate``);
* FastAPI/pydantic validation errors → 400 ``invalid_request`` (locations and messages only, never
  the offending input echoed back);
* Starlette's HTTP errors: unknown route → 404 ``not_found``, wrong method → 405
  ``invalid_request`` with ``Allow``, anything else → its status with ``invalid_request``;
* anything unexpected → 500 ``internal`` with a generic message; the traceback goes to the log,
  never to the client.

Every envelope's ``message`` and ``detail`` pass through ``kiln.redact.redact``: no path of the
server's install, source tree, cache or temporary directories reaches a client (a path under
one becomes its file name, so a compiler's ``input.mlir:3:5`` stays readable).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response
from starlette.types import Scope, Send

from kiln.errors import KilnError, Overloaded, Unauthorized
from kiln.redact import add_private_path, redact

__all__ = [
    "CODE_KEY",
    "ERROR_RESPONSES",
    "ErrorEnvelope",
    "error_headers",
    "error_response",
    "error_responses",
    "install_error_handlers",
    "note_code",
    "send_error",
]

log = logging.getLogger("kiln.service")


class ErrorInfo(BaseModel):
    code: str = Field(
        description="stable machine-readable code: invalid_request, invalid_graph, "
        "unsupported_target, compile_failed, compile_timeout, too_large, unauthorized, "
        "overloaded, not_found, internal, insufficient_storage, incompatible_runtime, "
        "integrity_error, tuning_forbidden, tuning_rejected, tuning_outlier; cache_unavailable "
        "(only /readyz: the cache directory, Redis or S3 is not usable)",
        examples=["unsupported_target"],
    )
    message: str = Field(description="one human-readable sentence")
    detail: Any = Field(None, description="code-specific detail (diagnostics, valid values, ...)")


class ErrorEnvelope(BaseModel):
    """The body of every error response."""

    error: ErrorInfo


_DESCRIPTIONS: dict[int, str] = {
    400: "invalid_request, invalid_graph or unsupported_target",
    401: "unauthorized: missing or wrong bearer token (only when tokens are configured)",
    403: "tuning_forbidden: tuning records from unauthenticated clients (a server without "
    "tokens, unless KILN_TUNING_ACCEPT=any)",
    404: "not_found",
    408: "invalid_request: the request headers or body did not arrive within the timeout, or "
    "the body arrived below the minimum rate (upload_min_bytes_per_second)",
    409: "incompatible_runtime: X-Kiln-Runtime names a runtime that cannot load this "
    "server's executables (detail.supported lists those it can serve)",
    413: "too_large: the request body (or the graph's canonical form) exceeds the limit",
    416: "invalid_request: the Range starts past the end of the executable",
    422: "compile_failed or compile_timeout (every target failed; each target's error in "
    "detail.errors)",
    429: "overloaded (with Retry-After): this client's share is full",
    500: "internal",
    503: "overloaded (with Retry-After): a queue, a budget or this client's connections are "
    "full",
    507: "insufficient_storage: built, but the cache had no space to keep it",
}

_HEADERS: dict[int, dict[str, Any]] = {
    401: {"WWW-Authenticate": {"schema": {"type": "string"}, "required": True}},
    416: {"Content-Range": {"schema": {"type": "string"}, "required": True,
                            "description": "bytes */SIZE"}},
    503: {"Retry-After": {"schema": {"type": "string", "pattern": r"^\d+$"},
                          "description": "seconds"}},
}


def error_responses(*statuses: int, **descriptions: str) -> dict[int | str, dict[str, Any]]:
    """``responses=`` for a route decorator: each error status a route can answer, with the
    envelope as its body (``descriptions``, keyed ``s503=...``, override the default text)."""
    out: dict[int | str, dict[str, Any]] = {}
    for status in statuses:
        doc: dict[str, Any] = {
            "model": ErrorEnvelope,
            "description": descriptions.get(f"s{status}", _DESCRIPTIONS[status]),
        }
        if status in _HEADERS:
            doc["headers"] = _HEADERS[status]
        out[status] = doc
    return out


#: Every error status, each with the envelope.
ERROR_RESPONSES = error_responses(*_DESCRIPTIONS)

#: Where the middleware finds the ``code`` of an error answered inside the app (metrics label).
CODE_KEY = "kiln.error_code"


def note_code(scope: Scope, code: str) -> None:
    """Record the error ``code`` a response carries, for the request counter."""
    scope[CODE_KEY] = code


def error_headers(exc: KilnError) -> dict[str, str]:
    headers: dict[str, str] = {}
    if isinstance(exc, Overloaded):
        headers["Retry-After"] = str(max(1, round(exc.retry_after)))
    if isinstance(exc, Unauthorized):
        headers["WWW-Authenticate"] = 'Bearer realm="kiln"'
    if getattr(exc, "close_connection", False):
        # The request's body was left unread: the connection cannot carry another request.
        headers["Connection"] = "close"
    return headers


def _body(code: str, message: str, detail: Any) -> bytes:
    env = {"error": {"code": code, "message": redact(message), "detail": redact(detail)}}
    return json.dumps(env, separators=(",", ":"), default=str).encode()


def error_response(
    exc: KilnError, *, status: int | None = None, headers: dict[str, str] | None = None
) -> Response:
    """The envelope response for ``exc`` (``status`` overrides its ``http_status``)."""
    h = error_headers(exc)
    h.update(headers or {})
    return Response(
        _body(exc.code, exc.message, exc.detail),
        status_code=status or exc.http_status,
        headers=h,
        media_type="application/json",
    )


async def send_error(send: Send, exc: KilnError, *, head: bool = False) -> None:
    """Answer ``exc`` straight on an ASGI ``send`` (for middleware, before any routing)."""
    body = _body(exc.code, exc.message, exc.detail)
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    headers += [(k.lower().encode(), v.encode()) for k, v in error_headers(exc).items()]
    await send({"type": "http.response.start", "status": exc.http_status, "headers": headers})
    await send({"type": "http.response.body", "body": b"" if head else body})


def _allowed(request: Request) -> str:
    """Every method some route serves at this path (Starlette's 405 names only the first route
    that matched the path, and a path may have a route per method)."""
    from starlette.routing import Match

    methods: set[str] = set()
    for route in request.app.router.routes:
        match, _ = route.matches({**request.scope, "method": "GET"})
        if match is not Match.NONE:
            methods |= set(getattr(route, "methods", None) or ())
    return ", ".join(sorted(methods))


def internal_error() -> KilnError:
    return KilnError("internal server error; the request id in X-Request-ID locates it in the log")


def install_error_handlers(app: FastAPI, *, private_paths: Sequence[str | Path] = ()) -> None:
    """The envelope for every error of ``app``; ``private_paths`` (the cache directory, the home
    directory) join the directories no error may name (module docstring)."""
    for path in private_paths:
        add_private_path(path)

    @app.exception_handler(KilnError)
    async def _kiln(request: Request, exc: KilnError) -> Response:
        note_code(request.scope, exc.code)
        return error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> Response:
        note_code(request.scope, "invalid_request")
        errors = [
            {"loc": list(e.get("loc", ())), "msg": str(e.get("msg", "")), "type": e.get("type")}
            for e in exc.errors()
        ]
        return Response(
            _body("invalid_request", "the request does not validate", {"errors": errors}),
            status_code=400,
            media_type="application/json",
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> Response:
        if exc.status_code == 404:
            code, msg = "not_found", f"no route {request.url.path[:200]!r}"
        elif exc.status_code == 405:
            code, msg = "invalid_request", f"method {request.method} not allowed here"
        else:
            code, msg = "invalid_request", str(exc.detail)[:500]
        note_code(request.scope, code)
        headers = dict(exc.headers or {})
        if exc.status_code == 405:
            headers["Allow"] = _allowed(request)
        return Response(
            _body(code, msg, None),
            status_code=exc.status_code,
            headers=headers,
            media_type="application/json",
        )

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> Response:
        log.error(
            "unhandled error on %s %s", request.method, request.url.path, exc_info=exc
        )
        err = internal_error()
        note_code(request.scope, err.code)
        return error_response(err)
