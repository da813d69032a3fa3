"""Request-size limit, enforced while the body streams in (never buffer first, check later).

``Content-Length`` above the limit is refused by the middleware before the body is read; a body
without one (chunked) is counted as it arrives and refused as soon as it passes the limit, so at
most ``limit`` bytes (plus one network chunk) are ever held in memory.
"""

from __future__ import annotations

from starlette.requests import Request

from kiln.errors import TooLarge

__all__ = ["read_body"]


async def read_body(request: Request, *, limit: int) -> bytes:
    """The whole body, or ``TooLarge`` once more than ``limit`` bytes have arrived."""
    length = request.headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > limit:
        raise _too_large(limit)
    buf = bytearray()
    async for chunk in request.stream():
        buf += chunk
        if len(buf) > limit:
            raise _too_large(limit)
    return bytes(buf)


def _too_large(limit: int) -> TooLarge:
    return TooLarge(
        f"the request body exceeds {limit} bytes", detail={"max_request_bytes": limit}
    )
