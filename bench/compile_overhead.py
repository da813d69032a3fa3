"""Kiln's compile path against the raw native ``iree-compile`` with the same flags.

For each graph × target, in rounds: (a) a fresh ``iree-compile`` process on the canonical MLIR
with the artifact's exact flags, (b) Kiln's pipeline (warm worker pool, no cache: every call
prepares and compiles), once per engine (in-process ``session`` and ``cli``); the order of the
three rotates from round to round. The ratio kiln/raw is taken within each round and the table
shows its median (goal ≤ 1.0): on a shared machine only ratios of alternated runs are comparable.
Beside wall time, the CPU seconds of each side (the worker's and this process's for Kiln, the
child's for raw; 10 ms ticks) give a ratio that other load on the machine disturbs less. For an
MLIR text graph a fourth run compiles the user's own file with the same flags: the canonical text
carries Kiln's ``f$async`` stubs (``kiln.lowering.entry_points``), which the compiler pays for.

Run: ``.venv/bin/python bench/compile_overhead.py [--reps N] [--record]``.
"""

from __future__ import annotations

import argparse
import functools
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kiln.compiler.pipeline import Pipeline
from kiln.dialects.types import GraphFormat
from kiln.targets import normalize_options, parse_target
from kiln.targets.toolchain import iree_compile_path
from tests.graphs import LINALG, onnx_mlp

CONV = (ROOT.parent / "shared" / "iree-notes" / "conv4_crashes_gfx9.mlir").read_bytes()
GRAPHS = {"mlp-linalg": LINALG.encode(), "mlp-onnx": onnx_mlp(), "conv4-linalg": CONV}
TARGETS = ["cpu", "vulkan"]
ENGINES = ("session", "cli")
_TICK = os.sysconf("SC_CLK_TCK")


def machine() -> str:
    from kiln.client.resolver import detect_cpu

    model = detect_cpu().model_name or "unknown CPU"
    return f"{model}, {os.cpu_count()} cores, {platform.system()} {platform.machine()}"


def _proc_cpu(pid: int) -> float:
    """CPU seconds of process ``pid`` and its reaped children (``/proc/PID/stat``, 10 ms ticks)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / _TICK


def _own_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def raw_compile(mlir: str, flags: list[str], tmp: str) -> tuple[float, float]:
    """(wall, CPU) seconds of a fresh ``iree-compile`` on ``mlir`` (written before the clock)."""
    src = os.path.join(tmp, "input.mlir")
    with open(src, "w") as f:
        f.write(mlir)
    c0, t0 = _children_cpu(), time.perf_counter()
    subprocess.run(
        [str(iree_compile_path()), *flags, "input.mlir", "-o", "out.vmfb"],
        cwd=tmp,
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - t0, _children_cpu() - c0


def kiln_compile(pipe: Pipeline, data: bytes, target: str) -> tuple[float, float]:
    """(wall, CPU) seconds of one uncached ``Pipeline.compile`` (prepare + compile)."""
    (slot,) = pipe.pool._slots  # one worker: its CPU plus this process's is Kiln's
    assert slot.proc is not None
    pid = slot.proc.pid
    c0, o0, t0 = _proc_cpu(pid), _own_cpu(), time.perf_counter()
    pipe.compile(data, targets=[target])
    wall = time.perf_counter() - t0
    assert slot.proc is not None and slot.proc.pid == pid, "the worker was replaced"
    return wall, _proc_cpu(pid) - c0 + _own_cpu() - o0


def prepare_ms(pipe: Pipeline, data: bytes, n: int = 9) -> float:
    """Median wall milliseconds of ``Pipeline.prepare`` (parse or import, stubs, canonical form)."""
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        pipe.prepare(data)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--record", action="store_true", help="replace the section in bench/RESULTS.md")
    args = ap.parse_args()

    started = datetime.now(UTC)
    loads = [os.getloadavg()[0]]
    rows = []
    pipes = {e: Pipeline(workers=1, engine=e) for e in ENGINES}
    opts = normalize_options(None)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for gname, data in GRAPHS.items():
                prepared = pipes["session"].prepare(data)
                prep = prepare_ms(pipes["session"], data)
                for t in TARGETS:
                    spec = parse_target(t)
                    flags = list(pipes["session"].flags_for(spec, opts, graph=prepared))
                    for e in ENGINES:  # warm-up
                        pipes[e].compile(data, targets=[t])
                    raw_compile(prepared.mlir, flags, tmp)
                    runs: list[tuple[str, Callable[[], tuple[float, float]]]] = [
                        ("raw", functools.partial(raw_compile, prepared.mlir, flags, tmp)),
                        *((e, functools.partial(kiln_compile, pipes[e], data, t)) for e in ENGINES),
                    ]
                    if prepared.input_format is GraphFormat.MLIR:
                        own = functools.partial(raw_compile, data.decode(), flags, tmp)
                        runs.append(("own", own))
                    wall: dict[str, list[float]] = {k: [] for k, _ in runs}
                    cpu: dict[str, list[float]] = {k: [] for k, _ in runs}
                    for i in range(args.reps):
                        j = i % len(runs)
                        for k, run in runs[j:] + runs[:j]:
                            w, c = run()
                            wall[k].append(w)
                            cpu[k].append(c)
                        loads.append(os.getloadavg()[0])
                    rows.append((gname, spec.target, prep, wall, cpu))
    finally:
        for p in pipes.values():
            p.close()

    def ratio(num: list[float], den: list[float]) -> float:
        return statistics.median(a / b for a, b in zip(num, den, strict=True))

    head = (
        "| graph | target | prepare | raw iree-compile | kiln (session) | ratio | CPU ratio "
        "| kiln (cli) | ratio | CPU ratio | raw, user's file | session / user's file (CPU) |"
    )
    lines = [head, "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    summary_s, summary_c = [], []
    for g, t, prep, wall, cpu in rows:
        med = {k: statistics.median(v) * 1000 for k, v in wall.items()}
        rs, rc = ratio(wall["session"], wall["raw"]), ratio(wall["cli"], wall["raw"])
        summary_s.append(rs)
        summary_c.append(rc)
        lines.append(
            f"| {g} | {t} | {prep:.1f} ms | {med['raw']:.0f} ms | {med['session']:.0f} ms | "
            f"{rs:.2f} | {ratio(cpu['session'], cpu['raw']):.2f} | {med['cli']:.0f} ms | "
            f"{rc:.2f} | {ratio(cpu['cli'], cpu['raw']):.2f} | "
            + (
                f"{med['own']:.0f} ms | {ratio(wall['session'], wall['own']):.2f} "
                f"({ratio(cpu['session'], cpu['own']):.2f}) |"
                if "own" in wall
                else "— | — |"
            )
        )
    summary = (
        f"median of the per-graph ratios kiln/raw: session engine "
        f"{statistics.median(summary_s):.2f} (max {max(summary_s):.2f}), cli engine "
        f"{statistics.median(summary_c):.2f} (max {max(summary_c):.2f})"
    )
    load = (
        f"1-minute load average {min(loads):.1f}-{max(loads):.1f} "
        f"(median {statistics.median(loads):.1f})"
    )
    table = "\n".join(lines)
    print(table)
    print(summary)
    print(load)
    if args.record:
        out = ROOT / "bench" / "RESULTS.md"
        text = out.read_text() if out.exists() else "# Benchmark results\n"
        section = (
            f"\n## Compile overhead (bench/compile_overhead.py)\n\n"
            f"{started:%Y-%m-%d %H:%M} UTC, {machine()}, {load}; {args.reps} rounds, the order "
            f"of raw / session / cli rotating. Kiln = the full pipeline call (prepare in a warm "
            f"worker + compile in a warm worker, no cache) vs a fresh native `iree-compile` on "
            f"the canonical MLIR with the same flags (its input written before its clock "
            f"starts). Ratios are medians of the per-round ratios; `prepare` is the median "
            f"of 9 `Pipeline.prepare` calls.\n\n{table}\n\n{summary}\n"
        )
        marker = "\n## Compile overhead (bench/compile_overhead.py)\n"
        if marker in text:
            before, rest = text.split(marker, 1)
            nxt = rest.find("\n## ")
            text = before + section + (rest[nxt:] if nxt >= 0 else "")
        else:
            text += section
        out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
