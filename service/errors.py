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
"""

from __future__ import annotations

import json
import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response
from starlette.types import Send

from kiln.errors import KilnError, Overloaded, Unauthorized

__all__ = [
    "ERROR_RESPONSES",
    "ErrorEnvelope",
    "error_headers",
    "error_response",
    "install_error_handlers",
    "send_error",
]

log = logging.getLogger("kiln.service")


class ErrorInfo(BaseModel):
    code: str = Field(
        description="stable machine-readable code: invalid_request, invalid_graph, "
        "unsupported_target, compile_failed, compile_timeout, too_large, unauthorized, "
        "overloaded, not_found, internal, insufficient_storage, incompatible_runtime, "
        "integrity_error; cache_unavailable (only /readyz: the cache "
        "directory or Redis is not usable)",
        examples=["unsupported_target"],
    )
    message: str = Field(description="one human-readable sentence")
    detail: Any = Field(None, description="code-specific detail (diagnostics, valid values, ...)")


class ErrorEnvelope(BaseModel):
    """The body of every error response."""

    error: ErrorInfo


def _doc(description: str) -> dict[str, Any]:
    return {"model": ErrorEnvelope, "description": description}


#: ``responses=`` for route decorators, so the envelope is in the OpenAPI document.
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: _doc("invalid_request, invalid_graph or unsupported_target"),
    401: _doc("unauthorized: missing or wrong bearer token"),
    404: _doc("not_found"),
    409: _doc("incompatible_runtime: X-Kiln-Runtime names a runtime that cannot load this "
              "server's executables (detail.supported lists those it can serve)"),
    413: _doc("too_large: the request body exceeds the limit"),
    422: _doc("compile_failed or compile_timeout (every target failed)"),
    500: _doc("internal"),
    507: _doc("insufficient_storage: built, but the cache had no space to keep it"),
    503: _doc("overloaded (with Retry-After); /readyz: cache_unavailable or internal"),
}


def error_headers(exc: KilnError) -> dict[str, str]:
    headers: dict[str, str] = {}
    if isinstance(exc, Overloaded):
        headers["Retry-After"] = str(max(1, round(exc.retry_after)))
    if isinstance(exc, Unauthorized):
        headers["WWW-Authenticate"] = 'Bearer realm="kiln"'
    return headers


def _body(code: str, message: str, detail: Any) -> bytes:
    env = {"error": {"code": code, "message": message, "detail": detail}}
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


def internal_error() -> KilnError:
    return KilnError("internal server error; the request id in X-Request-ID locates it in the log")


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(KilnError)
    async def _kiln(_: Request, exc: KilnError) -> Response:
        return error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> Response:
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
        return Response(
            _body(code, msg, None),
            status_code=exc.status_code,
            headers=dict(exc.headers or {}),
            media_type="application/json",
        )

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> Response:
        log.error(
            "unhandled error on %s %s", request.method, request.url.path, exc_info=exc
        )
        err = internal_error()
        return error_response(err)
