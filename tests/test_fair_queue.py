"""The compile queue's order between clients (kiln.compiler.fair_queue): a newcomer's job runs before a
backlog's next one, clients with backlogs alternate, one client alone is FIFO, and a pool's stop
markers wait until every job has been taken."""

from __future__ import annotations

import threading

from kiln.compiler.fair_queue import LAST, TENANT, FairQueue


def _drain(q: FairQueue[str]) -> list[str]:
    return [q.get() for _ in range(q.qsize())]


def test_a_newcomer_runs_before_a_backlog_and_backlogs_alternate() -> None:
    q: FairQueue[str] = FairQueue()
    for i in range(3):
        q.put(f"a{i}", tenant="a")
    assert q.get() == "a0"  # a's first job runs; a1, a2 wait
    q.put("b0", tenant="b")
    q.put("b1", tenant="b")
    q.put("stop", tenant=LAST)
    q.put("c0", tenant="c")
    assert _drain(q) == ["b0", "c0", "a1", "b1", "a2", "stop"]


def test_one_client_alone_is_first_in_first_out() -> None:
    q: FairQueue[int] = FairQueue()
    for i in range(5):
        q.put(i, tenant="x")
    assert [q.get() for _ in range(5)] == [0, 1, 2, 3, 4]
    assert q.waiting("x") == 0 and q.qsize() == 0


def test_the_tenant_comes_from_the_context_and_get_blocks_until_a_put() -> None:
    q: FairQueue[str] = FairQueue()
    got: list[str] = []
    t = threading.Thread(target=lambda: got.append(q.get()))
    t.start()
    token = TENANT.set("client-7")
    try:
        q.put("job")
        assert q.waiting("client-7") in (0, 1)  # the waiting getter may have taken it already
    finally:
        TENANT.reset(token)
    t.join(5)
    assert got == ["job"]
