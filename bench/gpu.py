"""Kiln's CUDA executables against PyTorch eager on the same GPU (an H200 check).

Two steps, because the GPU machine has PyTorch but no IREE compiler (and cannot fetch one):

    # here: compile the reference models (bench/models.py) through Kiln for the GPU's target
    .venv/bin/python bench/gpu.py prepare --target cuda:sm_90 --out .gpu [--models ...]
    # there (iree-base-runtime installed from a carried wheel): time and compare
    python3 bench/gpu.py run --dir .gpu [--repeats 50]

``run`` rebuilds each ONNX model with bench/models.py (same seeds, so the same weights), runs it
with PyTorch eager on the GPU (an op-by-op interpreter of the graph with ``torch.nn.functional``:
what eager PyTorch does for the equivalent module, f32 with TF32 off so both sides compute in
f32), and runs every carried executable with ``iree.runtime`` on the ``cuda`` driver, alternating
the two in blocks (a warm-up call, then ``--block`` timed calls, each synchronized), medians over
``--repeats`` rounds. It prints a markdown table (ms, IREE/torch, max abs error vs torch) and
writes ``gpu.json`` to ``$OUT`` when that is set.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def prepare(args: argparse.Namespace) -> int:
    from bench.models import MODELS
    from kiln.compiler.pipeline import Pipeline

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, Any] = {"target": args.target, "executables": []}
    with Pipeline(workers=1, compile_timeout=900) as pipe:
        for name in args.models.split(","):
            data = MODELS[name]().SerializeToString()
            for preset in args.presets.split(","):
                t0 = time.perf_counter()
                res = pipe.compile(data, targets=[args.target], options={"preset": preset})
                if res.errors:
                    print(f"{name} {preset}: {res.errors[0].error}", file=sys.stderr)
                    return 1
                art = res.artifacts[0]
                path = out / f"{name}-{preset}.vmfb"
                path.write_bytes(art.data)
                manifest["executables"].append({
                    "model": name, "preset": preset, "file": path.name, "function": res.functions[0],
                    "flags": list(art.flags), "rewrites": list(art.rewrites), "size": art.size,
                })
                print(f"{name} {preset}: {art.size / 1e6:.1f} MB in {time.perf_counter() - t0:.0f} s",
                      file=sys.stderr, flush=True)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return 0


# -- PyTorch eager: the ONNX graph op by op ------------------------------------------------------


def _torch_runner(model: Any, device: str) -> Any:
    import numpy as np
    import torch
    import torch.nn.functional as F
    from onnx import numpy_helper

    consts = {i.name: torch.from_numpy(np.array(numpy_helper.to_array(i))).to(device)
              for i in model.graph.initializer}
    nodes = list(model.graph.node)

    def attr(node: Any, name: str, default: Any = None) -> Any:
        for a in node.attribute:
            if a.name == name:
                if a.ints:
                    return list(a.ints)
                if a.type == a.FLOAT:
                    return a.f
                return a.i
        return default

    def conv(n: Any, x: Any, w: Any, b: Any) -> Any:
        pads = attr(n, "pads", [0, 0, 0, 0])
        if pads[0] != pads[2] or pads[1] != pads[3]:
            x = F.pad(x, (pads[1], pads[3], pads[0], pads[2]))
            pads = [0, 0, 0, 0]
        return F.conv2d(x, w, b, stride=attr(n, "strides", [1, 1]), padding=pads[:2],
                        groups=attr(n, "group", 1))

    ops = {
        "Conv": lambda n, *a: conv(n, *a),
        "Relu": lambda n, x: torch.relu(x),
        "Clip": lambda n, x, lo, hi: torch.clamp(x, lo.item(), hi.item()),
        "MaxPool": lambda n, x: F.max_pool2d(x, attr(n, "kernel_shape"), attr(n, "strides"),
                                             attr(n, "pads", [0, 0, 0, 0])[:2]),
        "Add": lambda n, a, b: a + b,
        "Mul": lambda n, a, b: a * b,
        "GlobalAveragePool": lambda n, x: x.mean(dim=(2, 3), keepdim=True),
        "Flatten": lambda n, x: torch.flatten(x, attr(n, "axis", 1)),
        "MatMul": lambda n, a, b: torch.matmul(a, b),
        "Reshape": lambda n, x, s: x.reshape([int(v) for v in s.tolist()]),
        "Transpose": lambda n, x: x.permute(attr(n, "perm")),
        "Softmax": lambda n, x: torch.softmax(x, dim=attr(n, "axis", -1)),
        "Erf": lambda n, x: torch.erf(x),
        "LayerNormalization": lambda n, x, s, b: F.layer_norm(
            x, (x.shape[-1],), s, b, eps=attr(n, "epsilon", 1e-5)),
    }
    # Shape operands are read on the host once, not per call.
    for k in list(consts):
        if consts[k].dtype == torch.int64:
            consts[k] = consts[k].cpu()

    def run(x: Any) -> Any:
        env = dict(consts)
        env[model.graph.input[0].name] = x
        for n in nodes:
            env[n.output[0]] = ops[n.op_type](n, *[env[i] for i in n.input])
        return env[model.graph.output[0].name]

    return run


def _blocks(call: Any, sync: Any, *, block: int) -> float:
    call()
    sync()
    out = []
    for _ in range(block):
        t0 = time.perf_counter()
        call()
        sync()
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


def run(args: argparse.Namespace) -> int:
    import iree.runtime as rt
    import numpy as np
    import torch

    from bench.models import MODELS, sample_input

    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    d = Path(args.dir)
    manifest = json.loads((d / "manifest.json").read_text())
    cuda = args.device == "cuda"
    gpu = torch.cuda.get_device_name(0) if cuda else "cpu (smoke test)"
    tsync = torch.cuda.synchronize if cuda else (lambda: None)
    rows = []
    by_model: dict[str, list[dict[str, Any]]] = {}
    for e in manifest["executables"]:
        by_model.setdefault(e["model"], []).append(e)
    if args.runtime_flags:
        rt.flags.parse_flags(*args.runtime_flags.split())
    device = rt.get_device("cuda" if cuda else "local-task")
    for name, exes in by_model.items():
        model = MODELS[name]()
        x = sample_input(model)
        xt = torch.from_numpy(x).to(args.device)
        eager = _torch_runner(model, args.device)
        with torch.no_grad():
            ref = eager(xt).cpu().numpy()
            calls: dict[str, Any] = {"torch eager": (lambda: eager(xt), tsync)}
            info: dict[str, dict[str, Any]] = {}
            for e in exes:
                ctx = rt.SystemContext(config=rt.Config(device=device))
                vm = rt.VmModule.copy_buffer(ctx.instance, (d / e["file"]).read_bytes())
                ctx.add_vm_module(vm)
                fn = ctx.modules[vm.name][e["function"]]
                xd = rt.asdevicearray(device, x)
                last: dict[str, Any] = {}

                def call(fn: Any = fn, xd: Any = xd, last: dict[str, Any] = last) -> None:
                    last["y"] = fn(xd)

                def sync(last: dict[str, Any] = last) -> None:
                    last["y"].to_host()  # waits for the result

                call()
                y = np.asarray(last["y"].to_host())
                info[e["preset"]] = {"max_err": float(np.abs(y - ref).max()), **e}
                calls[f"kiln {e['preset']}"] = (call, sync)
            times: dict[str, list[float]] = {k: [] for k in calls}
            for _ in range(args.repeats):
                for k, (c, s) in calls.items():
                    times[k].append(_blocks(c, s, block=args.block))
        t_ms = statistics.median(times["torch eager"]) * 1e3
        rows.append({"model": name, "config": "torch eager", "ms": t_ms, "ratio": 1.0,
                     "max_err": 0.0})
        for k in calls:
            if k == "torch eager":
                continue
            preset = k.removeprefix("kiln ")
            ratio = statistics.median(
                a / b for a, b in zip(times[k], times["torch eager"], strict=True))
            rows.append({"model": name, "config": k, "ms": statistics.median(times[k]) * 1e3,
                         "ratio": ratio, "max_err": info[preset]["max_err"],
                         "flags": info[preset]["flags"]})
        for r in rows[-len(calls):]:
            print(f"{r['model']:10s} {r['config']:22s} {r['ms']:8.3f} ms  "
                  f"{r['ratio']:.2f}x  err {r['max_err']:.1e}", flush=True)
    rtf = f" ({args.runtime_flags})" if args.runtime_flags else ""
    lines = [f"GPU: {gpu}; torch {torch.__version__}; iree.runtime {'cuda' if cuda else 'local-task'}{rtf}; target "
             f"{manifest['target']}; {args.repeats} rounds x {args.block} calls, medians.", "",
             "| model | config | ms | / torch eager | max abs err vs torch |",
             "|---|---|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['config']} | {r['ms']:.3f} | {r['ratio']:.2f}× "
                     f"| {r['max_err']:.1e} |")
    text = "\n".join(lines)
    print(text)
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "gpu.json").write_text(json.dumps({"gpu": gpu, "rows": rows,
                                                                    "table": text}, indent=1))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare", help="compile through Kiln here")
    p.add_argument("--target", default="cuda:sm_90")
    p.add_argument("--models", default="encoder,mobilenet")
    p.add_argument("--presets", default="baseline,default")
    p.add_argument("--out", default=".gpu")
    r = sub.add_parser("run", help="time on the GPU (needs torch and iree.runtime)")
    r.add_argument("--dir", default=".gpu")
    r.add_argument("--repeats", type=int, default=30)
    r.add_argument("--block", type=int, default=10)
    r.add_argument("--runtime-flags", default="",
                   help="iree.runtime flags, space-separated (e.g. --cuda_allow_inline_execution=true)")
    r.add_argument("--device", default="cuda", choices=["cuda", "cpu"],
                   help="cpu: a smoke test of this script with CPU executables")
    args = ap.parse_args(argv)
    return prepare(args) if args.cmd == "prepare" else run(args)


if __name__ == "__main__":
    raise SystemExit(main())
