"""A real S3-compatible object store for tests: OpenStack Swift with its ``s3api`` middleware.

Debian's ``swift swift-proxy swift-account swift-container swift-object memcached`` packages
(scripts/bootstrap.sh installs them). Everything lives in one temp directory: ``swift.conf``, the
four server configs, rings with one replica and one device built with ``swift-ring-builder``, the
device itself and each server's log. Every server runs as the current user in the foreground
(``workers = 0``: no forked children) in its own process group on a free loopback port.

    swift = SwiftServer(tmp_path / "swift")
    swift.start()                      # healthy in a few seconds
    s3 = swift.client(); s3.create_bucket(Bucket="kiln")
    swift.stop()                       # the store is down (its data stays on disk)
    swift.start()                      # up again on the same ports, same objects
    swift.close()                      # stopped; nothing left running

Credentials: tempauth user ``test:tester`` / ``testing`` (the S3 access key / secret key);
path-style addressing, region ``us-east-1``. Swift does not honour ``If-None-Match: *`` on PUT.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from tests.conftest_redis import free_port

__all__ = ["ACCESS_KEY", "SECRET_KEY", "SwiftServer", "swift_missing"]

ACCESS_KEY = "test:tester"
SECRET_KEY = "testing"
_SERVERS = ("account", "container", "object", "proxy")
_BINARIES = ("memcached", "swift-ring-builder", *(f"swift-{s}-server" for s in _SERVERS))


def swift_missing() -> list[str]:
    """The binaries of the packages above that are not on PATH."""
    return [b for b in _BINARIES if shutil.which(b) is None]


class SwiftServer:
    """One Swift cluster of one node: memcached, account, container, object and proxy servers."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.ports = {name: free_port() for name in (*_SERVERS, "memcached")}
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self._configure()

    @property
    def endpoint_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['proxy']}"

    def env(self) -> dict[str, str]:
        """The standard AWS variables (and ``KILN_S3_ENDPOINT_URL``) pointing at this store."""
        return {
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_DEFAULT_REGION": "us-east-1",
            "KILN_S3_ENDPOINT_URL": self.endpoint_url,
        }

    def client(self) -> Any:
        """A boto3 S3 client on this store (short timeouts, no retries)."""
        import boto3
        from botocore.config import Config

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint_url,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            region_name="us-east-1",
            config=Config(
                s3={"addressing_style": "path"},
                connect_timeout=1,
                read_timeout=5,
                retries={"total_max_attempts": 1},
                request_checksum_calculation="when_required",
                response_checksum_validation="when_required",
            ),
        )

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self, *, timeout: float = 30.0) -> None:
        """Start every server; returns once an S3 request is answered (RuntimeError otherwise,
        with the logs' tails, after stopping what was started)."""
        assert not self.procs, "already running"
        mc = self.ports["memcached"]
        self._spawn("memcached", ["memcached", "-l", "127.0.0.1", "-p", str(mc), "-U", "0",
                                  "-m", "16", "-u", getpass.getuser()])  # fmt: skip
        for name in _SERVERS:
            self._spawn(name, [f"swift-{name}-server", str(self.workdir / f"{name}.conf"), "-v"])
        deadline = time.monotonic() + timeout
        s3 = self.client()
        while True:
            try:
                s3.list_buckets()  # the account server answers
                _container_server_answers(s3)
                return
            except Exception as exc:  # any failure means "not yet"
                dead = [n for n, p in self.procs.items() if p.poll() is not None]
                if dead or time.monotonic() > deadline:
                    logs = self.logs()
                    self.stop()
                    raise RuntimeError(
                        f"swift did not become healthy ({dead or exc!r}):\n{logs}"
                    ) from exc
                time.sleep(0.1)

    def create_bucket(self, name: str, *, timeout: float = 30.0) -> None:
        """Create a bucket, retrying while Swift answers 503 ("Please reduce your request
        rate": a server of its own still starting or busy; seen once in a CI run)."""
        from botocore.exceptions import ClientError

        deadline = time.monotonic() + timeout
        while True:
            try:
                self.client().create_bucket(Bucket=name)
                return
            except ClientError as exc:
                status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
                if status != 503 or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def stop(self) -> None:
        """Stop every server (SIGTERM, then SIGKILL after 5 s) and wait for each to be gone."""
        for proc in self.procs.values():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            # Whatever the server left in its group (nothing with workers = 0) goes too.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        self.procs.clear()

    close = stop

    def logs(self, tail: int = 1500) -> str:
        out = []
        for name in ("memcached", *_SERVERS):
            f = self.workdir / f"{name}.log"
            if f.exists():
                out.append(f"--- {name}\n" + f.read_text(errors="replace")[-tail:])
        return "\n".join(out)

    def _spawn(self, name: str, argv: list[str]) -> None:
        with open(self.workdir / f"{name}.log", "ab") as log:
            self.procs[name] = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True, cwd=self.workdir,
            )  # fmt: skip

    # -- configuration -----------------------------------------------------------------------

    def _configure(self) -> None:
        w = self.workdir
        (w / "srv" / "d1").mkdir(parents=True, exist_ok=True)
        (w / "swift.conf").write_text(
            "[swift-hash]\nswift_hash_path_suffix = kiln-tests\n\n"
            "[storage-policy:0]\nname = Policy-0\ndefault = yes\n"
        )
        common = (
            "[DEFAULT]\n"
            "bind_ip = 127.0.0.1\n"
            "bind_port = {port}\n"
            f"user = {getpass.getuser()}\n"
            f"swift_dir = {w}\n"
            f"devices = {w / 'srv'}\n"
            "mount_check = false\n"
            "disable_fallocate = true\n"
            "workers = 0\n"
            "log_level = WARNING\n\n"
        )
        for name in ("account", "container", "object"):
            (w / f"{name}.conf").write_text(
                common.format(port=self.ports[name])
                + f"[pipeline:main]\npipeline = {name}-server\n\n"
                f"[app:{name}-server]\nuse = egg:swift#{name}\n"
            )
        (w / "proxy.conf").write_text(
            common.format(port=self.ports["proxy"])
            + "[pipeline:main]\n"
            "pipeline = catch_errors gatekeeper healthcheck proxy-logging cache listing_formats "
            "s3api tempauth copy slo proxy-logging proxy-server\n\n"
            "[app:proxy-server]\nuse = egg:swift#proxy\naccount_autocreate = true\n\n"
            "[filter:s3api]\nuse = egg:swift#s3api\nlocation = us-east-1\n\n"
            "[filter:tempauth]\nuse = egg:swift#tempauth\n"
            f"user_test_tester = {SECRET_KEY} .admin\n\n"
            "[filter:cache]\nuse = egg:swift#memcache\n"
            f"memcache_servers = 127.0.0.1:{self.ports['memcached']}\n\n"
            "[filter:catch_errors]\nuse = egg:swift#catch_errors\n\n"
            "[filter:gatekeeper]\nuse = egg:swift#gatekeeper\n\n"
            "[filter:healthcheck]\nuse = egg:swift#healthcheck\n\n"
            "[filter:proxy-logging]\nuse = egg:swift#proxy_logging\n\n"
            "[filter:listing_formats]\nuse = egg:swift#listing_formats\n\n"
            "[filter:copy]\nuse = egg:swift#copy\n\n"
            "[filter:slo]\nuse = egg:swift#slo\n"
        )
        # Three rings (one replica, one device each), built side by side.
        with ThreadPoolExecutor(3) as pool:
            list(pool.map(self._build_ring, ("account", "container", "object")))

    def _build_ring(self, name: str) -> None:
        builder = str(self.workdir / f"{name}.builder")
        for args in (
            ["create", "6", "1", "1"],
            ["add", f"r1z1-127.0.0.1:{self.ports[name]}/d1", "100"],
            ["rebalance"],
        ):
            r = subprocess.run(["swift-ring-builder", builder, *args], cwd=self.workdir,
                               check=False, capture_output=True, text=True)  # fmt: skip
            if r.returncode not in (0, 1):  # 1: rebalance warnings
                raise RuntimeError(f"swift-ring-builder {name} {args}: {r.stdout}{r.stderr}")


def _container_server_answers(s3: Any) -> None:
    """Raise until the container server answers: HEAD on a bucket that does not exist is a 404
    from it, a 503 ("Please reduce your request rate") while it is still starting. A CI run
    once met that 503 at the first CreateBucket, after ``list_buckets`` (the account server)
    had answered."""
    from botocore.exceptions import ClientError

    try:
        s3.head_bucket(Bucket="kiln-not-a-bucket")
    except ClientError as exc:
        if str(exc.response.get("Error", {}).get("Code")) in ("404", "NoSuchBucket", "NotFound"):
            return
        raise
    raise RuntimeError("a bucket that was never made exists")


@contextlib.contextmanager
def running_swift(root: Path, bucket: str) -> Iterator[SwiftServer]:
    """A started Swift with ``bucket`` created, closed on exit; a missing Swift fails the test
    (scripts/bootstrap.sh installs it)."""
    import pytest

    missing = swift_missing()
    if missing:
        pytest.fail(f"{', '.join(missing)} not on PATH (scripts/bootstrap.sh installs Swift)")
    server = SwiftServer(root)
    server.start()
    try:
        server.create_bucket(bucket)
        yield server
    finally:
        server.close()
