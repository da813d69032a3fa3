"""Connection limits below the ASGI app: read timeouts, header caps and a per-client connection cap.

uvicorn bounds only the idle time *between* requests (``timeout_keep_alive``): a client that
opens a connection and sends half a request line, or half a body, holds a file descriptor for
ever. Three hundred of them exhausted a 256-descriptor server and ``/healthz`` failed for the
whole hold (issue 21). nginx's answer is ``client_header_timeout``, ``client_body_timeout`` and
``limit_conn``; this is the same in the daemon, as a subclass of uvicorn's httptools protocol
(``kiln serve`` passes it as uvicorn's ``http`` class):

- **header timeout** (``KILN_HEADER_TIMEOUT``): from the moment a connection opens, or a request's
  first byte arrives, its request line and headers must be complete within this many seconds;
- **body timeout** (``KILN_BODY_TIMEOUT``): while a body streams in, the longest silence allowed
  between two reads (nginx's rule: a slow but moving upload is fine);
- on either, the client gets 408 with the error envelope (code ``invalid_request``) and the
  connection is closed; once a request is complete, the app's own time is not limited here
  (compiles have their own timeout);
- **header size** (``KILN_MAX_HEADER_BYTES``) and **count** (``KILN_MAX_HEADER_COUNT``): a
  request line and headers past either get 431 with the envelope (code ``too_large``). The bytes
  are counted as they arrive, before the parser sees them (it accumulates a header's name and
  value without bound), and no byte past the cap is parsed: a 100 MB header costs the server at
  most the cap. After the 431 the connection stops being read, is half-closed so the client sees
  the whole answer, and is closed after ``_LINGER`` seconds or when the client closes first;
- a request the HTTP parser rejects (a malformed request line or header) gets 400 with the error
  envelope (``invalid_request``), not uvicorn's plain-text body, like every other error;
- **per-client cap** (``KILN_MAX_CONNECTIONS_PER_CLIENT``, 0 = none): a client address with that
  many open connections gets 503 ``overloaded`` (``Retry-After``) on the next one, which is
  closed at once. Counted per HTTP worker process, by the peer address the socket reports (behind
  a proxy that is the proxy: cap there, see the nginx front).

The limits are read from the ``KILN_*`` environment (``kiln serve`` exports its flags there), once
per process, so every ``--http-workers`` process applies the same ones.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
from collections import Counter
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["GuardedHttpProtocol", "Limits"]

log = logging.getLogger("kiln.service.access")


class Limits:
    """The limits, from ``Settings`` (seconds, bytes, counts; a per-client cap of 0 is none)."""

    def __init__(self, header_timeout: float, body_timeout: float, per_client: int, *,
                 header_bytes: int = 64 << 10, header_count: int = 100) -> None:
        self.header_timeout = header_timeout
        self.body_timeout = body_timeout
        self.per_client = per_client
        self.header_bytes = header_bytes
        self.header_count = header_count


@functools.cache
def _limits() -> Limits:
    from .settings import Settings

    s = Settings()
    return Limits(s.header_timeout, s.body_timeout, s.max_connections_per_client,
                  header_bytes=s.max_header_bytes, header_count=s.max_header_count)


#: Seconds a refused connection stays half-open (not read) before it is closed: long enough for
#: the answer to reach a client that is still sending, short enough to hold nothing for long.
_LINGER = 2.0


class _HeadersTooLarge(Exception):
    """Raised from a parser callback to stop parsing a request whose headers are past a cap."""


def _raw_response(status: int, reason: str, code: str, message: str,
                  extra: tuple[str, ...] = (), *, detail: dict[str, int] | None = None) -> bytes:
    body = json.dumps({"error": {"code": code, "message": message, "detail": detail}}).encode()
    head = [f"HTTP/1.1 {status} {reason}", "content-type: application/json",
            f"content-length: {len(body)}", "connection: close", *extra]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


_OPEN: Counter[str] = Counter()  # open connections per client address, this process


class GuardedHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the read timeouts and the per-client cap above."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._limits = _limits()
        self._timer: asyncio.TimerHandle | None = None
        self._peer: str | None = None
        self._in_body = False
        self._head_bytes = 0  # request line and headers of the request being read, so far
        self._header_count = 0
        self._refused: str | None = None  # why the request's headers were refused (431)
        self._refused_detail: dict[str, int] = {}

    # -- the connection ---------------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        peer = self.client[0] if self.client else None
        cap = self._limits.per_client
        if peer is not None and cap > 0 and _OPEN[peer] >= cap:
            transport.write(_raw_response(
                503, "Service Unavailable", "overloaded",
                f"too many open connections from this client (at most {cap})",
                ("retry-after: 1",),
            ))
            transport.close()
            return
        if peer is not None:
            self._peer = peer
            _OPEN[peer] += 1
        self._arm(self._limits.header_timeout)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self._peer is not None:
            _OPEN[self._peer] -= 1
            if _OPEN[self._peer] <= 0:
                del _OPEN[self._peer]
            self._peer = None
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused is not None:
            return  # refused: nothing more is parsed (reading is paused; this is what was queued)
        if self._in_body:
            self._arm(self._limits.body_timeout)  # silence is measured between reads
        cap = self._limits.header_bytes
        while data and not self._in_body:
            # Headers are being read: the parser sees at most the bytes left under the cap.
            room = cap - self._head_bytes
            if room <= 0:
                self._refuse(f"the request line and headers exceed {cap} bytes",
                             {"max_header_bytes": cap})
                return
            chunk, data = data[:room], data[room:]
            self._head_bytes += len(chunk)
            super().data_received(chunk)
            if self._refused is not None or self.transport.is_closing():
                return
        if data:
            super().data_received(data)

    # -- httptools callbacks: where a request is in its reading -------------------------------

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_body = False
        self._header_count = 0
        self._arm(self._limits.header_timeout)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_count += 1
        if self._header_count > self._limits.header_count:
            cap = self._limits.header_count
            self._refused = f"the request has more than {cap} header fields"
            self._refused_detail = {"max_header_count": cap}
            raise _HeadersTooLarge  # the parser stops; uvicorn calls send_400_response
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        self._in_body = True
        self._arm(self._limits.body_timeout)

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._in_body = False
        self._head_bytes = 0  # the next request on this connection counts from here
        self._disarm()

    def send_400_response(self, msg: str) -> None:
        """The parser's 400, in the envelope every other error uses (431 when a callback stopped
        the parser for a header cap)."""
        if self._refused is not None:
            self._refuse(self._refused, self._refused_detail)
            return
        self._disarm()
        self.transport.write(_raw_response(400, "Bad Request", "invalid_request", msg))
        self.transport.close()

    def _refuse(self, message: str, detail: dict[str, int]) -> None:
        """431 ``too_large``; then stop reading, half-close, and close after ``_LINGER``."""
        self._refused = message
        self._disarm()
        log.warning("431 to %s: %s", self._peer or "a client", message)
        transport = self.transport
        if transport.is_closing():
            return
        transport.write(_raw_response(431, "Request Header Fields Too Large", "too_large",
                                      message, detail=detail))
        transport.pause_reading()
        if transport.can_write_eof():
            transport.write_eof()
        self._timer = self.loop.call_later(_LINGER, transport.close)

    # -- the timer ---------------------------------------------------------------------------

    def _arm(self, seconds: float) -> None:
        self._disarm()
        if seconds > 0:
            self._timer = self.loop.call_later(seconds, self._timed_out)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _timed_out(self) -> None:
        self._timer = None
        if self.transport.is_closing():
            return
        cycle = self.cycle
        if cycle is None or not cycle.response_started:
            what = "body" if self._in_body else "request headers"
            self.transport.write(_raw_response(
                408, "Request Timeout", "invalid_request",
                f"the {what} did not arrive in time",
            ))
        if cycle is not None:
            cycle.disconnected = True
            cycle.message_event.set()  # an app waiting for the body sees the disconnect
        self.transport.close()
