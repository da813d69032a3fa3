"""The defaults guard CI runs: Kiln's default against IREE's plain defaults on a small sample.

Three reference models of ``bench/models.py`` — a plain CNN (``resnet18``), a depthwise CNN
(``mobilenet``) and a transformer encoder (``encoder``) — are compiled through Kiln for two CPU
levels this machine executes: AVX2 (``cpu:x86_64:haswell``) and the host's own CPU (as the client
SDK detects it), with Kiln's ``default`` preset, ``baseline`` (IREE's own defaults, no Kiln
tuning) and every other preset autotune would try for the graph
(``kiln.targets.presets.autotune_presets``: the ``conv-*`` lowerings for a CNN). For every
(model, level) pair:

- **correctness**: every executable's output against onnxruntime's
  (``allclose(rtol=1e-3, atol=1e-4)``); a wrong answer fails the guard;
- **speed**: presets that compile to the same executable are timed once; one whose single call
  takes more than ``SCREEN`` (2.5) x the default's is clearly not the fastest and its ratio is
  read from single calls (the slow ones cost most of the time in rounds). The rest run in
  alternated blocks in this one process (the order rotates each round,
  ``bench.executables.alternate``), and one more engine runs the *same* default executable
  again. The ratios are those of the medians the table shows. The default/default ratio of each
  round measures the machine's noise (an A/A test): noise = max(10 %, 3 x the median absolute
  deviation of the A/A ratios). Two bars:

  - **the bar**: default/baseline within ``1 + noise`` (never slower than doing
    nothing) and default/fastest preset within ``1.1 + noise``. A pair that misses it is
    reported (``MISS``) — it is what the next tuning pass works on — but does not fail CI;
  - **a cliff**: default/baseline past ``CLIFF_BASELINE`` (1.5) or default/fastest past
    ``CLIFF_BEST`` (2.0), beyond the noise. That fails CI (an AVX2 ResNet-18 default once
    took 7x the time of ``conv-im2col``, and nothing caught it).

  So the guard is a benchmark CI runs and reports, not a timed test that flakes on a busy VM.

    .venv/bin/python bench/guard.py                 # the report; exit 1 on a cliff or wrong answer
    .venv/bin/python bench/guard.py --levels host   # one level

CI runs it after the suite (``scripts/test.sh``: a benchmark it reports, not one of the suite's
timed tests); ``tests/test_guard.py`` is the same check as a bench suite
(``scripts/test.sh -m bench tests/test_guard.py``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

from bench.executables import alternate, ort_session
from bench.models import MODELS, sample_input

GUARD_MODELS = ("resnet18", "mobilenet", "encoder")
AVX2 = "cpu:x86_64:haswell"
RTOL, ATOL = 1e-3, 1e-4
NOISE_FLOOR = 0.10
BEST_BAR = 1.1
CLIFF_BASELINE = 1.5
CLIFF_BEST = 2.0
SCREEN = 2.5


@dataclass(frozen=True)
class Pair:
    """One (model, level): default against baseline, both checked against onnxruntime."""

    model: str
    target: str
    default_ms: float
    baseline_ms: float
    ratio: float  # median default / median baseline (the table's two columns)
    best: str  # the fastest preset by median time ("default" when nothing beat it)
    best_ratio: float  # median default / median of the fastest preset
    noise: float  # the allowance: max(NOISE_FLOOR, 3 x MAD of the A/A ratios)
    max_err: float  # the largest of every preset's max abs error against onnxruntime
    correct: bool

    @property
    def ok(self) -> bool:
        """Within the bar (beyond the noise)."""
        return (self.correct and self.ratio <= 1 + self.noise
                and self.best_ratio <= BEST_BAR + self.noise)

    @property
    def cliff(self) -> bool:
        """Far past the bar: what fails CI."""
        return (self.ratio > CLIFF_BASELINE + self.noise
                or self.best_ratio > CLIFF_BEST + self.noise)


def levels(names: list[str]) -> list[str]:
    """CPU targets for ``avx2`` and ``host`` (the SDK's detection of this machine)."""
    from kiln.client.resolver import detect_cpu

    table = {"avx2": AVX2, "host": detect_cpu().target}
    return [table[n] for n in names]


def measure(models: list[str], targets: list[str], *, repeats: int = 9,
            block: int = 3) -> list[Pair]:
    from kiln.client.autotune import cheap_traits
    from kiln.client.runtime import load_vmfb
    from kiln.compiler.pipeline import Pipeline
    from kiln.targets.presets import autotune_presets

    pairs = []
    with Pipeline(workers=1, compile_timeout=900) as pipe:
        for name in models:
            model = MODELS[name]()
            data = model.SerializeToString()
            x = sample_input(model)
            ref = ort_session(data).run(None, {model.graph.input[0].name: x})[0]
            for target in targets:
                fns: dict[str, Any] = {}
                errs: dict[str, float] = {}
                correct = True
                presets = list(autotune_presets("cpu", cheap_traits(data)))
                presets += [] if "baseline" in presets else ["baseline"]
                digests: dict[str, str] = {}  # executable digest -> the preset timed for it
                alias: dict[str, str] = {}  # preset -> the preset whose executable it has
                for preset in presets:
                    res = pipe.compile(data, targets=[target], options={"preset": preset})
                    if res.errors:
                        raise SystemExit(f"{name} {target} [{preset}]: {res.errors[0].error}")
                    art = res.artifacts[0]
                    alias[preset] = digests.setdefault(art.digest, preset)
                    if alias[preset] != preset:
                        continue  # the same executable as an earlier preset's: timed once
                    mod = load_vmfb(art.data, driver="local-task")
                    fn = mod[res.functions[0]]
                    y = np.asarray(fn(x))
                    errs[preset] = float(np.abs(y - ref).max())
                    correct &= bool(np.allclose(y, ref, rtol=RTOL, atol=ATOL))
                    fns[preset] = fn
                baseline = alias["baseline"]
                # Screen: a preset more than SCREEN x the default's time per call is neither the
                # fastest nor close; its ratio is read from single calls, not timed in rounds.
                once = {p: min(_once(f, x) for _ in range(2)) for p, f in fns.items()}
                close = [p for p in fns if once[p] <= SCREEN * once["default"]]
                calls: dict[str, Any] = {p: (lambda f=fns[p], x=x: f(x)) for p in close}
                calls["default again"] = calls["default"]
                t = alternate(calls, repeats=repeats, block=block)
                med = {p: statistics.median(t[p]) for p in close}
                best = min(med, key=lambda p: (med[p], p != "default"))
                aa = _paired(t, "default again", "default")
                mid = statistics.median(aa)
                mad = statistics.median(abs(r - mid) for r in aa)
                base_ms = med[baseline] if baseline in med else once[baseline]
                # The ratios are those of the medians the table shows (a screened-out baseline:
                # of single calls, on both sides).
                if baseline == "default":
                    ratio = 1.0  # IREE's defaults are Kiln's default for this graph and level
                elif baseline in med:
                    ratio = med["default"] / med[baseline]
                else:
                    ratio = once["default"] / once[baseline]
                pair = Pair(
                    model=name, target=target,
                    default_ms=med["default"] * 1e3, baseline_ms=base_ms * 1e3,
                    ratio=ratio,
                    best=best, best_ratio=med["default"] / med[best],
                    noise=max(NOISE_FLOOR, 3 * mad),
                    max_err=max(errs.values()), correct=correct,
                )
                pairs.append(pair)
                print(_row(pair), flush=True)  # the table grows as the rows are measured
    return pairs


def _once(fn: Any, x: Any) -> float:
    t0 = time.perf_counter()
    fn(x)
    return time.perf_counter() - t0


def _paired(times: dict[str, list[float]], a: str, b: str) -> list[float]:
    """Per-round ratios of ``a``'s block time to ``b``'s."""
    return [u / v for u, v in zip(times[a], times[b], strict=True)]


def _row(p: Pair) -> str:
    verdict = ("WRONG" if not p.correct else "CLIFF" if p.cliff else "ok" if p.ok
               else "MISS")
    return (f"| {p.model} | `{p.target}` | {p.default_ms:.2f} | {p.baseline_ms:.2f} "
            f"| **{p.ratio:.2f}** (≤ {1 + p.noise:.2f}) | {p.best} | **{p.best_ratio:.2f}** "
            f"(≤ {BEST_BAR + p.noise:.2f}) | {p.max_err:.1e} | {verdict} |")


HEAD = ("| model | target | default ms | baseline ms | default/baseline (allowed) "
        "| fastest preset | default/fastest (allowed) | max abs err vs ORT | verdict |\n"
        "|---|---|---|---|---|---|---|---|---|")


def table(pairs: list[Pair]) -> str:
    return "\n".join([HEAD, *(_row(p) for p in pairs)])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("--models", default=",".join(GUARD_MODELS))
    ap.add_argument("--levels", default="avx2,host", help="comma-separated: avx2, host")
    ap.add_argument("--repeats", type=int, default=9, help="alternated rounds")
    args = ap.parse_args(argv)
    print(HEAD, flush=True)
    pairs = measure(args.models.split(","), levels(args.levels.split(",")),
                    repeats=args.repeats)
    return 0 if all(p.correct and not p.cliff for p in pairs) else 1


if __name__ == "__main__":
    rc = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip the interpreter's teardown: nanobind (iree.runtime) reports ~100 "leaked" functions
    # there, noise in CI's log after the table.
    os._exit(rc)
