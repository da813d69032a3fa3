"""JSON-lines logging: one object per line on stderr, for the access log and everything else.

Access lines carry ``request_id`` (``X-Request-ID`` in and out), ``method``, ``route`` (the route
template, e.g. ``/v1/artifacts/{hex}``), ``status``, ``seconds``, and what the handler added to
the request's log fields: ``targets``, ``cache`` (hit | miss | mixed), ``compile_seconds``,
``graph_digest``, ``error``.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any

__all__ = ["JsonFormatter", "configure_logging", "log_fields"]

_STD = set(vars(logging.makeLogRecord({})).keys()) | {"message", "asctime", "color_message"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": round(record.created, 6),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for k, v in record.__dict__.items():
            if k not in _STD and not k.startswith("_"):
                out[k] = v
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str, separators=(",", ":"))


def configure_logging(level: str = "info") -> None:
    """Route the ``kiln`` and ``uvicorn`` loggers to stderr as JSON lines (idempotent)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    for name in ("kiln", "uvicorn", "uvicorn.error"):
        lg = logging.getLogger(name)
        lg.handlers[:] = [handler]
        lg.setLevel(level.upper())
        lg.propagate = False
    logging.getLogger("uvicorn.access").disabled = True  # ours carries more


def log_fields(scope: dict[str, Any]) -> dict[str, Any]:
    """The request's mutable log fields (handlers add ``targets``, ``cache``, ...)."""
    return scope.setdefault("kiln.log", {})


def now() -> float:
    return time.perf_counter()
