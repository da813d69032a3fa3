"""``kiln targets [--json] [--cpus ARCH]``: the accepted targets (and the CPU names for an
architecture)."""

from __future__ import annotations

import argparse
import json
from typing import Any, TextIO

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    t = sub.add_parser("targets", help="list the accepted targets", allow_abbrev=False)
    t.add_argument("--json", action="store_true")
    t.add_argument("--cpus", metavar="ARCH", help="list the CPU names the compiler accepts for ARCH")


def run(args: argparse.Namespace, *, stdout: TextIO, stderr: TextIO) -> int:
    from kiln.targets import describe_targets
    from kiln.targets.toolchain import compiler_identity

    if args.cpus:
        from kiln.targets import cpu as cpu_kind
        from kiln.targets.toolchain import llvm_cpu_catalog

        arch = cpu_kind.ALIASES.get(args.cpus, args.cpus)
        if arch not in cpu_kind.ARCHS:
            print(f"unknown CPU architecture {arch!r}; valid: {', '.join(cpu_kind.ARCHS)}", file=stdout)
            return 2
        cat = llvm_cpu_catalog(str(cpu_kind.ARCHS[arch]["triple"]))
        print("\n".join(sorted(cat.cpus)), file=stdout)
        return 0
    ident = compiler_identity()
    kinds = describe_targets()
    if args.json:
        print(json.dumps({"compiler": ident.to_json(), "kinds": [k.to_json() for k in kinds]},
                         indent=2), file=stdout)
        return 0
    print(f"compiler: iree {ident.version}", file=stdout)
    for k in kinds:
        print(f"\n{k.kind}  (default {k.default})", file=stdout)
        print(f"  archs:   {', '.join(k.archs)}", file=stdout)
        if k.aliases:
            print("  aliases: " + ", ".join(f"{a}->{b}" for a, b in sorted(k.aliases.items())), file=stdout)
        if k.notes:
            print(f"  notes:   {k.notes}", file=stdout)
    return 0
