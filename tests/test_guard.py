"""The defaults guard (``bench/guard.py``) in the suite: on a plain CNN, a depthwise CNN and a
transformer, for AVX2 and this machine's own CPU, every preset's executable agrees with
onnxruntime and Kiln's default is neither slower than IREE's plain defaults nor beyond 1.1x of
the fastest allow-listed preset, by more than the noise the run itself measures (an A/A pair of
the same executable). The table is printed whether it passes or not."""

from __future__ import annotations

import pytest

pytest.importorskip("onnxruntime")

from bench import guard  # noqa: E402

pytestmark = pytest.mark.slow


def test_defaults_hold_on_the_guard_sample(capsys: pytest.CaptureFixture[str]) -> None:
    pairs = guard.measure(list(guard.GUARD_MODELS), guard.levels(["avx2", "host"]), repeats=7)
    report = guard.table(pairs)
    with capsys.disabled():
        print("\nbench/guard.py (Kiln default against baseline and the fastest preset):")
        print(report)
    assert all(p.correct for p in pairs), report
    assert all(p.ok for p in pairs), report
