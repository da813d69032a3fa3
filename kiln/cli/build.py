"""``kiln build MANIFEST [-o DIR] [--server URL] [--jobs N]`` (see ``kiln.cli.manifest``).

Exit status: 0 when every model × target was built; 1 when any failed (the others are still
written, and every failure is listed at the end); 2 for a bad manifest or usage.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from kiln.cli.backends import RemoteBackend, open_backend
from kiln.cli.manifest import BuildReport, build, read_manifest
from kiln.errors import InvalidRequest

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    b = sub.add_parser("build", allow_abbrev=False, help="compile a TOML manifest's models × targets into a directory")
    b.add_argument("manifest", help="TOML manifest with [[models]] name, path, targets")
    b.add_argument("-o", "--output", default="build", help="output directory (default: ./build)")
    b.add_argument("--server", help="compile on a Kiln server instead of in-process")
    b.add_argument("--token", default=os.environ.get("KILN_TOKEN"), help="bearer token (--server)")
    b.add_argument("--jobs", "-j", type=int, default=2, help="models compiled at once (default 2)")
    b.add_argument("--cache-dir", help="cache directory (default: KILN_CACHE_DIR or ~/.cache/kiln)")
    b.add_argument("--workers", type=int, default=None, help="compile worker processes (embedded)")
    b.add_argument("--no-progress", action="store_true", help="no progress bar")


@contextlib.contextmanager
def _progress(total: int, stderr: TextIO, enabled: bool) -> Iterator[Any]:
    """A rich progress bar on ``stderr``; yields ``advance(model, n)`` (a no-op when disabled)."""
    if not enabled:
        yield lambda _model, _n: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("[bold]kiln build"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("{task.description}"), TimeElapsedColumn(),
                  console=Console(file=stderr), transient=True) as bar:
        task = bar.add_task("", total=total)
        yield lambda model, n: bar.update(task, advance=n, description=model)


def run(args: argparse.Namespace, *, stdout: TextIO, stderr: TextIO) -> int:
    try:
        models = read_manifest(args.manifest)
    except InvalidRequest as exc:
        print(f"kiln: {exc.code}: {exc.message}", file=stderr)
        return 2
    total = sum(len(m.targets) for m in models)
    show = not args.no_progress and stderr.isatty() and not os.environ.get("PYTEST_CURRENT_TEST")
    with open_backend(server=args.server, token=args.token, cache_dir=args.cache_dir,
                      workers=args.workers) as backend, \
            _progress(total, stderr, show) as advance:
        on_done = advance
        if isinstance(backend, RemoteBackend):  # the server's jobs report each target done
            backend.on_progress = lambda n: advance("", n)
            on_done = lambda model, _n: advance(model, 0)  # noqa: E731
        report = build(models, args.output, backend, jobs=args.jobs, on_done=on_done)
    _summary(report, Path(args.output), stdout=stdout, stderr=stderr)
    return 0 if report.ok else 1


def _summary(report: BuildReport, out: Path, *, stdout: TextIO, stderr: TextIO) -> None:
    for a in report.artifacts:
        how = "cache hit" if a.cached else "compiled"
        print(f"{a.model:<16} {a.target:<28} {how:<10} {a.digest[:19]}…  -> {out / a.path}",
              file=stdout)
    hits = sum(a.cached for a in report.artifacts)
    print(f"kiln build: {len(report.artifacts)} built ({hits} cache hits), "
          f"{len(report.errors)} failed; manifest: {out / 'manifest.json'}", file=stdout)
    if report.errors:
        print(f"kiln build: {len(report.errors)} failure(s):", file=stderr)
        for e in report.errors:
            print(f"  {e.model} × {e.target}: {e.error.code}: {e.error.message}", file=stderr)
