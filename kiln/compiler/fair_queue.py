"""A job queue that is fair between clients: one FIFO per client, served round-robin.

With one FIFO for everybody, a client that sends a three-target compile of a costly graph puts
three long jobs ahead of everyone else's; on a one-worker server another client's tiny compile
waited 103 s. Here each client (a *tenant*: the service names it from the bearer
token, or the peer address when auth is off) has its own FIFO, and a free worker takes the
oldest job of the tenant served least recently; a tenant that had nothing queued counts as never
served, so a newcomer's job runs next, before a backlog's second job. One tenant alone gets plain
FIFO order.

``tenant`` is read from the ``TENANT`` context variable when a job is put (the service sets it
per request; anyio and the pipeline's threads carry it along), so the layers in between need not
pass it. Thread-safe; ``get`` blocks.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque
from contextvars import ContextVar
from typing import Generic, TypeVar

__all__ = ["LAST", "TENANT", "FairQueue"]

T = TypeVar("T")

#: The client on whose behalf the current request runs ("" = anonymous, one shared FIFO).
TENANT: ContextVar[str] = ContextVar("kiln_tenant", default="")
#: A tenant served only when no other has anything queued (a pool's stop markers).
LAST = "\x00last"


class FairQueue(Generic[T]):
    """``put``/``get``/``get_nowait``/``qsize`` like ``queue.Queue``, round-robin by tenant."""

    def __init__(self) -> None:
        self._fifos: OrderedDict[str, deque[T]] = OrderedDict()  # tenants with jobs, by arrival
        self._served: dict[str, int] = {}  # tenant -> the turn it was last served in (-1: never)
        self._turn = 0
        self._size = 0
        self._cond = threading.Condition()

    def put(self, item: T, *, tenant: str | None = None) -> None:
        """Queue ``item`` for ``tenant`` (default: the ``TENANT`` context variable)."""
        t = TENANT.get() if tenant is None else tenant
        with self._cond:
            fifo = self._fifos.get(t)
            if fifo is None:
                fifo = self._fifos[t] = deque()
                self._served[t] = -1
            fifo.append(item)
            self._size += 1
            self._cond.notify()

    def get(self) -> T:
        with self._cond:
            while self._size == 0:
                self._cond.wait()
            return self._take()

    def get_nowait(self) -> T:
        """The next item; ``IndexError`` if there is none."""
        with self._cond:
            if self._size == 0:
                raise IndexError("the queue is empty")
            return self._take()

    def qsize(self) -> int:
        return self._size

    def waiting(self, tenant: str) -> int:
        """Items queued for ``tenant``."""
        with self._cond:
            fifo = self._fifos.get(tenant)
            return len(fifo) if fifo else 0

    def _take(self) -> T:
        others = [t for t in self._fifos if t != LAST] or [LAST]
        tenant = min(others, key=self._served.__getitem__)  # ties: the earliest arrival
        fifo = self._fifos[tenant]
        item = fifo.popleft()
        self._size -= 1
        self._turn += 1
        if fifo:
            self._served[tenant] = self._turn
        else:
            del self._fifos[tenant], self._served[tenant]
        return item
