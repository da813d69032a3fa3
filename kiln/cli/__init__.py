"""The ``kiln`` command line: one module per command, each with ``add_parser(sub)`` and
``run(args, stdout=, stderr=)``; ``main(argv, stdout=..., stderr=...)`` parses and dispatches and
is testable without subprocesses.

Exit status: 0 on success; 1 when a compile failed or ``kiln verify`` refused (``code: message``
on stderr); 2 for usage errors, unreadable inputs and bad ``KILN_*`` settings (one line on
stderr naming the variable; settings are read when a command runs, so a bad one never breaks
building the parser); 141 when the reader of stdout went away (``kiln targets | head``). Option
prefixes are never expanded
(``--comp`` is not ``--compile-timeout``).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import TextIO

from kiln.errors import KilnError

__all__ = ["COMMANDS", "build_parser", "main"]

#: Command name -> module under ``kiln.cli`` (imported only when needed).
COMMANDS = {
    "compile": "compile",
    "build": "build",
    "serve": "serve",
    "cache": "cache",
    "verify": "verify",
    "targets": "targets",
    "worker": "worker",
    "inspect": "inspect",
}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kiln", description="Kiln: tensor graphs in, IREE executables out",
                                allow_abbrev=False)
    sub = p.add_subparsers(dest="command", required=True)
    for module in COMMANDS.values():
        importlib.import_module(f"kiln.cli.{module}").add_parser(sub)
    return p


def main(
    argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> int:
    from kiln.cli.errors import BadSetting, missing_server_parts, print_detail

    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    local = args.command in ("serve", "cache", "worker") or (
        args.command in ("compile", "build") and not getattr(args, "server", None))
    missing = missing_server_parts() if local else []
    if missing:
        how = " or compile on a server with --server URL" if args.command != "serve" else ""
        if args.command == "cache":
            how = ""
        print(f"kiln {args.command}: this needs the server parts of Kiln (missing: "
              f"{', '.join(missing)}): pip install \"kiln[server]\"{how}", file=stderr)
        return 2
    try:
        mod = importlib.import_module(f"kiln.cli.{COMMANDS[args.command]}")
        return int(mod.run(args, stdout=stdout, stderr=stderr))
    except KilnError as exc:
        print(f"kiln: {exc.code}: {exc.message}", file=stderr)
        print_detail(exc, stderr, source=getattr(args, "graph", None))
        return 1
    except BadSetting as exc:
        print(f"kiln {args.command}: bad setting {exc}", file=stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (``kiln targets | head``): no traceback, and no second error when
        # Python flushes stdout at exit.
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 141
