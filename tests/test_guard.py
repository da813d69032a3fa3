"""The defaults guard (``bench/guard.py``) in the suite: on a plain CNN, a depthwise CNN and a
transformer, for AVX2 and this machine's own CPU, every preset's executable agrees with
onnxruntime, and Kiln's default is not off a cliff: neither 1.5x IREE's plain defaults nor 2x
the fastest allow-listed preset, beyond the noise the run itself measures (an A/A pair of the
same executable). The finer bar (1.0x / 1.1x) is reported in the table (``MISS``), which
is printed whether the test passes or not."""

from __future__ import annotations

import pytest

pytest.importorskip("onnxruntime")

from bench import guard  # noqa: E402

# Timing three models on two ISA levels takes minutes: a bench suite (`scripts/test.sh -m bench`);
# CI runs bench/guard.py itself after the suite (scripts/test.sh).
pytestmark = [pytest.mark.slow, pytest.mark.bench]


def test_defaults_hold_on_the_guard_sample(capsys: pytest.CaptureFixture[str]) -> None:
    pairs = guard.measure(list(guard.GUARD_MODELS), guard.levels(["avx2", "host"]), repeats=5)
    report = guard.table(pairs)
    with capsys.disabled():
        print("\nbench/guard.py (Kiln default against baseline and the fastest preset):")
        print(report)
    assert all(p.correct for p in pairs), report
    assert not any(p.cliff for p in pairs), report
