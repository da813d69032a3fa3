"""Graphs ``torch.compile(backend="kiln")`` used to run eagerly, now compiled by Kiln.

Small repros of what fell back on the zoo (bench/RESULTS.md, "torch.compile(backend="kiln") on
the zoo"): ``interpolate`` (MobileViT's resize; iree-compile named the ``torch.constant.bool``
it left), ``torch.roll`` and window partitioning (Swin's shifted windows; it named a
``torch.constant.int``), ``unfold``/``fold``, ops taking bool and int constants, and
``nn.LSTM``/``nn.GRU``, for which Dynamo gave no graph at all. Warnings are errors in the suite,
so a ``KilnFallbackWarning`` (a graph run eagerly) fails the test; each also counts Dynamo's
graphs, so a module Dynamo skipped (no graph, no warning) fails too.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

import kiln.torch  # noqa: E402 (registers the backend)


class Resize(torch.nn.Module):
    def __init__(self, **kw: Any) -> None:
        super().__init__()
        self.kw = kw

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.interpolate(x, **self.kw) * 2.0


class ShiftedWindows(torch.nn.Module):
    """Swin's block skeleton: roll, partition into 2x2 windows, attend, merge, roll back."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, h, w, c = x.shape
        s = torch.roll(x, shifts=(-1, -1), dims=(1, 2))
        win = s.view(b, h // 2, 2, w // 2, 2, c).permute(0, 1, 3, 2, 4, 5).reshape(-1, 4, c)
        att = torch.softmax(win @ win.transpose(1, 2) / c ** 0.5, dim=-1) @ win
        merged = att.view(b, h // 2, w // 2, 2, 2, c).permute(0, 1, 3, 2, 4, 5).reshape(b, h, w, c)
        return torch.roll(merged, shifts=(1, 1), dims=(1, 2)) + torch.roll(x, 3)


class Patches(torch.nn.Module):
    """MobileViT's unfold to patches and fold back."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        p = F.unfold(x, kernel_size=2, stride=2)
        return F.fold(p.softmax(1), output_size=(8, 8), kernel_size=2, stride=2)


class Constants(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x.mean(dim=-1, keepdim=True) + torch.cumsum(x, dim=1)
                + x.max(dim=1, keepdim=True).values + x.std(dim=-1, unbiased=False, keepdim=True)
                + x.flip(0).argsort(dim=1, descending=True).float())


CASES = {
    "bilinear_scale": (lambda: Resize(scale_factor=2.0, mode="bilinear", align_corners=False),
                       (1, 3, 8, 8)),
    "bilinear_size": (lambda: Resize(size=(5, 7), mode="bilinear", align_corners=False),
                      (1, 3, 4, 4)),
    "nearest": (lambda: Resize(scale_factor=2.0, mode="nearest"), (1, 2, 4, 4)),
    "roll_windows": (ShiftedWindows, (1, 4, 4, 8)),
    "unfold_fold": (Patches, (1, 3, 8, 8)),
    "constants": (Constants, (3, 6)),
    "lstm": (lambda: torch.nn.LSTM(8, 16, num_layers=2, batch_first=True), (1, 5, 8)),
    "gru": (lambda: torch.nn.GRU(8, 16, batch_first=True), (1, 5, 8)),
}


@pytest.fixture(autouse=True)
def _fresh_dynamo() -> Iterator[None]:
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    yield
    torch._dynamo.reset()


def _flat(out: Any) -> list[torch.Tensor]:
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flat(o)]
    return [out]


@pytest.mark.parametrize("name", CASES)
def test_compiles_through_backend_kiln_without_falling_back(name: str) -> None:
    make, shape = CASES[name]
    torch.manual_seed(0)
    model = make().eval()
    x = torch.randn(shape)
    with torch.no_grad():
        want = model(x)
        got = torch.compile(model, backend="kiln")(x)
    assert int(torch._dynamo.utils.counters["stats"]["unique_graphs"]) == 1
    for g, w in zip(_flat(got), _flat(want), strict=True):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)


def test_an_lstm_compiles_through_kiln_torch_compile() -> None:
    torch.manual_seed(0)
    model = torch.nn.LSTM(8, 16, num_layers=2, batch_first=True).eval()
    x = torch.randn(1, 5, 8)
    fast = kiln.torch.compile(model, (x,), device="cpu")
    with torch.no_grad():
        want = model(x)
    for g, w in zip(_flat(fast(x)), _flat(want), strict=True):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)
