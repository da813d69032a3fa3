"""Kiln's one error hierarchy.

Every error carries a stable, machine-readable ``code`` (the API contract's error codes), a human
``message`` and an optional JSON-serializable ``detail``. The HTTP mapping lives in one place
(``kiln.service.errors``); the CLI prints ``code: message``.

    KilnError                       internal
    ├── InvalidRequest              invalid_request
    ├── InvalidGraph                invalid_graph
    ├── UnsupportedTarget           unsupported_target
    ├── CompileError                compile_failed
    │   └── CompileTimeout          compile_timeout
    ├── TooLarge                    too_large
    ├── Unauthorized                unauthorized
    ├── Overloaded                  overloaded
    ├── NotFound                    not_found
    ├── IntegrityError              integrity_error  (bytes that do not match their digest, or a
    │                                                 provenance that does not verify)
    ├── IncompatibleRuntime         incompatible_runtime (409: the client's IREE runtime cannot
    │                                                 load this server's compiler's output)
    ├── CacheUnavailable            cache_unavailable (a remote cache backend is down)
    ├── InsufficientStorage         insufficient_storage (507: the cache directory is full)
    ├── TuningForbidden             tuning_forbidden (403: tuning records from unauthenticated
    │                                                 clients, on a server without tokens)
    ├── TuningRejected              tuning_rejected  (422: a tuning record that contradicts itself)
    │   └── TuningOutlier           tuning_outlier   (409: a tuning record far from its peers')
    ├── ConnectionFailed            unavailable      (client: the server could not be reached)
    └── LoadFailed                  load_failed      (client: no candidate target compiled and loaded)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "CacheUnavailable",
    "CompileError",
    "CompileTimeout",
    "Diagnostic",
    "IncompatibleRuntime",
    "InsufficientStorage",
    "IntegrityError",
    "InvalidGraph",
    "InvalidRequest",
    "KilnError",
    "NotFound",
    "Overloaded",
    "TooLarge",
    "TuningForbidden",
    "TuningOutlier",
    "TuningRejected",
    "Unauthorized",
    "UnsupportedTarget",
]


@dataclass(frozen=True)
class Diagnostic:
    """One compiler/parser diagnostic, as ``file:line:col: severity: message``."""

    message: str
    severity: str = "error"
    file: str | None = None
    line: int | None = None
    col: int | None = None

    def __str__(self) -> str:
        where = ""
        if self.file is not None:
            col = "" if self.col is None else f":{self.col}"
            where = f"{self.file}:{self.line or 0}{col}: "
        return f"{where}{self.severity}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "line": self.line,
            "col": self.col,
            "severity": self.severity,
            "message": self.message,
        }


class KilnError(Exception):
    code = "internal"
    http_status = 500

    def __init__(self, message: str, *, detail: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail

    def to_json(self) -> dict[str, Any]:
        """The error as it leaves this process: server paths redacted (``kiln.redact``)."""
        from kiln.redact import redact

        return {"code": self.code, "message": redact(self.message), "detail": redact(self.detail)}

    def __reduce__(self) -> tuple[Any, ...]:
        # Errors cross process boundaries (worker -> caller) with all their fields.
        return (_rebuild, (type(self), self.args, self.__dict__))

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> KilnError:
        """Rebuild the most specific error class for an error envelope's body (client side)."""
        code = data.get("code", "internal")
        klass = _BY_CODE.get(code, KilnError)
        err = klass.__new__(klass)
        KilnError.__init__(err, str(data.get("message", code)), detail=data.get("detail"))
        if klass is KilnError:
            err.code = code
        return err


class InvalidRequest(KilnError):
    code = "invalid_request"
    http_status = 400


class InvalidGraph(KilnError):
    code = "invalid_graph"
    http_status = 400

    def __init__(
        self, message: str, *, diagnostics: list[Diagnostic] | None = None, detail: Any = None
    ) -> None:
        self.diagnostics = list(diagnostics or [])
        if detail is None and self.diagnostics:
            detail = {"diagnostics": [d.to_json() for d in self.diagnostics]}
        super().__init__(message, detail=detail)


class UnsupportedTarget(KilnError):
    code = "unsupported_target"
    http_status = 400

    def __init__(self, message: str, *, valid: dict[str, list[str]] | list[str]) -> None:
        super().__init__(message, detail={"valid": valid})
        self.valid = valid


@dataclass
class CompileFailure:
    """What a failed compiler run left behind (kept on ``CompileError.failure``)."""

    command: list[str] = field(default_factory=list)
    exit_code: int | None = None
    signal: str | None = None
    stderr: str = ""
    diagnostics: list[Diagnostic] = field(default_factory=list)


class CompileError(KilnError):
    """The compiler refused the graph, crashed, ran out of memory or of time.

    ``detail`` holds the diagnostics (file:line:col + message), the exact command, the exit code or
    the signal that killed it, and how to keep the compiler's temporaries to investigate.
    """

    code = "compile_failed"
    http_status = 422

    def __init__(self, message: str, *, failure: CompileFailure | None = None) -> None:
        self.failure = failure or CompileFailure()
        f = self.failure
        detail = {
            "diagnostics": [str(d) for d in f.diagnostics],
            "command": f.command,
            "exit_code": f.exit_code,
            "signal": f.signal,
            "stderr_tail": f.stderr[-4000:],
            "hint": (
                "reproduce with the command above (on the graph's canonical form, input.mlir); "
                "set KILN_KEEP_TEMPS=DIR for kiln compile/serve to keep input.mlir, the command "
                "and the executable intermediates under DIR"
            ),
        }
        super().__init__(message, detail=detail)


class CompileTimeout(CompileError):
    code = "compile_timeout"
    http_status = 422


class TooLarge(KilnError):
    code = "too_large"
    http_status = 413


class Unauthorized(KilnError):
    code = "unauthorized"
    http_status = 401


class Overloaded(KilnError):
    code = "overloaded"
    http_status = 503

    def __init__(self, message: str, *, retry_after: float = 1.0, detail: Any = None) -> None:
        super().__init__(message, detail=detail)
        self.retry_after = retry_after


class NotFound(KilnError):
    code = "not_found"
    http_status = 404


class IntegrityError(KilnError):
    code = "integrity_error"
    http_status = 502


class IncompatibleRuntime(KilnError):
    """The runtime named by ``X-Kiln-Runtime`` cannot load what this server's compiler makes.

    ``detail``: ``runtime`` (the client's), ``compiler`` (the server's IREE version) and
    ``supported`` (the runtime versions the server can serve, e.g. ``["3.13.x"]``)."""

    code = "incompatible_runtime"
    http_status = 409


class CacheUnavailable(KilnError):
    code = "cache_unavailable"
    http_status = 503


class InsufficientStorage(KilnError):
    """The executable was built but the cache could not keep it (no space or quota left), so
    there is nothing to fetch: the target fails rather than answering a URL that would 404."""

    code = "insufficient_storage"
    http_status = 507


class TuningForbidden(KilnError):
    """A tuning record from a client the server cannot authenticate: it has no tokens
    configured (``KILN_TUNING_ACCEPT=any`` opens it; docs/api.md, "Tuning records")."""

    code = "tuning_forbidden"
    http_status = 403


class TuningRejected(KilnError):
    """A tuning record that does not hold up on its own: the chosen preset is not the fastest
    of its times, a preset is not allow-listed, too few samples, a time not positive and finite.
    ``detail["reason"]`` says which."""

    code = "tuning_rejected"
    http_status = 422


class TuningOutlier(TuningRejected):
    """A tuning record whose speedup disagrees by more than the allowed factor with the median
    of the accepted records of the same graph, target, runtime and device class."""

    code = "tuning_outlier"
    http_status = 409


class ConnectionFailed(KilnError):
    """The server could not be reached (refused, reset, timed out) after every retry."""

    code = "unavailable"
    http_status = 503


class LoadFailed(KilnError):
    """``load`` tried every candidate target and none compiled and loaded.

    ``detail["attempts"]`` lists each target with the error that ruled it out.
    """

    code = "load_failed"
    http_status = 422


def _rebuild(cls: type[KilnError], args: tuple[Any, ...], state: dict[str, Any]) -> KilnError:
    err = cls.__new__(cls)
    Exception.__init__(err, *args)
    err.__dict__.update(state)
    return err


_BY_CODE: dict[str, type[KilnError]] = {
    k.code: k
    for k in (
        InvalidRequest,
        InvalidGraph,
        UnsupportedTarget,
        CompileError,
        CompileTimeout,
        TooLarge,
        Unauthorized,
        Overloaded,
        NotFound,
        IntegrityError,
        IncompatibleRuntime,
        CacheUnavailable,
        TuningForbidden,
        TuningRejected,
        TuningOutlier,
        ConnectionFailed,
        LoadFailed,
    )
}
