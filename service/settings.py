"""The daemon's configuration: one ``Settings`` object, read from ``KILN_*`` environment variables.

Every ``kiln serve`` flag has a field here and a variable ``KILN_<FIELD>`` (``--cache-dir`` is
``KILN_CACHE_DIR``); ``kiln serve`` exports the flags it was given into the environment, so flags win
and every HTTP worker process builds the same ``Settings``. Nothing is read at import time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["Settings"]


class Settings(BaseSettings):
    """Validated daemon settings. Sizes are bytes (``*_bytes`` also take ``20G``, ``500M``, as
    ``kiln.sizes.parse_size`` reads them), durations seconds."""

    model_config = SettingsConfigDict(env_prefix="KILN_", extra="ignore", frozen=True)

    host: str = "127.0.0.1"
    port: int = Field(8000, ge=0, le=65535)
    #: Disk cache directory; None = the user cache dir shared with ``kiln compile``.
    cache_dir: Path | None = None
    #: Bound of the disk cache (LRU-evicted past it); None = unbounded.
    cache_max_bytes: int | None = Field(None, ge=0)
    #: Redis for a cache shared by replicas (tiered: disk in front of Redis).
    redis_url: str | None = None
    #: Object store for the executables, ``s3://BUCKET[/PREFIX]``: the disk cache stays in front,
    #: Redis (when set) keeps the records and leases. Credentials: the standard ``AWS_*`` variables.
    s3_url: str | None = None
    #: The S3 endpoint of a store other than AWS (MinIO, Ceph RGW, Swift's s3api).
    s3_endpoint_url: str | None = None
    #: Compile worker processes (all HTTP workers together); None = one per CPU.
    workers: int | None = Field(None, ge=1)
    #: Worker processes that import/parse graphs before the cache lookup; kept apart from the
    #: compile workers so that cache hits stay fast while every compile worker is busy.
    prepare_workers: int = Field(1, ge=1)
    compile_timeout: float = Field(300.0, gt=0)
    #: The target kinds whose compiles go through the kernel cache: ``auto`` (where it was
    #: measured to pay), ``on``, ``off`` or a list (``vulkan,rocm``); kiln/compiler/kernels.py
    #: reads the same variable in the worker processes.
    kernel_cache: str = "auto"
    #: Seconds a compile that failed or timed out is remembered per (graph, target, options):
    #: a repeat answers the same error without compiling; 0 = never remembered.
    failure_ttl: float = Field(600.0, ge=0)
    prepare_timeout: float = Field(120.0, gt=0)
    #: Address-space cap of each worker process (RLIMIT_AS); a compile past it fails cleanly.
    worker_memory_bytes: int = Field(8 << 30, ge=1 << 28)
    max_request_bytes: int = Field(256 << 20, ge=1024)
    #: Request bodies being received at once, in bytes, per HTTP worker; a body that would pass
    #: it is refused with 503 overloaded before it is read (three 255 MiB uploads took 3.5 GB).
    max_upload_bytes_in_flight: int = Field(512 << 20, ge=1024)
    #: The part of ``max_upload_bytes_in_flight`` one client (bearer token, else peer address)
    #: may hold at once; past it: 503 overloaded for that client only.
    max_upload_bytes_per_client: int = Field(256 << 20, ge=1024)
    #: Slowest average upload rate, bytes per second since the body began, a request body may
    #: fall to once ``upload_grace_seconds`` have passed; below it: 408 and its budget released.
    #: 0 = no minimum (``body_timeout`` still bounds each silence).
    upload_min_bytes_per_second: int = Field(16 << 10, ge=0)
    upload_grace_seconds: float = Field(10.0, ge=0)
    #: Canonical graph text held while compiles run, in bytes, per HTTP worker; past it: 503.
    max_prepared_bytes_in_flight: int = Field(1 << 30, ge=1024)
    #: Seconds a client has to send a request line and headers (service/connections.py).
    header_timeout: float = Field(10.0, ge=0)
    #: Bytes of one request's request line and headers; past it: 431 ``too_large``, the
    #: connection closed before the rest is read (service/connections.py).
    max_header_bytes: int = Field(64 << 10, ge=1024)
    #: Header fields in one request; past it: 431 ``too_large``.
    max_header_count: int = Field(100, ge=1)
    #: Longest silence, in seconds, while a request body streams in.
    body_timeout: float = Field(30.0, ge=0)
    #: Open connections one client address may hold per HTTP worker; 0 = no cap.
    max_connections_per_client: int = Field(64, ge=0)
    #: Compile jobs allowed to wait for a busy worker (per HTTP worker); past it: 503 overloaded.
    #: At least 1: the worker pool counts a job handed to an idle worker as waiting for an instant.
    max_queue: int = Field(16, ge=1)
    #: Compile jobs one client (bearer token, else address) may have waiting; past it: 503
    #: overloaded for that client only. Waiting jobs are served round-robin between clients.
    max_queue_per_client: int = Field(8, ge=1)
    #: Requests allowed to wait for a prepare worker; past it: 503 overloaded.
    max_prepare_queue: int = Field(64, ge=0)
    #: Seconds a client is told to wait (Retry-After) when overloaded.
    retry_after: int = Field(2, ge=1)
    #: Bearer tokens, comma separated (``KILN_TOKENS=tok1,tok2``); empty = auth off.
    tokens: str = ""
    #: A file with one token per line (blank lines and ``#`` comments ignored).
    tokens_file: Path | None = None
    #: uvicorn worker processes (each with its own compile workers, sharing the cache).
    http_workers: int = Field(1, ge=1)
    #: Seconds in-flight requests get to finish on shutdown before they are cancelled.
    shutdown_timeout: float = Field(30.0, ge=0)
    #: Identical-request memo (request digest -> artifacts), entries; 0 disables the fast path.
    hit_memo_entries: int = Field(4096, ge=0)
    #: Verified artifact bytes kept in memory to answer GETs without disk I/O (total, per blob).
    blob_memory_bytes: int = Field(128 << 20, ge=0)
    blob_memory_max_item: int = Field(4 << 20, ge=0)
    #: The Ed25519 key that signs every artifact's provenance (PEM, created 0600 when missing);
    #: None = ``~/.config/kiln/signing-key.pem``. Keep it outside the cache directory.
    signing_key_file: Path | None = None
    #: Public keys (PEM files, comma separated) still trusted for verification: rotated keys.
    verify_keys_files: str = ""
    #: Where compiles run: ``local`` (this replica's worker processes) or ``remote`` (sent to
    #: ``kiln worker`` processes on the Redis queue; needs ``redis_url``; docs/cluster.md).
    compile: Literal["local", "remote"] = "local"
    #: Remote compiles: seconds before a dead worker's message goes to another worker (the
    #: workers' ``--visibility-timeout``, same value); None = 3 x compile_timeout + 60.
    visibility_timeout: float | None = Field(None, gt=0)
    #: Remote compiles: seconds one may take, queue wait included, before ``overloaded``.
    queue_wait_timeout: float = Field(3600.0, gt=0)
    #: Seconds a job (``POST /v1/jobs``) is kept after its last change, with its graph.
    job_ttl: float = Field(86400.0, ge=60)
    #: Jobs one client (bearer token, else address) may have queued or running; past it: 429
    #: ``overloaded`` with ``Retry-After``.
    max_jobs_per_client: int = Field(32, ge=1)
    #: Seconds after which a job whose driving replica is gone and that has not changed since
    #: expires when asked about (404), instead of compiling for a client long gone.
    job_orphan_after: float = Field(900.0, ge=1)
    #: Tokens that may read and cancel every client's jobs (comma separated); the others see
    #: their own only (404 for the rest).
    jobs_admin_tokens: str = ""
    #: Connections the job store keeps to Redis at most; a request that finds them all busy
    #: waits up to ``redis_pool_timeout`` s for one (then 503 ``cache_unavailable``).
    redis_max_connections: int = Field(64, ge=2)
    redis_pool_timeout: float = Field(10.0, gt=0)
    #: Who may post tuning records (``POST /v1/tuning``): ``authenticated`` (a bearer token; a
    #: server without tokens then refuses every record, 403 ``tuning_forbidden``, because an
    #: anonymous record would steer every client's executable choice) or ``any``.
    tuning_accept: Literal["authenticated", "any"] = "authenticated"
    #: Tuning records kept per (graph, target, runtime), the oldest dropped first; one submitter
    #: (token) keeps at most a quarter of them.
    tuning_max_reports: int = Field(32, ge=4, le=1024)
    #: Independent submitters (tokens) that must agree before a tuning choice is served; one
    #: trusted submitter is enough on its own (service/tuning.py, "Who decides the choice").
    tuning_quorum: int = Field(2, ge=1, le=64)
    #: Tokens whose tuning records count alone (comma separated, like ``tokens``): a fleet's own
    #: benchmark runner, say. The server's own records (idle tuning) always do.
    tuning_trusted_tokens: str = ""
    #: Largest ``POST /v1/tuning`` body, bytes.
    tuning_max_body_bytes: int = Field(64 << 10, ge=1024, le=1 << 20)
    #: Idle tuning (service/idle_tuning.py): when no compile has come for ``idle_tuning_after``
    #: seconds, autotune a CPU target this host can execute that a client compiled recently and
    #: keep the result as a tuning record signed by the server. Off by default: it spends this
    #: machine's CPU on measurements nobody asked for, and its timings are only as good as the
    #: quiet of the machine. Needs ``compile=local`` and one HTTP worker.
    idle_tuning: bool = False
    #: Seconds without compile requests (and with idle worker pools) before a tuning starts.
    idle_tuning_after: float = Field(60.0, gt=0)
    #: Tunings started per rolling hour, at most (one at a time).
    idle_tuning_per_hour: int = Field(6, ge=1, le=3600)
    #: Seconds one tuning may take (its compiles and its timing child), then it is abandoned.
    idle_tuning_timeout: float = Field(600.0, gt=0)
    #: Graph bytes held for later tuning, in all (oldest dropped first; larger graphs are not).
    idle_tuning_memory_bytes: int = Field(64 << 20, ge=0)
    log_level: str = "info"
    #: Log one JSON line per request (access log).
    access_log: bool = True

    @field_validator("*", mode="before")
    @classmethod
    def _sizes(cls, value: object, info: ValidationInfo) -> object:
        """``*_bytes`` settings take sizes as every command does (``20G``, ``500M``)."""
        if isinstance(value, str) and (info.field_name or "").endswith("_bytes") and value.strip():
            from kiln.sizes import parse_size

            return parse_size(value)  # a ValueError becomes the field's validation error
        return value

    @field_validator("kernel_cache")
    @classmethod
    def _kernel_kinds(cls, value: str) -> str:
        from kiln.compiler.kernels import kinds_setting

        kinds_setting(value)  # a ValueError becomes the field's validation error
        return value

    @model_validator(mode="after")
    def _remote_needs_redis(self) -> Settings:
        if self.compile == "remote" and not self.redis_url:
            raise ValueError("compile=remote needs redis_url (the queue and the shared cache)")
        return self

    @property
    def visibility(self) -> float:
        """The queue's visibility timeout, seconds (see ``visibility_timeout``)."""
        if self.visibility_timeout is not None:
            return self.visibility_timeout
        return 3 * self.compile_timeout + 60

    def token_set(self) -> tuple[str, ...]:
        """The configured tokens (``tokens`` plus ``tokens_file``); empty = auth off.

        Raises OSError if ``tokens_file`` cannot be read (the daemon must not start open by
        accident when its token file is missing).
        """
        toks = [t.strip() for t in self.tokens.split(",") if t.strip()]
        if self.tokens_file is not None:
            for line in self.tokens_file.read_text(encoding="utf-8").splitlines():
                line = line.strip()
                if line and not line.startswith("#"):
                    toks.append(line)
        return tuple(dict.fromkeys(toks))
