"""Every zoo model (``bench/zoo.py``) through ``torch.compile(model, backend="kiln")`` against eager.

Per model, in a child process of its own (a crash or a hang costs that model only; Dynamo starts
clean): the torch module exactly as the zoo builds it (seeded, eval mode, batch-norm statistics
randomized), its batch-1 example inputs, ``torch.compile(model, backend="kiln")`` with no server
(compiled in-process on a Kiln disk cache under ``bench/.zoo/torch-kiln-cache``), called under
``torch.no_grad()`` and compared with eager. The comparison is ``bench/cpu_matrix.py``'s rule:
pass when ``|kiln - eager| <= ATOL·s + RTOL·|eager|`` elementwise, ``s = max(1, max|eager|)``.

Outcome of a model:

- ``kiln``: every graph Dynamo captured was compiled by Kiln (no ``KilnFallbackWarning``) and
  the output is within tolerance: matched through Kiln.
- ``fallback``: at least one graph ran eagerly after a ``KilnFallbackWarning`` (its first line
  is recorded); the output may still match, but not through Kiln.
- ``nograph``: Dynamo captured no graph (it skipped the frame, e.g. ``nn.GRU``/``nn.LSTM``
  without ``torch._dynamo.config.allow_rnn``): the model ran eagerly, Kiln saw nothing.
- ``mismatch``: compiled by Kiln, out of tolerance.
- ``error``: an exception, a crash or the timeout (first line recorded).

Also recorded: graphs and graph breaks (Dynamo's counters), the first call's seconds (Dynamo's
trace, ``torch.export``, the MLIR import and Kiln's compile, or a cache hit; the imports
excluded), a second call's seconds and eager's. Results accumulate in a JSON file (``--json``,
default ``bench/.zoo/torch_zoo.json``) keyed by model; a run skips models already there unless
``--force``.

    .venv/bin/python bench/torch_zoo.py --models gru,lstm,resnet18
    .venv/bin/python bench/torch_zoo.py --report          # the table, nothing run
    .venv/bin/python bench/torch_zoo.py --record          # the table into bench/RESULTS.md
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np

from bench import zoo
from bench.cpu_matrix import ATOL, RTOL

SECTION = '## torch.compile(backend="kiln") on the zoo (bench/torch_zoo.py)'
RESULTS = ROOT / "bench" / "RESULTS.md"
DEFAULT_JSON = zoo.ZOO_DIR / "torch_zoo.json"
CACHE_DIR = zoo.ZOO_DIR / "torch-kiln-cache"
# Cheapest first (compile seconds of the CPU matrix): a run cut short has done the most models.
ORDER = ["gru", "lstm", "gpt2", "resnet18", "squeezenet1_1", "bert", "vit_tiny", "swin_tiny",
         "mobilenet_v2", "t5", "resnet50", "mobilenet_v3_small", "mobilenet_v3_large",
         "shufflenet_v2", "regnet_y_400mf", "efficientnet_b0", "unet", "retinanet_head",
         "convnext_tiny", "densenet121"]


# The zoo's wrapper passes these image models their input as ``input_ids``, which transformers 5
# takes into ``**kwargs`` and ignores: ``pixel_values`` stays None and eager raises. Here the same
# seeded transformers model is called with ``pixel_values`` (and returns ``logits``), as intended.
PIXEL_VALUES = frozenset({"vit_tiny", "swin_tiny"})


def _pixels(hf: Any) -> Any:
    import torch

    class Pixels(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = hf

        def forward(self, x: Any) -> Any:
            return self.model(pixel_values=x).logits

    return Pixels().eval()


def build(name: str) -> tuple[Any, tuple[Any, ...]]:
    """The zoo's torch module ``name`` (eval mode) and its batch-1 inputs, as ``zoo.build``
    makes them (same seed, same randomized norms, same inputs; ``PIXEL_VALUES`` aside)."""
    import torch

    spec = zoo.SPECS[name]
    seed = zoo._seed(name)
    torch.manual_seed(seed)
    model = spec.build().eval()
    zoo._randomize_norms(model, seed)
    if name in PIXEL_VALUES:
        model = _pixels(model.model)
    inputs = spec.inputs(1, np.random.default_rng(seed))
    # Copies in torch's own (64-byte aligned) memory: Kiln's CPU path imports an input by DLPack
    # in place and IREE refuses host memory aligned below 64 bytes, which numpy's may be.
    return model, tuple(torch.from_numpy(x).clone() for x in inputs)


def _flat(out: Any) -> list[Any]:
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flat(o)]
    if isinstance(out, dict):
        return [t for o in out.values() for t in _flat(o)]
    return [out]


def compare(got: Any, want: Any) -> dict[str, Any]:
    """Max abs and relative (to ``max(1, max|eager|)``) error over the outputs, and the pass."""
    g, w = _flat(got), _flat(want)
    if len(g) != len(w):
        return {"pass": False, "max_abs": None, "max_rel": None,
                "why": f"{len(g)} outputs, eager {len(w)}"}
    max_abs, max_rel, ok = 0.0, 0.0, True
    for a, b in zip(g, w, strict=True):
        a64, b64 = a.detach().double().numpy(), b.detach().double().numpy()
        if a64.shape != b64.shape:
            return {"pass": False, "max_abs": None, "max_rel": None,
                    "why": f"shape {list(a64.shape)}, eager {list(b64.shape)}"}
        err = np.abs(a64 - b64)
        scale = max(1.0, float(np.abs(b64).max(initial=0.0)))
        m = float(err.max(initial=0.0))
        max_abs, max_rel = max(max_abs, m), max(max_rel, m / scale)
        ok = ok and bool((err <= ATOL * scale + RTOL * np.abs(b64)).all())
    return {"pass": ok, "max_abs": max_abs, "max_rel": max_rel}


def _cache_files() -> int:
    """Files in Kiln's disk cache: more after a call means it compiled (a miss)."""
    root = Path(os.environ.get("KILN_CACHE_DIR", CACHE_DIR))
    return sum(len(files) for _, _, files in os.walk(root))


def run_one(name: str) -> dict[str, Any]:
    """One model through ``torch.compile(backend="kiln")`` in this process."""
    import warnings

    import torch
    import torch._dynamo
    from torch._dynamo.utils import counters

    import kiln.torch  # noqa: F401 (registers the backend)
    from kiln.torch.dynamo import KilnFallbackWarning

    model, args = build(name)
    with torch.no_grad():
        t0 = time.perf_counter()
        want = model(*args)
        eager_s = time.perf_counter() - t0
    torch._dynamo.reset()
    counters.clear()
    opt = torch.compile(model, backend="kiln")
    cached = _cache_files()
    with warnings.catch_warnings(record=True) as caught, torch.no_grad():
        warnings.simplefilter("always", KilnFallbackWarning)
        t0 = time.perf_counter()
        got = opt(*args)
        first_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        again = opt(*args)
        second_s = time.perf_counter() - t0
    compiled = _cache_files() > cached
    fallbacks = [str(w.message).splitlines()[0] for w in caught
                 if issubclass(w.category, KilnFallbackWarning)]
    cmp = compare(got, want)
    cmp_again = compare(again, want)
    graphs = int(counters["stats"]["unique_graphs"])
    breaks = int(sum(counters["graph_break"].values()))
    if fallbacks:
        status = "fallback"
    elif graphs == 0:
        why = next(iter(counters["unimplemented"]), "").split("\n")[0]
        status, fallbacks = "nograph", [f"Dynamo captured no graph: {why}"]
    elif cmp["pass"] and cmp_again["pass"]:
        status = "kiln"
    else:
        status = "mismatch"
    return {"model": name, "status": status, **cmp, "second_pass": cmp_again["pass"],
            "graphs": graphs, "graph_breaks": breaks, "fallbacks": fallbacks,
            "first_call_s": round(first_s, 2),
            "cache": "miss" if compiled else "hit", "second_call_s": round(second_s, 4),
            "eager_s": round(eager_s, 4), "error": fallbacks[0] if fallbacks else ""}


def _child(name: str, out: str) -> int:
    os.environ.setdefault("KILN_CACHE_DIR", str(CACHE_DIR))
    try:
        res = run_one(name)
    except Exception as exc:  # noqa: BLE001 (any failure is this model's result)
        first = (str(exc).strip().splitlines() or [""])[0]
        res = {"model": name, "status": "error", "error": f"{type(exc).__name__}: {first}"}
    Path(out).write_text(json.dumps(res))
    return 0


def _run_child(name: str, *, timeout: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.json"
        t0 = time.perf_counter()
        try:
            p = subprocess.run([sys.executable, __file__, "_one", name, str(out)],
                               capture_output=True, text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            return {"model": name, "status": "error", "error": f"timed out after {timeout:.0f} s"}
        wall = round(time.perf_counter() - t0, 1)
        if not out.exists():
            tail = (p.stderr.strip().splitlines() or [""])[-1]
            return {"model": name, "status": "error", "wall_s": wall,
                    "error": f"child exited {p.returncode}: {tail}"}
        return {**json.loads(out.read_text()), "wall_s": wall}


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text()) if path.exists() else {"runs": [], "models": {}}


def machine() -> str:
    from kiln.client.resolver import detect_cpu

    model = detect_cpu().model_name or "unknown CPU"
    return f"{model}, {os.cpu_count()} cores, {platform.system()} {platform.machine()}"


def _e(x: Any) -> str:
    return "—" if x is None else f"{x:.1e}"


def table(state: dict[str, Any]) -> tuple[str, int]:
    """The per-model table (zoo order) and the count matched through Kiln."""
    rows = ["| model | outcome | max abs | max rel | graphs | breaks | first call | "
            "note (first line) |", "|---|---|---|---|---|---|---|---|"]
    matched = 0
    for name in zoo.SPECS:
        r = state["models"].get(name)
        if r is None:
            continue
        matched += r["status"] == "kiln"
        outcome = {"kiln": "matched through Kiln", "fallback": "fallback (eager)",
                   "nograph": "no graph (Dynamo ran it eagerly)", "mismatch": "mismatch",
                   "error": "error"}[r["status"]]
        if r["status"] == "fallback" and r.get("pass") is not None:
            outcome += ", output matches" if r["pass"] else ", output differs"
        note = r.get("error", "") or ("input passed as `pixel_values` (see the text)"
                                      if name in PIXEL_VALUES else "")
        note = note.removeprefix("kiln: running this graph eagerly: ").replace("|", "\\|")[:260]
        first = "—" if "first_call_s" not in r else f"{r['first_call_s']:.1f} s"
        if "cache" in r:
            first += f" ({r['cache']})"
        rows.append(f"| {name} | {outcome} | {_e(r.get('max_abs'))} | {_e(r.get('max_rel'))} | "
                    f"{r.get('graphs', '—')} | {r.get('graph_breaks', '—')} | {first} | {note} |")
    return "\n".join(rows), matched


def record(state: dict[str, Any]) -> None:
    import torch

    tab, matched = table(state)
    runs = state["runs"]
    when = runs[-1]["id"][:16].replace("T", " ") if runs else "—"
    loads = ", ".join(f"{r['load']:.1f}" for r in runs)
    section = (
        f"\n{SECTION}\n\n"
        f"{when} UTC (last run), {machine()}, shared with other sessions (1-minute load average "
        f"at each run's start: {loads}); torch {torch.__version__}. Batch 1, float32, under "
        f"`torch.no_grad()`, `torch.compile(model, backend=\"kiln\")` in-process (no server, "
        f"device auto = CPU), one child process per model; pass: `|kiln - eager| <= "
        f"{ATOL:g}·s + {RTOL:g}·|eager|` elementwise, `s = max(1, max|eager|)` (the CPU "
        f"matrix's rule). First call: Dynamo's trace, `torch.export`, the MLIR import and "
        f"Kiln's compile (cache miss) or its lookup (hit), imports excluded. "
        f"`.venv/bin/python bench/torch_zoo.py --record`.\n\n"
        f"**{matched} of {len(state['models'])} models run matched eager through Kiln** "
        f"(every graph compiled by Kiln, no fallback); {len(zoo.SPECS)} in the zoo.\n\n{tab}\n"
    )
    text = RESULTS.read_text()
    marker = f"\n{SECTION}\n"
    if marker in text:
        before, rest = text.split(marker, 1)
        nxt = rest.find("\n## ")
        text = before + section + (rest[nxt:] if nxt >= 0 else "")
    else:
        text = text.rstrip("\n") + "\n" + section
    RESULTS.write_text(text)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["_one"]:
        return _child(argv[1], argv[2])
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("--models", default=",".join(ORDER), help="comma-separated names")
    ap.add_argument("--json", type=Path, default=DEFAULT_JSON)
    ap.add_argument("--force", action="store_true", help="run models already in the JSON")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per model")
    ap.add_argument("--report", action="store_true", help="print the table, run nothing")
    ap.add_argument("--record", action="store_true", help="write the table to RESULTS.md")
    args = ap.parse_args(argv)
    state = load(args.json)
    if not (args.report or args.record):
        names = [n for n in args.models.split(",") if n]
        unknown = [n for n in names if n not in zoo.SPECS]
        if unknown:
            ap.error(f"unknown models {unknown}; known: {', '.join(zoo.SPECS)}")
        state["runs"].append({"id": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                              "load": os.getloadavg()[0], "models": names})
        for name in names:
            if name in state["models"] and not args.force:
                continue
            res = _run_child(name, timeout=args.timeout)
            state["models"][name] = res
            args.json.parent.mkdir(parents=True, exist_ok=True)
            tmp = args.json.with_suffix(".tmp")
            tmp.write_text(json.dumps(state, indent=1) + "\n")
            tmp.replace(args.json)
            print(f"{name:20} {res['status']:9} max abs {_e(res.get('max_abs'))} "
                  f"graphs {res.get('graphs', '—')} breaks {res.get('graph_breaks', '—')} "
                  f"first {res.get('first_call_s', '—')} s  {res.get('error', '')[:120]}",
                  flush=True)
    tab, matched = table(state)
    print(tab)
    print(f"matched through Kiln: {matched} of {len(state['models'])}")
    if args.record:
        record(state)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
