"""pytest plugin: a real ``redis-server`` on a free loopback port, in the test's tmp_path.

Register from ``tests/conftest.py`` with ``pytest_plugins = ["tests.conftest_redis"]`` (or run
``pytest -p tests.conftest_redis``). Tests using ``redis_server`` fail when no
``redis-server`` binary is on PATH (``apt-get install redis-server``).

``redis_server.kill()`` SIGKILLs it (no shutdown, no persistence: the data is gone, like a crashed
node); ``redis_server.start()`` brings a fresh, empty one back on the same port.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

__all__ = ["RedisServer", "free_port", "redis_server"]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RedisServer:
    def __init__(self, binary: str, workdir: Path, port: int) -> None:
        self.binary = binary
        self.workdir = workdir
        self.port = port
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, *extra: str) -> None:
        """Start (or restart) on the same port; returns once it answers PING (10 s at most)."""
        assert self.proc is None, "already running"
        self.workdir.mkdir(parents=True, exist_ok=True)
        args = [
            self.binary, "--port", str(self.port), "--bind", "127.0.0.1",
            "--save", "", "--appendonly", "no", "--dir", str(self.workdir),
            "--daemonize", "no", "--protected-mode", "no",
            "--logfile", str(self.workdir / "redis.log"), *extra,
        ]  # fmt: skip
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10.0
        while not self.ping():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                log = (self.workdir / "redis.log").read_text(errors="replace")[-2000:]
                self.kill()
                raise RuntimeError(f"redis-server did not start on port {self.port}:\n{log}")
            time.sleep(0.01)

    def ping(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def kill(self) -> None:
        """SIGKILL the server and wait for it to be gone."""
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
            self.proc = None

    def restart(self, *extra: str) -> None:
        self.kill()
        self.start(*extra)

    def command(self, *args: str) -> bytes:
        """One raw command via redis-cli-free RESP (for test setup such as CONFIG SET)."""
        parts = [f"*{len(args)}\r\n".encode()]
        for a in args:
            b = a.encode()
            parts.append(b"$%d\r\n%s\r\n" % (len(b), b))
        with socket.create_connection(("127.0.0.1", self.port), timeout=2.0) as s:
            s.sendall(b"".join(parts))
            return s.recv(65536)


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.fail("redis-server not on PATH (scripts/bootstrap.sh installs it)")
    server = RedisServer(binary, tmp_path / "redis", free_port())
    server.start()
    try:
        yield server
    finally:
        server.kill()
