"""``kiln serve``: run the daemon (``kiln.service``) under uvicorn.

Every flag has a ``KILN_*`` environment variable (``--cache-dir`` ↔ ``KILN_CACHE_DIR``); a flag
given on the command line wins: it is exported into the environment before the settings are read,
so the HTTP worker processes of ``--http-workers N`` read the same settings. Tokens are taken
from ``KILN_TOKENS`` or ``--tokens-file`` only (a token on the command line would show in ``ps``).

Exit status: 0 after a clean shutdown (SIGINT/SIGTERM: stop accepting, let in-flight requests
finish for ``KILN_SHUTDOWN_TIMEOUT`` seconds, cancel queued compiles, stop the workers); 2 for
bad settings or an unreadable token file.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any, TextIO

__all__ = ["add_parser", "run"]

# flag dest -> environment variable
_FLAGS: dict[str, str] = {
    "host": "KILN_HOST",
    "port": "KILN_PORT",
    "cache_dir": "KILN_CACHE_DIR",
    "cache_max_bytes": "KILN_CACHE_MAX_BYTES",
    "redis_url": "KILN_REDIS_URL",
    "s3_url": "KILN_S3_URL",
    "workers": "KILN_WORKERS",
    "prepare_workers": "KILN_PREPARE_WORKERS",
    "compile_timeout": "KILN_COMPILE_TIMEOUT",
    "max_request_bytes": "KILN_MAX_REQUEST_BYTES",
    "header_timeout": "KILN_HEADER_TIMEOUT",
    "body_timeout": "KILN_BODY_TIMEOUT",
    "max_header_bytes": "KILN_MAX_HEADER_BYTES",
    "max_header_count": "KILN_MAX_HEADER_COUNT",
    "max_connections_per_client": "KILN_MAX_CONNECTIONS_PER_CLIENT",
    "max_queue": "KILN_MAX_QUEUE",
    "tokens_file": "KILN_TOKENS_FILE",
    "signing_key_file": "KILN_SIGNING_KEY_FILE",
    "verify_keys_files": "KILN_VERIFY_KEYS_FILES",
    "http_workers": "KILN_HTTP_WORKERS",
    "worker_memory_bytes": "KILN_WORKER_MEMORY_BYTES",
    "shutdown_timeout": "KILN_SHUTDOWN_TIMEOUT",
    "log_level": "KILN_LOG_LEVEL",
    "compile": "KILN_COMPILE",
    "visibility_timeout": "KILN_VISIBILITY_TIMEOUT",
}


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "serve", allow_abbrev=False,
        help="run the HTTP daemon (REST API of docs/api.md)",
        description="Run the Kiln daemon. Every flag also reads a KILN_* variable; flags win.",
    )
    a = p.add_argument
    a("--host", help="listen address (KILN_HOST, default 127.0.0.1)")
    a("--port", type=int, help="listen port (KILN_PORT, default 8000)")
    a("--cache-dir", help="disk cache directory (KILN_CACHE_DIR, default ~/.cache/kiln)")
    a("--cache-max-bytes", type=_size, help="disk cache bound, LRU-evicted (KILN_CACHE_MAX_BYTES)")
    a("--redis-url", help="shared Redis cache behind the disk cache (KILN_REDIS_URL)")
    a("--s3-url", help="object store for the executables, s3://BUCKET[/PREFIX], behind the disk "
      "cache; endpoint KILN_S3_ENDPOINT_URL, credentials AWS_* (KILN_S3_URL; docs/caching.md)")
    a("--workers", type=int, help="compile worker processes in all (KILN_WORKERS, default: CPUs)")
    a("--prepare-workers", type=int, help="graph import workers (KILN_PREPARE_WORKERS, default 1)")
    a("--compile-timeout", type=float, help="per-target compile timeout, s (KILN_COMPILE_TIMEOUT)")
    a("--max-request-bytes", type=_size, help="largest request body (KILN_MAX_REQUEST_BYTES)")
    a("--header-timeout", type=float,
      help="seconds to send a request's headers, else 408 (KILN_HEADER_TIMEOUT, default 10)")
    a("--body-timeout", type=float,
      help="longest silence while a body streams in, s (KILN_BODY_TIMEOUT, default 30)")
    a("--max-header-bytes", type=_size,
      help="request line and headers, bytes, else 431 (KILN_MAX_HEADER_BYTES, default 64K)")
    a("--max-header-count", type=int,
      help="header fields per request, else 431 (KILN_MAX_HEADER_COUNT, default 100)")
    a("--max-connections-per-client", type=int,
      help="open connections per client address, 0 = no cap (KILN_MAX_CONNECTIONS_PER_CLIENT)")
    a("--max-queue", type=int, help="compile jobs that may wait for a worker (KILN_MAX_QUEUE)")
    a("--tokens-file", help="bearer tokens, one per line (KILN_TOKENS_FILE; or KILN_TOKENS)")
    a("--signing-key-file", help="Ed25519 key signing every artifact's provenance, created 0600 "
      "when missing (KILN_SIGNING_KEY_FILE, default ~/.config/kiln/signing-key.pem; docs/trust.md)")
    a("--verify-keys-files", help="further trusted public keys, comma separated: rotated keys "
      "(KILN_VERIFY_KEYS_FILES)")
    a("--http-workers", type=int, help="uvicorn worker processes (KILN_HTTP_WORKERS, default 1)")
    a("--worker-memory-bytes", type=_size, help="address-space cap per worker (KILN_WORKER_MEMORY_BYTES)")
    a("--shutdown-timeout", type=float, help="grace for in-flight requests, s (KILN_SHUTDOWN_TIMEOUT)")
    a("--log-level", help="debug, info, warning, error (KILN_LOG_LEVEL)")
    a("--compile", choices=("local", "remote"),
      help="local: compile in this process's workers (default); remote: send compiles to "
      "`kiln worker`s on the Redis queue, needs --redis-url (KILN_COMPILE; docs/cluster.md)")
    a("--visibility-timeout", type=float,
      help="remote: seconds before a dead worker's compile goes to another worker, the "
      "workers' value (KILN_VISIBILITY_TIMEOUT, default 3 x compile timeout + 60)")
    a("--print-nginx-config", action="store_true",
      help="print an nginx config that serves artifacts from the cache and proxies the rest, "
           "then exit (see docs/service.md)")
    a("--front-port", type=int, default=8080, help="the nginx front's port (--print-nginx-config)")
    return p


def _size(text: str) -> int:
    from kiln.sizes import parse_size

    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _one_line(exc: Any) -> str:
    """A pydantic ``ValidationError`` as ``KILN_VAR='value': why; ...`` (no traceback, no URL)."""
    parts = []
    for e in exc.errors(include_url=False):
        field = ".".join(str(x) for x in e.get("loc", ())) or "settings"
        var = f"KILN_{field.upper()}" if e.get("loc") else field
        value = os.environ.get(var) if e.get("loc") else None
        shown = f"{var}={value[:64]!r}" if value is not None else var
        msg = str(e.get("msg", "invalid")).removeprefix("Value error, ")
        parts.append(f"{shown}: {msg}")
    return "; ".join(parts)


def run(args: argparse.Namespace, *, stdout: TextIO, stderr: TextIO) -> int:
    from pydantic import ValidationError

    for dest, var in _FLAGS.items():
        value = getattr(args, dest, None)
        if value is not None:
            os.environ[var] = str(value)
    from kiln.service.settings import Settings

    try:
        settings = Settings()
    except ValidationError as exc:
        print(f"kiln serve: invalid settings: {_one_line(exc)}", file=stderr)
        return 2
    try:
        settings.token_set()
    except OSError as exc:
        print(f"kiln serve: cannot read the tokens file: {exc}", file=stderr)
        return 2
    if getattr(args, "print_nginx_config", False):
        from kiln.cache.disk import default_cache_dir
        from kiln.service.front import nginx_config

        cache_dir = Path(settings.cache_dir) if settings.cache_dir else default_cache_dir()
        print(
            nginx_config(
                cache_dir=cache_dir,
                upstream=f"{settings.host}:{settings.port}",
                listen=f"{settings.host}:{args.front_port}",
                tokens=settings.token_set(),
                max_request_bytes=settings.max_request_bytes,
            ),
            file=stdout,
        )
        return 0
    from kiln.errors import KilnError
    from kiln.provenance import Authority, split_paths

    try:  # the key is created here, once, before any HTTP worker starts
        Authority.from_files(settings.signing_key_file, split_paths(settings.verify_keys_files))
    except KilnError as exc:
        print(f"kiln serve: {exc.code}: {exc.message}", file=stderr)
        return 2
    return serve(settings)


def _raise_fd_limit() -> None:
    """Open-file soft limit up to the hard one: each connection and cached blob holds a
    descriptor, and a soft limit of 256 or 1024 is the first thing a crowd of clients exhausts."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 1 << 16 if hard == resource.RLIM_INFINITY else hard
    if soft != resource.RLIM_INFINITY and soft < want:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
        except (ValueError, OSError):
            pass  # some sandboxes refuse it; the soft limit stays


def serve(settings: Any) -> int:
    """Run uvicorn until SIGINT/SIGTERM. Blocks."""
    import uvicorn

    from kiln.service.app import create_app
    from kiln.service.connections import GuardedHttpProtocol
    from kiln.service.logs import configure_logging

    configure_logging(settings.log_level)
    _raise_fd_limit()
    common: dict[str, Any] = {
        # header/body read timeouts, header size and count caps, per-client connection cap
        "http": GuardedHttpProtocol,
        "host": settings.host,
        "port": settings.port,
        "log_config": None,
        "access_log": False,
        "timeout_graceful_shutdown": int(settings.shutdown_timeout),
        "server_header": False,
        "proxy_headers": False,
    }
    if settings.http_workers > 1:
        uvicorn.run(
            "kiln.service.app:app_from_env",
            factory=True,
            workers=settings.http_workers,
            **common,
        )
        return 0
    server = uvicorn.Server(uvicorn.Config(create_app(settings), **common))
    server.run()
    return 0 if server.started else 1
