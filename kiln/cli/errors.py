"""How the command line prints a Kiln error's detail (diagnostics, the compiler command, a hint)."""

from __future__ import annotations

from typing import TextIO

from kiln.errors import KilnError

__all__ = ["print_detail"]


def print_detail(exc: KilnError, stderr: TextIO, *, source: str | None = None) -> None:
    detail = exc.detail
    if isinstance(detail, dict):
        for d in detail.get("diagnostics") or []:
            if isinstance(d, dict):
                f = d.get("file")
                if f in ("-", None) and source:
                    f = source
                where = f"{f}:{d.get('line') or 0}:{d.get('col') or 0}: " if f else ""
                d = f"{where}{d.get('severity', 'error')}: {d.get('message')}"
            print(f"  {d}", file=stderr)
        if detail.get("command"):
            print("  command: " + " ".join(detail["command"]), file=stderr)
        if detail.get("hint"):
            print(f"  hint: {detail['hint']}", file=stderr)


#: What the in-process compiler, the daemon and the cache tools import (the ``server`` extra).
SERVER_MODULES = ("iree.compiler", "onnx", "fastapi", "uvicorn", "redis")


def missing_server_parts() -> list[str]:
    """The ``server`` extra's modules this environment lacks (empty when it is installed)."""
    import importlib.util

    missing = []
    for name in SERVER_MODULES:
        try:
            found = importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:  # a parent package is missing
            found = False
        if not found:
            missing.append(name)
    return missing
