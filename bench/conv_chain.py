"""One convolution shape at a time, Kiln against onnxruntime: chains of identical layers.

A single convolution is a poor benchmark for a compiler that converts layouts at the graph's
edges (Kiln's executable transposes NCHW to NHWC on the way in and back on the way out, and the
transposes cost more than the layer). A chain of N layers (3x3 convolution + bias -> ReLU, the
same shape each time, different weights, then a global average pool) amortizes the edges, so
``time / N`` is what one layer costs inside a network. Each chain is compiled THROUGH KILN with
the default options for this machine's CPU and alternated with onnxruntime (2 intra-op threads)
in one process, a block of calls each, in rotating order; reported: milliseconds a layer for
both and the median of the per-round ratios (docs/performance.md, "One layer shape at a time").

    .venv/bin/python bench/conv_chain.py [--layers 8] [--repeats 15] [--shapes 56x64,7x512]
        [--threads 1]

``--threads N`` runs both engines on N threads (onnxruntime's intra-op threads, IREE's task
workers ``--task_topology_max_group_count=N``); by default onnxruntime gets 2 and IREE its own
topology (one worker per core); ``--threads 1`` separates the kernels from their scaling
(docs/performance.md).
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
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from bench.executables import alternate  # noqa: E402
from kiln.client.resolver import detect_cpu  # noqa: E402
from kiln.client.runtime import load_vmfb  # noqa: E402
from kiln.compiler.pipeline import Pipeline  # noqa: E402

# ResNet-18's 3x3 stages: (image size, channels).
SHAPES = ((56, 64), (28, 128), (14, 256), (7, 512))


def chain(size: int, channels: int, layers: int) -> onnx.ModelProto:
    rng = np.random.default_rng(1)
    c = channels
    inits: dict[str, np.ndarray] = {}
    nodes = []
    cur = "x"
    for i in range(layers):
        inits[f"w{i}"] = (rng.standard_normal((c, c, 3, 3)) / (3 * c**0.5)).astype(np.float32)
        inits[f"b{i}"] = (rng.standard_normal(c) * 0.01).astype(np.float32)
        nodes += [
            helper.make_node("Conv", [cur, f"w{i}", f"b{i}"], [f"h{i}"], pads=[1] * 4),
            helper.make_node("Relu", [f"h{i}"], [f"r{i}"]),
        ]
        cur = f"r{i}"
    nodes.append(helper.make_node("GlobalAveragePool", [cur], ["y"]))
    graph = helper.make_graph(
        nodes,
        f"chain{size}x{c}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c, 1, 1])],
        initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=15, help="alternated rounds (median taken)")
    ap.add_argument("--block", type=int, default=5, help="timed calls per engine per round")
    ap.add_argument("--shapes", default=",".join(f"{s}x{c}" for s, c in SHAPES),
                    help="comma-separated SIZExCHANNELS")
    ap.add_argument("--threads", type=int, default=0,
                    help="threads for both engines (default: ORT 2, IREE one worker per core)")
    args = ap.parse_args()
    if args.threads < 0:
        ap.error("--threads must be 1 or more (0: the defaults)")

    import onnxruntime as ort

    if args.threads:
        import iree.runtime as rt

        # before the first device exists: kiln.client.runtime creates it on the first load
        rt.flags.parse_flags(f"--task_topology_max_group_count={args.threads}")

    target = detect_cpu().target
    threads = args.threads or 2
    print(f"target {target}; {args.layers} layers a chain, {args.repeats} rounds; "
          f"onnxruntime {threads} threads, IREE "
          f"{f'{args.threads} workers' if args.threads else 'default workers'}")
    print("| shape | onnxruntime ms a layer | Kiln ms a layer | Kiln/ORT | max abs err |")
    print("|---|---:|---:|---:|---:|")
    with Pipeline(workers=1) as pipeline:
        for spec in args.shapes.split(","):
            size, channels = (int(v) for v in spec.split("x"))
            model = chain(size, channels, args.layers)
            res = pipeline.compile(model.SerializeToString(), targets=[target])
            if res.errors:
                raise SystemExit(f"{spec}: {res.errors[0].error}")
            fn = load_vmfb(res.artifacts[0].data, driver="local-task")[model.graph.name]
            so = ort.SessionOptions()
            so.intra_op_num_threads = threads
            sess = ort.InferenceSession(model.SerializeToString(), so,
                                        providers=["CPUExecutionProvider"])
            x = np.random.default_rng(2).random((1, channels, size, size), dtype=np.float32)
            want = sess.run(None, {"x": x})[0]
            err = float(np.abs(fn(x) - want).max())
            engines = {"ort": lambda sess=sess, x=x: sess.run(None, {"x": x}),
                       "kiln": lambda fn=fn, x=x: fn(x)}
            times = alternate(engines, repeats=args.repeats, block=args.block)
            ratio = statistics.median(a / b for a, b in zip(times["kiln"], times["ort"], strict=True))
            per = {k: statistics.median(v) * 1e3 / args.layers for k, v in times.items()}
            print(f"| {size}x{size}x{channels} | {per['ort']:.2f} | {per['kiln']:.2f} | "
                  f"**{ratio:.2f}×** | {err:.1e} |", flush=True)


if __name__ == "__main__":
    main()
