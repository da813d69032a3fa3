"""kiln.torch: PyTorch modules through Kiln (export, compile, torch.compile(backend="kiln")) against
eager PyTorch, on small models written out here with seeded random weights (no downloads).

Every executable is code only: the weights are named parameters bound at run time from the
module's live tensors, so a replaced or rewritten parameter must change the next output.
"""

from __future__ import annotations

import tomllib
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import torch.nn.functional as F
from torch import nn

import kiln.torch
from kiln.torch.dynamo import KilnFallbackWarning

TOL = 1e-4
REPO = Path(__file__).resolve().parents[1]


# -- models -----------------------------------------------------------------------------------


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(8, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


class ConvBN(nn.Module):
    """conv → batch norm (eval: running statistics, buffers) → relu → conv → global pool."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, stride=2, padding=1)
        with torch.no_grad():
            self.bn.running_mean.uniform_(-0.1, 0.1)
            self.bn.running_var.uniform_(0.5, 1.5)
            self.bn.weight.uniform_(0.5, 1.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv2(torch.relu(self.bn(self.conv1(x)))).mean((2, 3))


class Block(nn.Module):
    """A pre-norm transformer encoder block: multi-head attention (SDPA), GELU feed-forward."""

    def __init__(self, d: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.ff1, self.ff2 = nn.Linear(d, 2 * d), nn.Linear(2 * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (t.view(b, s, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, s, d)
        x = x + self.proj(a)
        return x + self.ff2(F.gelu(self.ff1(self.ln2(x))))


class TwoHeads(nn.Module):
    """A buffer, a size read from the input, and a dict out."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Linear(8, 16)
        self.register_buffer("scale", torch.linspace(0.5, 2.0, 16))

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        h = torch.tanh(self.body(x)).view(x.shape[0], -1) * self.scale
        return {"features": h, "norm": h.pow(2).sum(-1).sqrt()}


class Broken(nn.Module):
    """A graph break in the middle (two graphs for Dynamo, the Python in between eager)."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(8, 8), nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.a(x))
        torch._dynamo.graph_break()
        return self.b(h * float(h.shape[-1]))


def _model(cls: type[nn.Module], seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return cls().eval()


def _close(got: object, want: object) -> None:
    from torch.utils import _pytree as pytree

    g, gs = pytree.tree_flatten(got)
    w, ws = pytree.tree_flatten(want)
    assert gs == ws, (gs, ws)
    for a, b in zip(g, w, strict=True):
        assert a.shape == b.shape and a.dtype == b.dtype
        torch.testing.assert_close(a, b, rtol=TOL, atol=TOL)


@pytest.fixture(autouse=True)
def _fresh_dynamo() -> Iterator[None]:
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    yield
    torch._dynamo.reset()


def _graphs() -> int:
    return int(torch._dynamo.utils.counters["stats"]["unique_graphs"])


# -- export -----------------------------------------------------------------------------------


def test_export_is_weight_free_and_kiln_compiles_it(pipeline: object) -> None:
    m = _model(ConvBN)
    mlir, params = kiln.torch.export(m, (torch.randn(2, 3, 16, 16),))
    assert 'util.global private @__param_conv1_weight {noinline} = ' \
           '#flow.parameter.named<"model"::"conv1.weight"> : tensor<8x3x3x3xf32>' in mlir
    # every tensor the forward pass reads, and no weight bytes in the text
    assert set(params) == {"conv1.weight", "conv1.bias", "bn.weight", "bn.bias",
                           "bn.running_mean", "bn.running_var", "conv2.weight", "conv2.bias"}
    assert "dense_resource" not in mlir and "vtensor.literal" not in mlir
    assert params["conv1.weight"].data_ptr() == m.conv1.weight.data_ptr()  # the module's own
    # batch norm is decomposed (iree-compile rejects _native_batch_norm_legit_no_training)
    assert "batch_norm" not in mlir
    # Kiln reads it as torch-dialect MLIR (the other tests compile and run such graphs).
    graph = pipeline.prepare(mlir.encode())  # type: ignore[attr-defined]
    assert graph.input_dialect.value == "torch" and graph.functions == ("main",)


# -- kiln.torch.compile -----------------------------------------------------------------------


@pytest.mark.parametrize("cls,shape", [(MLP, (4, 8)), (ConvBN, (2, 3, 16, 16))])
def test_compile_matches_eager(cls: type[nn.Module], shape: tuple[int, ...]) -> None:
    m = _model(cls)
    x = torch.randn(*shape)
    fast = kiln.torch.compile(m, (x,), device="cpu")
    assert fast.target.startswith("cpu:") and fast.fallbacks == []
    with torch.no_grad():
        _close(fast(x), m(x))
        x2 = torch.randn(*shape)
        y1, y2 = fast(x), fast(x2)
        _close(y1, m(x))  # an earlier result is not overwritten by the next call
        _close(y2, m(x2))


def test_compile_rebinds_changed_weights() -> None:
    m = _model(MLP)
    x = torch.randn(4, 8)
    fast = kiln.torch.compile(m, (x,), target="cpu", driver="local-sync")
    with torch.no_grad():
        before = fast(x)
        m.fc2.weight = nn.Parameter(torch.randn(4, 32))  # a new Parameter object
        after = fast(x)
        _close(after, m(x))
        assert not torch.allclose(before, after)
        m.fc1.bias.add_(0.5)  # written in place
        _close(fast(x), m(x))
        m.fc1.weight.data = torch.randn(32, 8)  # new storage, same Parameter
        _close(fast(x), m(x))
        m.fc2.weight = nn.Parameter(m.fc2.weight.double())  # not what it was compiled for
        with pytest.raises(ValueError, match="fc2.weight"):
            fast(x)


@pytest.mark.vulkan
def test_compile_on_vulkan_lavapipe() -> None:
    """Inputs and results copied (lavapipe takes no imported host memory), weights bound."""
    m = _model(MLP)
    x = torch.randn(4, 8)
    fast = kiln.torch.compile(m, (x,), device="vulkan")
    assert fast.target.startswith("vulkan")
    with torch.no_grad():
        _close(fast(x), m(x))
        m.fc2.weight = nn.Parameter(torch.randn(4, 32))
        _close(fast(x), m(x))


def test_the_second_compile_is_a_cache_hit(tmp_path: Path) -> None:
    """A second process (here: a second pipeline on the same disk cache) compiles nothing, and
    other weight values of the same architecture are the same graph."""
    from kiln import Pipeline
    from kiln.cache import open_cache

    mlir, _ = kiln.torch.export(_model(MLP, seed=1), (torch.randn(4, 8),))
    other, _ = kiln.torch.export(_model(MLP, seed=2), (torch.randn(4, 8),))
    assert other == mlir
    with Pipeline(cache=open_cache(cache_dir=tmp_path / "c"), workers=1) as p:
        assert not p.compile(mlir.encode(), targets=["cpu"]).artifacts[0].cached
    with Pipeline(cache=open_cache(cache_dir=tmp_path / "c"), workers=1) as p:
        assert p.compile(other.encode(), targets=["cpu"]).artifacts[0].cached


# -- torch.compile(backend="kiln") ------------------------------------------------------------


def test_backend_is_registered() -> None:
    meta = tomllib.loads((REPO / "pyproject.toml").read_text())
    eps = meta["project"]["entry-points"]["torch_dynamo_backends"]
    assert eps == {"kiln": "kiln.torch.dynamo:kiln_backend"}
    assert "kiln" in torch._dynamo.list_backends()


@pytest.mark.parametrize("cls,shape", [(MLP, (4, 8)), (Block, (2, 8, 32))])
def test_backend_matches_eager(cls: type[nn.Module], shape: tuple[int, ...]) -> None:
    m = _model(cls)
    opt = torch.compile(m, backend="kiln", options={"device": "cpu"})
    x = torch.randn(*shape)
    with torch.no_grad():
        _close(opt(x), m(x))
    assert _graphs() == 1


def test_backend_graph_break() -> None:
    m = _model(Broken)
    opt = torch.compile(m, backend="kiln")
    x = torch.randn(3, 8)
    with torch.no_grad():
        _close(opt(x), m(x))
    assert _graphs() == 2


def test_backend_dynamic_batch_dict_output_and_buffers() -> None:
    m = _model(TwoHeads)
    opt = torch.compile(m, backend="kiln")
    with torch.no_grad():
        x = torch.randn(4, 8)
        torch._dynamo.mark_dynamic(x, 0)
        _close(opt(x), m(x))
        for batch in (7, 2):
            x = torch.randn(batch, 8)
            _close(opt(x), m(x))
        assert _graphs() == 1  # one dynamic graph served every batch
        m.scale.mul_(3.0)  # a buffer written in place
        _close(opt(x), m(x))


def test_backend_swapped_parameter_changes_the_output() -> None:
    m = _model(MLP)
    opt = torch.compile(m, backend="kiln")
    x = torch.randn(4, 8)
    with torch.no_grad():
        before = opt(x)
        m.fc1.weight = nn.Parameter(torch.randn(32, 8))
        after = opt(x)
    _close(after, m(x))
    assert not torch.allclose(before, after)


def test_backend_runs_what_it_cannot_compile_eagerly_with_one_warning() -> None:
    """Batch norm in training mode writes its running statistics: Kiln refuses the graph, the
    module runs eagerly (statistics updated as eager would), one warning per graph."""
    m = _model(ConvBN).train()
    ref = _model(ConvBN).train()
    opt = torch.compile(m, backend="kiln")
    x = torch.randn(2, 3, 16, 16)
    with torch.no_grad():
        with pytest.warns(KilnFallbackWarning, match="eagerly"):
            got = opt(x)
        _close(got, ref(x))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            _close(opt(x), ref(x))
    _close(m.bn.running_mean, ref.bn.running_mean)


def test_backend_refuses_grad() -> None:
    m = _model(MLP)
    opt = torch.compile(m, backend="kiln")
    x = torch.randn(4, 8)
    with pytest.warns(KilnFallbackWarning, match="grad"):
        y = opt(x)
    y.sum().backward()  # eager: gradients still flow
    assert m.fc1.weight.grad is not None


def test_backend_bad_option() -> None:
    opt = torch.compile(_model(MLP), backend="kiln", options={"sever": "http://x"})
    with torch.no_grad(), pytest.raises(Exception, match="unknown kiln backend options"):
        opt(torch.randn(4, 8))


# -- through a server -------------------------------------------------------------------------


def test_through_a_server(tmp_path_factory: pytest.TempPathFactory,
                          monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from tests.server import kiln_server

    monkeypatch.setenv("KILN_CLIENT_CACHE_DIR", str(tmp_path / "client"))
    m = _model(MLP, seed=3)
    x = torch.randn(4, 8)
    with kiln_server(tmp_path_factory, workers=1) as srv:
        fast = kiln.torch.compile(m, (x,), server=srv.url, device="cpu")
        # a configured client (token, trusted keys) works as the server too; Dynamo's graph of
        # the MLP is the same MLIR, so this is a hit
        opt = torch.compile(m, backend="kiln", options={"server": kiln.Client(srv.url)})
        with torch.no_grad():
            _close(fast(x), m(x))
            _close(opt(x), m(x))
            m.fc1.weight = nn.Parameter(torch.randn(32, 8))
            _close(fast(x), m(x))
            _close(opt(x), m(x))
        assert srv.metric("kiln_compiles_total", kind="cpu", outcome="ok") == 1


class SqueezeHead(nn.Module):
    """A pooled head squeezed over two dims at once (Swin's, a GRU's last step): aten.squeeze.dims,
    which IREE 3.13 cannot lower unless it is decomposed."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x.mean((2, 3), keepdim=True).squeeze((2, 3)))


def test_squeeze_over_several_dims_and_a_misaligned_input() -> None:
    m = _model(SqueezeHead)
    fast = kiln.torch.compile(m, (torch.randn(2, 16, 4, 4),), device="cpu")
    # torch.from_numpy of a buffer 4 bytes into an allocation: not 64-byte aligned, which IREE
    # refuses to import; the call copies it instead of failing.
    raw = np.random.default_rng(0).standard_normal(2 * 16 * 4 * 4 + 1).astype(np.float32)
    x = torch.from_numpy(raw[1:].reshape(2, 16, 4, 4))
    assert x.data_ptr() % 64
    with torch.no_grad():
        _close(fast(x), m(x))
