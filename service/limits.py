"""Request-body limits, enforced while the body streams in (never buffer first, check later).

- **Per request** (``max_request_bytes``): a ``Content-Length`` above the limit is refused by the
  middleware before the body is read; a body without one (chunked) is counted as it arrives and
  refused as soon as it passes the limit, so at most ``limit`` bytes (plus one network chunk) are
  held for it.
- **All requests together** (``max_upload_bytes_in_flight``, an ``UploadBudget`` per HTTP worker):
  a body reserves its declared length before its first byte is read, a chunked one reserves
  chunk by chunk; a reservation that would pass the budget is refused with 503 ``overloaded``
  (``Retry-After``), and the bytes are given back when the handler has the body (its own copy
  then counts against the request, not the budget), or when reading it failed for any reason.
- **Per client** (``max_upload_bytes_per_client``): one client (its bearer token when auth is
  on, else its peer address) holds at most this much of the budget; past it, 503 for that client
  only, so one client's uploads can never take the whole budget from the others.
- **Pace** (``upload_min_bytes_per_second`` after ``upload_grace_seconds``): a body whose average
  rate since its start falls below the minimum once the grace has passed is cut off: 408
  ``invalid_request``, the connection closed (``Connection: close``) and its reservation
  released. The check runs on a timer, not only when bytes arrive, so a client that sends one
  byte every few seconds is cut at the moment its average drops below the minimum. The
  connection layer's ``body_timeout`` bounds each silence on its own.
- A client that disconnects before its body is complete is logged as such (not as a server
  error) and its reservation released.

The per-client share and the pace are read from the settings of the service the request's app
holds (``app.state.kiln.settings``), so every route that reads a body with a budget obeys them.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import threading
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from starlette.requests import ClientDisconnect, Request

from kiln.errors import InvalidRequest, Overloaded, TooLarge

__all__ = [
    "BodyAbandoned", "BodyTooSlow", "ByteBudget", "UploadBudget", "UploadPolicy", "read_body",
    "stream_body",
]

log = logging.getLogger("kiln.service.access")


class BodyTooSlow(InvalidRequest):
    """408: the body's average rate fell below the minimum after the grace period. The response
    closes the connection (the rest of the body is never read)."""

    http_status = 408
    close_connection = True


class BodyAbandoned(InvalidRequest):
    """The client closed the connection before its body was complete (nobody reads the answer)."""

    close_connection = True


class ByteBudget:
    """Bytes held at once by requests in flight (thread-safe): request bodies being received
    (``UploadBudget``), or prepared graphs waiting for their compiles (``CompileService``)."""

    what = "request bodies in flight"
    setting = "max_upload_bytes_in_flight"

    def __init__(self, limit: int, *, retry_after: float = 2.0, what: str | None = None,
                 setting: str | None = None) -> None:
        self.limit = limit
        self.retry_after = retry_after
        self.what = what or self.what
        self.setting = setting or self.setting
        self._used = 0
        self._lock = threading.Lock()

    @property
    def used(self) -> int:
        return self._used

    def take(self, n: int) -> None:
        """Reserve ``n`` bytes, or raise ``Overloaded`` (nothing reserved)."""
        with self._lock:
            if self._used + n > self.limit:
                raise Overloaded(
                    f"{self.what} would pass {self.limit} bytes; retry later",
                    retry_after=self.retry_after,
                    detail={self.setting: self.limit},
                )
            self._used += n

    def give(self, n: int) -> None:
        with self._lock:
            self._used = max(0, self._used - n)


class UploadBudget(ByteBudget):
    """A ``ByteBudget`` that also bounds what each client holds of it (``take(..., client=)``)."""

    def __init__(self, limit: int, *, retry_after: float = 2.0) -> None:
        super().__init__(limit, retry_after=retry_after)
        self._by_client: Counter[str] = Counter()

    def held_by(self, client: str) -> int:
        return self._by_client[client]

    def take_for(self, client: str, n: int, *, client_limit: int) -> None:
        """Reserve ``n`` bytes for ``client``, or raise ``Overloaded`` (nothing reserved) when the
        budget or the client's share (``client_limit``) would be passed."""
        with self._lock:
            if self._by_client[client] + n > client_limit:
                raise Overloaded(
                    f"this client's request bodies in flight would pass {client_limit} bytes; "
                    "retry when one has arrived",
                    retry_after=self.retry_after,
                    detail={"max_upload_bytes_per_client": client_limit},
                )
            if self._used + n > self.limit:
                raise Overloaded(
                    f"{self.what} would pass {self.limit} bytes; retry later",
                    retry_after=self.retry_after,
                    detail={self.setting: self.limit},
                )
            self._used += n
            self._by_client[client] += n

    def give_for(self, client: str, n: int) -> None:
        with self._lock:
            self._used = max(0, self._used - n)
            left = self._by_client[client] - n
            if left > 0:
                self._by_client[client] = left
            else:
                self._by_client.pop(client, None)


@dataclass(frozen=True)
class UploadPolicy:
    """How a body is read against an ``UploadBudget``: the client's share (bytes) and the pace
    (bytes per second, after ``grace`` seconds; ``min_rate`` 0 = no pace)."""

    client_limit: int
    min_rate: int = 0
    grace: float = 0.0

    @classmethod
    def of(cls, request: Request, budget: ByteBudget) -> UploadPolicy:
        """The service's settings, or the whole budget and no pace when the app has none."""
        settings: Any = getattr(getattr(getattr(request.app, "state", None), "kiln", None),
                                "settings", None)
        if settings is None:
            return cls(client_limit=budget.limit)
        return cls(client_limit=int(settings.max_upload_bytes_per_client),
                   min_rate=int(settings.upload_min_bytes_per_second),
                   grace=float(settings.upload_grace_seconds))


def client_of(request: Request) -> str:
    """Who a body is for: its bearer token (hashed) when the service checks tokens, else its
    peer address (a made-up token on a server without auth buys no second share)."""
    auth = request.headers.get("authorization", "")
    service = getattr(getattr(request.app, "state", None), "kiln", None)
    checks_tokens = bool(getattr(getattr(service, "auth", None), "enabled", False))
    if checks_tokens and auth.lower().startswith("bearer "):
        return "token:" + hashlib.sha256(auth[7:].strip().encode()).hexdigest()[:16]
    return "addr:" + (request.client.host if request.client else "?")


async def read_body(request: Request, *, limit: int, budget: ByteBudget | None = None) -> bytes:
    """The whole body, or ``TooLarge`` once more than ``limit`` bytes have arrived,
    ``Overloaded`` when ``budget`` (or, for an ``UploadBudget``, the client's share) cannot hold
    it, ``BodyTooSlow`` when it arrives below the pace, ``BodyAbandoned`` when the client leaves
    first. Whatever it raises, nothing stays reserved."""
    buf = bytearray()
    async for chunk in stream_body(request, limit=limit, budget=budget):
        buf += chunk
    return bytes(buf)


async def stream_body(
    request: Request, *, limit: int, budget: ByteBudget | None = None
) -> AsyncIterator[bytes]:
    """The body chunk by chunk, under ``read_body``'s rules (the same limit, budget, client
    share and pace, the same errors), for a reader that does not hold it whole (the tar upload
    writes it to disk). The reservation lasts until the last chunk has been taken, or the
    generator is closed: close it (``aclosing``) when stopping early."""
    length = request.headers.get("content-length")
    declared = int(length) if length is not None and length.isdigit() else None
    if declared is not None and declared > limit:
        raise _too_large(limit)
    client = client_of(request)
    policy = UploadPolicy.of(request, budget) if budget is not None else UploadPolicy(limit)
    held = 0
    received = 0

    def reserve(n: int) -> None:
        nonlocal held
        if isinstance(budget, UploadBudget):
            budget.take_for(client, n, client_limit=policy.client_limit)
        elif budget is not None:
            budget.take(n)
        held += n

    loop = asyncio.get_running_loop()
    start = loop.time()
    chunks = request.stream().__aiter__()
    try:
        if budget is not None and declared is not None:
            reserve(declared)
        while True:
            try:
                if budget is not None and policy.min_rate > 0:
                    # The moment the average since ``start`` drops below the minimum.
                    due = start + max(policy.grace, received / policy.min_rate)
                    async with asyncio.timeout_at(due):
                        chunk = await anext(chunks)
                else:
                    chunk = await anext(chunks)
            except StopAsyncIteration:
                break
            except TimeoutError:
                raise _too_slow(policy, received, loop.time() - start) from None
            except ClientDisconnect:
                log.info("client disconnected mid-body", extra={
                    "client": client, "received_bytes": received, "declared_bytes": declared})
                raise BodyAbandoned(
                    "the client closed the connection before the request body was complete"
                ) from None
            received += len(chunk)
            if received > limit:
                raise _too_large(limit)
            if budget is not None and received > held:
                reserve(received - held)
            if chunk:
                yield chunk
    finally:
        if held and isinstance(budget, UploadBudget):
            budget.give_for(client, held)
        elif held and budget is not None:
            budget.give(held)


def _too_slow(policy: UploadPolicy, received: int, seconds: float) -> BodyTooSlow:
    return BodyTooSlow(
        f"the request body arrived at {received / max(seconds, 1e-9):.0f} bytes/s, below the "
        f"minimum of {policy.min_rate} bytes/s; send it faster or in a smaller request",
        detail={"upload_min_bytes_per_second": policy.min_rate,
                "upload_grace_seconds": policy.grace, "received_bytes": received},
    )


def _too_large(limit: int) -> TooLarge:
    return TooLarge(
        f"the request body exceeds {limit} bytes", detail={"max_request_bytes": limit}
    )
