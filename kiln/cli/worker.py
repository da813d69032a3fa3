"""``kiln worker --redis-url URL [--queues cpu,gpu] [--concurrency N] [--s3-url ...]``: a compile
worker of a Kiln cluster (``kiln.cluster.worker``; docs/cluster.md).

Every flag has a ``KILN_*`` variable (flags win). Run it with the same signing key as the API
replicas (``KILN_SIGNING_KEY_FILE``), or list its public key in their ``KILN_VERIFY_KEYS_FILES``:
a record signed by a key they do not trust is a miss to them.

Exit status: 0 after a warm shutdown (SIGTERM/SIGINT: running compiles finish, waiting messages
stay queued); 2 for bad settings (one line naming the variable). Sizes take units (``20G``).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any, TextIO

from kiln.cli.errors import env_setting
from kiln.sizes import parse_size

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "worker", allow_abbrev=False,
        help="run a compile worker on the shared queue (cluster mode)",
        description="Consume compile jobs from Redis (Celery) and file results in the shared "
        "cache. Every flag also reads a KILN_* variable; flags win.",
    )
    a = p.add_argument
    env = os.environ.get
    a("--redis-url", default=env("KILN_REDIS_URL"), help="the cluster's Redis (KILN_REDIS_URL)")
    a("--queues", default=env("KILN_QUEUES", "cpu,gpu"),
      help="target kinds to take compiles for: cpu, cuda, rocm, vulkan, metal; gpu = the four GPU "
      "kinds (KILN_QUEUES, default cpu,gpu)")
    a("--concurrency", type=int, help="compiles at once (KILN_CONCURRENCY, default 1)")
    a("--cache-dir", default=env("KILN_CACHE_DIR"), help="local disk tier (KILN_CACHE_DIR)")
    a("--cache-max-bytes", type=_size,
      help="bound of the local disk tier, LRU-evicted, e.g. 20G (KILN_CACHE_MAX_BYTES, default "
      "unbounded)")
    a("--s3-url", default=env("KILN_S3_URL"), help="blobs in s3://BUCKET[/PREFIX] (KILN_S3_URL; "
      "endpoint KILN_S3_ENDPOINT_URL, credentials AWS_*)")
    a("--compile-timeout", type=float, help="per compile, s (KILN_COMPILE_TIMEOUT, default 300)")
    a("--visibility-timeout", type=float,
      help="seconds before a dead worker's job is handed to another (KILN_VISIBILITY_TIMEOUT, "
      "default 3 x compile timeout + 60); the API replicas must use the same value")
    a("--lease-seconds", type=float,
      help="single-flight lease of a compile (KILN_LEASE_SECONDS, default 10)")
    a("--worker-memory-bytes", type=_size,
      help="address-space cap per compile process, e.g. 8G (KILN_WORKER_MEMORY_BYTES)")
    a("--name", default=env("KILN_WORKER_NAME"), help="worker name (default kiln@HOST.PID)")
    a("--log-level", default=env("KILN_LOG_LEVEL", "info"), help="KILN_LOG_LEVEL")


def _size(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _from_env(args: argparse.Namespace) -> None:
    """Fill the flags not given from their ``KILN_*`` variables (``BadSetting`` for a bad one)."""
    for dest, var, parse, default in (
        ("concurrency", "KILN_CONCURRENCY", int, 1),
        ("cache_max_bytes", "KILN_CACHE_MAX_BYTES", parse_size, None),
        ("compile_timeout", "KILN_COMPILE_TIMEOUT", float, 300.0),
        ("visibility_timeout", "KILN_VISIBILITY_TIMEOUT", float, None),
        ("lease_seconds", "KILN_LEASE_SECONDS", float, 10.0),
        ("worker_memory_bytes", "KILN_WORKER_MEMORY_BYTES", parse_size, 8 << 30),
    ):
        if getattr(args, dest) is None:
            setattr(args, dest, env_setting(var, parse, default))


def run(args: argparse.Namespace, *, stdout: TextIO, stderr: TextIO) -> int:
    from kiln.cluster.types import queues_for
    from kiln.cluster.worker import WorkerSettings, run_worker

    _from_env(args)
    from kiln.cli.errors import env_setting
    from kiln.compiler.kernels import kinds_setting

    env_setting("KILN_KERNEL_CACHE", kinds_setting, None)  # BadSetting (exit 2) before any work

    if not args.redis_url:
        print("kiln worker: --redis-url (or KILN_REDIS_URL) is required", file=stderr)
        return 2
    try:
        queues_for(args.queues)
    except ValueError as exc:
        print(f"kiln worker: {exc}", file=stderr)
        return 2
    if args.concurrency < 1:
        print("kiln worker: --concurrency must be at least 1", file=stderr)
        return 2
    extra: dict[str, Any] = {}
    if args.name:
        extra["name"] = args.name
    # Errors this worker sends back through Redis name none of its own directories.
    from kiln.cache.disk import default_cache_dir
    from kiln.redact import add_private_path

    add_private_path(args.cache_dir or default_cache_dir())
    add_private_path(Path.home())
    settings = WorkerSettings(
        redis_url=args.redis_url, queues=args.queues, concurrency=args.concurrency,
        cache_dir=args.cache_dir, cache_max_bytes=args.cache_max_bytes, s3_url=args.s3_url,
        s3_endpoint_url=os.environ.get("KILN_S3_ENDPOINT_URL"),
        compile_timeout=args.compile_timeout, visibility_timeout=args.visibility_timeout,
        lease_seconds=args.lease_seconds, worker_memory_bytes=args.worker_memory_bytes,
        failure_ttl=env_setting("KILN_FAILURE_TTL", float, 600.0),
        signing_key_file=os.environ.get("KILN_SIGNING_KEY_FILE"),
        verify_keys_files=os.environ.get("KILN_VERIFY_KEYS_FILES", ""),
        log_level=args.log_level, **extra,
    )
    return run_worker(settings)
