"""Where the time goes, per layer: Kiln's executable (per dispatch) next to onnxruntime (per node).

For each reference model of ``bench/models.py``: compile through Kiln with the default options
for this machine's CPU, then

- run it under ``iree-benchmark-module --device_profiling_mode=host-execution`` and summarize
  the profile with ``iree-profile statistics``: each dispatch's average time per call, their sum,
  and the call's wall time (the difference is the time between dispatches);
- run the ONNX graph in onnxruntime (2 intra-op threads) with its profiler on: each node's
  median kernel time, their sum, and the call's wall time.

The two lists do not pair up by name (a dispatch fuses several nodes; IREE names dispatches by
their root op and shape), but by shape they do: docs/performance.md ("Per layer against
onnxruntime") reads them side by side. Both profilers cost a little (onnxruntime's ~15 % on MobileNet,
IREE's host-execution mode ~0), so compare sums with sums.

    .venv/bin/python bench/layers.py [--models resnet18,mobilenet] [--top 25] [--calls 20]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from bench.models import MODELS, sample_input  # noqa: E402
from kiln.client.resolver import detect_cpu  # noqa: E402
from kiln.compiler.pipeline import Pipeline  # noqa: E402

_STAT = re.compile(
    r"host_execute (?P<name>\S+)\s+count=(?P<count>\d+) total=(?P<total>[\d.]+) (?P<unit>[mun]?s)"
)
_UNIT = {"s": 1e3, "ms": 1.0, "us": 1e-3, "ns": 1e-6}


def _tool(name: str) -> str:
    here = Path(sys.executable).parent / name
    found = str(here) if here.exists() else shutil.which(name)
    if not found:
        raise SystemExit(f"{name} not found (it comes with iree-base-runtime)")
    return found


def iree_profile(vmfb: Path, function: str, x: np.ndarray, calls: int) -> tuple[float, list[Any]]:
    """(wall ms per call, [(dispatch, ms per call, calls per call)]) for one executable."""
    work = vmfb.parent
    np.save(work / "x.npy", x)
    out = subprocess.run(
        [_tool("iree-benchmark-module"), "--device=local-task", f"--module={vmfb}",
         f"--function={function}", f"--input=@{work / 'x.npy'}",
         f"--benchmark_min_time={calls}x", "--device_profiling_mode=host-execution",
         f"--device_profiling_output={work / 'p.ireeprof'}"],
        capture_output=True, text=True, check=True,
    ).stdout
    wall = next(float(line.split()[1]) * (1.0 if line.split()[2] == "ms" else 1e3)
                for line in out.splitlines() if line.startswith("BM_"))
    stats = subprocess.run([_tool("iree-profile"), "statistics", str(work / "p.ireeprof")],
                           capture_output=True, text=True, check=True).stdout
    rows = []
    for m in _STAT.finditer(stats):
        total = float(m["total"]) * _UNIT[m["unit"]]
        rows.append((m["name"], total / calls, int(m["count"]) / calls))
    return wall, rows


def ort_profile(model_bytes: bytes, x: np.ndarray, calls: int) -> tuple[float, list[Any]]:
    """(wall ms per call without the profiler, [(node op + output shape, median ms)])."""
    import onnxruntime as ort

    def session(profile: bool) -> Any:
        so = ort.SessionOptions()
        so.intra_op_num_threads = 2
        so.enable_profiling = profile
        return ort.InferenceSession(model_bytes, so, providers=["CPUExecutionProvider"])

    plain = session(False)
    feed = {plain.get_inputs()[0].name: x}
    for _ in range(3):
        plain.run(None, feed)
    walls = []
    for _ in range(calls):
        t0 = time.perf_counter()
        plain.run(None, feed)
        walls.append(time.perf_counter() - t0)
    prof = session(True)
    for _ in range(calls):
        prof.run(None, feed)
    path = prof.end_profiling()
    times: dict[str, list[float]] = defaultdict(list)
    label: dict[str, str] = {}
    for ev in json.loads(Path(path).read_text()):
        if ev.get("cat") == "Node" and ev["name"].endswith("_kernel_time"):
            args = ev.get("args", {})
            shapes = [list(d.values())[0] for d in args.get("output_type_shape", [])]
            times[ev["name"]].append(ev["dur"] / 1e3)
            label[ev["name"]] = f"{args.get('op_name')} -> {shapes[0] if shapes else '?'}"
    os.remove(path)
    rows = [(label[n], statistics.median(v)) for n, v in times.items()]
    return statistics.median(walls) * 1e3, rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("--models", default="resnet18,mobilenet,encoder")
    ap.add_argument("--top", type=int, default=25, help="rows of each list to print")
    ap.add_argument("--calls", type=int, default=20)
    args = ap.parse_args(argv)
    target = detect_cpu().target
    with Pipeline(workers=1, compile_timeout=900) as pipe, \
            tempfile.TemporaryDirectory(prefix="kiln-layers-") as tmp:
        for name in args.models.split(","):
            model = MODELS[name]()
            data = model.SerializeToString()
            x = sample_input(model)
            res = pipe.compile(data, targets=[target])
            if res.errors:
                raise SystemExit(f"{name}: {res.errors[0].error}")
            art = res.artifacts[0]
            vmfb = Path(tmp) / f"{name}.vmfb"
            vmfb.write_bytes(art.data)
            wall, rows = iree_profile(vmfb, res.functions[0], x, args.calls)
            ort_wall, ort_rows = ort_profile(data, x, args.calls)
            total = sum(r[1] for r in rows)
            ort_total = sum(r[1] for r in ort_rows)
            print(f"\n## {name} (target {target}; rewrites {', '.join(art.rewrites) or 'none'})")
            print(f"Kiln: {len(rows)} dispatches, {sum(r[2] for r in rows):.0f} a call, "
                  f"sum {total:.2f} ms, wall {wall:.2f} ms (between dispatches: "
                  f"{wall - total:.2f} ms)")
            print(f"onnxruntime: {len(ort_rows)} nodes, sum {ort_total:.2f} ms (profiled), "
                  f"wall {ort_wall:.2f} ms (not profiled)\n")
            print("| Kiln dispatch (× runs a call) | ms a call, all runs | "
                  "| onnxruntime node | ms |")
            print("|---|---:|---|---|---:|")
            a = sorted(rows, key=lambda r: -r[1])[: args.top]
            b = sorted(ort_rows, key=lambda r: -r[1])[: args.top]
            for i in range(max(len(a), len(b))):
                left = (f"{a[i][0]} (×{a[i][2]:.0f}) | {a[i][1]:.3f}" if i < len(a) else " | ")
                right = f"{b[i][0]} | {b[i][1]:.3f}" if i < len(b) else " | "
                print(f"| {left} | | {right} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
