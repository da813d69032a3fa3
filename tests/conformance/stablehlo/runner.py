"""Run one StableHLO testdata case through Kiln or raw IREE on a backend, and classify it.

Kiln path: ``Pipeline.compile`` (the path ``kiln compile`` and the daemon share: detect, parse,
canonicalize, Kiln's entry points; Kiln's default options) for ``cpu`` and ``vulkan``, compiled
in the pool's worker processes. Raw IREE path: the same rewritten text through ``iree-compile``
with nothing but the device (``RAW_FLAGS``: IREE's defaults for everything else, so f64 is demoted
to f32 on both backends) in the same worker pool. Both executables run in an ``IsolatedChild`` on
``local-task`` (CPU) or ``vulkan`` (lavapipe), through ``kiln.client.runtime.LoadedModule`` (inputs
staged through device-local buffers, results through a mapped staging buffer); ``inputs()`` and
``expected()`` come from the same executable as ``main``.

Outcomes: ``pass``; ``wrong`` (ran, a check failed: values, shape or dtype); ``compile_fail``
(Kiln refused the graph, or the compiler failed, crashed or timed out); ``run_fail`` (the
executable would not load or call, crashed the runtime, or timed out). Nothing here raises for
a bad case.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kiln.compiler.tasks import CompileJob
from tests.conformance.isolated import IsolatedChild, TaskCrashed, TaskFailed, TaskTimeout
from tests.conformance.runner import RAW_FLAGS
from tests.conformance.stablehlo.cases import (
    CaseError,
    Runnable,
    compare,
    declared_dtype,
    runnable,
)

if TYPE_CHECKING:
    from kiln.compiler.pipeline import Pipeline

__all__ = [
    "BACKENDS",
    "COLUMNS",
    "HERE",
    "TESTDATA",
    "CaseResult",
    "Outcome",
    "case_names",
    "execute",
    "expectations_path",
    "invalid",
    "kiln_made",
    "load_case",
    "read_expectations",
    "regressions",
    "run_kiln",
    "run_raw",
    "write_expectations",
]

HERE = Path(__file__).resolve().parent
TESTDATA = HERE / "testdata"
BACKENDS = ("cpu", "vulkan")
# Column → (path, backend): "kiln_cpu" is Kiln's executable for target cpu run on local-task.
COLUMNS = {f"{p}_{b}": (p, b) for p in ("kiln", "raw") for b in BACKENDS}
DRIVERS = {"cpu": "local-task", "vulkan": "vulkan"}
RUN_TIMEOUT = 60.0
_DETAIL = 300


class Outcome(enum.Enum):
    PASS = "pass"
    WRONG = "wrong"
    COMPILE_FAIL = "compile_fail"
    RUN_FAIL = "run_fail"


@dataclass(frozen=True)
class CaseResult:
    outcome: Outcome
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"outcome": self.outcome.value}
        if self.detail:
            d["detail"] = self.detail[:_DETAIL]
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> CaseResult:
        return cls(Outcome(d["outcome"]), d.get("detail", ""))


def _short(msg: str) -> str:
    return " ".join(msg.split())[:_DETAIL]


def case_names(testdata: Path = TESTDATA) -> list[str]:
    """Every ``*.mlir`` case in ``testdata``, by name (file stem), sorted."""
    return sorted(p.stem for p in testdata.glob("*.mlir"))


def load_case(name: str, testdata: Path = TESTDATA) -> Runnable:
    """The case's runnable form; ``CaseError`` when it has not the expected structure."""
    return runnable((testdata / f"{name}.mlir").read_text(encoding="utf-8"))


def execute(child: IsolatedChild, case: Runnable, vmfb: bytes, *, backend: str) -> CaseResult:
    """``main(*inputs())`` against ``expected()``, with each check's tolerance."""
    driver = DRIVERS[backend]

    def call(function: str, args: list[Any]) -> list[Any]:
        got = child.call("execute", timeout=RUN_TIMEOUT, vmfb=vmfb, driver=driver,
                         function=function, data_sets=[args])
        return list(got[0])

    try:
        inputs = call("inputs", []) if case.n_inputs else []
        want = call("expected", [])
        got = call("main", inputs)
    except TaskTimeout as exc:
        return CaseResult(Outcome.RUN_FAIL, f"timeout: {exc}")
    except (TaskFailed, TaskCrashed) as exc:
        return CaseResult(Outcome.RUN_FAIL, _short(str(exc)))
    if len(got) != len(case.checks) or len(want) != len(case.checks):
        return CaseResult(Outcome.WRONG, f"{len(got)} results and {len(want)} expected values "
                                         f"for {len(case.checks)} checks")
    for i, (check, g, w) in enumerate(zip(case.checks, got, want, strict=True)):
        declared = declared_dtype(check.type)
        if declared is not None and str(getattr(g, "dtype", "")) != declared:
            return CaseResult(Outcome.WRONG, f"result {i}: dtype {getattr(g, 'dtype', type(g))}, "
                                             f"the case declares {declared} ({check.type})")
        diff = compare(check.kind, g, w)
        if diff is not None:
            return CaseResult(Outcome.WRONG, f"result {i}: {diff}")
    return CaseResult(Outcome.PASS)


def run_kiln(pipeline: Pipeline, child: IsolatedChild, case: Runnable,
             backends: Sequence[str] = BACKENDS) -> dict[str, CaseResult]:
    """One Kiln compile request for every backend (Kiln's default options), then one run each."""
    from kiln.errors import KilnError

    try:
        res = pipeline.compile(case.mlir.encode(), targets=list(backends))
    except KilnError as exc:  # refused or crashed before any target: the graph never compiled
        return {b: CaseResult(Outcome.COMPILE_FAIL, _short(f"{exc.code}: {exc.message}"))
                for b in backends}
    errors = {e.target.split(":", 1)[0]: e.error for e in res.errors}
    arts = {a.target.split(":", 1)[0]: a for a in res.artifacts}
    out: dict[str, CaseResult] = {}
    for b in backends:
        if b in errors:
            out[b] = CaseResult(Outcome.COMPILE_FAIL, _short(errors[b].message))
            continue
        data = arts[b].data
        assert data is not None  # an uncached pipeline returns the executable's bytes
        out[b] = execute(child, case, data, backend=b)
    return out


def run_raw(pipeline: Pipeline, child: IsolatedChild, case: Runnable,
            backends: Sequence[str] = BACKENDS) -> dict[str, CaseResult]:
    """IREE alone: the same text, ``iree-compile`` with the device flags only, the same runs."""
    from kiln.errors import KilnError

    out: dict[str, CaseResult] = {}
    for b in backends:
        try:
            built = pipeline.pool.run(
                CompileJob(mlir=case.mlir, flags=tuple(RAW_FLAGS[b]), engine="session", timeout=pipeline.compile_timeout),
                timeout=pipeline.compile_timeout + 5,
                command_hint=["iree-compile", *RAW_FLAGS[b]],
            )
        except KilnError as exc:
            out[b] = CaseResult(Outcome.COMPILE_FAIL, _short(exc.message))
            continue
        out[b] = execute(child, case, built.data, backend=b)
    return out


def invalid(exc: CaseError) -> dict[str, CaseResult]:
    """Every column's result for a case the rewrite cannot handle (none upstream, as of the
    vendored commit): a compile failure on every path alike."""
    return {c: CaseResult(Outcome.COMPILE_FAIL, f"not rewritable: {exc}") for c in COLUMNS}


# -- the ratchet -----------------------------------------------------------------------------------

_HEADER = """\
# Cases expected to PASS through Kiln on this backend (one a line, sorted).
# Written by `python bench/stablehlo_conformance.py --write`; the CI subset fails when a case
# listed here fails. Removing a line is a regression: do it only with --accept-regressions.
"""


def expectations_path(backend: str, suite: Path = HERE) -> Path:
    """``suite``: the suite's folder (this one, or ``tests/conformance/tosa``)."""
    return suite / f"expected_{backend}.txt"


def read_expectations(path: Path) -> set[str]:
    if not path.is_file():
        return set()
    return {ln.strip() for ln in path.read_text().splitlines()
            if ln.strip() and not ln.startswith("#")}


def write_expectations(path: Path, names: Iterable[str], *, header: str = "") -> None:
    path.write_text(_HEADER + header + "".join(f"{n}\n" for n in sorted(set(names))))


def regressions(expected: set[str], results: dict[str, CaseResult]) -> dict[str, CaseResult]:
    """The expected passes, among ``results``, that did not pass."""
    return {n: r for n, r in sorted(results.items())
            if n in expected and r.outcome is not Outcome.PASS}


def kiln_made(results: dict[str, dict[str, CaseResult]]) -> dict[str, dict[str, CaseResult]]:
    """Per backend, the cases raw IREE passes and Kiln does not (Kiln's result): always a
    failure of the run, whatever the expectations say."""
    out: dict[str, dict[str, CaseResult]] = {}
    for b in BACKENDS:
        bad = {n: r[f"kiln_{b}"] for n, r in sorted(results.items())
               if f"raw_{b}" in r and f"kiln_{b}" in r
               and r[f"raw_{b}"].outcome is Outcome.PASS
               and r[f"kiln_{b}"].outcome is not Outcome.PASS}
        if bad:
            out[b] = bad
    return out
