"""Kiln's compile path against the raw native ``iree-compile`` with the same flags.

For each graph × target, alternate: (a) a fresh ``iree-compile`` process on the canonical MLIR with
the artifact's exact flags, (b) Kiln's pipeline (warm worker pool, no cache: every call compiles),
once per engine (in-process ``session`` and ``cli``). Reports medians and the ratio kiln/raw
(goal ≤ 1.0). Run: ``.venv/bin/python bench/compile_overhead.py [--reps N] [--record]``.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kiln.pipeline import Pipeline  # noqa: E402
from kiln.targets import normalize_options, parse_target  # noqa: E402
from kiln.targets.toolchain import iree_compile_path  # noqa: E402
from tests.graphs import LINALG, onnx_mlp  # noqa: E402

CONV = (ROOT.parent / "shared" / "iree-notes" / "conv4_crashes_gfx9.mlir").read_bytes()
GRAPHS = {"mlp-linalg": LINALG.encode(), "mlp-onnx": onnx_mlp(), "conv4-linalg": CONV}
TARGETS = ["cpu", "vulkan"]


def machine() -> str:
    from kiln.resolver import detect_cpu

    model = detect_cpu().model_name or "unknown CPU"
    return f"{model}, {os.cpu_count()} cores, {platform.system()} {platform.machine()}"


def raw_compile(mlir: str, flags: list[str], tmp: str) -> float:
    src = os.path.join(tmp, "input.mlir")
    with open(src, "w") as f:
        f.write(mlir)
    t0 = time.perf_counter()
    subprocess.run(
        [str(iree_compile_path()), *flags, "input.mlir", "-o", "out.vmfb"],
        cwd=tmp,
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--record", action="store_true", help="append the table to bench/RESULTS.md")
    args = ap.parse_args()

    rows = []
    pipes = {e: Pipeline(workers=1, engine=e) for e in ("session", "cli")}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for gname, data in GRAPHS.items():
                prepared = pipes["session"].prepare(data)
                for t in TARGETS:
                    spec = parse_target(t)
                    flags = list(
                        pipes["session"].flags_for(spec, normalize_options(None), graph=prepared)
                    )
                    times: dict[str, list[float]] = {"raw": [], "session": [], "cli": []}
                    for e in pipes:  # warm-up
                        pipes[e].compile_prepared(prepared, spec, normalize_options(None))
                    raw_compile(prepared.mlir, flags, tmp)
                    for _ in range(args.reps):
                        times["raw"].append(raw_compile(prepared.mlir, flags, tmp))
                        for e, p in pipes.items():
                            t0 = time.perf_counter()
                            p.compile(data, targets=[t])
                            times[e].append(time.perf_counter() - t0)
                    med = {k: statistics.median(v) for k, v in times.items()}
                    rows.append((gname, spec.target, med))
    finally:
        for p in pipes.values():
            p.close()

    head = "| graph | target | raw iree-compile | kiln (session) | ratio | kiln (cli) | ratio |"
    lines = [head, "|---|---|---|---|---|---|---|"]
    for g, t, m in rows:
        lines.append(
            f"| {g} | {t} | {m['raw'] * 1000:.0f} ms | {m['session'] * 1000:.0f} ms | "
            f"{m['session'] / m['raw']:.2f} | {m['cli'] * 1000:.0f} ms | {m['cli'] / m['raw']:.2f} |"
        )
    ratios_s = [m["session"] / m["raw"] for _, _, m in rows]
    ratios_c = [m["cli"] / m["raw"] for _, _, m in rows]
    summary = (
        f"median ratio kiln/raw: session engine {statistics.median(ratios_s):.2f}, "
        f"cli engine {statistics.median(ratios_c):.2f}"
    )
    table = "\n".join(lines)
    print(table)
    print(summary)
    if args.record:
        out = ROOT / "bench" / "RESULTS.md"
        text = out.read_text() if out.exists() else "# Benchmark results\n"
        section = (
            f"\n## Compile overhead (bench/compile_overhead.py)\n\n"
            f"{date.today().isoformat()}, {machine()}, {args.reps} alternating reps, medians. "
            f"Kiln = full pipeline call (prepare in a worker + compile in a warm worker, no cache) "
            f"vs a fresh native `iree-compile` on the canonical MLIR with the same flags.\n\n"
            f"{table}\n\n{summary}\n"
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
