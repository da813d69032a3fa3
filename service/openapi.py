"""The API's own description: ``GET /openapi.json`` and the Swagger UI at ``GET /docs``.

The document is FastAPI's, completed where FastAPI cannot see the API:

* ``POST /v1/compile`` reads its body itself (JSON or raw bytes), so the models of the JSON form
  (``CompileRequest`` and what it refers to) are added to ``components.schemas``, and so are
  ``TuningRecordIn``'s (``POST /v1/tuning`` reads its body under its own size limit): every
  ``$ref`` in the document resolves;
* with tokens configured, a bearer ``securityScheme`` and, on every operation but the probes
  and the status page (which signs in with a form, service/status.py), the requirement to use
  it (without tokens the server asks for none, and the document says so).

Swagger UI's script and stylesheet are served from ``service/static/swagger-ui/`` (Swagger UI
5, vendored with its license; its README says where from and how to update it), never from a
CDN, so ``/docs`` works offline. ``/docs``, its assets and ``/openapi.json`` are routes like any
other: they need a token when tokens are configured, and they are counted under their own names.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter, FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.openapi.utils import get_openapi
from pydantic.json_schema import models_json_schema
from starlette.responses import FileResponse, JSONResponse, Response

from kiln.errors import NotFound

from .auth import OPEN_PATHS, PAGE_PATHS
from .types import CompileRequest, TuningRecordIn

__all__ = ["SWAGGER_UI", "build_openapi", "install_openapi"]

#: Swagger UI's files (Apache-2.0, see LICENSE and NOTICE there).
SWAGGER_UI = Path(__file__).resolve().parent / "static" / "swagger-ui"
_ASSETS = {
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "swagger-ui.css": "text/css; charset=utf-8",
    "favicon-32x32.png": "image/png",
}
_REF = "#/components/schemas/{model}"


def build_openapi(app: FastAPI, *, auth: bool) -> dict[str, Any]:
    """The OpenAPI 3.1 document of ``app`` (see the module docstring)."""
    doc = get_openapi(
        title=app.title,
        version=app.version,
        summary=app.summary,
        description=app.description,
        routes=app.routes,
    )
    schemas: dict[str, Any] = doc.setdefault("components", {}).setdefault("schemas", {})
    _, defs = models_json_schema(
        [(CompileRequest, "validation"), (TuningRecordIn, "validation")], ref_template=_REF
    )
    for name, schema in defs.get("$defs", {}).items():
        schemas.setdefault(name, schema)
    # Validation errors are 400 in the envelope (errors.py), never FastAPI's default 422 body.
    for ops in doc["paths"].values():
        for op in ops.values():
            resp = op.get("responses", {}).get("422", {})
            if "HTTPValidationError" in str(resp):
                del op["responses"]["422"]
    for name in ("HTTPValidationError", "ValidationError"):
        schemas.pop(name, None)
    if auth:
        doc["components"]["securitySchemes"] = {
            "bearer": {"type": "http", "scheme": "bearer",
                       "description": "one of the server's tokens (KILN_TOKENS, KILN_TOKENS_FILE)"}
        }
        for path, ops in doc["paths"].items():
            if path in OPEN_PATHS or path in PAGE_PATHS:
                continue
            for op in ops.values():
                op["security"] = [{"bearer": []}]
    else:
        for ops in doc["paths"].values():
            for op in ops.values():
                op.get("responses", {}).pop("401", None)
    return doc


def install_openapi(app: FastAPI, *, auth: bool) -> APIRouter:
    """Serve ``/openapi.json``, ``/docs`` and Swagger UI's assets from ``app`` (which must be
    built with ``openapi_url=None, docs_url=None, redoc_url=None``); returns their router."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = build_openapi(app, auth=auth)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    router = APIRouter(include_in_schema=False)

    @router.get("/openapi.json")
    async def openapi_json() -> Response:
        return JSONResponse(openapi())

    @router.get("/docs")
    async def swagger_ui() -> Response:
        return get_swagger_ui_html(
            openapi_url="/openapi.json",
            title=f"{app.title} {app.version}: API",
            swagger_js_url="/docs/swagger-ui-bundle.js",
            swagger_css_url="/docs/swagger-ui.css",
            swagger_favicon_url="/docs/favicon-32x32.png",
            oauth2_redirect_url=None,
            # No badge that sends the document to validator.swagger.io.
            swagger_ui_parameters={"validatorUrl": None},
        )

    @router.get("/docs/{asset}")
    async def swagger_ui_asset(asset: str) -> Response:
        media_type = _ASSETS.get(asset)
        if media_type is None:
            raise NotFound(f"no file {asset[:64]!r} under /docs")
        path = SWAGGER_UI / asset
        if not path.is_file():
            raise NotFound(f"Swagger UI's {asset} is not installed (expected at {path})")
        return FileResponse(
            path, media_type=media_type,
            headers={"Cache-Control": "public, max-age=86400"},
        )

    app.include_router(router)
    return router
