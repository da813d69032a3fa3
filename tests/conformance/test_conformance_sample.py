"""The CI ratchet: a fixed sample of ONNX node tests must keep passing where they are expected to.

``sample.txt`` is a fixed list (one test per operator family among the expected passes, plus the
tests that guard each graph fix-up; written by ``bench/conformance.py --write-sample``). For each
sampled test, every target whose ``expected_<target>.txt`` lists it must still pass: compiled
through Kiln's embedded pipeline, run with iree.runtime (local-sync; lavapipe for Vulkan) in an
isolated child process, compared with the reference outputs (floats rtol 1e-4 / atol 1e-5, ints and
bools exactly). A test that newly passes is fine (the next full run records it).

``KILN_CONFORMANCE_EXPECTED_DIR`` and ``KILN_CONFORMANCE_SAMPLE`` (a comma-separated list) point
the check elsewhere; ``test_ratchet.py`` uses them to prove a broken expectation fails CI.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from kiln.compiler.pipeline import Pipeline
from tests.conformance.isolated import IsolatedChild
from tests.conformance.runner import KILN_TARGETS, read_expectations, regressions, run_kiln
from tests.conformance.suite import Outcome, load_node_test, node_test_names

HERE = Path(__file__).parent
EXPECTED_DIR = Path(os.environ.get("KILN_CONFORMANCE_EXPECTED_DIR", HERE))
EXPECTED = {c: read_expectations(EXPECTED_DIR / f"expected_{c}.txt") for c in KILN_TARGETS}


def _sample() -> list[str]:
    env = os.environ.get("KILN_CONFORMANCE_SAMPLE")
    if env:
        return [n for n in env.split(",") if n]
    return sorted(read_expectations(HERE / "sample.txt"))


SAMPLE = _sample()


@pytest.fixture(scope="module")
def child() -> Iterator[IsolatedChild]:
    with IsolatedChild() as c:
        yield c


def test_sample_names_real_expected_tests() -> None:
    # A stale sample would check nothing: every sampled test exists and is expected somewhere.
    assert SAMPLE, "the conformance sample is empty"
    known = set(node_test_names())
    assert not [n for n in SAMPLE if n not in known]
    assert not [n for n in SAMPLE if not any(n in e for e in EXPECTED.values())]


@pytest.mark.slow
@pytest.mark.vulkan
@pytest.mark.parametrize("name", SAMPLE)
def test_expected_pass_still_passes(pipeline: Pipeline, child: IsolatedChild, name: str) -> None:
    columns = [c for c in KILN_TARGETS if name in EXPECTED[c]]
    results = run_kiln(pipeline, child, load_node_test(name), columns)
    failed = {
        c: r for c in columns
        for r in regressions(EXPECTED[c], {name: results[c]}).values()
    }
    assert not failed, "expected pass regressed: " + "; ".join(
        f"{name} on {c}: {r.outcome.value} ({r.detail})" for c, r in failed.items()
    )
    assert all(results[c].outcome is Outcome.PASS for c in columns)
