"""Fair compile queueing between clients, against a real one-worker server: a client's
three-target compile of a costly graph no longer holds another client's tiny compile behind all
three (it once waited 103 s), and one client cannot fill the whole queue."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.server import KilnServer, kiln_server
from tests.test_service_limits import ADD, slow_graph

# A bench suite (`scripts/test.sh -m bench`): the default run had grown past its 15 minutes.
pytestmark = [pytest.mark.slow, pytest.mark.bench]

THREE = ["cpu:x86_64:haswell", "cpu:x86_64:skylake", "cpu:x86_64:znver3"]


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KilnServer]:
    # One worker, and a timeout that makes each of the costly graph's targets take 5 s.
    with kiln_server(tmp_path_factory, workers=1, compile_timeout=5, max_queue=16,
                     max_queue_per_client=2, tokens="tok-a,tok-b", failure_ttl=0) as s:
        yield s


def _post(srv: KilnServer, token: str, text: str, targets: list[str]) -> httpx.Response:
    return httpx.post(srv.url + "/v1/compile", timeout=300,
                      headers={"Authorization": f"Bearer {token}"},
                      json={"graph": {"format": "mlir", "data": text}, "targets": targets})


def test_another_clients_compile_does_not_wait_behind_every_target(srv: KilnServer) -> None:
    done: dict[str, float] = {}
    t0 = time.monotonic()

    def costly() -> None:
        _post(srv, "tok-a", slow_graph(200), THREE)
        done["a"] = time.monotonic() - t0

    a = threading.Thread(target=costly)
    a.start()
    deadline = time.monotonic() + 60
    while srv.metric("kiln_compiles_in_flight") < 1:  # A's first target is running
        assert time.monotonic() < deadline
        time.sleep(0.05)
    r = _post(srv, "tok-b", ADD, ["cpu"])
    done["b"] = time.monotonic() - t0
    a.join()
    assert r.status_code == 200, r.text
    # B ran right after A's running target, not after all three of them: at least one of A's
    # 5 s targets ran after B was done (first in, first out, B would finish after A)
    assert done["b"] < done["a"] - 4, done


def test_one_client_cannot_fill_the_queue(srv: KilnServer) -> None:
    results: list[httpx.Response] = []

    def go(i: int) -> None:
        results.append(_post(srv, "tok-a", slow_graph(200 + i), ["cpu"]))

    threads = [threading.Thread(target=go, args=(i,)) for i in range(1, 5)]
    for t in threads:
        t.start()
        time.sleep(0.3)
    deadline = time.monotonic() + 60
    while len([r for r in results if r.status_code == 503]) < 1:  # 1 running + 2 waiting = full
        assert time.monotonic() < deadline, [r.status_code for r in results]
        time.sleep(0.1)
    turned_away = [r for r in results if r.status_code == 503][0]
    assert turned_away.json()["error"]["code"] == "overloaded"
    assert "retry-after" in turned_away.headers
    # the other client still gets in while A's jobs wait
    r = _post(srv, "tok-b", ADD.replace("4xf32", "7xf32"), ["cpu"])
    assert r.status_code == 200, r.text
    for t in threads:
        t.join()
