"""What an error may say about the machine that produced it: no server paths.

An error that leaves a process (an HTTP error envelope, a job's error, a failure record shared
through Redis: everything built by ``KilnError.to_json``) passes through ``redact``. Every
absolute path under a private directory of this process becomes its last component
(``/srv/venv/lib/python3.11/site-packages/iree/compiler/_mlir_libs/iree-compile`` →
``iree-compile``, ``/var/cache/kiln/tmp/kiln-workers-7/w0/input.mlir:3:5`` → ``input.mlir:3:5``);
a private directory named on its own becomes ``<server>``. A location the graph carries
(``input.mlir:3:5``, ``<stdin>:1:2``, the client's ``model.onnx``) is not under a private
directory and stays as it is.

Private directories: the interpreter's prefixes and site-packages (the compiler lives there),
the Kiln source tree, the temporary directory, and what the process adds with
``add_private_path`` (``kiln serve``: the cache directory and the home directory).
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

__all__ = ["add_private_path", "redact"]

_EXTRA: list[str] = []
_PATTERN: re.Pattern[str] | None = None
#: Characters that end a path inside a message: white space, quotes, brackets, separators and
#: ``:`` (so that ``file:line:col`` keeps its ``:line:col``).
_TAIL = r"(?P<tail>/[^\s'\"`:,;()\[\]{}<>]*)?"


def add_private_path(path: str | os.PathLike[str]) -> None:
    """Treat ``path`` (and what it resolves to) as private from now on, in this process."""
    global _PATTERN
    _EXTRA.append(os.fspath(path))
    _PATTERN = None


def _roots() -> list[str]:
    import site
    import tempfile

    found = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
             tempfile.gettempdir(), str(Path(__file__).resolve().parents[1]), *_EXTRA]
    try:
        found += [*site.getsitepackages(), site.getusersitepackages()]
    except AttributeError:  # a virtualenv's old site module
        pass
    out: set[str] = set()
    for p in found:
        for each in (p, os.path.realpath(p)):
            each = each.rstrip("/")
            if each.count("/") >= 1 and each.startswith("/") and len(each) > 1:
                out.add(each)
    return sorted(out, key=len, reverse=True)  # the longest first: the most specific wins


def _pattern() -> re.Pattern[str]:
    global _PATTERN
    if _PATTERN is None:
        alts = "|".join(re.escape(r) for r in _roots())
        _PATTERN = re.compile(rf"(?<![\w.~/-])(?:{alts})(?![\w.-]){_TAIL}")
    return _PATTERN


def _replace(m: re.Match[str]) -> str:
    parts = [p for p in (m.group("tail") or "").split("/") if p]
    return parts[-1] if parts else "<server>"


def redact(value: Any) -> Any:
    """``value`` (a string, or lists and dicts of them, nested) with private paths replaced;
    anything else is returned as it is."""
    if isinstance(value, str):
        return _pattern().sub(_replace, value) if "/" in value else value
    if isinstance(value, dict):
        return {k: redact(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact(v) for v in value]
    return value
