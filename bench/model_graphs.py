"""Model-scale graphs (tests/test_models.py) through Kiln: compile time, executable size, run time.

For each model × target: compile once through the embedded pipeline (uncached, warm workers),
then load the executable and time ``--reps`` calls (after one warm-up call), median. Checks each
result against onnx's reference evaluator like the test does. Run:
``nice -n 10 .venv/bin/python bench/model_graphs.py [--reps N]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kiln.client.runtime import load_vmfb  # noqa: E402
from kiln.compiler.pipeline import Pipeline  # noqa: E402
from tests.test_models import ATOL, MODELS, RTOL, model_input, reference  # noqa: E402

TARGETS = {"cpu": "local-task", "vulkan": "vulkan", "vulkan:llvmpipe": "vulkan"}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=10)
    args = ap.parse_args(argv)
    rows = []
    with Pipeline(workers=2, compile_timeout=300) as p:
        for name, build in MODELS.items():
            model = build()
            x = model_input(model)
            want = reference(model, x)
            for target, driver in TARGETS.items():
                res = p.compile(model.SerializeToString(), targets=[target])
                if res.errors:
                    rows.append((name, target, "-", "-", "-", res.errors[0].error.code))
                    continue
                art = res.artifacts[0]
                fn = load_vmfb(art.data, driver=driver)[name]
                got = fn(x)
                ok = bool(np.allclose(got, want, rtol=RTOL, atol=ATOL))
                times = []
                for _ in range(args.reps):
                    t0 = time.perf_counter()
                    fn(x)
                    times.append(time.perf_counter() - t0)
                rows.append((name, art.target, f"{art.compile_seconds:.2f}", f"{art.size / 1024:.0f}",
                             f"{statistics.median(times) * 1e3:.2f}",
                             "yes" if ok else f"NO (max err {float(np.abs(got - want).max()):.3g})"))
    print("| model | target | compile s | vmfb KiB | run ms (median) | matches reference |")
    print("|---|---|---:|---:|---:|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
