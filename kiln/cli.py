"""The ``kiln`` command line (see shared/API.md, "CLI").

``main(argv, stdout=..., stderr=...)`` is testable without subprocesses. Exit status: 0 on success;
1 when a compile failed or ``kiln verify`` refused (``code: message`` on stderr); 2 for usage
errors.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from kiln.errors import KilnError

__all__ = ["main"]


def _parse_option(text: str) -> tuple[str, str]:
    if "=" not in text:
        raise argparse.ArgumentTypeError("options are KEY=VALUE")
    k, v = text.split("=", 1)
    return k, v


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kiln", description="Kiln: tensor graphs in, IREE executables out")
    sub = p.add_subparsers(dest="command", required=True)

    c = sub.add_parser("compile", help="compile a graph (ONNX or MLIR) for one or more targets")
    c.add_argument("graph", help="path to a .onnx, .mlir or .mlirbc file ('-' reads stdin)")
    c.add_argument("--target", "-t", action="append", required=True, help="e.g. cpu, vulkan, cuda:sm_90")
    c.add_argument("-o", "--output", help="output file (one target) or directory (several)")
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

    v = sub.add_parser("verify", help="check an executable against its signed provenance")
    v.add_argument("file", help="the executable (.vmfb)")
    v.add_argument("--provenance", "-p",
                   help="its DSSE envelope (default: FILE.provenance.json, as kiln build writes)")
    v.add_argument("--key", "-k", action="append", required=True, metavar="PEM",
                   help="a trusted public key file (repeat for several; GET /v1/keys lists them)")
    v.add_argument("--target", help="also require this normalized target, e.g. cpu:x86_64:generic")
    v.add_argument("--graph-digest", help="also require this graph digest (sha256:<hex>)")

    t = sub.add_parser("targets", help="list the accepted targets")
    t.add_argument("--json", action="store_true")
    t.add_argument("--cpus", metavar="ARCH", help="list the CPU names the compiler accepts for ARCH")

    try:
        from kiln import cache_cli

        cache_cli.add_parser(sub)
    except ImportError:  # pragma: no cover - during development only
        pass
    for name in ("serve", "build"):
        try:
            mod = __import__(f"kiln.{name}_cli", fromlist=["add_parser"])
        except ImportError:
            continue
        mod.add_parser(sub)
    return p


def main(
    argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> int:
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    try:
        if args.command == "compile":
            return _compile(args, stdout=stdout, stderr=stderr)
        if args.command == "targets":
            return _targets(args, stdout=stdout)
        if args.command == "verify":
            return _verify(args, stdout=stdout)
        if args.command == "cache":
            from kiln import cache_cli

            return cache_cli.run(args, stdout=stdout, stderr=stderr)
        mod = __import__(f"kiln.{args.command}_cli", fromlist=["run"])
        return int(mod.run(args, stdout=stdout, stderr=stderr))
    except KilnError as exc:
        print(f"kiln: {exc.code}: {exc.message}", file=stderr)
        _print_detail(exc, stderr, source=getattr(args, "graph", None))
        return 1
    except KeyboardInterrupt:
        return 130


def _print_detail(exc: KilnError, stderr: TextIO, *, source: str | None = None) -> None:
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


def _safe_name(target: str) -> str:
    return target.replace(":", "_").replace(",", "_").replace("+", "")


def _compile(args: argparse.Namespace, *, stdout: TextIO, stderr: TextIO) -> int:
    if args.graph == "-":
        data = sys.stdin.buffer.read()
        stem, ext_dir = "graph", None
    else:
        path = Path(args.graph)
        try:
            data = path.read_bytes()
        except OSError as exc:
            print(f"kiln: invalid_request: cannot read {args.graph}: {exc.strerror}", file=stderr)
            return 2
        stem, ext_dir = path.stem, str(path.resolve().parent)
    options = dict(args.option)
    if "opt_level" in options:
        options["opt_level"] = options["opt_level"].upper()

    if args.server:
        from kiln.client import Client

        from kiln.provenance import verify_artifact

        with Client(args.server, token=args.token) as client:
            result = client.compile(data, targets=args.target, options=options or None,
                                    format=args.format)
            artifacts = []
            for a in result.artifacts:
                blob = client.fetch(a.digest)
                if client.trusted is not None:  # KILN_TRUSTED_KEYS: nothing unverified is written
                    verify_artifact(client.trusted, blob, client.provenance(a.digest, key=a.key),
                                    target=a.target, graph_digest=result.graph_digest)
                artifacts.append((a.target, a.digest, a.size, a.cached, a.compile_seconds,
                                  a.flags, blob))
            errors = [(e.target, e.error) for e in result.errors]
            summary = result.to_json()
    else:
        from kiln.pipeline import Pipeline

        cache = None
        if not args.no_cache:
            from kiln.cache import open_cache
            from kiln.provenance import Authority

            # Signed with the same key file as `kiln serve` (docs/trust.md).
            cache = open_cache(cache_dir=args.cache_dir, redis_url=args.redis_url,
                               authority=Authority.from_env())
        with Pipeline(cache=cache, workers=args.workers, compile_timeout=args.timeout) as pipe:
            res = pipe.compile(data, targets=args.target, options=options or None,
                               format=args.format, external_data_dir=ext_dir)
            artifacts = []
            for a in res.artifacts:
                blob = a.data if a.data is not None else cache.read_blob(a.digest)  # type: ignore[union-attr]
                artifacts.append((a.target, a.digest, a.size, a.cached, a.compile_seconds,
                                  list(a.flags), blob))
            errors = [(e.target, e.error) for e in res.errors]
            summary = res.to_json()

    written: list[str] = []
    if artifacts:
        if len(args.target) == 1 and len(artifacts) == 1:
            out = Path(args.output or f"{stem}.{_safe_name(artifacts[0][0])}.vmfb")
            _write(out, artifacts[0][6])
            written.append(str(out))
        else:
            outdir = Path(args.output or ".")
            outdir.mkdir(parents=True, exist_ok=True)
            for a in artifacts:
                out = outdir / f"{stem}.{_safe_name(a[0])}.vmfb"
                _write(out, a[6])
                written.append(str(out))
    if args.json:
        summary["written"] = written
        print(json.dumps(summary, indent=2), file=stdout)
    else:
        for (target, digest, size, cached, secs, _flags, _blob), path in zip(artifacts, written, strict=True):
            how = "cache hit" if cached else f"compiled in {secs:.2f} s"
            print(f"{target:<28} {how:<22} {size:>10} B  {digest[:19]}…  -> {path}", file=stdout)
    for target, err in errors:
        print(f"kiln: {target}: {err.code}: {err.message}", file=stderr)
        _print_detail(err, stderr)
    return 1 if errors else 0


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _verify(args: argparse.Namespace, *, stdout: TextIO) -> int:
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
    stmt = verify_artifact(ring, data, envelope, target=args.target,
                           graph_digest=args.graph_digest)
    ext = stmt["predicate"]["buildDefinition"]["externalParameters"]
    assert envelope is not None  # verify_artifact refuses a missing one
    keyids = ", ".join(str(s.get("keyid", ""))[:16] for s in envelope["signatures"])
    print(f"verified: {args.file} sha256:{stmt['subject'][0]['digest']['sha256']} "
          f"target {ext.get('target')} graph {ext.get('graph_digest')} (key {keyids})",
          file=stdout)
    return 0


def _targets(args: argparse.Namespace, *, stdout: TextIO) -> int:
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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
