"""``kiln verify FILE [--provenance P] --key K``: check an executable against its signed
provenance (docs/trust.md). Exit 0 and one line naming what was verified; 1 when refused."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, TextIO

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    v = sub.add_parser("verify", help="check an executable against its signed provenance",
                       allow_abbrev=False)
    v.add_argument("file", help="the executable (.vmfb)")
    v.add_argument("--provenance", "-p",
                   help="its DSSE envelope (default: FILE.provenance.json, as kiln build writes)")
    v.add_argument("--key", "-k", action="append", required=True, metavar="PEM",
                   help="a trusted public key file (repeat for several; GET /v1/keys lists them)")
    v.add_argument("--target", help="also require this target (normalized first, as the server "
                   "does: cpu means cpu:x86_64:generic on x86-64)")
    v.add_argument("--graph-digest", help="also require this graph digest (sha256:<hex>)")


def run(args: argparse.Namespace, *, stdout: TextIO, stderr: TextIO) -> int:
    """0 and one line naming what was verified; IntegrityError (exit 1, why on stderr) else."""
    from kiln.errors import IntegrityError, InvalidRequest
    from kiln.provenance import KeyRing, verify_artifact

    ring = KeyRing.from_files(args.key)
    try:
        data = Path(args.file).read_bytes()
    except OSError as exc:
        raise InvalidRequest(f"cannot read {args.file}: {exc.strerror}") from exc
    prov = Path(args.provenance or f"{args.file}.provenance.json")
    try:
        envelope = json.loads(prov.read_bytes())
    except FileNotFoundError:
        envelope = None  # verify_artifact says it is missing
    except (OSError, ValueError) as exc:
        raise IntegrityError(f"cannot read the provenance {prov}: {exc}") from exc
    stmt = verify_artifact(ring, data, envelope, target=_normalized(args.target),
                           graph_digest=args.graph_digest)
    ext = stmt["predicate"]["buildDefinition"]["externalParameters"]
    assert envelope is not None  # verify_artifact refuses a missing one
    keyids = ", ".join(str(s.get("keyid", ""))[:16] for s in envelope["signatures"])
    print(f"verified: {args.file} sha256:{stmt['subject'][0]['digest']['sha256']} "
          f"target {ext.get('target')} graph {ext.get('graph_digest')} (key {keyids})",
          file=stdout)
    return 0


def _normalized(target: str | None) -> str | None:
    """``target`` as the server normalizes it (``cpu`` -> ``cpu:x86_64:generic``); an unknown one
    is ``UnsupportedTarget``. Without the compiler (the light client), CPU names cannot be checked
    and a target is compared as written."""
    if target is None:
        return None
    from kiln.errors import UnsupportedTarget
    from kiln.targets import parse_target

    try:
        return parse_target(target).target
    except UnsupportedTarget:
        raise
    except (OSError, RuntimeError, ImportError):
        return target
