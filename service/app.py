"""``create_app(settings) -> FastAPI``: the Kiln daemon (routes of docs/api.md).

Nothing is built at import time. The app's lifespan builds the process's ``Service`` (cache,
worker pools), starts the workers and, on shutdown — after the server has stopped
accepting and in-flight requests have had ``shutdown_timeout`` seconds — cancels queued compiles,
gives running ones the pool's grace period and stops the workers.

``app_from_env()`` is the factory the HTTP worker processes of ``kiln serve --http-workers N``
call (settings from ``KILN_*``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio.to_thread
from fastapi import FastAPI

from kiln import __version__
from kiln.cache import default_cache_dir

from .auth import TokenAuth
from .errors import install_error_handlers
from .logs import configure_logging
from .metrics import Metrics
from .middleware import KilnMiddleware
from .openapi import install_openapi
from .routes import router
from .service import Service
from .settings import Settings
from .status import install_status

__all__ = ["app_from_env", "create_app"]


def create_app(settings: Settings | None = None) -> FastAPI:
    """The ASGI app. Raises OSError if ``settings.tokens_file`` is unreadable (it never starts
    open by accident). The cache and worker pools are built when the server starts (lifespan),
    in the process that serves."""
    settings = settings or Settings()
    auth = TokenAuth(settings.token_set())
    metrics = Metrics()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        service = Service(settings, metrics=metrics, auth=auth)
        app.state.kiln = service
        service.start()
        try:
            yield
        finally:
            await service.jobs.close()  # stop driving; another replica takes the jobs over
            await anyio.to_thread.run_sync(service.close)

    app = FastAPI(
        title="Kiln",
        version=__version__,
        summary="Tensor graphs in (ONNX, MLIR), IREE executables out.",
        description=(
            "Every error answers `{\"error\": {\"code\", \"message\", \"detail\"}}` "
            "(schema ErrorEnvelope). With tokens configured every route but /healthz, "
            "/readyz and the status page (/, /login) needs `Authorization: Bearer <token>`."
        ),
        lifespan=lifespan,
        # No 307 to a path's slashed twin: Starlette builds that Location from the Host header.
        # An unknown path is 404 ``not_found`` like any other.
        redirect_slashes=False,
        # Served by install_openapi: Swagger UI from local files, no CDN; no ReDoc.
        openapi_url=None,
        docs_url=None,
        redoc_url=None,
    )
    install_error_handlers(app, private_paths=[
        settings.cache_dir if settings.cache_dir is not None else default_cache_dir(), Path.home()])
    app.include_router(router)
    page = install_status(app, auth=auth)
    docs = install_openapi(app, auth=auth.enabled)
    app.add_middleware(
        KilnMiddleware,
        auth=auth,
        metrics=metrics,
        max_request_bytes=settings.max_request_bytes,
        access_log=settings.access_log,
        routes=[*router.routes, *page.routes, *docs.routes],
    )
    return app


def app_from_env() -> FastAPI:
    settings = Settings()
    configure_logging(settings.log_level)
    return create_app(settings)
