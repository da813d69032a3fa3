"""Request headers are bounded while they stream in: past ``KILN_MAX_HEADER_BYTES`` or
``KILN_MAX_HEADER_COUNT`` a client gets 431 ``too_large`` and its connection is cut, the rest
never read; a crowd of 100 MB header streams leaves the server's memory where it was and other
clients compiling."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from tests.server import KilnServer, kiln_server

ADD = "func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> { return %a : tensor<4xf32> }"
HEAD = b"GET /healthz HTTP/1.1\r\nHost: x\r\n"


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KilnServer]:
    with kiln_server(tmp_path_factory, workers=1, max_header_bytes="16K",
                     max_header_count=50) as s:
        yield s


def _rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


class _Stream:
    """A client sending ``HEAD`` then one header value of up to ``total`` bytes, in a thread,
    while the main thread reads what the server answers."""

    def __init__(self, port: int, total: int, chunk: int = 1 << 20) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.settimeout(60)
        self.total, self.chunk, self.sent = total, chunk, 0
        self.thread = threading.Thread(target=self._send, daemon=True)
        self.thread.start()

    def _send(self) -> None:
        block = b"a" * self.chunk
        try:
            self.sock.sendall(HEAD + b"X-Big: ")
            while self.sent < self.total:
                self.sock.sendall(block)
                self.sent += len(block)
        except OSError:
            pass  # the server cut the connection: what the test waits for

    def answer(self) -> bytes:
        data = b""
        try:
            while chunk := self.sock.recv(65536):
                data += chunk
        except OSError:
            pass
        self.thread.join(60)
        self.sock.close()
        return data


def _envelope(answer: bytes) -> tuple[int, dict[str, object]]:
    head, _, body = answer.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    return status, json.loads(body)["error"]


def test_a_header_past_the_cap_is_431_and_the_rest_is_not_read(srv: KilnServer) -> None:
    stream = _Stream(srv.port, total=1 << 20, chunk=64 << 10)  # 1 MB header
    answer = stream.answer()
    status, err = _envelope(answer)
    assert status == 431, answer[:300]
    assert err["code"] == "too_large"
    assert err["detail"] == {"max_header_bytes": 16 << 10}
    assert b"connection: close" in answer.lower()
    assert srv.healthy()


def test_headers_under_the_cap_are_served(srv: KilnServer) -> None:
    r = srv.client().get("/healthz", headers={"X-Pad": "a" * (12 << 10)})
    assert r.status_code == 200, r.text


def test_too_many_header_fields_is_431(srv: KilnServer) -> None:
    with socket.create_connection(("127.0.0.1", srv.port), timeout=30) as s:
        s.sendall(HEAD + b"".join(b"X-H%d: v\r\n" % i for i in range(80)) + b"\r\n")
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
    status, err = _envelope(answer)
    assert status == 431, answer[:300]
    assert err["code"] == "too_large"
    assert err["detail"] == {"max_header_count": 50}


def test_100_mb_header_streams_leave_memory_bounded_and_clients_served(
    srv: KilnServer,
) -> None:
    srv.client().get("/healthz")
    before = _rss_kib(srv.proc.pid)
    streams = [_Stream(srv.port, total=100 << 20) for _ in range(8)]
    time.sleep(0.5)  # every stream is pushing its header
    r = srv.client().post(
        "/v1/compile", json={"graph": {"format": "mlir", "data": ADD}, "targets": ["cpu"]})
    assert r.status_code == 200, r.text
    peak = _rss_kib(srv.proc.pid)
    answers = [s.answer() for s in streams]
    peak = max(peak, _rss_kib(srv.proc.pid))
    for stream, answer in zip(streams, answers, strict=True):
        assert _envelope(answer)[0] == 431
        assert stream.sent < 100 << 20  # cut off long before the end
    assert peak - before < 100 << 10, (before, peak)  # KiB
    assert srv.healthy()
