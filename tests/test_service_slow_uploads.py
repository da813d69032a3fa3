"""Slow uploads cannot lock other clients out: a body that trickles in below the minimum rate is
cut off with 408 and its budget released, and one client holds at most its share of the upload
budget, so another client's compile goes through while it trickles."""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from tests.server import KilnServer, kiln_server

ADD = "func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> { return %a : tensor<4xf32> }"
BUDGET = 200_000
SHARE = 100_000
MIN_RATE = 1000  # bytes/s
GRACE = 4.0  # s


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KilnServer]:
    with kiln_server(
        tmp_path_factory, workers=1, tokens="slow,other",
        max_upload_bytes_in_flight=BUDGET, max_upload_bytes_per_client=SHARE,
        upload_min_bytes_per_second=MIN_RATE, upload_grace_seconds=GRACE,
        body_timeout=120, header_timeout=120,
    ) as s:
        yield s


class Trickle:
    """A raw-socket ``POST /v1/compile`` declaring ``length`` bytes and sending one byte every
    ``every`` seconds until the server answers (or ``give_up`` seconds pass)."""

    def __init__(self, srv: KilnServer, *, token: str, length: int, every: float = 0.25,
                 give_up: float = 60.0) -> None:
        self.sock = socket.create_connection(("127.0.0.1", srv.port))
        self.sock.sendall(
            (f"POST /v1/compile HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
             f"Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n").encode()
        )
        self.sent = 0
        self.raw = b""
        self.done = threading.Event()
        self._every, self._give_up = every, give_up
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        deadline = time.monotonic() + self._give_up
        try:
            while time.monotonic() < deadline:
                readable, _, _ = select.select([self.sock], [], [], self._every)
                if readable:
                    self._read_answer()
                    return
                self.sock.sendall(b" ")
                self.sent += 1
        except OSError:
            self._read_answer()
        finally:
            self.done.set()

    def _read_answer(self) -> None:
        """The response, head and ``Content-Length`` bytes of body (or up to the close)."""
        self.sock.settimeout(30)
        try:
            while chunk := self.sock.recv(65536):
                self.raw += chunk
                head, sep, body = self.raw.partition(b"\r\n\r\n")
                for line in head.decode("latin-1").lower().split("\r\n"):
                    if sep and line.startswith("content-length:"):
                        if len(body) >= int(line.split(":", 1)[1]):
                            return
        except OSError:
            pass

    def answer(self, timeout: float = 60.0) -> tuple[int, dict[str, str], dict[str, object]]:
        assert self.done.wait(timeout), "the server never answered the trickling upload"
        self.sock.close()
        head, _, body = self.raw.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = dict(line.lower().split(": ", 1) for line in lines[1:] if ": " in line)
        return int(lines[0].split()[1]), headers, json.loads(body) if body else {}


def _compile(srv: KilnServer, token: str) -> int:
    r = srv.client(token=token).post(
        "/v1/compile", json={"graph": {"format": "mlir", "data": ADD}, "targets": ["cpu"]})
    return r.status_code


def test_trickling_uploads_are_cut_off_and_never_lock_out_another_client(
    srv: KilnServer,
) -> None:
    # Two uploads from one client that together would hold the whole budget.
    first = Trickle(srv, token="slow", length=SHARE)
    second = Trickle(srv, token="slow", length=SHARE)
    # Its second upload passes the client's share: refused at once, the first keeps trickling.
    deadline = time.monotonic() + 30
    while not (first.done.is_set() or second.done.is_set()) and time.monotonic() < deadline:
        time.sleep(0.01)
    answers = {id(t): t.answer() for t in (first, second) if t.done.is_set()}
    assert len(answers) == 1, "exactly one of the two uploads is over the client's share"
    status, headers, body = next(iter(answers.values()))
    assert status == 503 and body["error"]["code"] == "overloaded"  # type: ignore[index]
    assert "retry-after" in headers
    trickler = second if id(first) in answers else first
    assert not trickler.done.is_set()

    # Meanwhile another client compiles.
    assert _compile(srv, "other") == 200
    assert not trickler.done.is_set() or trickler.sent < SHARE

    # The trickler is cut off once its average rate is below the minimum after the grace.
    status, headers, body = trickler.answer()
    assert status == 408, body
    assert body["error"]["code"] == "invalid_request"  # type: ignore[index]
    assert body["error"]["detail"]["upload_min_bytes_per_second"] == MIN_RATE  # type: ignore[index]
    assert headers.get("connection") == "close"
    assert trickler.sent < SHARE

    # Its reservation is released: the same client compiles again.
    assert _compile(srv, "slow") == 200
    assert srv.healthy()


def test_a_steady_upload_above_the_minimum_rate_is_not_cut(srv: KilnServer) -> None:
    # ~5 KB/s for ~3 s: past the grace, above the minimum.
    body = json.dumps({"graph": {"format": "mlir", "data": ADD}, "targets": ["cpu"]}).encode()
    body += b" " * (15_000 - len(body))
    sock = socket.create_connection(("127.0.0.1", srv.port))
    sock.sendall(
        (f"POST /v1/compile HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer other\r\n"
         f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
         "Connection: close\r\n\r\n").encode()
    )
    for i in range(0, len(body), 1000):
        sock.sendall(body[i : i + 1000])
        time.sleep(0.2)  # the pace under test
    sock.settimeout(120)
    raw = b""
    while chunk := sock.recv(65536):
        raw += chunk
    sock.close()
    assert raw.startswith(b"HTTP/1.1 200"), raw[:300]
