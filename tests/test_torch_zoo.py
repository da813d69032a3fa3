"""One zoo model (``bench/zoo.py``) through ``torch.compile(backend="kiln")`` against eager, so a
real architecture stays honest in CI; the whole zoo is ``bench/torch_zoo.py``'s (``bench/RESULTS.md``,
"torch.compile(backend="kiln") on the zoo")."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import kiln.torch  # noqa: F401 (registers the backend)
from bench import torch_zoo


@pytest.fixture(autouse=True)
def _fresh_dynamo() -> Iterator[None]:
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    yield
    torch._dynamo.reset()


def test_squeezenet_through_backend_kiln_matches_eager() -> None:
    # squeezenet1_1: the zoo model with the shortest first call through Kiln (bench/RESULTS.md)
    # warnings are errors here: a KilnFallbackWarning (the graph run eagerly) fails the test
    model, args = torch_zoo.build("squeezenet1_1")
    with torch.no_grad():
        want = model(*args)
        opt = torch.compile(model, backend="kiln")
        got = opt(*args)
        again = opt(*args)
    assert int(torch._dynamo.utils.counters["stats"]["unique_graphs"]) == 1
    assert not torch._dynamo.utils.counters["graph_break"]
    assert got.shape == (1, 1000)
    for y in (got, again):
        cmp = torch_zoo.compare(y, want)
        assert cmp["pass"], cmp
