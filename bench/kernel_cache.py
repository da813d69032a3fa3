"""The kernel cache (kiln/compiler/kernels.py): compile time with and without cached kernels.

For each model and target (compile-only for CUDA and ROCm; Vulkan executables also run on
lavapipe), through the embedded pipeline with warm workers:

- ``one job``: the usual compile (``KILN_KERNEL_CACHE`` off), no cache;
- ``cold``: the kernel path into an empty cache (every kernel translated, the graph's input
  phase stored: kiln/compiler/frontend.py);
- ``warm``: the kernel path again with the whole executable's record dropped (every kernel and
  the input phase cached);
- ``warm, kernels only``: the same with the stored input phase dropped too (the kernel cache
  alone);
- for a model listed after a smaller one that shares its layers (``mlp-5`` after ``mlp-4``,
  ResNet-34 after ResNet-18): ``after``, its compile into a cache holding only the smaller model's
  kernels (the table says how many of its kernels were cached).

Each repetition is one block of all variants, the one-job compile before or after the kernel
path from block to block; the table holds the medians. ``warm/cold`` and ``after/cold`` are the
issue's ratios (their mean is printed, and the same with the kernel cache alone); on Vulkan the
warm executable's outputs are compared bit for bit with the one-job executable's on lavapipe
(not for graphs with their weights in an archive). Run:

    nice -n 10 .venv/bin/python bench/kernel_cache.py [--reps 3] [--models mlp-4,mlp-5,...]
        [--targets vulkan,cuda:sm_90,rocm:gfx942]

Models: ``mlp-4``, ``mlp-5`` (tests/test_kernel_cache.py), ``resnet_cnn``, ``transformer_block``
(tests/test_models.py), ``resnet18``, ``resnet34`` (bench/zoo.py's ResNet, exported once under
``bench/.zoo/kernel-cache/``; torch needed the first time) and ``resnet18-ext``, ``resnet34-ext``
(the same with ``params: external``: weights apart from the code), and any ``bench/zoo.py``
model as ``zoo:NAME`` (weights inline) or ``zoo:NAME-ext`` (weights apart).
"""

from __future__ import annotations

import argparse
import io
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kiln.cache import open_cache
from kiln.compiler import frontend
from kiln.compiler.pipeline import Artifact, Pipeline
from kiln.targets import normalize_options, parse_target
from tests.test_kernel_cache import DEEP, SHALLOW, inputs, mlp

TARGETS = ["vulkan", "cuda:sm_90", "rocm:gfx942"]
CACHE = ROOT / "bench" / ".zoo" / "kernel-cache"


@dataclass(frozen=True)
class Model:
    name: str
    data: Callable[[], bytes]
    inputs: Callable[[], list[np.ndarray]]
    after: str | None = None  # the smaller model sharing its layers
    options: dict[str, Any] | None = None


def _test_model(name: str) -> Model:
    from tests.test_models import MODELS, model_input

    def data() -> bytes:
        return bytes(MODELS[name]().SerializeToString())

    return Model(name, data, lambda: [model_input(MODELS[name]())])


def _resnet(depth: int, params: str | None) -> Model:
    """ResNet-18/34 (bench/zoo.py's torchvision ResNet, seeded), exported once to ONNX under
    ``bench/.zoo/kernel-cache/``; ``params="external"`` compiles it with its weights apart."""

    def data() -> bytes:
        path = CACHE / f"resnet{depth}.onnx"
        if not path.exists():
            import torch

            from bench.zoo import OPSET, resnet

            torch.manual_seed(depth)
            model = resnet("basic", {18: [2, 2, 2, 2], 34: [3, 4, 6, 3]}[depth]).eval()
            buf = io.BytesIO()
            torch.onnx.export(model, (torch.zeros(1, 3, 224, 224),), buf, opset_version=OPSET,
                              dynamo=False)
            CACHE.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            tmp.write_bytes(buf.getvalue())
            tmp.rename(path)
        return path.read_bytes()

    def x() -> list[np.ndarray]:
        return [np.random.default_rng(depth).standard_normal((1, 3, 224, 224)).astype(np.float32)]

    opts = {"params": params} if params else None
    return Model(f"resnet{depth}" + ("-ext" if params else ""), data, x,
                 after=f"resnet18{'-ext' if params else ''}" if depth == 34 else None,
                 options=opts)


def _zoo(name: str, params: str | None) -> Model:
    """A ``bench/zoo.py`` model (batch 1, built on first use; torch needed then), weights
    inline or, with ``params="external"``, apart."""

    def zm() -> Any:
        from bench import zoo

        return zoo.build(name, 1)

    opts = {"params": params} if params else None
    return Model(f"zoo:{name}" + ("-ext" if params else ""), lambda: bytes(zm().onnx_bytes),
                 lambda: list(zm().inputs), options=opts)


def models(names: list[str] | None = None) -> dict[str, Model]:
    """The named models: the ones below, and ``zoo:NAME`` / ``zoo:NAME-ext`` for any zoo model."""
    extra = []
    for n in names or []:
        if n.startswith("zoo:"):
            base = n[4:].removesuffix("-ext")
            extra.append(_zoo(base, "external" if n.endswith("-ext") else None))
    out = [*extra,
        Model("mlp-4", lambda: mlp(SHALLOW), lambda: inputs(SHALLOW)),
        Model("mlp-5", lambda: mlp(DEEP), lambda: inputs(DEEP), after="mlp-4"),
        _test_model("resnet_cnn"),
        _test_model("transformer_block"),
        _resnet(18, None),
        _resnet(34, None),
        _resnet(18, "external"),
        _resnet(34, "external"),
    ]
    return {m.name: m for m in out}


def compile_one(p: Pipeline, model: Model, target: str, *, drop: bool = False,
                drop_front: bool = False) -> tuple[float, Artifact, str]:
    """Seconds, the artifact and the graph's first function; ``drop``: the whole executable's
    record is removed first (its kernels stay); ``drop_front``: the graph's stored input phase
    too (kiln/compiler/frontend.py)."""
    extra = {"params": model.options["params"]} if model.options else {}
    graph = p.prepare(model.data(), **extra)
    spec, opts = parse_target(target), normalize_options(model.options)
    if drop or drop_front:
        assert p.cache is not None and p.cache.disk is not None
    if drop:
        p.cache.disk.delete_record(p.key_for(graph, spec, opts).digest())
    if drop_front:
        fkey = frontend.frontend_key(graph.digest, flags=p.flags_for(spec, opts, graph=graph),
                                     module_attr=spec.module_attr, compiler=p.compiler)
        p.cache.disk.delete_record(fkey.digest())
    t0 = time.perf_counter()
    art = p.compile_prepared(graph, spec, opts)
    assert not art.cached
    return time.perf_counter() - t0, art, graph.functions[0]


def run_both(a: Artifact, b: Artifact, fn: str, model: Model) -> tuple[str, str]:
    """Whether the two Vulkan executables compute the same bits on lavapipe, and the ratio of
    their call times there (kernel path / one job: medians of 5 alternated blocks of 3 calls;
    the kernel path leaves binding offsets to the runtime)."""
    from bench.executables import alternate
    from kiln.client.runtime import load_vmfb

    x = model.inputs()
    fns = [load_vmfb(art.data, driver="vulkan")[fn] for art in (a, b)]
    outs = [np.asarray(f(*x)) for f in fns]
    same = "yes" if np.array_equal(outs[0].view(np.uint8), outs[1].view(np.uint8)) else "NO"
    t = alternate({"one": lambda: fns[0](*x), "kernels": lambda: fns[1](*x)}, repeats=5, block=3)
    ratio = statistics.median(k / o for k, o in zip(t["kernels"], t["one"], strict=True))
    return same, f"{ratio:.2f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--models", default="mlp-4,mlp-5,resnet_cnn,transformer_block")
    ap.add_argument("--targets", default=",".join(TARGETS))
    ap.add_argument("--no-run", default="", help="comma-separated models not run on lavapipe "
                    "(ResNets with inline weights take minutes a call there)")
    args = ap.parse_args(argv)
    zoo = models(args.models.split(","))
    chosen = [zoo[m] for m in args.models.split(",")]
    targets = args.targets.split(",")
    rows = []
    times: dict[tuple[str, str, str], list[float]] = {}
    arts: dict[tuple[str, str, str], Artifact] = {}
    funcs: dict[str, str] = {}
    hits: dict[tuple[str, str], str] = {}  # kernels cached / kernels, cold or after

    def timed(name: str, target: str, variant: str, t: float) -> None:
        times.setdefault((name, target, variant), []).append(t)
        print(f"  {name} {target} {variant}: {t:.2f} s", file=sys.stderr, flush=True)

    os.environ["KILN_KERNEL_CACHE"] = "1"
    with Pipeline(workers=2, compile_timeout=600) as one:
        for rep in range(args.reps):
            for target in targets:
                for model in chosen:
                    for v in (["one", "kernels"] if rep % 2 == 0 else ["kernels", "one"]):
                        if v == "one":
                            t, art, funcs[model.name] = compile_one(one, model, target)
                            timed(model.name, target, "one", t)
                            arts[(model.name, target, "one")] = art
                            continue
                        with tempfile.TemporaryDirectory() as d, Pipeline(
                            cache=open_cache(cache_dir=d), workers=2, compile_timeout=600
                        ) as p:
                            events: list[str] = []
                            p.on_kernel = lambda kind, result: events.append(result)
                            t, _, _ = compile_one(p, model, target)
                            timed(model.name, target, "cold", t)
                            hits[(model.name, target)] = (f"{events.count('hit')}/{len(events)}"
                                                          if "fallback" not in events else "fallback")
                            t, art, _ = compile_one(p, model, target, drop=True)
                            timed(model.name, target, "warm", t)
                            arts[(model.name, target, "warm")] = art
                            # every kernel cached, the graph's input phase not
                            t, _, _ = compile_one(p, model, target, drop=True, drop_front=True)
                            timed(model.name, target, "warm-k", t)
                        if model.after:  # into a cache holding the smaller model's kernels
                            with tempfile.TemporaryDirectory() as d, Pipeline(
                                cache=open_cache(cache_dir=d), workers=2, compile_timeout=600
                            ) as p:
                                events = []
                                p.on_kernel = lambda kind, result: events.append(result)
                                compile_one(p, zoo[model.after], target)  # untimed
                                events.clear()
                                t, _, _ = compile_one(p, model, target)
                                timed(model.name, target, "after", t)
                                hits[(model.name, target)] = (
                                    f"{events.count('hit')}/{len(events)}"
                                    if "fallback" not in events else "fallback")
                    print(f"block {rep}: {model.name} {target}", file=sys.stderr, flush=True)
    ratios: dict[str, list[float]] = {"one": [], "cold": [], "cold-k": []}
    for model in chosen:
        for target in targets:
            med = {v: statistics.median(times[(model.name, target, v)])
                   for v in ("one", "cold", "after", "warm", "warm-k")
                   if (model.name, target, v) in times}
            # the warm compiles: every kernel cached (warm), and a model after the smaller one
            # sharing its layers (after); over a one-job compile and over the cold kernel path
            for v in ("warm", "after"):
                if v in med:
                    ratios["one"].append(med[v] / med["one"])
                    ratios["cold"].append(med[v] / med["cold"])
            ratios["cold-k"].append(med["warm-k"] / med["cold"])
            if "after" in med:
                ratios["cold-k"].append(med["after"] / med["cold"])
            same, run_ratio = "-", "-"
            if target.startswith("vulkan") and model.options:
                same = "not run (weights in an archive)"
            elif target.startswith("vulkan") and model.name in args.no_run.split(","):
                same = "not run (--no-run)"
            elif target.startswith("vulkan"):
                same, run_ratio = run_both(arts[(model.name, target, "one")],
                                           arts[(model.name, target, "warm")], funcs[model.name],
                                           model)
            after = f"{med['after']:.2f}" if "after" in med else "-"
            rows.append((model.name, target, f"{med['one']:.2f}", f"{med['cold']:.2f}",
                         f"{med['warm']:.2f}", f"{med['warm-k']:.2f}", after,
                         f"{med['warm'] / med['cold']:.2f}", f"{med['warm-k'] / med['cold']:.2f}",
                         f"{med['after'] / med['cold']:.2f}" if "after" in med else "-",
                         f"{med['warm'] / med['one']:.2f}", hits[(model.name, target)], same,
                         run_ratio))
    print(f"{platform.node()} · {os.cpu_count()} cores · {time.strftime('%Y-%m-%d')} · "
          f"medians of {args.reps} alternated blocks")
    print("| model | target | one job s | cold s | warm s | warm, kernels only s | after s "
          "| warm/cold | warm (kernels only)/cold | after/cold | warm/one "
          "| kernels cached (cold or after) | same bits on lavapipe | call time kernels/one |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print(f"mean of warm/cold and after/cold: {statistics.mean(ratios['cold']):.2f}; "
          f"with the input phase not cached (warm, kernels only): "
          f"{statistics.mean(ratios['cold-k']):.2f}; "
          f"warm/one and after/one: {statistics.mean(ratios['one']):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
