"""Kiln's executables against onnxruntime on this CPU: the reference models of
``bench/models.py``.

Each model is compiled THROUGH KILN (``Pipeline.compile``, no cache) for this machine's own CPU
target (``kiln.client.resolver.detect_cpu().target``) with default options, run with ``iree.runtime``
(local-task, its default thread count, through ``kiln.client.runtime`` as a client runs it: the call
polls for its results; ``--blocking-wait`` adds the same executable with a caller that sleeps
until they are ready, ``--sync`` adds local-sync) and alternated with
onnxruntime (CPU provider, ``intra_op_num_threads=2``) in this one process, so a busy shared
machine slows both alike. Each round runs every engine in a block of its own (a 50 ms pause, one
untimed call, then ``--block`` timed calls): onnxruntime's spinning threads must not steal the
cores of the next engine (see ``_block``). The order of the blocks rotates from round to round,
so no engine always runs right after the same one. numpy's OpenBLAS is kept to one thread.
Reported: median milliseconds of each, the median of the per-round ratios Kiln/ORT, and the max
abs error of Kiln's output against onnxruntime's (pass = ``allclose(rtol=1e-3, atol=1e-4)``).

    .venv/bin/python bench/executables.py                       # Kiln defaults (after)
    .venv/bin/python bench/executables.py --preset-baseline     # no preset: IREE defaults (before)
    .venv/bin/python bench/executables.py --both --record       # both, written to RESULTS.md

``--record`` rewrites the section "## Executables vs onnxruntime (bench/executables.py)" of
``bench/RESULTS.md`` with the machine, the date and both tables.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import statistics
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
# numpy's OpenBLAS threads would be a third set of threads on the same cores; neither engine
# uses them (onnxruntime has its own kernels, IREE its own), so keep them to one.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from bench.models import MODELS, sample_input  # noqa: E402
from kiln.client.resolver import detect_cpu  # noqa: E402
from kiln.client.runtime import load_vmfb  # noqa: E402
from kiln.compiler.pipeline import Pipeline  # noqa: E402

SECTION = "## Executables vs onnxruntime (bench/executables.py)"
RESULTS = ROOT / "bench" / "RESULTS.md"
RTOL, ATOL = 1e-3, 1e-4


def _block(call: Any, *, block: int, settle: float) -> float:
    """Median seconds of ``block`` calls, after a pause and one untimed call.

    The pause matters: onnxruntime's intra-op threads spin-wait after a run, and while they spin
    they take the cores from IREE's workers (measured: the encoder's executable ran 1.75× slower
    right after an onnxruntime call than after a 50 ms pause). Measuring each engine in a block of
    its own, after a pause, gives both their own defaults (spinning for onnxruntime) without
    one stealing the other's cores. Blocks still alternate, so a busy machine slows both alike.
    """
    if settle > 0:
        time.sleep(settle)
    call()
    out = []
    for _ in range(block):
        t0 = time.perf_counter()
        call()
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


def alternate(calls: dict[str, Any], *, repeats: int, block: int,
              settle: float = 0.05) -> dict[str, list[float]]:
    """``repeats`` rounds of one ``_block`` per engine; per engine, its block times in order.

    The order rotates each round: the block right after onnxruntime's can run faster than the
    next one (docs/performance.md, "Measuring"), so no engine always takes that place.
    """
    times: dict[str, list[float]] = {k: [] for k in calls}
    order = list(calls)
    for r in range(repeats):
        for label in order[r % len(order):] + order[:r % len(order)]:
            times[label].append(_block(calls[label], block=block, settle=settle))
    return times


def ort_session(data: bytes) -> Any:
    """onnxruntime's CPU provider with two intra-op threads: the reference every bench uses."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    return ort.InferenceSession(data, so, providers=["CPUExecutionProvider"])


def run(
    models: list[str],
    *,
    configs: dict[str, tuple[dict[str, Any], str] | tuple[dict[str, Any], str, str]],
    repeats: int,
    target: str,
    block: int = 5,
    settle: float = 0.05,
) -> list[dict[str, Any]]:
    """``configs``: label → (compile options, iree.runtime driver[, the runtime's wait mode])."""
    rows = []
    with Pipeline(workers=1, compile_timeout=900) as pipe:
        for name in models:
            model = MODELS[name]()
            data = model.SerializeToString()
            x = sample_input(model)
            sess = ort_session(data)
            feed = {model.graph.input[0].name: x}
            ref = sess.run(None, feed)[0]
            fns = {}
            info: dict[str, dict[str, Any]] = {}
            built: dict[str, Any] = {}
            for label, (options, driver, *wait) in configs.items():
                t0 = time.perf_counter()
                okey = repr(sorted(options.items()))
                res = built.get(okey) or pipe.compile(data, targets=[target], options=options)
                built[okey] = res
                if res.errors:
                    raise SystemExit(f"{name} [{label}]: {res.errors[0].error}")
                art = res.artifacts[0]
                mod = load_vmfb(art.data, driver=driver, wait=wait[0] if wait else "auto")
                fn = mod[res.functions[0]]
                y = fn(x)
                fn(x)
                info[label] = {
                    "compile_s": time.perf_counter() - t0,
                    "max_err": float(np.abs(y - ref).max()),
                    "ok": bool(np.allclose(y, ref, rtol=RTOL, atol=ATOL)),
                    "flags": art.flags,
                    "rewrites": art.rewrites,
                }
                fns[label] = fn
                print(f"{name} [{label}]: compiled in {info[label]['compile_s']:.1f}s, "
                      f"max err {info[label]['max_err']:.2e}", file=sys.stderr, flush=True)
            calls: dict[str, Any] = {"ort": lambda: sess.run(None, feed)}
            calls.update({label: (lambda fn=fn: fn(x)) for label, fn in fns.items()})
            times = alternate(calls, repeats=repeats, block=block, settle=settle)
            ort_ms = statistics.median(times["ort"]) * 1e3
            for label in fns:
                ratios = [a / b for a, b in zip(times[label], times["ort"], strict=True)]
                rows.append({
                    "model": name, "config": label, "ort_ms": ort_ms,
                    "kiln_ms": statistics.median(times[label]) * 1e3,
                    "ratio": statistics.median(ratios), **info[label],
                })
    return rows


def tune(models: list[str], *, target: str, repeats: int) -> str:
    """Autotune each model here (fresh tuning cache), then ask again: the second answer must come
    from the remembered choice without compiling. Returns a markdown table."""
    import tempfile

    from kiln.cli.backends import EmbeddedBackend, compile_fn
    from kiln.client.autotune import autotune

    lines = [
        "| model | candidates (median ms, this machine) | chosen | second call |",
        "|---|---|---|---|",
    ]
    with tempfile.TemporaryDirectory() as tmp, Pipeline(workers=1, compile_timeout=900) as pipe:
        for name in models:
            data = MODELS[name]().SerializeToString()
            compiles = 0
            inner = compile_fn(EmbeddedBackend(pipe), data, target=target)

            def counting(options: Any, inner: Any = inner) -> bytes:
                nonlocal compiles
                compiles += 1
                return inner(options)

            first = autotune(data, target=target, compile=counting, repeats=repeats, cache_dir=tmp)
            n = compiles
            second = autotune(data, target=target, compile=counting, repeats=repeats, cache_dir=tmp)
            cands = ", ".join(f"{k} {v:.1f}" for k, v in sorted(first.timings_ms.items(),
                                                                  key=lambda kv: kv[1]))
            reuse = "cached, 0 compiles" if second.cached and compiles == n else "RE-TUNED"
            lines.append(f"| {name} | {cands} | **{first.preset}** | {reuse} |")
            print(lines[-1], file=sys.stderr, flush=True)
    return "\n".join(lines)


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| model | config | onnxruntime ms | Kiln ms | Kiln/ORT (median of paired ratios) "
        "| max abs err vs ORT | ok | compile s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['model']} | {r['config']} | {r['ort_ms']:.2f} | {r['kiln_ms']:.2f} "
            f"| **{r['ratio']:.2f}×** | {r['max_err']:.1e} | {'yes' if r['ok'] else 'NO'} "
            f"| {'same' if r['compile_s'] < 1 else format(r['compile_s'], '.0f')} |"
        )
    return "\n".join(lines)


def _tuning_flags(flags: Sequence[str]) -> list[str]:
    return [f for f in flags if not f.startswith(("--iree-hal-", "--iree-llvmcpu-target"))]


def machine() -> str:
    from kiln.client.resolver import detect_cpu

    cpu = detect_cpu().model_name or ""
    from importlib.metadata import version

    import onnxruntime as ort

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (
        f"{cpu or platform.processor()}, {os.cpu_count()} cores, {platform.system()}; "
        f"IREE {version('iree-base-compiler')} / runtime {version('iree-base-runtime')}, "
        f"onnxruntime {ort.__version__}; load average at start {load:.1f}"
    )


def record(text: str) -> None:
    old = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n"
    pattern = re.compile(rf"^{re.escape(SECTION)}\n.*?(?=^## |\Z)", re.S | re.M)
    body = f"{SECTION}\n\n{text.strip()}\n\n"
    new = pattern.sub(lambda _: body, old) if pattern.search(old) else old.rstrip() + "\n\n" + body
    RESULTS.write_text(new)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated names")
    ap.add_argument("--repeats", type=int, default=21, help="alternated rounds (median taken)")
    ap.add_argument("--block", type=int, default=5, help="timed calls per engine per round")
    ap.add_argument("--settle", type=float, default=0.05,
                    help="seconds of pause before each block (0: the old call-by-call method)")
    ap.add_argument("--preset-baseline", action="store_true",
                    help="compile with preset=baseline (no Kiln tuning: the 'before' numbers)")
    ap.add_argument("--both", action="store_true", help="baseline and default, alternated together")
    ap.add_argument("--sync", action="store_true",
                    help="also run the default executable on local-sync (one thread, inline)")
    ap.add_argument("--blocking-wait", action="store_true",
                    help="also run the default executable with the runtime's blocking wait "
                         "(kiln.client.runtime wait='block'; the default polls on local-task)")
    ap.add_argument("--autotune", action="store_true",
                    help="also autotune each model (kiln.client.autotune) and show what it picks")
    ap.add_argument("--record", action="store_true", help=f"write {SECTION!r} in bench/RESULTS.md")
    args = ap.parse_args(argv)
    before = {"before (preset=baseline)": ({"preset": "baseline"}, "local-task")}
    after = {"after (default)": ({}, "local-task")}
    if args.both:
        configs = {**before, **after}
    elif args.preset_baseline:
        configs = before
    else:
        configs = after
    if args.sync:
        configs["after (default), local-sync"] = ({}, "local-sync")
    if args.blocking_wait:
        configs["after (default), blocking wait"] = ({}, "local-task", "block")
    target = detect_cpu().target
    started = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    mach = machine()
    rows = run(args.models.split(","), configs=configs, repeats=args.repeats, target=target,
               block=args.block, settle=args.settle)
    out = table(rows)
    print(out)
    tuned = ""
    if args.autotune:
        tuned = tune(args.models.split(","), target=target, repeats=max(5, args.repeats // 2))
        print(tuned)
    if args.record:
        seen: set[tuple[str, ...]] = set()
        notes = []
        for r in rows:
            key = (r["model"], *r["flags"], *r["rewrites"])
            if key not in seen:
                seen.add(key)
                flags = " ".join(_tuning_flags(r["flags"]))
                rw = (" + Kiln rewrites " + ", ".join(f"`{x}`" for x in r["rewrites"])
                      if r["rewrites"] else "")
                notes.append(f"- {r['model']} {r['config']}: `{flags}`{rw}")
        record(
            f"Measured {started} on {mach}. Target `{target}` (the machine's own CPU, as the "
            f"client SDK detects it). {args.repeats} rounds; in each, onnxruntime and every "
            f"Kiln executable (in an order that rotates each round) run a block of {args.block} "
            f"timed calls after a "
            f"{args.settle * 1e3:.0f} ms pause and one untimed call, in one process; medians "
            f"of the block medians, and the median of the per-round ratios. The machine is a "
            f"2-vCPU VM whose speed moves between runs: read the paired ratios.\n\n{out}\n\n"
            f"Flags beyond the target's own, per model (chosen from graph traits, see "
            f"docs/performance.md):\n\n" + "\n".join(notes)
            + (f"\n\nAutotune (``kiln.client.autotune``) on this machine, then asked again:\n\n{tuned}"
               if tuned else "")
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
