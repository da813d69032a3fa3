"""Every zoo model (``bench/zoo.py``) × CPU level × preset, through Kiln, against onnxruntime.

Levels (``LEVELS``): x86-64-v2 (SSE4.2), haswell and znver3 (AVX2), skylake-avx512 and znver4
(AVX-512), the host's own CPU (``kiln.client.resolver.detect_cpu().target``), and, compile-only,
aarch64 neoverse-n1 / neoverse-v2 and riscv64. Presets per graph: ``default``, ``baseline`` (IREE's
plain defaults) and, for a graph with convolutions, ``conv-tiled``/``conv-im2col``/``conv-direct``
(what ``kiln.targets.presets.autotune_presets`` allows for the graph); ``--presets`` may add
``size`` or ``fast-compile``. A preset whose flags and rewrites equal another's for that level
is not compiled again: its cell says ``same_as``.

How a (model, batch, level) group runs:

1. This process compiles each preset through ``kiln.compiler.pipeline.Pipeline`` (one worker; artifacts
   in Kiln's own disk cache under ``bench/.zoo/kiln-cache``, so an interrupted run does not
   compile again) and checks the executable structurally: it parses as an IREE VM flatbuffer
   (``iree.runtime.VmModule``) and its embedded ELF names the level's machine (x86-64, AArch64,
   RISC-V).
2. For an executable level, a child process (``_time``) loads the executables, checks each
   against the onnxruntime reference of the zoo (pass: ``|kiln - ort| <= ATOL·s + RTOL·|ort|``
   elementwise, ``s = max(1, max|ort|)``; the max abs error is recorded either way) and times
   onnxruntime (CPU provider, 2 intra-op threads) and every executable in alternated blocks
   (``bench.executables.alternate``: a pause, one untimed call, ``block`` timed calls, the order
   rotating each round). A child killed by SIGILL marks the level as not executable on this host
   (its remaining groups are compile-checked only); the runner itself never runs foreign code.

Results accumulate in a JSON file (``--json``, default ``bench/.zoo/cpu_matrix.json``) keyed
``model|b{batch}|level|preset``; a run skips every cell already there whose flags and rewrites
equal what Kiln would use now (a change of the defaults re-measures exactly the cells it
touches). Each cell holds the status, flags, rewrites, compile seconds, max error, median ms,
the median of per-round ratios against onnxruntime and, per run, the block times.

    .venv/bin/python bench/cpu_matrix.py --levels host,haswell --batch 1
    .venv/bin/python bench/cpu_matrix.py --levels neoverse-n1,riscv64 --models resnet18,bert
    .venv/bin/python bench/cpu_matrix.py --report          # the per-cell table, nothing run
    .venv/bin/python bench/cpu_matrix.py --record          # the summary into bench/RESULTS.md
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

from bench import zoo

SECTION = "## Zoo x CPU matrix (bench/cpu_matrix.py)"
RESULTS = ROOT / "bench" / "RESULTS.md"
DEFAULT_JSON = zoo.ZOO_DIR / "cpu_matrix.json"
RTOL, ATOL = 1e-3, 1e-4
# Timing of one group: at most about BUDGET_S seconds, but never fewer than MIN_REPEATS rounds.
BUDGET_S, MIN_REPEATS = 60.0, 3

# short name → Kiln target ("host" is resolved at run time); the order is the report's.
LEVELS: dict[str, str] = {
    "x86-64-v2": "cpu:x86_64:x86-64-v2",
    "haswell": "cpu:x86_64:haswell",
    "znver3": "cpu:x86_64:znver3",
    "skylake-avx512": "cpu:x86_64:skylake-avx512",
    "znver4": "cpu:x86_64:znver4",
    "host": "",
    "neoverse-n1": "cpu:aarch64:neoverse-n1",
    "neoverse-v2": "cpu:aarch64:neoverse-v2",
    "riscv64": "cpu:riscv64",
}
COMPILE_ONLY = ("neoverse-n1", "neoverse-v2", "riscv64")
# ELF e_machine of each architecture (System V ABI): the structural check of an executable.
ELF_MACHINE = {"x86_64": 62, "aarch64": 183, "riscv64": 243}
CONV_PRESETS = ("conv-tiled", "conv-im2col", "conv-direct")
PRESET_ORDER = ("default", "baseline", *CONV_PRESETS, "size", "fast-compile")


def level_target(level: str) -> str:
    if level == "host":
        from kiln.client.resolver import detect_cpu

        return detect_cpu().target
    return LEVELS[level]


def cell_key(model: str, batch: int, level: str, preset: str) -> str:
    return f"{model}|b{batch}|{level}|{preset}"


# -- the results file -------------------------------------------------------------------------


def load(path: Path) -> dict[str, Any]:
    """The results file, or an empty one. ``cells``: key → cell; ``levels``: level → notes
    (``executable``: false once a child died of SIGILL there)."""
    if path.exists():
        return json.loads(path.read_text())
    return {"cells": {}, "levels": {}, "runs": []}


def save(path: Path, state: dict[str, Any]) -> None:
    """Written to a temporary file and renamed: a killed run leaves the last complete file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=1, sort_keys=True) + "\n")
    tmp.replace(path)


# -- structural checks ------------------------------------------------------------------------


def elf_machines(vmfb: bytes) -> list[int]:
    """``e_machine`` of every 64-bit little-endian ELF image embedded in ``vmfb``."""
    out, i = [], vmfb.find(b"\x7fELF")
    while i >= 0:
        if vmfb[i + 4:i + 6] == b"\x02\x01":  # ELFCLASS64, ELFDATA2LSB
            out.append(int.from_bytes(vmfb[i + 18:i + 20], "little"))
        i = vmfb.find(b"\x7fELF", i + 4)
    return out


def check_structure(vmfb: bytes, target: str) -> str:
    """"" when ``vmfb`` parses as an IREE VM module and every embedded ELF is for the target's
    architecture; otherwise what is wrong."""
    import iree.runtime as rt

    try:
        rt.VmModule.copy_buffer(rt.VmInstance(), vmfb)
    except Exception as exc:  # noqa: BLE001 (any parse failure is the finding)
        return f"not a VM module: {exc}"[:200]
    arch = target.split(":")[1]
    machines = elf_machines(vmfb)
    if not machines:
        return "no embedded ELF executable"
    wrong = sorted({m for m in machines if m != ELF_MACHINE[arch]})
    return f"ELF e_machine {wrong}, expected {ELF_MACHINE[arch]} ({arch})" if wrong else ""


# -- the timing child -------------------------------------------------------------------------


def _time_child(job_path: str) -> int:
    """Run one group (the ``_time`` subcommand): load, check, time; write the result JSON.

    Runs foreign-ISA code: a SIGILL kills this process, not the runner."""
    import onnxruntime as ort

    from bench.executables import alternate
    from kiln.client.runtime import load_vmfb

    job = json.loads(Path(job_path).read_text())
    m = zoo.build(job["model"], job["batch"])
    ref = m.ref_ort[0]
    scale = max(1.0, float(np.abs(ref).max()))
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    sess = ort.InferenceSession(m.onnx_bytes, so, providers=["CPUExecutionProvider"])
    feed = {f"in_{i}": x for i, x in enumerate(m.inputs)}
    calls: dict[str, Any] = {"ort": lambda: sess.run(None, feed)}
    checks: dict[str, dict[str, Any]] = {}
    for preset, vmfb in job["vmfbs"].items():
        mod = load_vmfb(Path(vmfb).read_bytes(), driver="local-task")
        fn = mod[job["function"]]
        y = fn(*m.inputs)
        y = np.asarray(y[0] if isinstance(y, (tuple, list)) else y)
        err = np.abs(y.astype(np.float64) - ref)
        checks[preset] = {
            "max_err": float(err.max()),
            "rel_err": float(err.max() / scale),
            "pass": bool(y.shape == ref.shape
                         and (err <= ATOL * scale + RTOL * np.abs(ref)).all()),
        }
        calls[preset] = lambda fn=fn: fn(*m.inputs)
    # blocks of about 0.2 s of onnxruntime, at least 3 calls; fewer rounds (not fewer than
    # MIN_REPEATS) when one round of every engine would take more than BUDGET_S / repeats
    one: dict[str, float] = {}
    for label, call in calls.items():
        t0 = time.perf_counter()
        call()
        one[label] = time.perf_counter() - t0
    block = int(min(20, max(3, round(0.2 / max(one["ort"], 1e-4)))))
    per_round = sum(one.values()) * (block + 1)
    repeats = max(MIN_REPEATS, min(job["repeats"], int(BUDGET_S / per_round)))
    times = alternate(calls, repeats=repeats, block=block)
    out = {"block": block, "repeats": repeats, "checks": checks,
           "times_ms": {k: [t * 1e3 for t in v] for k, v in times.items()}}
    Path(job["out"]).write_text(json.dumps(out))
    return 0


def _run_group(job: dict[str, Any], *, timeout: float) -> tuple[str, dict[str, Any] | str]:
    """("ok", result) | ("sigill", stderr tail) | ("crashed", stderr tail)."""
    with tempfile.TemporaryDirectory() as tmp:
        job = {**job, "out": str(Path(tmp) / "out.json")}
        jp = Path(tmp) / "job.json"
        jp.write_text(json.dumps(job))
        try:
            p = subprocess.run([sys.executable, __file__, "_time", str(jp)], capture_output=True,
                               text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            return "crashed", f"timed out after {timeout:.0f} s"
        if p.returncode == -signal.SIGILL:
            return "sigill", p.stderr[-500:]
        if p.returncode != 0 or not Path(job["out"]).exists():
            return "crashed", f"exit {p.returncode}: {p.stderr[-800:]}"
        return "ok", json.loads(Path(job["out"]).read_text())


# -- the runner -------------------------------------------------------------------------------


def presets_for(traits: dict[str, int], extra: Iterable[str] = ()) -> list[str]:
    """``default``, ``baseline``, the conv presets for a CNN-class graph, then ``extra``."""
    from kiln.targets.presets import model_class

    names = ["default", "baseline"]
    if model_class(traits) in ("cnn", "depthwise-cnn"):
        names += CONV_PRESETS
    return list(dict.fromkeys([*names, *extra]))


def run(args: argparse.Namespace) -> None:
    from kiln.cache import ArtifactCache
    from kiln.cache.disk import DiskStorage
    from kiln.compiler.pipeline import Pipeline
    from kiln.errors import KilnError
    from kiln.targets import normalize_options, parse_target

    state = load(args.json)
    models = [m for m in args.models.split(",") if m]
    levels = [lv for lv in args.levels.split(",") if lv]
    for name in (*(m for m in models if m not in zoo.SPECS),
                 *(lv for lv in levels if lv not in LEVELS)):
        raise SystemExit(f"unknown model or level {name!r}")
    batches = [int(b) for b in args.batch.split(",")]
    wanted = [p for p in args.presets.split(",") if p] if args.presets else None
    run_id = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    state["runs"].append({"id": run_id, "load": os.getloadavg()[0], "argv": sys.argv[1:]})
    storage = DiskStorage(zoo.ZOO_DIR / "kiln-cache")
    cache = ArtifactCache(storage, disk=storage)
    with Pipeline(workers=1, cache=cache, compile_timeout=args.compile_timeout) as pipe, \
            tempfile.TemporaryDirectory() as tmp:
        for model in models:
            for batch in batches:
                zm = zoo.build(model, batch)
                data = zm.onnx_bytes
                graph = pipe.prepare(data)
                traits = graph.traits.to_json() or {}
                names = presets_for(traits)
                if wanted is not None:
                    names = [p for p in names if p in wanted] + [
                        p for p in wanted if p not in names and p in ("size", "fast-compile")]
                for level in levels:
                    target = level_target(level)
                    spec = parse_target(target)
                    lv_state = state["levels"].setdefault(level, {"target": target})
                    runnable = level not in COMPILE_ONLY and lv_state.get("executable", True)
                    todo: dict[str, dict[str, Any]] = {}
                    plans: dict[tuple[Any, ...], str] = {}
                    for preset in names:
                        opts = normalize_options({"preset": preset})
                        flags = list(pipe.flags_for(spec, opts, graph=graph))
                        rewrites = list(pipe.rewrites_for(spec, opts, graph=graph))
                        key = cell_key(model, batch, level, preset)
                        old = state["cells"].get(key)
                        plan = (tuple(flags), tuple(rewrites))
                        same = plans.setdefault(plan, preset)
                        base = {"model": model, "batch": batch, "level": level,
                                "target": target, "preset": preset, "flags": flags,
                                "rewrites": rewrites, "suite": zm.meta["suite"],
                                "model_class": _class(traits)}
                        if same != preset:
                            state["cells"][key] = {**base, "status": "same", "same_as": same}
                            continue
                        fresh = (old and old["flags"] == flags and old["rewrites"] == rewrites
                                 and old["status"] != "same"
                                 and (old["status"] != "compiled" or not runnable))
                        if fresh and not args.rerun:
                            continue
                        todo[preset] = base
                    if not todo:
                        continue
                    vmfbs: dict[str, str] = {}
                    for preset, base in todo.items():
                        key = cell_key(model, batch, level, preset)
                        t0 = time.perf_counter()
                        try:
                            res = pipe.compile(data, targets=[target],
                                               options={"preset": preset})
                            err = res.errors[0].error if res.errors else None
                        except KilnError as exc:
                            err, res = exc, None
                        secs = time.perf_counter() - t0
                        if err is not None or res is None:
                            msg = f"{getattr(err, 'code', '')}: {err}"[:600]
                            state["cells"][key] = {**base, "status": "compile_failed",
                                                   "error": msg, "compile_s": secs}
                            print(f"{key}: COMPILE FAILED {msg[:200]}", file=sys.stderr,
                                  flush=True)
                            save(args.json, state)
                            continue
                        art = res.artifacts[0]
                        blob = art.data
                        problem = check_structure(blob, target)
                        cell = {**base, "status": "compiled" if not problem else "bad_module",
                                "compile_s": round(art.compile_seconds, 2),
                                "cached": art.cached, "digest": art.digest,
                                "vmfb_bytes": len(blob), "function": res.functions[0],
                                "structure": problem or "ok", "run": run_id}
                        state["cells"][key] = cell
                        print(f"{key}: compiled in {art.compile_seconds:.1f}s"
                              f"{' (cached)' if art.cached else ''}"
                              f"{', ' + problem if problem else ''}", file=sys.stderr, flush=True)
                        if not problem:
                            f = Path(tmp) / f"{preset}.vmfb"
                            f.write_bytes(blob)
                            vmfbs[preset] = str(f)
                    save(args.json, state)
                    if not runnable or not vmfbs:
                        continue
                    job = {"model": model, "batch": batch, "vmfbs": vmfbs,
                           "function": state["cells"][cell_key(model, batch, level,
                                                               next(iter(vmfbs)))]["function"],
                           "repeats": args.repeats}
                    status, out = _run_group(job, timeout=args.run_timeout)
                    for preset in vmfbs:
                        cell = state["cells"][cell_key(model, batch, level, preset)]
                        if status == "sigill":
                            cell.update(status="illegal_instruction", error=out)
                        elif status == "crashed":
                            cell.update(status="run_failed", error=out)
                        else:
                            assert isinstance(out, dict)
                            t = out["times_ms"]
                            ratios = [a / b for a, b in zip(t[preset], t["ort"], strict=True)]
                            cell.update(status="ran", **out["checks"][preset],
                                        ms=statistics.median(t[preset]),
                                        ort_ms=statistics.median(t["ort"]),
                                        vs_ort=statistics.median(ratios),
                                        blocks_ms=t[preset], ort_blocks_ms=t["ort"],
                                        block=out["block"], repeats=out["repeats"],
                                        run=run_id)
                    if status == "sigill":
                        lv_state["executable"] = False
                        lv_state["sigill"] = f"{model} b{batch}"
                    _print_group(state, model, batch, level)
                    save(args.json, state)


def _class(traits: dict[str, int]) -> str:
    from kiln.targets.presets import model_class

    return model_class(traits)


def _print_group(state: dict[str, Any], model: str, batch: int, level: str) -> None:
    for c in state["cells"].values():
        if (c["model"], c["batch"], c["level"]) == (model, batch, level) and c["status"] == "ran":
            print(f"  {model} b{batch} {level} {c['preset']:12} {c['ms']:9.2f} ms "
                  f"x{c['vs_ort']:.2f} ORT  err {c['max_err']:.1e} "
                  f"{'pass' if c['pass'] else 'FAIL'}", file=sys.stderr, flush=True)


# -- reading the results back -----------------------------------------------------------------


def _resolve(cells: dict[str, Any], c: dict[str, Any]) -> dict[str, Any]:
    if c["status"] == "same":
        return cells.get(cell_key(c["model"], c["batch"], c["level"], c["same_as"]), c)
    return c


def ratio(a: dict[str, Any], b: dict[str, Any]) -> float | None:
    """Time of cell ``a`` over cell ``b``: the median of per-round ratios when both were timed
    in the same rotation, else the ratio of their medians against onnxruntime."""
    if a.get("status") != "ran" or b.get("status") != "ran":
        return None
    if a is b:
        return 1.0
    if a.get("run") == b.get("run") and len(a["blocks_ms"]) == len(b["blocks_ms"]) \
            and a["ort_blocks_ms"] == b["ort_blocks_ms"]:
        return statistics.median(x / y for x, y in zip(a["blocks_ms"], b["blocks_ms"],
                                                       strict=True))
    return a["vs_ort"] / b["vs_ort"]


def groups(state: dict[str, Any]) -> dict[tuple[str, int, str], dict[str, dict[str, Any]]]:
    """(model, batch, level) → preset → cell (a ``same`` cell resolved to the one it names)."""
    cells = state["cells"]
    out: dict[tuple[str, int, str], dict[str, dict[str, Any]]] = {}
    for c in cells.values():
        out.setdefault((c["model"], c["batch"], c["level"]), {})[c["preset"]] = _resolve(cells, c)
    order = {n: i for i, n in enumerate(zoo.SPECS)}
    lorder = {n: i for i, n in enumerate(LEVELS)}
    porder = {n: i for i, n in enumerate(PRESET_ORDER)}
    return {k: dict(sorted(g.items(), key=lambda kv: porder.get(kv[0], 99)))
            for k, g in sorted(out.items(), key=lambda kv: (order.get(kv[0][0], 99), kv[0][1],
                                                             lorder.get(kv[0][2], 99)))}


def summarize(g: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Per group: default vs best preset, vs baseline, vs onnxruntime (None where not timed)."""
    d = g.get("default", {})
    # best: the preset the default is slowest against (paired where timed together); the
    # default itself first, so a tie names it
    vs = {p: r for p, c in g.items() if (r := ratio(d, c)) is not None}
    best = max(vs, key=lambda p: vs[p]) if vs else None
    return {
        "default_pass": d.get("pass") if d.get("status") == "ran" else None,
        "best": best,
        "d_best": vs[best] if best else None,
        "d_base": ratio(d, g["baseline"]) if "baseline" in g else None,
        "d_ort": d.get("vs_ort") if d.get("status") == "ran" else None,
    }


def _f(x: float | None, fmt: str = ".2f") -> str:
    return "–" if x is None else format(x, fmt)


def report(state: dict[str, Any]) -> str:
    """The per-cell table: one row per (model, batch, level, preset)."""
    lines = [("| model | b | level | preset | status | pass | max err | ms | ×ORT | "
             "default/this | compile s |"), "|---|---|---|---|---|---|---|---|---|---|---|"]
    for (model, batch, level), g in groups(state).items():
        d = g.get("default", {})
        for preset, c in g.items():
            raw = state["cells"][cell_key(model, batch, level, preset)]
            st = raw["status"] if raw["status"] != "same" else f"= {raw['same_as']}"
            ran = c.get("status") == "ran"
            lines.append(
                f"| {model} | {batch} | {level} | {preset} | {st} "
                f"| {('yes' if c['pass'] else 'NO') if ran else '–'} "
                f"| {_f(c.get('max_err'), '.1e') if ran else '–'} "
                f"| {_f(c.get('ms')) if ran else '–'} | {_f(c.get('vs_ort')) if ran else '–'} "
                f"| {_f(ratio(d, c))} | {_f(raw.get('compile_s'), '.0f')} |")
    return "\n".join(lines)


def losses(state: dict[str, Any], *, slack: float = 1.1) -> list[str]:
    """Groups where ``default`` is slower than ``baseline`` or more than ``slack``× the best."""
    out = []
    for (model, batch, level), g in groups(state).items():
        s = summarize(g)
        why = []
        if s["d_base"] is not None and s["d_base"] > 1.0:
            why.append(f"default/baseline {s['d_base']:.2f}")
        if s["d_best"] is not None and s["d_best"] > slack and s["best"] != "baseline":
            why.append(f"default/{s['best']} {s['d_best']:.2f}")
        d = g.get("default", {})
        if d.get("status") in ("compile_failed", "run_failed") and any(
                c.get("status") == "ran" for c in g.values()):
            ok = [p for p, c in g.items() if c.get("status") == "ran"]
            why.append(f"default {d['status']}, {', '.join(ok)} ran")
        if why:
            out.append(f"{model} b{batch} {level}: " + ", ".join(why))
    return out


def failures(state: dict[str, Any]) -> list[str]:
    """One line per failing (model, batch, level, status, first error line): the presets that
    failed alike are listed together."""
    seen: dict[tuple[str, int, str, str, str], list[str]] = {}
    for c in state["cells"].values():
        bad = c["status"] in ("compile_failed", "run_failed", "bad_module",
                              "illegal_instruction") or (c["status"] == "ran" and not c["pass"])
        if bad:
            what = c.get("error") or c.get("structure") or f"max err {c.get('max_err', 0):.1e}"
            what = what.removeprefix(f"{c['status']}: ").split("\n")[0]
            what = what.split(" (no matching")[0][:160]
            key = (c["model"], c["batch"], c["level"], c["status"], what)
            seen.setdefault(key, []).append(c["preset"])
    return [f"{m} b{b} {lv} [{', '.join(ps)}]: {st}: {what}"
            for (m, b, lv, st, what), ps in sorted(seen.items())]


def _geomean(xs: list[float]) -> float | None:
    return float(np.exp(np.mean(np.log(xs)))) if xs else None


def summary_tables(state: dict[str, Any]) -> str:
    gs = groups(state)
    levels = [lv for lv in LEVELS if any(k[2] == lv for k in gs)]
    # pass rate: a (model, batch, level) passes when every executed preset passes; compile-only
    # levels count a structurally sound module of every preset.

    def passed(g: dict[str, dict[str, Any]], level: str) -> bool | None:
        """None: not finished (an executable level's group compiled but not yet timed)."""
        st = [c.get("status") for c in g.values()]
        if any(s in ("compile_failed", "bad_module", "run_failed") for s in st):
            return False
        if level in COMPILE_ONLY or not state["levels"].get(level, {}).get("executable", True):
            return all(s in ("compiled", "ran", "illegal_instruction") for s in st)
        if not all(s == "ran" for s in st):
            return None
        return all(c["pass"] for c in g.values())

    suites = sorted({c["suite"] for c in state["cells"].values()})
    lines = [("Pass rate (a model passes at a level when every preset compiled and, where "
             "executed, matched onnxruntime; compile-only levels: every module sound):"), "",
             "| level | target | " + " | ".join(suites) + " | all |",
             "|---|---|" + "---|" * (len(suites) + 1)]
    for lv in levels:
        row = []
        for suite in [*suites, None]:
            res = [passed(g, lv) for k, g in gs.items() if k[2] == lv
                   and (suite is None or next(iter(g.values()))["suite"] == suite)]
            res = [r for r in res if r is not None]
            row.append(f"{sum(res)}/{len(res)}" if res else "–")
        target = state["levels"].get(lv, {}).get("target", LEVELS[lv])
        lines.append(f"| {lv} | `{target}` | " + " | ".join(row) + " |")
    lines += ["", "Geomean over models (batch 1 and larger batches together; executed levels):",
              "", ("| level | models | Kiln default / onnxruntime | Kiln default / baseline "
              "| Kiln default / best preset |"), "|---|---|---|---|---|"]
    for lv in levels:
        ss = [summarize(g) for k, g in gs.items() if k[2] == lv]
        ort = [s["d_ort"] for s in ss if s["d_ort"]]
        base = [s["d_base"] for s in ss if s["d_base"]]
        best = [s["d_best"] for s in ss if s["d_best"]]
        if ort:
            lines.append(f"| {lv} | {len(ort)} | {_f(_geomean(ort))} | {_f(_geomean(base))} "
                         f"| {_f(_geomean(best))} |")
    lines += ["", ("Per model and level (ratios of times; < 1 means the default is faster; "
              "best = the fastest preset timed):"), "",
              ("| model | b | class | level | default ms | default/best | best | "
              "default/baseline | default/ORT | max err (default) | default pass |"),
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for (model, batch, level), g in gs.items():
        s = summarize(g)
        d = g.get("default", {})
        if d.get("status") != "ran":
            continue
        cls = next(iter(g.values())).get("model_class", "")
        lines.append(
            f"| {model} | {batch} | {cls} | {level} | {d['ms']:.2f} | {_f(s['d_best'])} "
            f"| {s['best']} | {_f(s['d_base'])} | {_f(s['d_ort'])} | {d['max_err']:.1e} "
            f"| {'yes' if d['pass'] else 'NO'} |")
    return "\n".join(lines)


def record(text: str) -> None:
    """Replace this benchmark's section of bench/RESULTS.md (or append it); others untouched."""
    old = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n"
    pattern = re.compile(rf"^{re.escape(SECTION)}\n.*?(?=^## |\Z)", re.DOTALL | re.MULTILINE)
    body = f"{SECTION}\n\n{text.strip()}\n\n"
    new = pattern.sub(lambda _: body, old) if pattern.search(old) else old.rstrip() + "\n\n" + body
    RESULTS.write_text(new)


def _compile_only_table(state: dict[str, Any]) -> str:
    rows = ["| model | b | level | presets compiled | structure | compile s (default) |",
            "|---|---|---|---|---|---|"]
    for (model, batch, level), g in groups(state).items():
        if level not in COMPILE_ONLY:
            continue
        raw = [state["cells"][cell_key(model, batch, level, p)] for p in g]
        ok = [c for c in raw if c["status"] in ("compiled", "same")]
        bad = [f"{c['preset']}: {c['status']}" for c in raw if c not in ok]
        d = state["cells"].get(cell_key(model, batch, level, "default"), {})
        rows.append(f"| {model} | {batch} | {level} | {len(ok)}/{len(raw)} "
                    f"| {'; '.join(bad) or 'VM flatbuffer, ELF machine ok'} "
                    f"| {_f(d.get('compile_s'), '.0f')} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["_time"]:
        return _time_child(argv[1])
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("--models", default=",".join(zoo.SPECS), help="comma-separated zoo names")
    ap.add_argument("--levels", default=",".join(LEVELS), help=f"of {', '.join(LEVELS)}")
    ap.add_argument("--presets", default="",
                    help="comma-separated (default: default, baseline and the graph's conv-*)")
    ap.add_argument("--batch", default="1", help="comma-separated batch sizes")
    ap.add_argument("--repeats", type=int, default=7, help="alternated rounds per group")
    ap.add_argument("--json", type=Path, default=DEFAULT_JSON, help="results file (resumed)")
    ap.add_argument("--rerun", action="store_true", help="re-measure cells already done")
    ap.add_argument("--compile-timeout", type=float, default=900.0)
    ap.add_argument("--run-timeout", type=float, default=900.0)
    ap.add_argument("--report", action="store_true",
                    help="print the per-cell table and the losses from the JSON; run nothing")
    ap.add_argument("--record", action="store_true", help=f"write {SECTION!r} of RESULTS.md")
    ap.add_argument("--note", default="", help="a paragraph recorded after the tables")
    args = ap.parse_args(argv)
    if not (args.report or args.record):
        started = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
        from bench.executables import machine

        state = load(args.json)
        state.setdefault("machine", machine())
        state.setdefault("started", started)
        save(args.json, state)
        run(args)
    state = load(args.json)
    lost = losses(state)
    if args.report:
        print(report(state))
        print("\nDefault loses (slower than baseline, or > 1.1x the best preset):")
        print("\n".join(f"- {x}" for x in lost) or "- none")
        print("\nFailures:")
        print("\n".join(f"- {x}" for x in failures(state)) or "- none")
    summary = summary_tables(state)
    print(summary)
    if args.record:
        runs = state.get("runs", [])
        loads = [r["load"] for r in runs]
        record(
            f"Measured {runs[0]['id'] if runs else '?'} to {runs[-1]['id'] if runs else '?'} "
            f"on {state.get('machine') or platform.processor()}; load average at the start "
            f"of the {len(runs)} runs {min(loads, default=0):.1f}-{max(loads, default=0):.1f} "
            f"(the 2 cores were shared with other compiles: read the paired ratios). Models: "
            f"`bench/zoo.py` (ONNX, random init). Each (model, level) group: every preset "
            f"compiled through Kiln, then onnxruntime (2 threads) and every executable "
            f"timed in one child process, up to {args.repeats} alternated rounds of blocks "
            f"(``bench.executables.alternate``; at least {MIN_REPEATS}, fewer than "
            f"{args.repeats} only where a round took over {BUDGET_S / args.repeats:.0f} s), "
            f"medians; ratios between presets are medians "
            f"of per-round ratios. Pass: |Kiln − onnxruntime| ≤ {ATOL:g}·max(1, max|ref|) + "
            f"{RTOL:g}·|ref| elementwise. Per-cell figures: "
            f"`python bench/cpu_matrix.py --report`.\n\n{summary}\n\n"
            f"Compile-only levels (VM flatbuffer parsed, embedded ELF e_machine checked):\n\n"
            f"{_compile_only_table(state)}\n\n"
            f"Default loses (slower than baseline, or > 1.1× the best preset):\n\n"
            + ("\n".join(f"- {x}" for x in lost) or "- none")
            + "\n\nFailures (model, batch, level [presets]: status: first line):\n\n"
            + ("\n".join(f"- {x}" for x in failures(state)) or "- none")
            + (f"\n\n{args.note}" if args.note else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
