"""StableHLO and TOSA conformance in CI: the ratchet's fixed subsets still pass through Kiln.

Each suite's ``ci_subset.txt`` (``tests/conformance/stablehlo/``, ``tests/conformance/tosa/``;
written by ``bench/stablehlo_conformance.py --suite S --write-ci-subset N``) names a few of its
cases Kiln is expected to pass: per element type one, then ops spread over the alphabet. Each is
compiled through Kiln's embedded pipeline for ``cpu`` and ``vulkan`` and run on ``local-task`` and
lavapipe, judged with StableHLO's own tolerances; a case listed in ``expected_<backend>.txt`` must
pass there. The bench runs every case beside raw IREE; its last run (``results.json``) must show
no case raw IREE passes and Kiln does not, and the expectations must hold every case raw IREE
passes (so these subsets, and every run, guard them).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import numpy as np
import pytest

from kiln.compiler.pipeline import Pipeline
from tests.conformance.isolated import IsolatedChild
from tests.conformance.stablehlo.cases import compare, runnable
from tests.conformance.stablehlo.runner import (
    BACKENDS,
    HERE,
    CaseResult,
    Outcome,
    case_names,
    expectations_path,
    kiln_made,
    load_case,
    read_expectations,
    regressions,
    run_kiln,
)

SUITES = {"stablehlo": HERE, "tosa": HERE.parent / "tosa"}
EXPECTED = {(s, b): read_expectations(expectations_path(b, d))
            for s, d in SUITES.items() for b in BACKENDS}
SUBSET = [(s, n) for s, d in SUITES.items() for n in sorted(read_expectations(d / "ci_subset.txt"))]
# A suite is checked once the bench has recorded a run of it (results.json, ci_subset.txt).
RECORDED = sorted(s for s, d in SUITES.items() if (d / "results.json").is_file())


@pytest.fixture(scope="module")
def child() -> Iterator[IsolatedChild]:
    with IsolatedChild() as c:
        yield c


def test_every_vendored_case_is_made_runnable() -> None:
    names = case_names()
    assert len(names) == 230
    for n in names:
        case = load_case(n)
        assert "@check." not in case.mlir, n
        assert "func.func public @expected()" in case.mlir, n
        assert case.checks, n


def test_inputs_become_arguments_and_checks_become_results() -> None:
    case = load_case("add_uint64_20_20_uint64_20_20")
    assert ("func.func public @main(%kiln_in0: tensor<20x20xui64>, "
            "%kiln_in1: tensor<20x20xui64>) -> (tensor<20x20xui64>)") in case.mlir
    assert "call @inputs()" not in case.mlir
    assert [c.kind for c in case.checks] == ["expect_eq"]
    assert case.n_inputs == 2


def test_checks_use_stablehlo_tolerances() -> None:
    one = np.array([1.0], np.float32)
    next_up = np.nextafter(one, np.float32(2))
    four = (one.view(np.uint32) + np.uint32(4)).view(np.float32)
    assert compare("expect_close", next_up, one) is None
    assert "4 ULP" in (compare("expect_close", four, one) or "")
    assert compare("expect_eq", next_up, one) is not None
    assert compare("expect_almost_eq", one + np.float32(9e-4), one) is None
    assert compare("expect_almost_eq", one + np.float32(2e-3), one) is not None
    nan = np.array([np.nan], np.float32)
    assert compare("expect_eq", nan, nan) is None and compare("expect_close", nan, one)
    # An executable that changed a type fails even with equal values.
    assert "dtype" in (compare("expect_eq", np.array([1], np.int16), np.array([1], np.uint16))
                       or "")
    with pytest.raises(ValueError, match="no check"):
        runnable("func.func public @main() -> tensor<f32> {\n}\n")


def test_stablehlo_is_recorded() -> None:
    assert "stablehlo" in RECORDED and any(s == "stablehlo" for s, _ in SUBSET)


@pytest.mark.parametrize("suite", RECORDED)
def test_recorded_run_has_no_kiln_made_failures(suite: str) -> None:
    # The bench's last run of the suite: raw IREE never passes where Kiln fails, and every Kiln
    # pass is in the expectations (so the subset below, and the next run, guard it).
    recorded = json.loads((SUITES[suite] / "results.json").read_text())["cases"]
    results = {n: {c: CaseResult.from_json(r) for c, r in row.items()}
               for n, row in recorded.items()}
    # Every vendored case, or the evenly spread subset a run under --budget recorded.
    assert results and set(results) <= set(case_names(SUITES[suite] / "testdata"))
    assert kiln_made(results) == {}
    for b in BACKENDS:
        passes = {n for n, r in results.items() if r[f"kiln_{b}"].outcome is Outcome.PASS}
        assert passes <= EXPECTED[suite, b], sorted(passes - EXPECTED[suite, b])
        assert {n for n, r in results.items() if r[f"raw_{b}"].outcome is Outcome.PASS} <= passes


def test_a_lost_pass_is_reported() -> None:
    # The ratchet's two checks, on results where Kiln lost a case raw IREE passes.
    lost = CaseResult(Outcome.COMPILE_FAIL, "failed to legalize operation 'hal.tensor.import'")
    results = {"add_uint16": {"kiln_cpu": lost, "raw_cpu": CaseResult(Outcome.PASS),
                              "kiln_vulkan": CaseResult(Outcome.PASS),
                              "raw_vulkan": CaseResult(Outcome.PASS)}}
    assert kiln_made(results) == {"cpu": {"add_uint16": lost}}
    assert regressions({"add_uint16"}, {"add_uint16": lost}) == {"add_uint16": lost}


def test_complex_constants_are_prepared(pipeline: Pipeline) -> None:
    # Kiln's canonical-size guard read every dense attribute through the Python bindings, which
    # abort the process on a complex one: Kiln refused graphs raw IREE runs (invalid_graph).
    graph = pipeline.prepare(load_case("dot_general_float32_4_3_complex64_3_6").mlir.encode())
    assert set(graph.functions) == {"main", "inputs", "expected"}
    assert "complex<f32>" in graph.mlir


@pytest.mark.parametrize("suite", RECORDED)
def test_ci_subset_names_expected_cases(suite: str) -> None:
    names = [n for s, n in SUBSET if s == suite]
    assert names, f"the {suite} CI subset is empty"
    assert not [n for n in names if n not in case_names(SUITES[suite] / "testdata")]
    assert not [n for n in names if not any(n in EXPECTED[suite, b] for b in BACKENDS)]


@pytest.mark.slow
@pytest.mark.vulkan
@pytest.mark.parametrize(("suite", "name"), SUBSET, ids=[f"{s}/{n}" for s, n in SUBSET])
def test_expected_case_still_passes(pipeline: Pipeline, child: IsolatedChild, suite: str,
                                    name: str) -> None:
    backends = [b for b in BACKENDS if name in EXPECTED[suite, b]]
    case = load_case(name, SUITES[suite] / "testdata")
    results = run_kiln(pipeline, child, case, backends)
    failed = {b: r for b in backends
              for r in regressions(EXPECTED[suite, b], {name: results[b]}).values()}
    assert not failed, "expected pass regressed: " + "; ".join(
        f"{name} on {b}: {r.outcome.value} ({r.detail})" for b, r in failed.items())
