"""Bearer-token auth. Tokens come from ``Settings.token_set()``; none configured = auth off.

Every route but the probes (``/healthz``, ``/readyz``) and the status page (``/``, ``/login``:
it checks the bearer header or its own session cookie, service/status.py) needs
``Authorization: Bearer <token>``.
The presented token is compared with *every* configured token with ``hmac.compare_digest`` (no
early exit), so the time taken does not say which token, or how much of one, matched.
"""

from __future__ import annotations

import hmac

__all__ = ["OPEN_PATHS", "PAGE_PATHS", "TokenAuth"]

OPEN_PATHS = frozenset({"/healthz", "/readyz"})
#: The status page: it decides itself (bearer header or session cookie); its cookie opens
#: nothing else.
PAGE_PATHS = frozenset({"/", "/login", "/logout"})


class TokenAuth:
    def __init__(self, tokens: tuple[str, ...]) -> None:
        self._tokens = tuple(t.encode() for t in tokens)

    @property
    def enabled(self) -> bool:
        return bool(self._tokens)

    def needed(self, path: str) -> bool:
        return self.enabled and path not in OPEN_PATHS and path not in PAGE_PATHS

    def allows(self, authorization: bytes | None) -> bool:
        """True if the ``Authorization`` header value carries a configured bearer token."""
        if not self._tokens:
            return True
        if not authorization:
            return False
        scheme, _, presented = authorization.strip().partition(b" ")
        if scheme.lower() != b"bearer":
            return False
        presented = presented.strip()
        ok = False
        for tok in self._tokens:
            ok |= hmac.compare_digest(presented, tok)
        return ok
