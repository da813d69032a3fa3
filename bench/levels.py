"""Kiln's CPU defaults per ISA level: every model x CPU level x preset, on this machine.

This host (an AVX-512 Xeon) executes code built for every lower x86 level, so each level is
compiled THROUGH KILN (``Pipeline.compile``, no cache) for a named CPU of that level
(``LEVEL_TARGETS``) and run here: Kiln's ``default``, every allow-listed preset whose flags and
rewrites differ from another's for the graph (``--presets``), onnxruntime (CPU provider,
``intra_op_num_threads=2``) and, for convolutional graphs, ``raw-im2col``: the ONNX file imported by
``iree-import-onnx`` and compiled by the raw ``iree-compile`` with the target's flags plus
``--iree-global-opt-use-im2col-for-convs --iree-opt-level=O3 --iree-opt-data-tiling
--iree-llvmcpu-enable-ukernels=all`` (the best plain-IREE set for a CNN, the yardstick). All of a (model, level)'s executables run in one process, in blocks alternated as in
``bench/executables.py`` (``alternate``: a pause, one untimed call, ``--block`` timed calls; the
order rotates each round), so a busy shared machine slows all alike. Reported per (model,
level): median ms of each config, and the medians of the per-round ratios default/baseline and
default/best (best = the config with the lowest median, raw IREE included). Outputs are checked
against onnxruntime (``allclose(rtol=1e-3, atol=1e-4)``).

Results go to a JSON file (``--out``, default ``bench/.levels.json``), one entry per (model,
level), written as each finishes; a later run skips the entries present (``--force`` re-runs
them), so a long matrix can be run in pieces. ``--report`` prints the table from the file and
``--record`` also writes it as the section ``## CPU defaults per ISA level (bench/levels.py)`` of
``bench/RESULTS.md``.

    .venv/bin/python bench/levels.py --models resnet18 --levels haswell --raw
    .venv/bin/python bench/levels.py --levels x86-64-v2,haswell,skylake-avx512,host
    .venv/bin/python bench/levels.py --report --record

Models: the reference models of ``bench/models.py`` and the transformer-like graphs below
(``TRANSFORMERS``: other widths, heads and sequence lengths, GELU in both forms, pre- and
post-LayerNorm, a causal decoder, batch 1 and 4).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
import onnx

from bench.executables import alternate, machine
from bench.models import _G, MODELS
from kiln.client.resolver import detect_cpu
from kiln.client.runtime import load_vmfb
from kiln.compiler.pipeline import Pipeline
from kiln.targets import normalize_options, parse_target
from kiln.targets.cpu import cpu_model, isa_level
from kiln.targets.presets import PRESETS

SECTION = "## CPU defaults per ISA level (bench/levels.py)"
RESULTS = ROOT / "bench" / "RESULTS.md"
RTOL, ATOL = 1e-3, 1e-4
# One named CPU per level (``kiln.targets.cpu.LEVELS``); "host" is this machine's own target.
LEVEL_TARGETS = {
    "x86-64": "cpu:x86_64:generic",
    "x86-64-v2": "cpu:x86_64:x86-64-v2",
    "haswell": "cpu:x86_64:haswell",
    "znver3": "cpu:x86_64:znver3",
    "skylake-avx512": "cpu:x86_64:skylake-avx512",
}
RAW_IM2COL = (
    "--iree-global-opt-use-im2col-for-convs",
    "--iree-opt-level=O3",
    "--iree-opt-data-tiling",
    "--iree-llvmcpu-enable-ukernels=all",
)


def transformer(*, batch: int = 1, seq: int = 128, d: int = 256, heads: int = 4,
                ffn: int = 1024, layers: int = 2, causal: bool = False, gelu: str = "erf",
                pre_ln: bool = False, seed: int = 1) -> onnx.ModelProto:
    """A transformer stack as PyTorch exports one (MatMul + Add projections, Reshape/Transpose
    head split, Softmax attention, LayerNormalization, GELU in the ``erf`` or ``tanh`` form;
    ``causal``: an additive upper-triangular mask; ``pre_ln``: LayerNorm before each block)."""
    g = _G(seed)
    hd = d // heads

    def ln(x: str) -> str:
        return g.node("LayerNormalization", [x, g.const(np.ones(d, np.float32), "ln_s"),
                                             g.const(np.zeros(d, np.float32), "ln_b")],
                      axis=-1, epsilon=1e-5)

    def c(v: float) -> str:
        return g.const(np.array(v, np.float32), "c")

    def split(x: str) -> str:
        shape = g.const(np.array([batch, seq, heads, hd], np.int64), "shape")
        return g.node("Transpose", [g.node("Reshape", [x, shape])], perm=[0, 2, 1, 3])

    def act(h: str) -> str:
        if gelu == "erf":
            erf = g.node("Erf", [g.node("Mul", [h, c(1 / np.sqrt(2))])])
            return g.node("Mul", [g.node("Mul", [h, c(0.5)]), g.node("Add", [erf, c(1.0)])])
        cube = g.node("Mul", [g.node("Mul", [h, h]), h])
        inner = g.node("Mul", [g.node("Add", [h, g.node("Mul", [cube, c(0.044715)])]),
                               c(float(np.sqrt(2 / np.pi)))])
        return g.node("Mul", [g.node("Mul", [h, c(0.5)]),
                              g.node("Add", [g.node("Tanh", [inner]), c(1.0)])])

    mask = None
    if causal:
        m = np.triu(np.full((seq, seq), -1e9, np.float32), 1)
        mask = g.const(m, "mask")
    x = "x"
    for _ in range(layers):
        h = ln(x) if pre_ln else x
        q, k, v = (split(g.linear(h, d, d)) for _ in range(3))
        s = g.node("Mul", [g.node("MatMul", [q, g.node("Transpose", [k], perm=[0, 1, 3, 2])]),
                           c(1.0 / np.sqrt(hd))])
        if mask is not None:
            s = g.node("Add", [s, mask])
        ctx = g.node("Transpose", [g.node("MatMul", [g.node("Softmax", [s], axis=-1), v])],
                     perm=[0, 2, 1, 3])
        ctx = g.node("Reshape", [ctx, g.const(np.array([batch, seq, d], np.int64), "shape")])
        x = g.node("Add", [x, g.linear(ctx, d, d)])
        x = x if pre_ln else ln(x)
        h = ln(x) if pre_ln else x
        x = g.node("Add", [x, g.linear(act(g.linear(h, d, ffn)), ffn, d)])
        x = x if pre_ln else ln(x)
    if pre_ln:
        x = ln(x)
    return g.model("transformer", [batch, seq, d], x, [batch, seq, d])


TRANSFORMERS: dict[str, Callable[[], onnx.ModelProto]] = {
    # BERT-small-like: wider, 6 heads of 64, shorter sequence, batch 1.
    "bert-d384": lambda: transformer(seq=64, d=384, heads=6, ffn=1536, layers=2),
    # GPT-style causal decoder block: pre-LN, tanh GELU, 8 heads of 32, batch 4.
    "gpt-causal-b4": lambda: transformer(batch=4, seq=64, d=256, heads=8, ffn=1024, layers=2,
                                         causal=True, gelu="tanh", pre_ln=True),
    # A small, launch-bound one: d 128, 2 heads, seq 32, batch 1.
    "tiny-d128": lambda: transformer(seq=32, d=128, heads=2, ffn=512, layers=2),
    # A wide one at batch 4: d 512, 8 heads, seq 128, one layer.
    "wide-d512-b4": lambda: transformer(batch=4, seq=128, d=512, heads=8, ffn=2048, layers=1),
}
ALL_MODELS: dict[str, Callable[[], onnx.ModelProto]] = {**MODELS, **TRANSFORMERS}


def _sample(model: onnx.ModelProto) -> np.ndarray:
    dims = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    return np.random.default_rng(0).standard_normal(dims).astype(np.float32)


def level_target(level: str) -> str:
    return detect_cpu().target if level == "host" else LEVEL_TARGETS[level]


def raw_compile(model: onnx.ModelProto, target: str, work: Path) -> bytes:
    """``iree-import-onnx`` then the native ``iree-compile`` with the target's flags and
    ``RAW_IM2COL``: no Kiln step at all."""
    from kiln.targets.toolchain import iree_compile_path

    src, mlir, out = work / "m.onnx", work / "m.mlir", work / "raw.vmfb"
    onnx.save(model, src)
    tool = Path(sys.executable).parent / "iree-import-onnx"
    subprocess.run([str(tool), str(src), "-o", str(mlir)], check=True, capture_output=True)
    flags = [*parse_target(target).flags, *RAW_IM2COL]
    subprocess.run([str(iree_compile_path()), *flags, str(mlir), "-o", str(out)],
                   check=True, capture_output=True)
    return out.read_bytes()


def measure(name: str, level: str, *, presets: list[str], raw: bool, repeats: int,
            block: int, pipe: Pipeline) -> dict[str, Any]:
    """One (model, level) entry: per config its ms, error and plan; the paired ratios."""
    import onnxruntime as ort

    model = ALL_MODELS[name]()
    data = model.SerializeToString()
    x = _sample(model)
    target = level_target(level)
    spec = parse_target(target)
    cpu, feats = cpu_model(spec)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    sess = ort.InferenceSession(data, so, providers=["CPUExecutionProvider"])
    feed = {model.graph.input[0].name: x}
    ref = sess.run(None, feed)[0]
    graph = pipe.prepare(data)
    plans: dict[tuple[Any, ...], list[str]] = {}
    for p in dict.fromkeys(["default", "baseline", *presets]):
        opts = normalize_options({"preset": p})
        plan = (pipe.flags_for(spec, opts, graph=graph), pipe.rewrites_for(spec, opts, graph=graph))
        plans.setdefault(plan, []).append(p)
    fns: dict[str, Any] = {}
    info: dict[str, dict[str, Any]] = {}
    for (flags, rewrites), names in plans.items():
        label = "=".join(names)
        t0 = time.perf_counter()
        res = pipe.compile(data, targets=[target], options={"preset": names[0]})
        if res.errors:
            info[label] = {"error": str(res.errors[0].error)[:300]}
            print(f"{name}@{level} [{label}]: {info[label]['error']}", file=sys.stderr)
            continue
        fn = load_vmfb(res.artifacts[0].data, driver="local-task")[res.functions[0]]
        fns[label] = fn
        info[label] = {"compile_s": time.perf_counter() - t0, "flags": list(flags),
                       "rewrites": list(rewrites)}
    if raw and model_is_cnn(graph.traits.to_json()):
        with tempfile.TemporaryDirectory(prefix="kiln-levels-") as tmp:
            t0 = time.perf_counter()
            mod = load_vmfb(raw_compile(model, target, Path(tmp)), driver="local-task")
            fns["raw-im2col"] = mod[model.graph.name]
            info["raw-im2col"] = {"compile_s": time.perf_counter() - t0,
                                  "flags": list(RAW_IM2COL), "rewrites": []}
    for label, fn in fns.items():
        y = fn(x)
        info[label]["max_err"] = float(np.abs(y - ref).max())
        info[label]["ok"] = bool(np.allclose(y, ref, rtol=RTOL, atol=ATOL))
        print(f"{name}@{level} [{label}]: compiled in {info[label]['compile_s']:.0f} s, "
              f"max err {info[label]['max_err']:.1e}", file=sys.stderr, flush=True)
    calls: dict[str, Any] = {"ort": lambda: sess.run(None, feed)}
    calls.update({k: (lambda fn=fn: fn(x)) for k, fn in fns.items()})
    times = alternate(calls, repeats=repeats, block=block)
    ms = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    default = next(k for k in info if k.split("=")[0] == "default")
    baseline = next(k for k in info if "baseline" in k.split("="))
    best = min(fns, key=lambda k: ms[k])
    common = {
        "model": name, "level": level, "target": target,
        "isa_level": isa_level(spec.arch, cpu, feats), "class": model_class_of(graph),
        "ms": ms, "configs": info, "default": default, "baseline": baseline, "best": best,
        "repeats": repeats, "block": block,
        "when": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "load": os.getloadavg()[0],
    }
    if default not in fns or baseline not in fns:
        return common  # a compile failed: no ratios (the report says which)

    def paired(a: str, b: str) -> float:
        return statistics.median(x / y for x, y in zip(times[a], times[b], strict=True))

    return {
        **common,
        "default_over_baseline": paired(default, baseline),
        "default_over_best": paired(default, best),
        "default_over_ort": paired(default, "ort"),
        "block_ms": {k: [t * 1e3 for t in v] for k, v in times.items()},
    }


def model_is_cnn(traits: dict[str, int]) -> bool:
    return traits.get("conv", 0) > 0


def model_class_of(graph: Any) -> str:
    from kiln.targets.presets import model_class

    return model_class(graph.traits.to_json())


def report(entries: list[dict[str, Any]]) -> str:
    lines = [
        ("| model | level (ISA) | default | ms: default | baseline | best (which) "
         "| default / baseline | default / best | default / ORT | ok |"),
        "|---|---|---|---:|---:|---|---:|---:|---:|---|",
    ]
    for e in entries:
        d, b, best = e["default"], e["baseline"], e["best"]
        ok = all(c.get("ok", False) for c in e["configs"].values() if "error" not in c)
        if "default_over_best" not in e:
            failed = ", ".join(k for k, c in e["configs"].items() if "error" in c)
            lines.append(f"| {e['model']} | {e['level']} ({e['isa_level']}) | {d} | "
                         f"compile failed: {failed} | | | | | | {'yes' if ok else 'NO'} |")
            continue
        flag = " **(>1.1)**" if e["default_over_best"] > 1.1 else ""
        if "raw-im2col" in e["ms"]:
            best += f"; raw-im2col {e['ms']['raw-im2col']:.1f} = default × " + format(
                e["ms"]["raw-im2col"] / e["ms"][d], ".2f")
        lines.append(
            f"| {e['model']} | {e['level']} ({e['isa_level']}) | {d} | {e['ms'][d]:.1f} "
            f"| {e['ms'][b]:.1f} | {e['ms'][e['best']]:.1f} ({best}) "
            f"| {e['default_over_baseline']:.2f} | {e['default_over_best']:.2f}{flag} "
            f"| {e['default_over_ort']:.2f} | {'yes' if ok else 'NO'} |"
        )
    return "\n".join(lines)


def record(text: str) -> None:
    old = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n"
    pattern = re.compile(rf"^{re.escape(SECTION)}\n.*?(?=^## |\Z)", re.DOTALL | re.MULTILINE)
    body = f"{SECTION}\n\n{text.strip()}\n\n"
    new = pattern.sub(lambda _: body, old) if pattern.search(old) else old.rstrip() + "\n\n" + body
    RESULTS.write_text(new)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("--models", default=",".join(ALL_MODELS), help="comma-separated names")
    ap.add_argument("--levels", default="x86-64-v2,haswell,skylake-avx512,host",
                    help=f"comma-separated: {', '.join(LEVEL_TARGETS)}, host")
    ap.add_argument("--presets", default=",".join(p for p in PRESETS if p != "fast-compile"),
                    help="presets besides default and baseline (those with the same plan as "
                         "another are compiled and timed once)")
    ap.add_argument("--raw", action="store_true", help="add raw-im2col for convolutional graphs")
    ap.add_argument("--repeats", type=int, default=7, help="alternated rounds (median taken)")
    ap.add_argument("--block", type=int, default=3, help="timed calls per config per round")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / ".levels.json")
    ap.add_argument("--force", action="store_true", help="re-run entries already in --out")
    ap.add_argument("--report", action="store_true", help="only print the table from --out")
    ap.add_argument("--record", action="store_true", help=f"write {SECTION!r} in RESULTS.md")
    args = ap.parse_args(argv)
    store: dict[str, Any] = json.loads(args.out.read_text()) if args.out.exists() else {}
    if not args.report:
        store.setdefault("machine", machine())
        with Pipeline(workers=1, compile_timeout=1200) as pipe:
            for level in args.levels.split(","):
                for name in args.models.split(","):
                    key = f"{name}@{level}"
                    if key in store.get("entries", {}) and not args.force:
                        continue
                    entry = measure(name, level, presets=args.presets.split(","), raw=args.raw,
                                    repeats=args.repeats, block=args.block, pipe=pipe)
                    store.setdefault("entries", {})[key] = entry
                    args.out.write_text(json.dumps(store, indent=1))
                    print(report([entry]).splitlines()[-1], flush=True)
    entries = list(store.get("entries", {}).values())
    out = report(entries)
    print(out)
    if args.record:
        whens = sorted(e["when"] for e in entries)
        loads = [e["load"] for e in entries]
        record(
            f"Measured {whens[0]} to {whens[-1]} on {store.get('machine', '?')}; load average "
            f"{min(loads):.0f}-{max(loads):.0f} over the entries. Each (model, level) in one "
            f"process: onnxruntime and each distinct executable in alternated blocks (a 50 ms "
            f"pause, one untimed call, then the block's timed calls; the order rotates each "
            f"round); medians of the block medians and of the per-round ratios. Configs named "
            f"a=b share one plan (identical flags and rewrites). raw-im2col is plain "
            f"iree-import-onnx + iree-compile with `{' '.join(RAW_IM2COL)}`. Levels: "
            + ", ".join(f"{k} = `{level_target(k)}`" for k in [*LEVEL_TARGETS, "host"])
            + f".\n\n{out}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
