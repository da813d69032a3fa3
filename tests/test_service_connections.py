"""Connections against a real ``kiln serve`` (service/connections.py, service/limits.py):
half-sent requests are cut off with 408, a crowd of them from one client cannot starve others
even under a 256-descriptor limit, and request bodies in flight are bounded in total."""

from __future__ import annotations

import json
import socket
import subprocess
import threading
import time
from collections.abc import Iterator

import pytest

from tests.server import KilnServer, kiln_server


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KilnServer]:
    with kiln_server(
        tmp_path_factory, workers=1, header_timeout=1.5, body_timeout=1.5,
        max_connections_per_client=16, max_request_bytes=8 << 20,
        max_upload_bytes_in_flight=10 << 20,
    ) as s:
        yield s


def _connect(srv: KilnServer, source: str = "127.0.0.1") -> socket.socket:
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=10,
                                 source_address=(source, 0))
    return s


def _read_all(s: socket.socket) -> bytes:
    data = b""
    while chunk := s.recv(65536):
        data += chunk
    return data


def _status_and_error(data: bytes) -> tuple[int, dict[str, object]]:
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)["error"]


def test_half_sent_headers_are_cut_off_with_408(srv: KilnServer) -> None:
    with _connect(srv) as s:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")  # no blank line: never complete
        t0 = time.monotonic()
        data = _read_all(s)  # the server closes
    assert time.monotonic() - t0 < 8
    status, err = _status_and_error(data)
    assert status == 408 and err["code"] == "invalid_request"


def test_a_malformed_request_gets_the_error_envelope(srv: KilnServer) -> None:
    with _connect(srv) as s:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header Line\r\n\r\n")
        data = _read_all(s)
    status, err = _status_and_error(data)
    assert status == 400 and err["code"] == "invalid_request"
    assert srv.healthy()


def test_a_stalled_body_is_cut_off_with_408(srv: KilnServer) -> None:
    with _connect(srv) as s:
        s.sendall(b"POST /v1/compile HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: 1000\r\n\r\n{\"graph\": ")
        data = _read_all(s)
    status, err = _status_and_error(data)
    assert status == 408 and err["code"] == "invalid_request"
    assert srv.healthy()


def test_a_crowd_of_half_open_connections_does_not_starve_others(srv: KilnServer) -> None:
    # The probe: 300 half-sent requests against a 256-descriptor server.
    subprocess.run(["prlimit", f"--pid={srv.proc.pid}", "--nofile=256:256"], check=True)
    crowd = []
    try:
        for _ in range(300):
            try:
                s = _connect(srv, source="127.0.0.2")
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
                crowd.append(s)
            except OSError:
                break
        # past the cap, a connection from that address is answered 503 and closed at once
        with _connect(srv, source="127.0.0.2") as extra:
            status, err = _status_and_error(_read_all(extra))
        assert status == 503 and err["code"] == "overloaded"
        # another client is served while the crowd holds its connections
        for _ in range(5):
            r = srv.client().get("/healthz")
            assert r.status_code == 200
    finally:
        for s in crowd:
            s.close()


def test_request_bodies_in_flight_are_bounded_in_total(srv: KilnServer) -> None:
    # One 6 MiB body streams slowly; a second 6 MiB body would pass the 10 MiB budget.
    head = (b"POST /v1/compile?format=mlir&target=cpu HTTP/1.1\r\nHost: x\r\n"
            b"Content-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n" % (6 << 20))
    slow = _connect(srv)
    stop = threading.Event()

    def drip() -> None:
        slow.sendall(head)
        sent = 0
        while not stop.is_set() and sent < (6 << 20) - 1024:
            slow.sendall(b" " * 1024)
            sent += 1024
            time.sleep(0.05)

    t = threading.Thread(target=drip, daemon=True)
    t.start()
    try:
        time.sleep(0.5)
        r = srv.client().post(
            "/v1/compile", params={"format": "mlir", "target": "cpu"},
            content=b" " * (6 << 20), headers={"content-type": "application/octet-stream"},
        )
        assert r.status_code == 503, r.text[:500]
        assert r.json()["error"]["code"] == "overloaded" and "retry-after" in r.headers
    finally:
        stop.set()
        t.join(timeout=10)
        slow.close()
    # the budget is given back: a body that fits is read (and judged as a graph) again
    time.sleep(0.5)
    r = srv.client().post("/v1/compile", params={"format": "mlir", "target": "cpu"},
                          content=b" " * (6 << 20),
                          headers={"content-type": "application/octet-stream"})
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_graph"


def test_prepared_graphs_held_at_once_are_bounded(tmp_path_factory: pytest.TempPathFactory) -> None:
    from tests.test_service_limits import ADD, slow_graph

    with kiln_server(tmp_path_factory, workers=1, max_prepared_bytes_in_flight=4096) as s:
        c = s.client()
        small = c.post("/v1/compile", json={"graph": {"format": "mlir", "data": ADD},
                                            "targets": ["cpu"]})
        assert small.status_code == 200, small.text
        big = c.post("/v1/compile", json={"graph": {"format": "mlir", "data": slow_graph(30)},
                                          "targets": ["cpu"]})
        assert big.status_code == 503, big.text[:500]
        err = big.json()["error"]
        assert err["code"] == "overloaded" and err["detail"] == {
            "max_prepared_bytes_in_flight": 4096}
        assert s.healthy()
