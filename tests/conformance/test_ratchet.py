"""The ratchet catches a regression: a deliberately broken expectation makes the CI sample fail.

Runs the real sample test (``test_conformance_sample.py``) in a child pytest, pointed at an
expectations directory in ``tmp_path`` that claims ``test_adam`` passes on CPU (Adam, a training
op, has no lowering in IREE 3.13: it fails to compile). The child must fail and name the test;
with a true expectation (``test_abs``) the same run must pass.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conformance.runner import TargetResult, regressions, write_expectations
from tests.conformance.suite import Outcome

ROOT = Path(__file__).resolve().parents[2]


def _run_sample(expected_dir: Path, sample: list[str]) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["KILN_CONFORMANCE_EXPECTED_DIR"] = str(expected_dir)
    env["KILN_CONFORMANCE_SAMPLE"] = ",".join(sample)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "tests/conformance/test_conformance_sample.py", "-k", "test_expected_pass_still_passes"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False,
    )


def test_regressions_are_the_expected_passes_that_did_not_pass() -> None:
    results = {
        "test_a": TargetResult(Outcome.PASS),
        "test_b": TargetResult(Outcome.MISMATCH, "output 0: 1/4 elements differ"),
        "test_c": TargetResult(Outcome.COMPILE_FAIL),
    }
    assert list(regressions({"test_a", "test_b"}, results)) == ["test_b"]
    assert regressions({"test_a"}, results) == {}
    # Not expected to pass: failing is no regression.
    assert regressions(set(), results) == {}


# A bench suite (`scripts/test.sh -m bench`): the default run had grown past its 15 minutes.
@pytest.mark.slow
@pytest.mark.bench
def test_broken_expectation_fails_the_ci_sample(tmp_path: Path) -> None:
    write_expectations(tmp_path / "expected_cpu.txt", ["test_abs", "test_adam"])
    write_expectations(tmp_path / "expected_vulkan.txt", [])
    proc = _run_sample(tmp_path, ["test_abs", "test_adam"])
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "1 failed, 1 passed" in out, out
    assert "expected pass regressed: test_adam on cpu: compile_fail" in out, out


@pytest.mark.slow
def test_true_expectation_passes_the_ci_sample(tmp_path: Path) -> None:
    write_expectations(tmp_path / "expected_cpu.txt", ["test_abs"])
    write_expectations(tmp_path / "expected_vulkan.txt", [])
    proc = _run_sample(tmp_path, ["test_abs"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout
