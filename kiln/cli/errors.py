"""How the command line prints a Kiln error's detail (diagnostics, the compiler command, a hint),
and reads ``KILN_*`` settings: a bad one is ``BadSetting``, which every command reports as one line
(``kiln CMD: bad setting VAR='value': why``) and exit status 2, never a traceback."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TextIO, TypeVar

from kiln.errors import KilnError

__all__ = ["BadSetting", "env_setting", "print_detail"]

T = TypeVar("T")


class BadSetting(Exception):
    """A ``KILN_*`` variable (or flag) whose value does not parse; the message names both."""


def env_setting(var: str, parse: Callable[[str], T], default: T) -> T:
    """``parse`` of the variable ``var``, ``default`` when it is unset or empty; ``BadSetting``
    when ``parse`` refuses it. Read when a command runs, never while parsers are built, so a bad
    variable of one command cannot break another."""
    raw = os.environ.get(var, "")
    if not raw.strip():
        return default
    try:
        return parse(raw)
    except ValueError as exc:
        raise BadSetting(f"{var}={raw[:64]!r}: {_why(exc)}") from None


def _why(exc: ValueError) -> str:
    text = str(exc)
    if text.startswith("invalid literal for int()"):
        return "not a whole number"
    if text.startswith("could not convert string to float"):
        return "not a number"
    return text


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
