"""The breadth ratchet (``bench/breadth.json``, written by ``bench/breadth.py``): a model type that
went through a route ``ok`` must keep doing so, and every failure classed ``kiln`` must carry an
explanation in the file's ``explanations``.

The sample (``KILN_BREADTH_SAMPLE``, else ``SAMPLE``) is run again through both routes, each
model in its own child process as the bench runs it, and compared with the ratchet
(``KILN_BREADTH_JSON``, else ``bench/breadth.json``). A meta test points the same sample test at a
ratchet in ``tmp_path`` that claims a failing model passes: the child pytest must fail and name
it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("transformers")
pytest.importorskip("onnxscript")

from bench import breadth

ROOT = Path(__file__).resolve().parents[1]
# Quick and "ok" on both routes in the ratchet: two encoders, a decoder, two vision models.
SAMPLE = ["bert", "electra", "mistral", "vit", "beit"]
# "iree" on both routes in the ratchet (iree-compile rejects a 3×3 stride-2 conv on its 2×2 map,
# raw IREE as well): the broken expectation of the meta test.
FAILING = "resnet"


def _ratchet() -> dict[str, object]:
    path = Path(os.environ.get("KILN_BREADTH_JSON", breadth.JSON_PATH))
    return breadth.load(path)


def _sample() -> list[str]:
    env = os.environ.get("KILN_BREADTH_SAMPLE", "")
    return [n for n in env.split(",") if n] or SAMPLE


def test_every_kiln_failure_is_explained() -> None:
    state = breadth.load()
    assert state["models"], "bench/breadth.json lists no models"
    assert breadth.unexplained(state) == []


def test_the_sample_is_ok_in_the_ratchet() -> None:
    models = breadth.load()["models"]
    for name in SAMPLE:
        assert [models[name][r]["class"] for r in breadth.ROUTES] == ["ok", "ok"], name
    assert all(models[FAILING][r]["class"] != "ok" for r in breadth.ROUTES)


def test_regressions_are_the_ok_routes_that_are_not_ok_now() -> None:
    ok = {"class": "ok", "reason": ""}
    bad = {"class": "iree", "reason": "iree-compile: error"}
    expected = {"a": {"onnx": ok, "torch": ok}, "b": {"onnx": bad, "torch": ok}}
    now = {"a": {"onnx": ok, "torch": bad}, "b": {"onnx": bad, "torch": ok}}
    assert breadth.regressions(expected, now) == {"a on torch": "iree: iree-compile: error"}
    # Not ok in the ratchet: failing is no regression; passing is news, not a failure.
    assert breadth.regressions(expected, {"b": {"onnx": ok, "torch": ok}}) == {}


@pytest.mark.slow
@pytest.mark.bench
@pytest.mark.parametrize("name", _sample())
def test_ok_model_still_ok(name: str) -> None:
    expected = _ratchet()["models"]
    assert name in expected, f"{name} is not in the ratchet"
    res = breadth.run_child(name, timeout=600)
    assert breadth.regressions(expected, {name: res}) == {}, (
        "ratchet regressed: " + json.dumps(breadth.regressions(expected, {name: res})))


def _run_sample(ratchet: Path, sample: list[str]) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["KILN_BREADTH_JSON"] = str(ratchet)
    env["KILN_BREADTH_SAMPLE"] = ",".join(sample)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "bench",
         "tests/test_breadth_ratchet.py", "-k", "test_ok_model_still_ok"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200, check=False,
    )


@pytest.mark.slow
@pytest.mark.bench
def test_broken_expectation_fails_the_sample(tmp_path: Path) -> None:
    state = breadth.load()
    ok = {"class": "ok", "reason": "claimed"}
    state["models"][FAILING] = {**state["models"][FAILING], "onnx": ok, "torch": ok}
    path = tmp_path / "breadth.json"
    path.write_text(json.dumps(state))
    proc = _run_sample(path, ["bert", FAILING])
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "1 failed, 1 passed" in out, out
    assert f"ratchet regressed: {{\"{FAILING} on onnx\"" in out, out
