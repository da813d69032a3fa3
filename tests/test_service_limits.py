"""Auth, request-size limits, back-pressure, timeouts and graceful shutdown of a real daemon."""

from __future__ import annotations

import signal
import socket
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

import httpx
import pytest

from kiln.cache import open_cache
from tests.graphs import LINALG
from tests.server import KilnServer, kiln_server
from tests.test_determinism import REFORMATTED

ADD = "func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> { return %a : tensor<4xf32> }"


def slow_graph(n: int = 40) -> str:
    """n functions of distinct shapes: about n/3 s of compiling on one core (never deduplicated)."""
    out = []
    for i in range(n):
        t = f"tensor<{8 + i}x{8 + i}xf32>"
        out.append(
            f"func.func @f{i}(%x: {t}) -> {t} {{\n  %e = tensor.empty() : {t}\n"
            f"  %m = linalg.matmul ins(%x, %x : {t}, {t}) outs(%e : {t}) -> {t}\n"
            f"  %t = math.tanh %m : {t}\n  return %t : {t}\n}}"
        )
    return "\n".join(out)


def _mlir(text: str) -> dict[str, object]:
    return {"graph": {"format": "mlir", "data": text}, "targets": ["cpu"]}


def _raw(port: int, request: bytes, *, body_chunks: Iterable[bytes] = ()) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
        s.sendall(request)
        try:
            for chunk in body_chunks:
                s.sendall(chunk)
        except OSError:
            pass  # the server answered and closed while we were still sending: fine
        data = b""
        try:
            while chunk := s.recv(65536):
                data += chunk
                if b"\r\n\r\n" in data and data.rstrip().endswith(b"}"):
                    break
        except ConnectionResetError:
            pass
    return data


# -- auth and size limits -------------------------------------------------------------------


@pytest.fixture(scope="module")
def locked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KilnServer]:
    tokfile = tmp_path_factory.mktemp("tokens") / "tokens"
    tokfile.write_text("# ops\ntok-from-file\n\n")
    with kiln_server(
        tmp_path_factory, workers=1, tokens="tok-a,tok-b", tokens_file=tokfile,
        max_request_bytes=1 << 20,
    ) as s:
        yield s


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/v1/targets"), ("POST", "/v1/compile"), ("GET", "/metrics"),
     ("GET", "/v1/artifacts/" + "0" * 64), ("GET", "/openapi.json"), ("GET", "/nowhere")],
)
def test_every_route_but_probes_needs_a_token(locked: KilnServer, method: str, path: str) -> None:
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic tok-a"},
                    {"Authorization": "Bearer tok-a2"}, {"Authorization": "Bearer"}):
        r = httpx.request(method, locked.url + path, headers=headers, json={}, timeout=30)
        assert r.status_code == 401, (headers, r.text)
        assert r.json()["error"]["code"] == "unauthorized"
        assert r.headers["www-authenticate"].startswith("Bearer")


def test_probes_are_open_and_every_token_works(locked: KilnServer) -> None:
    assert httpx.get(locked.url + "/healthz").status_code == 200
    assert httpx.get(locked.url + "/readyz").status_code == 200
    for tok in ("tok-a", "tok-b", "tok-from-file"):
        assert locked.client(token=tok).get("/v1/targets").status_code == 200
    r = locked.client(token="tok-b").post("/v1/compile", json=_mlir(ADD))
    assert r.status_code == 200, r.text


def test_oversize_body_is_refused_before_it_is_read(locked: KilnServer) -> None:
    c = locked.client()
    r = c.post("/v1/compile", content=b"x" * ((1 << 20) + 1),
               headers={"content-type": "application/octet-stream"}, params={"target": "cpu"})
    assert r.status_code == 413 and r.json()["error"]["code"] == "too_large"
    # Announcing 10 GB is answered at once, without sending (or the server reading) a byte of it.
    t0 = time.monotonic()
    data = _raw(locked.port, b"POST /v1/compile?target=cpu HTTP/1.1\r\nHost: x\r\n"
                b"Authorization: Bearer tok-a\r\nContent-Type: application/octet-stream\r\n"
                b"Content-Length: 10737418240\r\n\r\n")
    assert data.split()[1] == b"413" and b'"too_large"' in data
    assert time.monotonic() - t0 < 30
    # A chunked body without a length is counted as it streams and cut off past the limit.
    chunk = b"x" * 65536
    chunks = (b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(64))  # 4 MiB
    data = _raw(locked.port, b"POST /v1/compile?target=cpu HTTP/1.1\r\nHost: x\r\n"
                b"Authorization: Bearer tok-a\r\nContent-Type: application/octet-stream\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n", body_chunks=chunks)
    assert data.split()[1] == b"413" and b'"too_large"' in data
    assert locked.healthy()


# -- back-pressure, timeouts, shutdown ------------------------------------------------------


@pytest.fixture(scope="module")
def busy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KilnServer]:
    """One compile worker, a queue of one, a 4 s compile timeout, a 2 s shutdown grace."""
    with kiln_server(
        tmp_path_factory, workers=1, max_queue=1, compile_timeout=4, shutdown_timeout=2,
        retry_after=3,
    ) as s:
        yield s


def _start(
    srv: KilnServer, graph: str, results: list[httpx.Response | Exception], *, gauge: str
) -> threading.Thread:
    """POST ``graph`` in a thread; return once the gauge shows it running (or queued)."""
    before = srv.metric(gauge)

    def go() -> None:
        try:
            results.append(httpx.post(srv.url + "/v1/compile", json=_mlir(graph), timeout=120))
        except httpx.HTTPError as exc:
            results.append(exc)

    t = threading.Thread(target=go)
    t.start()
    deadline = time.monotonic() + 60
    while srv.metric(gauge) < before + 1:
        assert time.monotonic() < deadline, f"{gauge} never rose"
        time.sleep(0.05)
    return t


# A bench suite (`scripts/test.sh -m bench`): the default run had grown past its 15 minutes.
@pytest.mark.bench
def test_overload_is_503_with_retry_after_while_hits_are_served(busy: KilnServer) -> None:
    c = busy.client()
    first = c.post("/v1/compile", json=_mlir(LINALG))
    assert first.status_code == 200
    url = first.json()["artifacts"][0]["url"]
    compiles = busy.metric("kiln_compiles_total")
    results: list[httpx.Response | Exception] = []
    slow = _start(busy, slow_graph(), results, gauge="kiln_compiles_in_flight")
    queued: list[httpx.Response | Exception] = []
    filler = _start(busy, ADD.replace("4xf32", "5xf32"), queued, gauge="kiln_compile_queue_depth")
    # The only worker is busy and the queue is full: a cold compile is turned away at once...
    r = c.post("/v1/compile", json=_mlir(ADD.replace("4xf32", "6xf32")))
    assert r.status_code == 503, r.text
    assert r.json()["error"]["code"] == "overloaded" and r.headers["retry-after"] == "3"
    # ...while cache hits keep being served: the same request, a reformatted graph, the bytes.
    same = c.post("/v1/compile", json=_mlir(LINALG))
    assert same.status_code == 200 and same.json()["artifacts"][0]["cached"] is True
    reformatted = c.post("/v1/compile", json=_mlir(REFORMATTED))
    assert reformatted.status_code == 200 and reformatted.json()["artifacts"][0]["cached"]
    assert c.get(url).status_code == 200
    assert busy.metric("kiln_compiles_in_flight") == 1  # all that while, the slow one ran
    slow.join()
    filler.join()
    (slow_result,) = results
    (filled,) = queued
    assert isinstance(filled, httpx.Response) and filled.status_code == 200
    assert isinstance(slow_result, httpx.Response)
    assert slow_result.status_code == 422, slow_result.text
    err = slow_result.json()["error"]
    assert err["code"] == "compile_timeout"
    assert err["detail"]["errors"][0]["target"] == "cpu:x86_64:generic"
    # The timed-out and the queued compile ran the compiler; the turned-away request did not.
    assert busy.metric("kiln_compiles_total") == compiles + 2
    assert busy.metric("kiln_compiles_total", outcome="timeout") == 1
    assert c.post("/v1/compile", json=_mlir(ADD)).status_code == 200  # the worker was replaced


# A bench suite (`scripts/test.sh -m bench`): the default run had grown past its 15 minutes.
@pytest.mark.bench
def test_a_timed_out_compile_is_remembered_not_run_again(busy: KilnServer) -> None:
    c = busy.client()
    graph = slow_graph(43)  # ~14 s of compiling: past the 4 s timeout on any machine
    first = c.post("/v1/compile", json=_mlir(graph))
    assert first.status_code == 422 and first.json()["error"]["code"] == "compile_timeout"
    # the killed worker's temporaries are gone, and none were ever outside the cache directory
    assert list((busy.root / "tmp").iterdir()) == []
    left = [p for p in (Path(busy.cache_dir) / "tmp").rglob("*") if p.is_file()
            and not p.name.endswith(".stderr")]
    assert left == [], left
    compiles = busy.metric("kiln_compiles_total")
    t0 = time.monotonic()
    again = c.post("/v1/compile", json=_mlir(graph))
    assert time.monotonic() - t0 < 2  # answered from memory, not after another 4 s timeout
    assert again.status_code == 422
    err = again.json()["error"]
    assert err["code"] == "compile_timeout"
    remembered = err["detail"]["errors"][0]["error"]["detail"]["remembered"]
    assert 0 < remembered["seconds_left"] <= 600
    assert busy.metric("kiln_compiles_total") == compiles  # no compiler ran
    # the same graph for another target is its own key: it compiles (and times out) again
    other = c.post("/v1/compile", json=_mlir(graph) | {"targets": ["cpu:x86_64:haswell"]})
    assert other.status_code == 422
    assert busy.metric("kiln_compiles_total") == compiles + 1


def test_graceful_shutdown_with_a_compile_in_flight(busy: KilnServer) -> None:
    # a stored executable the shutdown must leave intact (whatever ran on this server before)
    stored = busy.client().post("/v1/compile", json=_mlir(ADD.replace("4xf32", "7xf32")))
    assert stored.status_code == 200, stored.text
    results: list[httpx.Response | Exception] = []
    slow = _start(busy, slow_graph(41), results, gauge="kiln_compiles_in_flight")
    t0 = time.monotonic()
    rc = busy.stop(timeout=60)
    took = time.monotonic() - t0
    slow.join()
    # uvicorn re-raises the signal it handled once shut down: exit by SIGTERM, after a clean stop.
    assert rc in (0, -signal.SIGTERM), busy.log_tail()
    assert "Application shutdown complete" in busy.log_tail()
    assert took < 30  # 2 s grace for requests + at most the pool's grace for running compiles
    leftovers = [p for p in Path(busy.cache_dir).rglob(".tmp-*")]
    assert leftovers == []
    report = open_cache(cache_dir=busy.cache_dir).verify()
    assert report.corrupt == 0 and report.dangling == 0 and report.ok_records >= 1
