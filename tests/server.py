"""A real ``kiln serve`` in a subprocess on a free 127.0.0.1 port, for integration tests.

    from tests.server import kiln_server

    def test_x(tmp_path_factory):
        with kiln_server(tmp_path_factory, workers=1, tokens="t1") as srv:
            r = srv.client(token="t1").post("/v1/compile", json={...})
            srv.metric("kiln_compiles_total", kind="cpu", outcome="ok")

Keyword settings become ``KILN_<NAME>`` environment variables of the server (``max_queue=0`` →
``KILN_MAX_QUEUE=0``); every other ``KILN_*`` variable of the test process is removed, so the
server sees only what the test asked for. The server gets its own cache directory, working
directory and ``TMPDIR`` under a fresh temp dir (``srv.root``), so a test can check that nothing
appears outside the cache. The context manager stops it with SIGTERM (graceful shutdown) and
kills it if it has not exited within ``stop_timeout`` seconds. Its JSON log is ``srv.log_path``.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

__all__ = ["KilnServer", "kiln_server"]

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class KilnServer:
    url: str
    port: int
    root: Path
    cache_dir: Path
    log_path: Path
    proc: subprocess.Popen[bytes]
    token: str | None = None
    _clients: list[httpx.Client] = field(default_factory=list)

    def client(self, *, token: str | None = None, timeout: float = 300.0) -> httpx.Client:
        """An httpx client for this server (bearer ``token``, else the server's first token)."""
        tok = token if token is not None else self.token
        headers = {"Authorization": f"Bearer {tok}"} if tok else {}
        c = httpx.Client(base_url=self.url, headers=headers, timeout=timeout)
        self._clients.append(c)
        return c

    def metrics(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        """Every sample of ``/metrics``: (name, sorted labels) → value."""
        from prometheus_client.parser import text_string_to_metric_families

        text = self.client().get("/metrics").text
        out = {}
        for fam in text_string_to_metric_families(text):
            for s in fam.samples:
                out[(s.name, tuple(sorted(s.labels.items())))] = s.value
        return out

    def metric(self, name: str, **labels: str) -> float:
        """One sample's value (0.0 if absent); labels not given are summed over."""
        want = set(labels.items())
        return sum(
            v for (n, lbl), v in self.metrics().items() if n == name and want <= set(lbl)
        )

    def healthy(self) -> bool:
        try:
            return self.proc.poll() is None and (
                httpx.get(self.url + "/healthz", timeout=10).status_code == 200
            )
        except httpx.HTTPError:
            return False

    def log_tail(self, n: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def stop(self, *, timeout: float = 60.0) -> int:
        """SIGTERM, wait ``timeout`` s, then SIGKILL. Returns the exit status."""
        for c in self._clients:
            c.close()
        self._clients.clear()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        return int(self.proc.returncode)


@contextmanager
def kiln_server(
    base: pytest.TempPathFactory | Path,
    *,
    start_timeout: float = 120.0,
    stop_timeout: float = 60.0,
    args: tuple[str, ...] = (),
    **settings: Any,
) -> Iterator[KilnServer]:
    """Start ``kiln serve`` with ``settings`` (see the module docstring); yield a ``KilnServer``."""
    root = base.mktemp("kiln-server") if isinstance(base, pytest.TempPathFactory) else Path(base)
    root.mkdir(parents=True, exist_ok=True)
    cache_dir = Path(settings.pop("cache_dir", root / "cache"))
    # Never ~/.config; one key for the servers of a test (replicas sharing Redis must share it).
    shared = base.getbasetemp() if isinstance(base, pytest.TempPathFactory) else root.parent
    settings.setdefault("signing_key_file", shared / "signing-key.pem")
    for sub in ("work", "tmp"):
        (root / sub).mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("KILN_")}
    env.update({f"KILN_{k.upper()}": str(v) for k, v in settings.items() if v is not None})
    env["TMPDIR"] = str(root / "tmp")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    tokens = str(settings.get("tokens") or "")
    last_error = ""
    for _attempt in range(3):  # a free port can be taken between probing and binding
        port = free_port()
        log_path = root / f"server-{port}.log"
        cmd = [sys.executable, "-m", "kiln.cli", "serve", "--host", "127.0.0.1",
               "--port", str(port), "--cache-dir", str(cache_dir), *args]
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                cmd, cwd=root / "work", env=env, stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        srv = KilnServer(
            url=f"http://127.0.0.1:{port}", port=port, root=root, cache_dir=cache_dir,
            log_path=log_path, proc=proc, token=tokens.split(",")[0] or None,
        )
        deadline = time.monotonic() + start_timeout
        while time.monotonic() < deadline and proc.poll() is None:
            if srv.healthy():
                break
            time.sleep(0.1)
        if proc.poll() is None and srv.healthy():
            try:
                yield srv
            finally:
                srv.stop(timeout=stop_timeout)
            return
        last_error = srv.log_tail()
        srv.stop(timeout=5)
        if "address already in use" not in last_error.lower():
            break
    raise RuntimeError(f"kiln serve did not start:\n{last_error}")
