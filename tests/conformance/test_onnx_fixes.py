"""Kiln's ONNX fix-ups keep every value: each rewritten node test gives its reference outputs under
onnx's reference evaluator (no compiler involved), untouched models stay the same object, and a
fix that fails is skipped. (Whether IREE then compiles them is the CI sample's job.)"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx.reference import ReferenceEvaluator

from kiln.dialects import onnx_fixes
from kiln.dialects.onnx_fixes import FIXES, fix_model
from tests.conformance.suite import ATOL, RTOL, load_node_test, node_dir

# Two tests per fix, and a few the fix must leave alone.
FIXED = sorted({t for f in FIXES for t in f.tests[:2]})
UNTOUCHED = ["test_add", "test_conv_with_strides_padding", "test_maxpool_2d_pads", "test_softmax_axis_0"]


def _model(name: str) -> onnx.ModelProto:
    return onnx.load(str(node_dir() / name / "model.onnx"))


@pytest.mark.parametrize("name", FIXED)
def test_fixed_model_gives_the_reference_outputs(name: str) -> None:
    model = _model(name)
    fixed, applied = fix_model(model)
    assert applied, f"no fix applied to {name}"
    onnx.checker.check_model(fixed, full_check=True)
    assert [i.name for i in fixed.graph.input] == [i.name for i in model.graph.input]
    assert [o.name for o in fixed.graph.output] == [o.name for o in model.graph.output]
    test = load_node_test(name)
    inputs, want = test.data_sets[0]
    feeds = {i.name: x for i, x in zip(fixed.graph.input, inputs, strict=False)}
    got = ReferenceEvaluator(fixed).run(None, feeds)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("name", UNTOUCHED)
def test_models_no_fix_matches_are_returned_as_they_are(name: str) -> None:
    model = _model(name)
    fixed, applied = fix_model(model)
    assert applied == []
    assert fixed is model  # same imported graph, same cache key


def test_a_failing_fix_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(model: onnx.ModelProto) -> bool:
        raise RuntimeError("broken fix")

    broken = onnx_fixes.Fix("broken", boom, tests=(), why="test")
    monkeypatch.setattr(onnx_fixes, "FIXES", (broken, *FIXES))
    model = _model("test_lppool_2d_same_upper")
    fixed, applied = fix_model(model)
    assert "broken" not in applied and "explicit_pads" in applied
