"""Winograd F(2x2, 3x3) against direct convolution, one layer shape at a time.

The same chains as ``bench/conv_chain.py`` (N layers of 3x3 convolution + bias -> ReLU, then a
global average pool), once as written (Kiln compiles them with its CNN default: channels-last,
data-tiled convolutions) and once rebuilt as Winograd F(2x2, 3x3) in plain ONNX ops: 16 strided
slices of the padded channels-last activation combined with the B^T . B coefficients (0, +-1),
one batched MatMul against the transformed filters (G g G^T, computed here in float64), and the
A^T . A output combination, interleaved back into the image. The rebuilt graph has no
convolution, so Kiln compiles it with its dense default (data-tiled matmuls on the mmt4d
ukernel). Both are alternated with onnxruntime (2 intra-op threads, running the convolution
chain) in one process, a block of calls each, in rotating order; reported: milliseconds a layer
and the median of the per-round ratios to onnxruntime, and each output's error against it.

    .venv/bin/python bench/winograd_chain.py [--layers 8] [--repeats 12] [--shapes 56x64,28x128]

Findings are in docs/performance.md ("What was tried").
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import helper, numpy_helper  # noqa: E402

from bench.conv_chain import chain  # noqa: E402
from bench.executables import alternate  # noqa: E402
from kiln.client.resolver import detect_cpu  # noqa: E402
from kiln.client.runtime import load_vmfb  # noqa: E402
from kiln.compiler.pipeline import Pipeline  # noqa: E402

BT = np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], np.float64)
G = np.array([[1, 0, 0], [.5, .5, .5], [.5, -.5, .5], [0, 0, 1]], np.float64)
AT = np.array([[1, 1, 1, 0], [0, 1, -1, -1]], np.float64)


def winograd_chain(conv: onnx.ModelProto) -> onnx.ModelProto:
    """``conv`` (a ``chain()``: Conv 3x3 pad 1 -> Relu, ..., GlobalAveragePool) as F(2x2, 3x3)."""
    x_info = conv.graph.input[0]
    _, c, s, _ = (d.dim_value for d in x_info.type.tensor_type.shape.dim)
    t = s // 2
    weights = {i.name: numpy_helper.to_array(i) for i in conv.graph.initializer}
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []

    def const(name: str, value: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(value, name))
        return name

    def ints(name: str, values: list[int]) -> str:
        return const(name, np.array(values, np.int64))

    def node(op: str, inputs: list[str], out: str, **attrs: object) -> str:
        nodes.append(helper.make_node(op, inputs, [out], **attrs))
        return out

    def combine(coeffs: np.ndarray, terms: list[str], out: str) -> str:
        """``out = sum c * term`` over the coefficients, all of them 0 or +-1."""
        acc = None
        for k, (cf, term) in enumerate(zip(coeffs, terms, strict=True)):
            if cf == 0:
                continue
            if acc is None:
                acc = term if cf > 0 else node("Neg", [term], f"{out}_neg")
            else:
                acc = node("Add" if cf > 0 else "Sub", [acc, term], f"{out}_{k}")
        assert acc is not None
        return node("Identity", [acc], out)

    cur = node("Transpose", ["x"], "x_nhwc", perm=[0, 2, 3, 1])
    cur = node("Reshape", [cur, ints("hwc", [s, s, c])], "a0")
    convs = [n for n in conv.graph.node if n.op_type == "Conv"]
    for i, cv in enumerate(convs):
        p = f"l{i}_"
        w = weights[cv.input[1]].astype(np.float64)  # [F, C, 3, 3]
        u = np.einsum("ak,fckl,bl->abcf", G, w, G).reshape(16, c, c).astype(np.float32)
        pad = node("Pad", [cur, ints(p + "pads", [1, 1, 0, 1, 1, 0])], p + "pad")
        d = {(a, b): node("Slice", [pad, ints(f"{p}s{a}{b}", [a, b, 0]),
                                    ints(f"{p}e{a}{b}", [a + 2 * t - 1, b + 2 * t - 1, c]),
                                    ints(f"{p}x{a}{b}", [0, 1, 2]),
                                    ints(f"{p}t{a}{b}", [2, 2, 1])], f"{p}d{a}{b}")
             for a, b in itertools.product(range(4), range(4))}
        rows = {(a, j): combine(BT[a], [d[i2, j] for i2 in range(4)], f"{p}r{a}{j}")
                for a, j in itertools.product(range(4), range(4))}
        v = [node("Reshape", [combine(BT[b], [rows[a, j] for j in range(4)], f"{p}v{a}{b}"),
                              ints(f"{p}vs{a}{b}", [1, t * t, c])], f"{p}V{a}{b}")
             for a, b in itertools.product(range(4), range(4))]
        m = node("MatMul", [node("Concat", v, p + "V", axis=0), const(p + "U", u)], p + "M")
        mk = {(a, b): node("Slice", [m, ints(f"{p}ms{a}{b}", [4 * a + b]),
                                     ints(f"{p}me{a}{b}", [4 * a + b + 1]),
                                     ints(f"{p}ma{a}{b}", [0])], f"{p}M{a}{b}")
              for a, b in itertools.product(range(4), range(4))}
        cols = {(q, b): combine(AT[q], [mk[a, b] for a in range(4)], f"{p}c{q}{b}")
                for q, b in itertools.product(range(2), range(4))}
        out_rows = []
        for q in range(2):
            ys = [node("Reshape", [combine(AT[r], [cols[q, b] for b in range(4)], f"{p}y{q}{r}"),
                                   ints(f"{p}ys{q}{r}", [t, 1, t, 1, c])], f"{p}Y{q}{r}")
                  for r in range(2)]
            out_rows.append(node("Concat", ys, f"{p}row{q}", axis=3))
        y = node("Reshape", [node("Concat", out_rows, p + "Y5", axis=1), ints(p + "ys", [s, s, c])],
                 p + "Y")
        y = node("Add", [y, const(p + "b", weights[cv.input[2]])], p + "Yb")
        cur = node("Relu", [y], p + "out")
    mean = node("ReduceMean", [cur, ints("axes", [0, 1])], "mean", keepdims=0)
    node("Reshape", [mean, ints("nchw", [1, c, 1, 1])], "y")
    graph = helper.make_graph(nodes, f"winograd{s}x{c}", [x_info], list(conv.graph.output),
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=12, help="alternated rounds (median taken)")
    ap.add_argument("--block", type=int, default=5, help="timed calls per engine per round")
    ap.add_argument("--shapes", default="56x64,28x128,14x256",
                    help="comma-separated SIZExCHANNELS (SIZE even)")
    args = ap.parse_args()

    import onnxruntime as ort

    target = detect_cpu().target
    print(f"target {target}; {args.layers} layers a chain, {args.repeats} rounds")
    print("| shape | onnxruntime ms a layer | Kiln direct | Kiln Winograd | direct/ORT | "
          "Winograd/ORT | Winograd/direct | max abs err direct, Winograd |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    with Pipeline(workers=1) as pipeline:
        for spec in args.shapes.split(","):
            size, channels = (int(v) for v in spec.split("x"))
            conv = chain(size, channels, args.layers)
            fns = {}
            for name, model in (("direct", conv), ("winograd", winograd_chain(conv))):
                res = pipeline.compile(model.SerializeToString(), targets=[target])
                if res.errors:
                    raise SystemExit(f"{spec} {name}: {res.errors[0].error}")
                fns[name] = load_vmfb(res.artifacts[0].data, driver="local-task")[model.graph.name]
            so = ort.SessionOptions()
            so.intra_op_num_threads = 2
            sess = ort.InferenceSession(conv.SerializeToString(), so,
                                        providers=["CPUExecutionProvider"])
            x = np.random.default_rng(2).random((1, channels, size, size), dtype=np.float32)
            want = sess.run(None, {"x": x})[0]
            errs = [float(np.abs(fns[k](x) - want).max()) for k in ("direct", "winograd")]
            engines = {"ort": lambda sess=sess, x=x: sess.run(None, {"x": x}),
                       **{k: (lambda f=f, x=x: f(x)) for k, f in fns.items()}}
            times = alternate(engines, repeats=args.repeats, block=args.block)

            def ratio(a: str, b: str, times: dict[str, list[float]] = times) -> float:
                return statistics.median(p / q for p, q in zip(times[a], times[b], strict=True))

            per = {k: statistics.median(v) * 1e3 / args.layers for k, v in times.items()}
            print(f"| {size}x{size}x{channels} | {per['ort']:.2f} | {per['direct']:.2f} | "
                  f"{per['winograd']:.2f} | {ratio('direct', 'ort'):.2f}× | "
                  f"{ratio('winograd', 'ort'):.2f}× | **{ratio('winograd', 'direct'):.2f}** | "
                  f"{errs[0]:.1e}, {errs[1]:.1e} |", flush=True)


if __name__ == "__main__":
    main()
