"""Weights apart from code: does an executable compiled with ``params: "external"`` run as fast
as the one with its weights embedded? And how small is it?

For an MLP and a small conv net (ONNX, random weights), on CPU (``local-task``) and Vulkan
(lavapipe here), both variants are compiled by the engine (``kiln.compiler.pipeline``, a fresh
cache), loaded once (the external one with its ``.irpa`` through ``kiln.client.params``,
memory-mapped), checked against onnxruntime, then timed: ``--blocks`` alternated blocks of
``--calls`` calls each (embedded first in even blocks, external first in odd ones), the median
call of each block, the median over blocks. ``ratio`` = external / embedded (target: <= 1.05).

With torch available, ResNet-18 (``bench/zoo.py``, random weights) is compiled with external
params for cpu and vulkan: the executable's size per target, the one archive both share, and
the CPU executable's largest output difference to onnxruntime.

    .venv/bin/python bench/params.py [--blocks 9] [--calls 20] [--targets cpu,vulkan]
                                     [--models mlp,convnet] [--no-resnet | --no-speed]
                                     [--resnet-embedded]

Figures: bench/RESULTS.md, "Weights apart from code".
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DRIVERS = {"cpu": "local-task", "vulkan": "vulkan"}


def _onnx(nodes: list[Any], inits: dict[str, np.ndarray], x: list[int], name: str) -> bytes:
    from onnx import TensorProto, helper, numpy_helper

    g = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(a, k) for k, a in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return bytes(m.SerializeToString())


def mlp() -> tuple[bytes, np.ndarray]:
    """8x512 -> 1024 -> 1024 -> 10, ReLU between (1.6 M weights)."""
    from onnx import helper

    r = np.random.default_rng(0)
    dims = [512, 1024, 1024, 10]
    inits: dict[str, np.ndarray] = {}
    nodes = []
    h = "x"
    for i, (a, b) in enumerate(zip(dims, dims[1:], strict=False)):
        inits[f"w{i}"] = (r.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32)
        inits[f"b{i}"] = r.standard_normal(b).astype(np.float32)
        nodes += [helper.make_node("MatMul", [h, f"w{i}"], [f"m{i}"]),
                  helper.make_node("Add", [f"m{i}", f"b{i}"],
                                   ["y" if i == len(dims) - 2 else f"a{i}"])]
        if i < len(dims) - 2:
            nodes.append(helper.make_node("Relu", [f"a{i}"], [f"r{i}"]))
            h = f"r{i}"
    return _onnx(nodes, inits, [8, 512], "mlp"), r.standard_normal((8, 512)).astype(np.float32)


def convnet() -> tuple[bytes, np.ndarray]:
    """1x3x64x64: four 3x3 convolutions (32, 64, 64, 128 channels, two of stride 2) with ReLU,
    global average pool, a 128x10 classifier."""
    from onnx import helper

    r = np.random.default_rng(1)
    chans = [(3, 32, 2), (32, 64, 1), (64, 64, 2), (64, 128, 1)]
    inits: dict[str, np.ndarray] = {}
    nodes = []
    h = "x"
    for i, (cin, cout, s) in enumerate(chans):
        inits[f"c{i}"] = (r.standard_normal((cout, cin, 3, 3)) / np.sqrt(9 * cin)).astype(
            np.float32)
        inits[f"cb{i}"] = r.standard_normal(cout).astype(np.float32) * 0.1
        nodes += [helper.make_node("Conv", [h, f"c{i}", f"cb{i}"], [f"v{i}"], pads=[1, 1, 1, 1],
                                   strides=[s, s]),
                  helper.make_node("Relu", [f"v{i}"], [f"r{i}"])]
        h = f"r{i}"
    inits["fc"] = r.standard_normal((128, 10)).astype(np.float32) / 12
    inits["fb"] = r.standard_normal(10).astype(np.float32)
    inits["shape"] = np.array([1, 128], np.int64)
    nodes += [helper.make_node("GlobalAveragePool", [h], ["p"]),
              helper.make_node("Reshape", ["p", "shape"], ["f"]),
              helper.make_node("Gemm", ["f", "fc", "fb"], ["y"])]
    x = r.standard_normal((1, 3, 64, 64)).astype(np.float32)
    return _onnx(nodes, inits, [1, 3, 64, 64], "convnet"), x


def reference(data: bytes, feeds: dict[str, np.ndarray]) -> np.ndarray:
    import onnxruntime as ort

    out: np.ndarray = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(
        None, feeds)[0]
    return out


def load(pipe: Any, data: bytes, target: str, *, external: bool) -> tuple[Any, int, int]:
    """The loaded module, its executable's size and its archive's size (0 embedded)."""
    from kiln.client.params import ParamsArchive
    from kiln.client.runtime import load_vmfb

    res = pipe.compile(data, targets=[target],
                       options={"params": "external"} if external else None)
    if res.errors:
        raise res.errors[0].error
    art = res.artifacts[0]
    archive = None
    if external:
        assert res.params is not None
        path = pipe.cache.blob_path(res.params.digest)
        archive = ParamsArchive.open(path, digest=res.params.digest)
    mod = load_vmfb(art.data, driver=DRIVERS[target.split(":")[0]], params=archive)
    return mod, art.size, res.params.size if res.params else 0


def time_pair(fa: Any, fb: Any, x: np.ndarray, *, blocks: int, calls: int) -> tuple[float, float]:
    """Median over blocks of each block's median call (seconds), blocks alternated."""
    for f in (fa, fb):
        for _ in range(3):
            f(x)
    meds: dict[int, list[float]] = {0: [], 1: []}
    for b in range(blocks):
        order = (0, 1) if b % 2 == 0 else (1, 0)
        for which in order:
            f = (fa, fb)[which]
            ts = []
            for _ in range(calls):
                t0 = time.perf_counter()
                f(x)
                ts.append(time.perf_counter() - t0)
            meds[which].append(statistics.median(ts))
    return statistics.median(meds[0]), statistics.median(meds[1])


def speed(args: argparse.Namespace, pipe: Any) -> None:
    print(f"{'model':<9} {'target':<8} {'embedded ms':>12} {'external ms':>12} {'ratio':>6} "
          f"{'exe emb KB':>11} {'exe ext KB':>11} {'irpa KB':>8} {'max |d| ext':>12}")
    for name, make in (("mlp", mlp), ("convnet", convnet)):
        if name not in args.models:
            continue
        data, x = make()
        ref = reference(data, {"x": x})
        for target in args.targets:
            emb, emb_size, _ = load(pipe, data, target, external=False)
            ext, ext_size, irpa = load(pipe, data, target, external=True)
            fe, fx = emb.function(name), ext.function(name)
            diff = float(np.abs(fx(x) - ref).max())
            te, tx = time_pair(fe, fx, x, blocks=args.blocks, calls=args.calls)
            print(f"{name:<9} {target:<8} {te * 1e3:>12.3f} {tx * 1e3:>12.3f} {tx / te:>6.3f} "
                  f"{emb_size / 1024:>11.1f} {ext_size / 1024:>11.1f} {irpa / 1024:>8.1f} "
                  f"{diff:>12.2e}", flush=True)


def resnet(args: argparse.Namespace, pipe: Any) -> None:
    try:
        import torch  # noqa: F401
    except ImportError:
        print("resnet18: torch is not installed (pip install -e .[bench]); skipped")
        return
    from bench import zoo

    z = zoo.build("resnet18")
    data = z.onnx_bytes
    t0 = time.perf_counter()
    res = pipe.compile(data, targets=args.targets, options={"params": "external"})
    secs = time.perf_counter() - t0
    if res.errors:
        raise res.errors[0].error
    assert res.params is not None
    print(f"\nresnet18 (params external, {secs:.1f} s for {len(args.targets)} targets): "
          f"one archive {res.params.digest[:19]}… {res.params.size / 1e6:.2f} MB for "
          f"{', '.join(a.target for a in res.artifacts)}")
    for a in res.artifacts:
        print(f"  {a.target:<24} executable {a.size / 1e3:>8.1f} KB")
    from kiln.client.params import ParamsArchive
    from kiln.client.runtime import load_vmfb

    cpu = next(a for a in res.artifacts if a.target.startswith("cpu"))
    archive = ParamsArchive.open(pipe.cache.blob_path(res.params.digest),
                                 digest=res.params.digest)
    mod = load_vmfb(cpu.data, driver="local-task", params=archive)
    (fn,) = mod.function_names
    out = mod.function(fn)(*z.inputs)
    print(f"  cpu output vs onnxruntime: max |d| = {float(np.abs(out - z.ref_ort[0]).max()):.2e}"
          f" (outputs up to {float(np.abs(z.ref_ort[0]).max()):.2f})")
    if args.resnet_embedded:
        emb = pipe.compile(data, targets=args.targets)
        for a in emb.artifacts:
            print(f"  {a.target:<24} embedded executable {a.size / 1e6:>8.2f} MB")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--blocks", type=int, default=9)
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--targets", default="cpu,vulkan")
    ap.add_argument("--models", default="mlp,convnet")
    ap.add_argument("--no-resnet", action="store_true")
    ap.add_argument("--no-speed", action="store_true", help="ResNet-18 sizes only")
    ap.add_argument("--resnet-embedded", action="store_true",
                    help="also compile ResNet-18 with its weights embedded (sizes)")
    args = ap.parse_args(argv)
    args.targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    args.models = [m.strip() for m in args.models.split(",") if m.strip()]
    from kiln.cache import open_cache
    from kiln.compiler.pipeline import Pipeline

    with tempfile.TemporaryDirectory(prefix="kiln-bench-params-") as tmp, \
            Pipeline(cache=open_cache(cache_dir=tmp), workers=2) as pipe:
        if not args.no_speed:
            speed(args, pipe)
        if not args.no_resnet:
            resnet(args, pipe)
    return 0


if __name__ == "__main__":
    sys.exit(main())
