"""The front-end cache (kiln/compiler/frontend.py): one graph compiled for several targets, with
and without the graph's input phase shared between them.

For each model, each block compiles it for every target in turn (a fleet asking for its own
targets one after another) into a fresh cache twice: with the front-end cache off
(``KILN_FRONTEND_CACHE=0``) and on; the order of the two flips from block to block. The table
holds the medians: the whole series' seconds, the targets after the first (the ones that can
start from the stored phase), and their ratio on/off. The executables are the same bytes either
way (checked on every block). Run:

    nice -n 10 .venv/bin/python bench/frontend_cache.py [--reps 3] [--models ...] [--targets ...]

Models as in ``bench/kernel_cache.py`` (``zoo:NAME-ext`` and the others).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.kernel_cache import models  # noqa: E402
from kiln.cache import open_cache  # noqa: E402
from kiln.compiler.pipeline import Pipeline  # noqa: E402
from kiln.errors import CompileError  # noqa: E402
from kiln.targets import normalize_options, parse_target  # noqa: E402

TARGETS = ["vulkan", "cuda:sm_80", "rocm:gfx942", "cpu", "cpu:x86_64:haswell"]


def series(name: str, targets: list[str], on: bool) -> tuple[list[float], list[bytes], list[str]]:
    """Seconds per target (NaN for a target the graph does not compile for), the executables
    and the front-end events, into a fresh cache."""
    os.environ["KILN_FRONTEND_CACHE"] = "1" if on else "0"
    m = models([name])[name]
    extra = {"params": m.options["params"]} if m.options else {}
    times: list[float] = []
    data: list[bytes] = []
    events: list[str] = []
    with tempfile.TemporaryDirectory() as d, Pipeline(
        cache=open_cache(cache_dir=d), workers=2, compile_timeout=900
    ) as p:
        p.on_frontend = events.append
        graph = p.prepare(m.data(), **extra)
        opts = normalize_options(m.options)
        for t in targets:
            t0 = time.perf_counter()
            try:
                art = p.compile_prepared(graph, parse_target(t), opts)
            except CompileError as exc:  # left out of the sums (the same either way)
                print(f"  {name} {t}: {exc.message[:120]}", file=sys.stderr)
                times.append(float("nan"))
                data.append(b"")
                continue
            times.append(time.perf_counter() - t0)
            assert art.data is not None and not art.cached
            data.append(art.data)
    return times, data, events


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--models", default="zoo:vit_tiny-ext,zoo:bert-ext,resnet18-ext")
    ap.add_argument("--targets", default=",".join(TARGETS))
    args = ap.parse_args(argv)
    targets = args.targets.split(",")
    rows = []
    for name in args.models.split(","):
        got: dict[bool, list[list[float]]] = {False: [], True: []}
        hits = ""
        for rep in range(args.reps):
            ref = None
            for on in ([False, True] if rep % 2 == 0 else [True, False]):
                t, data, events = series(name, targets, on)
                got[on].append(t)
                if ref is None:
                    ref = data
                assert data == ref, f"{name}: executables differ with the front-end cache"
                if on:
                    hits = f"{events.count('hit')}/{len(events)}"
                print(f"  {name} {'on ' if on else 'off'} " + " ".join(f"{x:.2f}" for x in t),
                      file=sys.stderr, flush=True)
        def total(t: list[float]) -> float:
            return sum(x for x in t if x == x)  # NaN: a target that failed both ways

        tot = {on: statistics.median(total(t) for t in got[on]) for on in got}
        rest = {on: statistics.median(total(t[1:]) for t in got[on]) for on in got}
        rows.append((name, f"{tot[False]:.2f}", f"{tot[True]:.2f}", f"{tot[True] / tot[False]:.2f}",
                     f"{rest[False]:.2f}", f"{rest[True]:.2f}", f"{rest[True] / rest[False]:.2f}",
                     hits))
    print(f"{platform.node()} · {os.cpu_count()} cores · {time.strftime('%Y-%m-%d %H:%M')} · "
          f"medians of {args.reps} alternated blocks · targets in turn: {', '.join(targets)}")
    print("| model | all targets, off s | on s | on/off | after the first, off s | on s "
          "| on/off | compiles from a stored phase |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
