"""MLIR inputs: the polling wait that ``f$async`` gives them, against the blocking call.

Each reference model (bench/models.py) is imported from ONNX and lowered to linalg on tensors
by torch-mlir's own pipelines (``torch-onnx-to-torch-backend-pipeline``,
``torch-backend-to-linalg-on-tensors-backend-pipeline``, in IREE's bundled bindings), so Kiln
receives it as a user's linalg MLIR would arrive: ``func.func @<graph>(tensor...)``. Kiln
compiles it with its defaults for this machine's CPU (and, since the seventh pass, gives the
function an asynchronous form: ``lowering/entry_points.py``). The one executable is then called
two ways, alternated in one process, a block of calls each, in rotating order:
- ``poll``: the runtime's default on ``local-task``, through ``f$async``, polling its fence;
- ``block``: ``wait="block"``, the synchronous export, sleeping until a worker wakes the caller.
  This is how every call of an MLIR input waited before the seventh pass.

    .venv/bin/python bench/mlir_wait.py [--models encoder,mobilenet] [--repeats 21] [--block 10]

Reported: median milliseconds a call each way, their ratio, and the largest difference between
the two ways' outputs (they run the same code: 0).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from bench.executables import alternate  # noqa: E402
from bench.models import MODELS, sample_input  # noqa: E402
from kiln.client.resolver import detect_cpu  # noqa: E402
from kiln.client.runtime import load_vmfb  # noqa: E402
from kiln.compiler.pipeline import Pipeline  # noqa: E402

TO_LINALG = ("builtin.module(torch-onnx-to-torch-backend-pipeline, "
             "torch-backend-to-linalg-on-tensors-backend-pipeline)")


def linalg_text(name: str) -> tuple[str, str, np.ndarray]:
    """The model as linalg MLIR text, its entry function's name and a sample input."""
    from iree.compiler import ir, passmanager

    from kiln.dialects import onnx as onnx_dialect

    model = MODELS[name]()
    ctx = ir.Context()
    module, _ = onnx_dialect.import_model(model, context=ctx)
    passmanager.PassManager.parse(TO_LINALG, context=ctx).run(module.operation)
    return module.operation.get_asm(large_elements_limit=None), model.graph.name, \
        sample_input(model)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="encoder,mobilenet", help="comma-separated names")
    ap.add_argument("--repeats", type=int, default=21, help="alternated rounds (median taken)")
    ap.add_argument("--block", type=int, default=10, help="timed calls a way a round")
    args = ap.parse_args(argv)

    target = detect_cpu().target
    print(f"target {target}; {args.repeats} rounds of {args.block} calls a way")
    print("| model (linalg MLIR) | block ms | poll ms | poll/block | max abs diff |")
    print("|---|---:|---:|---:|---:|")
    with Pipeline(workers=1, compile_timeout=900) as pipe:
        for name in args.models.split(","):
            text, fn_name, x = linalg_text(name)
            res = pipe.compile(text.encode(), targets=[target], format="mlir")
            if res.errors:
                raise SystemExit(f"{name}: {res.errors[0].error}")
            data = res.artifacts[0].data
            polled = load_vmfb(data, driver="local-task")
            if polled._polling(fn_name) is None:
                raise SystemExit(f"{name}: no asynchronous form to poll ({fn_name}$async)")
            blocked = load_vmfb(data, driver="local-task", wait="block")
            f_poll, f_block = polled.function(fn_name), blocked.function(fn_name)
            diff = float(np.abs(f_poll(x) - f_block(x)).max())
            calls = {"block": lambda f=f_block, x=x: f(x), "poll": lambda f=f_poll, x=x: f(x)}
            times = alternate(calls, repeats=args.repeats, block=args.block)
            b, p = (statistics.median(times[k]) * 1e3 for k in ("block", "poll"))
            ratios = [tp / tb for tp, tb in zip(times["poll"], times["block"], strict=True)]
            print(f"| {name} | {b:.2f} | {p:.2f} | {statistics.median(ratios):.2f} | "
                  f"{diff:.1e} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
