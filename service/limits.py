"""Request-body limits, enforced while the body streams in (never buffer first, check later).

- **Per request** (``max_request_bytes``): a ``Content-Length`` above the limit is refused by the
  middleware before the body is read; a body without one (chunked) is counted as it arrives and
  refused as soon as it passes the limit, so at most ``limit`` bytes (plus one network chunk) are
  held for it.
- **All requests together** (``max_upload_bytes_in_flight``, an ``UploadBudget`` per HTTP worker):
  a body reserves its declared length before its first byte is read, a chunked one reserves
  chunk by chunk; a reservation that would pass the budget is refused with 503 ``overloaded``
  (``Retry-After``), and the bytes are given back when the handler has the body (its own copy
  then counts against the request, not the budget).
"""

from __future__ import annotations

import threading

from starlette.requests import Request

from kiln.errors import Overloaded, TooLarge

__all__ = ["ByteBudget", "UploadBudget", "read_body"]


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


UploadBudget = ByteBudget


async def read_body(request: Request, *, limit: int, budget: UploadBudget | None = None) -> bytes:
    """The whole body, or ``TooLarge`` once more than ``limit`` bytes have arrived, or
    ``Overloaded`` when ``budget`` cannot hold it."""
    length = request.headers.get("content-length")
    declared = int(length) if length is not None and length.isdigit() else None
    if declared is not None and declared > limit:
        raise _too_large(limit)
    held = 0
    try:
        if budget is not None and declared is not None:
            budget.take(declared)
            held = declared
        buf = bytearray()
        async for chunk in request.stream():
            buf += chunk
            if len(buf) > limit:
                raise _too_large(limit)
            if budget is not None and len(buf) > held:
                budget.take(len(buf) - held)
                held = len(buf)
        return bytes(buf)
    finally:
        if budget is not None and held:
            budget.give(held)


def _too_large(limit: int) -> TooLarge:
    return TooLarge(
        f"the request body exceeds {limit} bytes", detail={"max_request_bytes": limit}
    )
