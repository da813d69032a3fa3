"""kiln.torch on a small MLP: per-call overhead against eager PyTorch and torch.compile (inductor),
first-call time cold and from the cache, and the sizes of the code-only executable and its weights.

Per call: blocks of ``--calls`` calls of each variant, in a fresh random order each round (seeded)
with a 0.2 s pause before each block, so that no variant always follows the same one (inductor's
OpenMP threads spin after its calls, on the cores the next block needs); a variant's figure is the
median over rounds of its per-call time, and its ratio the median of the per-round ratios to eager
(in the same round). Every variant is checked against eager first.

First call: a fresh Python process per measurement, timed from before ``kiln.torch.compile`` /
``torch.compile`` to the end of the first call (the imports excluded, reported apart); "cold" with
empty Kiln and inductor caches, "cached" a second process on the same caches.

Sizes: the executable with the weights as named parameters (what kiln.torch compiles) against the
same module imported with its weights inline (FxImporter's default), both compiled by Kiln for the
portable CPU target.

Run: ``.venv/bin/python bench/torch_frontend.py [--rounds N] [--calls N] [--first-reps N]
[--record]``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SECTION = "## PyTorch front end (bench/torch_frontend.py)"
IN, HIDDEN, OUT, BATCH = 64, 256, 16, 8
PAUSE_S = 0.2


def machine() -> str:
    from kiln.client.resolver import detect_cpu

    model = detect_cpu().model_name or "unknown CPU"
    return f"{model}, {os.cpu_count()} cores, {platform.system()} {platform.machine()}"


def mlp(copy: int = 0) -> Any:
    """The MLP. Each ``copy`` has a ``forward`` of its own code object: Dynamo caches compiled
    graphs per code object, so variants compiled from copies never share (or evict) entries."""
    import torch
    from torch import nn

    class MLP(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = nn.Sequential(nn.Linear(IN, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, HIDDEN),
                                        nn.ReLU(), nn.Linear(HIDDEN, OUT))

        def forward(self, x: Any) -> Any:
            return self.layers(x)

    fwd = MLP.forward
    MLP.forward = types.FunctionType(  # type: ignore[method-assign]
        fwd.__code__.replace(co_name=f"forward_{copy}"), fwd.__globals__, f"forward_{copy}")
    torch.manual_seed(0)
    return MLP().eval()


def inline_mlir(m: Any, x: Any) -> str:
    """``m`` imported with its weights inline (FxImporter's default, no hooks)."""
    from iree.compiler import ir
    from iree.compiler.extras.fx_importer import FxImporter

    from kiln.torch.importer import export_program

    with ir.Context() as ctx:
        imp = FxImporter(context=ctx)
        imp.import_program(export_program(m, (x,)), func_name="main")
        return imp.module.operation.get_asm(enable_debug_info=False, large_elements_limit=None)


def variants(m: Any, x: Any) -> dict[str, Callable[[Any], Any]]:
    """Every variant runs the same weights (``mlp()``'s seed); each compiled one its own copy.
    The "executable" rows call ``kiln.torch.runtime.Executable`` directly (no argument
    flattening, no weight check): the code-only executable against one with the weights inline,
    both compiled by Kiln for the same target."""
    import torch

    import kiln.torch
    from kiln.torch.compiled import compile_mlir
    from kiln.torch.runtime import Executable

    out: dict[str, Callable[[Any], Any]] = {
        "eager": m,
        "inductor": torch.compile(mlp(1)),
    }
    for driver in ("local-task", "local-sync"):
        fast = kiln.torch.compile(m, (x,), device="cpu", driver=driver)
        out[f"kiln.torch.compile ({driver})"] = fast
        out[f'backend="kiln" ({driver})'] = torch.compile(
            mlp(2 if driver == "local-task" else 3), backend="kiln",
            options={"device": "cpu", "driver": driver})
        code = Executable(compile_mlir(fast.exported.mlir, fast.target), driver=driver)
        code.bind(fast.exported.params)
        inline = Executable(compile_mlir(inline_mlir(m, x), fast.target), driver=driver)
        inline.bind({})
        out[f"executable, weights as parameters ({driver})"] = (
            lambda a, e=code: e([a])[0])
        out[f"executable, weights inline ({driver})"] = (lambda a, e=inline: e([a])[0])
    return out


def rebind(calls: int) -> str:
    """A kiln.torch.compile call after a weight write (``add_(0)``: a new version, a re-bind)
    against a plain call, alternated; median per call of each, local-sync."""
    import torch

    import kiln.torch

    m = mlp()
    x = torch.randn(BATCH, IN)
    fast = kiln.torch.compile(m, (x,), device="cpu", driver="local-sync")
    plain: list[float] = []
    written: list[float] = []
    with torch.no_grad():
        for _ in range(calls):
            t0 = time.perf_counter()
            fast(x)
            t1 = time.perf_counter()
            m.layers[0].bias.add_(0)
            t2 = time.perf_counter()
            fast(x)
            t3 = time.perf_counter()
            plain.append(t1 - t0)
            written.append(t3 - t2)
    return (f"Re-binding (kiln.torch.compile, local-sync, {calls} alternated pairs): a call "
            f"after a weight write (`add_(0)`) {statistics.median(written) * 1e6:.1f} µs, "
            f"a plain call {statistics.median(plain) * 1e6:.1f} µs (medians).")


def set_threads(n: int) -> None:
    """``n`` threads for eager and inductor (torch's intra-op pool) and for IREE's local-task
    workers (its task topology); before any device exists."""
    import iree.runtime as rt
    import torch

    torch.set_num_threads(n)
    rt.flags.parse_flags(f"--task_topology_group_count={n}")


def per_call(rounds: int, calls: int) -> tuple[list[str], dict[str, Any]]:
    import torch

    m = mlp()
    x = torch.randn(BATCH, IN)
    with torch.no_grad():
        fns = variants(m, x)
        want = m(x)
        for name, f in fns.items():
            got = f(x)
            err = float((got - want).abs().max())
            assert err < 1e-4, (name, err)
            for _ in range(50):  # warm up (inductor's and Dynamo's first calls, the caches)
                f(x)
        names = list(fns)
        times: dict[str, list[float]] = {n: [] for n in names}
        ratios: dict[str, list[float]] = {n: [] for n in names}
        rng = random.Random(0)
        for _ in range(rounds):
            order = rng.sample(names, len(names))
            this: dict[str, float] = {}
            for n in order:
                f = fns[n]
                time.sleep(PAUSE_S)  # the previous block's spinning threads (OpenMP) go idle
                t0 = time.perf_counter()
                for _ in range(calls):
                    f(x)
                this[n] = (time.perf_counter() - t0) / calls
            for n in names:
                times[n].append(this[n])
                ratios[n].append(this[n] / this["eager"])
    rows = []
    for n in names:
        rows.append(f"| {n} | {statistics.median(times[n]) * 1e6:.1f} µs | "
                    f"{min(times[n]) * 1e6:.1f} µs | {statistics.median(ratios[n]):.2f} |")
    return rows, {n: statistics.median(times[n]) for n in names}


def first_call_child(kind: str) -> None:
    """In a fresh process: time the first call of one variant; print JSON."""
    t0 = time.perf_counter()
    import torch

    import kiln.torch

    imports = time.perf_counter() - t0
    m = mlp()
    x = torch.randn(BATCH, IN)
    with torch.no_grad():
        t1 = time.perf_counter()
        if kind == "kiln":
            f: Any = kiln.torch.compile(m, (x,), device="cpu")
        elif kind == "backend":
            f = torch.compile(m, backend="kiln", options={"device": "cpu"})
        else:
            f = torch.compile(m)
        f(x)
        first = time.perf_counter() - t1
    print(json.dumps({"imports": imports, "first": first}))


def first_calls(reps: int) -> list[str]:
    rows = []
    labels = {"kiln": "kiln.torch.compile", "backend": 'torch.compile(backend="kiln")',
              "inductor": "torch.compile (inductor)"}
    for kind in ("kiln", "backend", "inductor"):
        cold: list[float] = []
        warm: list[float] = []
        imports: list[float] = []
        for _ in range(reps):
            with tempfile.TemporaryDirectory() as d:
                env = dict(os.environ, KILN_CACHE_DIR=f"{d}/kiln",
                           KILN_SIGNING_KEY_FILE=f"{d}/key.pem",
                           TORCHINDUCTOR_CACHE_DIR=f"{d}/inductor")
                for bucket in (cold, warm):
                    out = subprocess.run([sys.executable, __file__, "--first-call-child", kind],
                                         env=env, capture_output=True, text=True, check=True)
                    rec = json.loads(out.stdout.strip().splitlines()[-1])
                    bucket.append(rec["first"])
                    imports.append(rec["imports"])
        rows.append(f"| {labels[kind]} | {statistics.median(cold):.2f} s | "
                    f"{statistics.median(warm):.2f} s | {statistics.median(imports):.2f} s |")
    return rows


def sizes() -> list[str]:
    import torch

    import kiln.torch
    from kiln import Pipeline

    m = mlp()
    x = torch.randn(BATCH, IN)
    code_only, params = kiln.torch.export(m, (x,))
    inline = inline_mlir(m, x)
    weights = sum(t.numel() * t.element_size() for t in params.values())
    rows = []
    with Pipeline(workers=1) as p:
        for label, text in (("weights as named parameters", code_only),
                            ("weights inline", inline)):
            res = p.compile(text.encode(), targets=["cpu"])
            a = res.artifacts[0]
            rows.append(f"| {label} | {len(text) / 1024:.1f} KiB | {a.size / 1024:.1f} KiB |")
    rows.append(f"| the weights ({len(params)} tensors, float32) | — | {weights / 1024:.1f} KiB |")
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--first-reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1,
                    help="threads for torch and IREE's local-task (1: what a shared machine "
                         "gives each; 2 threads on 2 busy cores time the other sessions' load)")
    ap.add_argument("--record", action="store_true", help="replace the section in RESULTS.md")
    ap.add_argument("--first-call-child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.first_call_child:
        first_call_child(args.first_call_child)
        return 0
    os.environ.setdefault("KILN_CACHE_DIR", tempfile.mkdtemp(prefix="kiln-bench-torch-"))
    set_threads(args.threads)
    started = datetime.datetime.now(datetime.UTC)
    load0 = os.getloadavg()[0]
    calls, _ = per_call(args.rounds, args.calls)
    rebinding = rebind(args.calls)
    firsts = first_calls(args.first_reps) if args.first_reps > 0 else []
    size_rows = sizes()
    load1 = os.getloadavg()[0]
    head = (f"MLP {IN}-{HIDDEN}-{HIDDEN}-{OUT} (ReLU), batch {BATCH}, float32, under "
            f"torch.no_grad(); torch {_version('torch')}, IREE {_version('iree-base-runtime')}; "
            f"{args.threads} thread(s) for torch and for IREE's local-task (local-sync runs on "
            f"the caller's)")
    table = "\n".join([
        "| variant | per call (median) | fastest round | / eager (median of rounds) |",
        "|---|---|---|---|", *calls, "", rebinding, "",
        "| first call | cold caches | cached (a second process) | imports (apart) |",
        "|---|---|---|---|", *firsts, "",
        "| executable (cpu:x86_64:generic) | MLIR text | .vmfb |",
        "|---|---|---|", *size_rows,
    ])
    print(head)
    print(table)
    if args.record:
        out = ROOT / "bench" / "RESULTS.md"
        text = out.read_text()
        section = (
            f"\n{SECTION}\n\n"
            f"{started:%Y-%m-%d %H:%M} UTC, {machine()}, shared with other sessions "
            f"(1-minute load average {load0:.1f} at the start, {load1:.1f} at the end). {head}. "
            f"{args.rounds} rounds of {args.calls} calls per variant, in a random order each round; "
            f"first calls: median of {args.first_reps} fresh processes each. "
            f"`.venv/bin/python bench/torch_frontend.py --threads {args.threads} --record`. "
            f"First calls run with the default threads.\n\n{table}\n"
        )
        marker = f"\n{SECTION}\n"
        if marker in text:
            before, rest = text.split(marker, 1)
            nxt = rest.find("\n## ")
            text = before + section + (rest[nxt:] if nxt >= 0 else "")
        else:
            text = text.rstrip("\n") + "\n" + section
        out.write_text(text)
    return 0


def _version(dist: str) -> str:
    import importlib.metadata

    return importlib.metadata.version(dist)


if __name__ == "__main__":
    sys.exit(main())
