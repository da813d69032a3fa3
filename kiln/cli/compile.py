"""``kiln compile GRAPH -t TARGET... [-o OUT] [--server URL]``: compile one graph, in this
process or on a server (``kiln.cli.backends``), and write one executable per target; with
``--option params=external``, also the weights' archive ``<graph>.irpa`` beside them.

Exit status: 0 when every target was built; 1 when any failed (the others are still written);
2 when the graph cannot be read.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, TextIO

from kiln.cli.backends import open_backend
from kiln.cli.errors import print_detail
from kiln.cli.manifest import artifact_name, params_name
from kiln.files import atomic_write

__all__ = ["add_parser", "run"]


def _parse_option(text: str) -> tuple[str, str]:
    if "=" not in text:
        raise argparse.ArgumentTypeError("options are KEY=VALUE")
    k, v = text.split("=", 1)
    return k, v


def add_parser(sub: Any) -> None:
    c = sub.add_parser("compile", help="compile a graph (ONNX or MLIR) for one or more targets",
                       allow_abbrev=False)
    c.add_argument("graph", help="path to a .onnx, .mlir or .mlirbc file ('-' reads stdin)")
    c.add_argument("--target", "-t", action="append", required=True, help="e.g. cpu, vulkan, cuda:sm_90")
    c.add_argument("-o", "--output", help="output file (one target) or directory (several "
                   "targets, or a path ending in /)")
    c.add_argument("--option", action="append", default=[], type=_parse_option, metavar="KEY=VALUE",
                   help="an allow-listed compile option, e.g. opt_level=O3")
    c.add_argument("--format", choices=["onnx", "mlir"], help="override format detection")
    c.add_argument("--server", help="compile on a Kiln server instead of in-process")
    c.add_argument("--token", default=os.environ.get("KILN_TOKEN"), help="bearer token (--server)")
    c.add_argument("--cache-dir", help="cache directory (default: KILN_CACHE_DIR or ~/.cache/kiln)")
    c.add_argument("--redis-url", default=os.environ.get("KILN_REDIS_URL"), help="shared Redis cache")
    c.add_argument("--no-cache", action="store_true", help="always compile; read and write no cache")
    c.add_argument("--workers", type=int, default=None, help="compile worker processes")
    c.add_argument("--timeout", type=float, default=300.0, help="per-target compile timeout (s)")
    c.add_argument("--json", action="store_true", help="print the result as JSON")


def run(args: argparse.Namespace, *, stdout: TextIO, stderr: TextIO) -> int:
    if args.graph == "-":
        data = sys.stdin.buffer.read()
        stem, source_dir = "graph", None
    else:
        path = Path(args.graph)
        try:
            data = path.read_bytes()
        except OSError as exc:
            print(f"kiln: invalid_request: cannot read {args.graph}: {exc.strerror}", file=stderr)
            return 2
        stem, source_dir = path.stem, str(path.resolve().parent)
    options = dict(args.option)
    if "opt_level" in options:
        options["opt_level"] = options["opt_level"].upper()

    with open_backend(server=args.server, token=args.token, cache_dir=args.cache_dir,
                      redis_url=args.redis_url, no_cache=args.no_cache, workers=args.workers,
                      timeout=args.timeout) as backend:
        res = backend.compile(data, targets=args.target, options=options or None,
                              format=args.format, source_dir=source_dir)

    written: list[str] = []
    if res.artifacts:
        # A trailing slash or an existing directory means a folder, even for one target.
        folder = args.output is not None and (args.output.endswith(("/", os.sep))
                                              or Path(args.output).is_dir())
        if len(args.target) == 1 and len(res.artifacts) == 1 and not folder:
            out = Path(args.output or artifact_name(stem, res.artifacts[0].target))
            written.append(str(atomic_write(out, res.artifacts[0].data)))
        else:
            outdir = Path(args.output or ".")
            for a in res.artifacts:
                out = outdir / artifact_name(stem, a.target)
                written.append(str(atomic_write(out, a.data)))
    archive = None
    if res.params is not None and written:  # weights apart: one archive beside the executables
        archive = str(atomic_write(Path(written[0]).parent / params_name(stem), res.params.data))
    if args.json:
        summary = res.to_json()
        summary["written"] = written
        if archive is not None:
            summary["params"]["written"] = archive
        print(json.dumps(summary, indent=2), file=stdout)
    else:
        for a, path_ in zip(res.artifacts, written, strict=True):
            how = "cache hit" if a.cached else f"compiled in {a.compile_seconds:.2f} s"
            print(f"{a.target:<28} {how:<22} {a.size:>10} B  {a.digest[:19]}…  -> {path_}",
                  file=stdout)
        if res.params is not None and archive is not None:
            size = len(res.params.data)
            print(f"{'params (all targets)':<51} {size:>10} B  {res.params.digest[:19]}…  -> "
                  f"{archive}", file=stdout)
    for target, err in res.errors:
        print(f"kiln: {target}: {err.code}: {err.message}", file=stderr)
        print_detail(err, stderr)
    return 1 if res.errors else 0
