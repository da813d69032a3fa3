"""``kiln inspect FILE [--format onnx|mlir] [--json]``: the public functions of an executable or a
graph, with their argument and result types — what to call on a loaded module, and with what.

An executable (``.vmfb``) is read with the runtime alone (the light client is enough): names and
types come from its own reflection metadata; where IREE records none (ONNX and torch imports),
buffers show as ``tensor<?>``. A graph (ONNX, MLIR text or bytecode) is imported by the engine's
``prepare`` — the types as the graph declares them — which needs the server parts
(``pip install "kiln[server]"``).

Exit status: 0 when the file was read; 1 when it is not an executable nor a graph Kiln accepts
(``code: message`` on stderr); 2 when it cannot be read, or a graph needs the server parts.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from kiln.dialects.types import FunctionSignature

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    i = sub.add_parser("inspect", help="list the functions of a .vmfb or a graph, with their types",
                       allow_abbrev=False)
    i.add_argument("file", help="a .vmfb, .onnx, .mlir or .mlirbc file ('-' reads stdin)")
    i.add_argument("--format", choices=["onnx", "mlir"], help="a graph's format (detected when omitted)")
    i.add_argument("--json", action="store_true", help="print the signatures as JSON")


def run(args: argparse.Namespace, *, stdout: TextIO, stderr: TextIO) -> int:
    from kiln.client.runtime import EXECUTABLE_HEAD_BYTES, is_executable, read_signatures

    if args.file == "-":
        data, source_dir = sys.stdin.buffer.read(), None
    else:
        try:
            data = Path(args.file).read_bytes()
        except OSError as exc:
            print(f"kiln: invalid_request: cannot read {args.file}: {exc.strerror}", file=stderr)
            return 2
        source_dir = str(Path(args.file).resolve().parent)
    if is_executable(data[:EXECUTABLE_HEAD_BYTES]):
        try:
            sigs = list(read_signatures(data).values())
        except ValueError as exc:
            print(f"kiln: invalid_request: {args.file}: {exc}", file=stderr)
            return 1
        what = "IREE executable (.vmfb)"
        extra: dict[str, Any] = {}
    else:
        got = _graph(data, args, source_dir, stderr)
        if isinstance(got, int):
            return got
        sigs, what, extra = got
    if args.json:
        doc = {"file": args.file, "kind": "executable" if not extra else "graph", **extra,
               "signatures": [s.to_json() for s in sigs]}
        print(json.dumps(doc, indent=2), file=stdout)
        return 0
    count = f"{len(sigs)} public function{'s' if len(sigs) != 1 else ''}"
    dialect = f", input dialect {extra['input_dialect']}" if extra else ""
    print(f"{args.file}: {what}{dialect}, {count}", file=stdout)
    for s in sigs:
        print(f"  {s}", file=stdout)
    return 0


def _graph(
    data: bytes, args: argparse.Namespace, source_dir: str | None, stderr: TextIO
) -> tuple[list[FunctionSignature], str, dict[str, Any]] | int:
    """The graph's signatures through the engine's ``prepare``; an exit status when it cannot."""
    from kiln.cli.errors import missing_server_parts
    from kiln.dialects.detect import detect_format
    from kiln.dialects.types import GraphFormat

    fmt = detect_format(data, declared=args.format)  # refuses what is no graph, here too
    missing = missing_server_parts()
    if "iree.compiler" in missing or (fmt is GraphFormat.ONNX and "onnx" in missing):
        print(f"kiln inspect: reading a graph needs the server parts of Kiln (missing: "
              f"{', '.join(missing)}): pip install \"kiln[server]\"; an executable (.vmfb) "
              "needs only the client", file=stderr)
        return 2
    from kiln.compiler.pipeline import Pipeline

    with Pipeline(workers=1) as pipeline:
        graph = pipeline.prepare(data, format=args.format, external_data_dir=source_dir)
    what = {GraphFormat.ONNX: "ONNX graph", GraphFormat.MLIR: "MLIR text",
            GraphFormat.MLIR_BYTECODE: "MLIR bytecode"}[graph.input_format]
    extra = {"input_format": graph.input_format.value, "input_dialect": graph.input_dialect.value,
             "graph_digest": graph.digest}
    return list(graph.signatures), what, extra
