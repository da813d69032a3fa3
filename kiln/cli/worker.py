"""``kiln worker --redis-url URL [--queues cpu,gpu] [--concurrency N] [--s3-url ...]``: a compile
worker of a Kiln cluster (``kiln.cluster.worker``; docs/cluster.md).

Every flag has a ``KILN_*`` variable (flags win). Run it with the same signing key as the API
replicas (``KILN_SIGNING_KEY_FILE``), or list its public key in their ``KILN_VERIFY_KEYS_FILES``:
a record signed by a key they do not trust is a miss to them.

Exit status: 0 after a warm shutdown (SIGTERM/SIGINT: running compiles finish, waiting messages
stay queued); 2 for bad settings.
"""

from __future__ import annotations

import argparse
import os
from typing import Any, TextIO

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
    a("--concurrency", type=int, default=int(env("KILN_CONCURRENCY", "1")),
      help="compiles at once (KILN_CONCURRENCY, default 1)")
    a("--cache-dir", default=env("KILN_CACHE_DIR"), help="local disk tier (KILN_CACHE_DIR)")
    cmb = env("KILN_CACHE_MAX_BYTES")
    a("--cache-max-bytes", type=int, default=int(cmb) if cmb else None,
      help="bound of the local disk tier, LRU-evicted (KILN_CACHE_MAX_BYTES, default unbounded)")
    a("--s3-url", default=env("KILN_S3_URL"), help="blobs in s3://BUCKET[/PREFIX] (KILN_S3_URL; "
      "endpoint KILN_S3_ENDPOINT_URL, credentials AWS_*)")
    a("--compile-timeout", type=float, default=float(env("KILN_COMPILE_TIMEOUT", "300")),
      help="per compile, s (KILN_COMPILE_TIMEOUT, default 300)")
    vis = env("KILN_VISIBILITY_TIMEOUT")
    a("--visibility-timeout", type=float, default=float(vis) if vis else None,
      help="seconds before a dead worker's job is handed to another (KILN_VISIBILITY_TIMEOUT, "
      "default 3 x compile timeout + 60); the API replicas must use the same value")
    a("--lease-seconds", type=float, default=float(env("KILN_LEASE_SECONDS", "10")),
      help="single-flight lease of a compile (KILN_LEASE_SECONDS, default 10)")
    a("--worker-memory-bytes", type=int,
      default=int(env("KILN_WORKER_MEMORY_BYTES", str(8 << 30))),
      help="address-space cap per compile process (KILN_WORKER_MEMORY_BYTES)")
    a("--name", default=env("KILN_WORKER_NAME"), help="worker name (default kiln@HOST.PID)")
    a("--log-level", default=env("KILN_LOG_LEVEL", "info"), help="KILN_LOG_LEVEL")


def run(args: argparse.Namespace, *, stdout: TextIO, stderr: TextIO) -> int:
    from kiln.cluster.types import queues_for
    from kiln.cluster.worker import WorkerSettings, run_worker

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
    settings = WorkerSettings(
        redis_url=args.redis_url, queues=args.queues, concurrency=args.concurrency,
        cache_dir=args.cache_dir, cache_max_bytes=args.cache_max_bytes, s3_url=args.s3_url,
        s3_endpoint_url=os.environ.get("KILN_S3_ENDPOINT_URL"),
        compile_timeout=args.compile_timeout, visibility_timeout=args.visibility_timeout,
        lease_seconds=args.lease_seconds, worker_memory_bytes=args.worker_memory_bytes,
        failure_ttl=float(os.environ.get("KILN_FAILURE_TTL", "600")),
        signing_key_file=os.environ.get("KILN_SIGNING_KEY_FILE"),
        verify_keys_files=os.environ.get("KILN_VERIFY_KEYS_FILES", ""),
        log_level=args.log_level, **extra,
    )
    return run_worker(settings)
