"""An LLM decoder end to end: tiny Llama-class (RoPE, RMSNorm, grouped-query attention) and
GPT-2-class models from ``transformers`` configs, seeded random weights, as prefill and decode
over a plain-tensor KV cache (``kiln.torch.llm``), with dynamic sequence and cache lengths.

Through ``kiln.torch.compile_functions`` (one executable, both functions, one weight set) and
through ONNX (``torch.onnx.export`` with dynamic axes, built by ``kiln build`` from
``examples/llm_decoder/kiln.toml`` with the weights apart): at prompt lengths 1, 7 and 33 and
several decode steps each, the greedy tokens equal eager's and the logits are close.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

import kiln.torch  # noqa: E402
from kiln.torch import llm  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "llm_decoder"
LENGTHS = (1, 7, 33)
STEPS = 4
ATOL = 1e-4


def _example() -> Any:
    spec = importlib.util.spec_from_file_location("make_llm_decoder",
                                                  EXAMPLE / "make_llm_decoder.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def tiny_gpt2() -> Any:
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(1)
    cfg = GPT2Config(vocab_size=256, n_embd=64, n_layer=2, n_head=4, n_positions=256,
                     bos_token_id=0, eos_token_id=1)
    return GPT2LMHeadModel(cfg).eval()


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One cache for the module (set before the module's fixtures compile): the manifest's
    torch-route module is then the one ``compiled_llama`` compiled, a cache hit when this
    process's in-process pipeline was first opened here."""
    path = tmp_path_factory.mktemp("kiln-cache")
    mp = pytest.MonkeyPatch()
    mp.setenv("KILN_CACHE_DIR", str(path))
    yield path
    mp.undo()


@pytest.fixture(autouse=True)
def _shared_cache(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KILN_CACHE_DIR", str(cache_dir))


@pytest.fixture(scope="module")
def llama() -> Any:
    return _example().tiny_llama()


@pytest.fixture(scope="module")
def compiled_llama(llama: Any, cache_dir: Path) -> tuple[dict[str, Any], Any]:
    fns = llm.functions(llama)
    return fns, kiln.torch.compile_functions(fns, target="cpu")


def _agree(prefill: Callable[..., Any], decode: Callable[..., Any],
           want_prefill: Callable[..., Any], want_decode: Callable[..., Any]) -> list[float]:
    """Greedy decoding both ways at each prompt length: the tokens must be equal; returns the
    largest logit difference per length."""
    gen = torch.Generator().manual_seed(3)
    worst = []
    for n in LENGTHS:
        tokens = torch.randint(0, 256, (1, n), generator=gen)
        want, want_logits = llm.generate(want_prefill, want_decode, tokens, STEPS)
        got, got_logits = llm.generate(prefill, decode, tokens, STEPS)
        assert got.tolist() == want.tolist(), n
        err = max(float((g - w).abs().max()) for g, w in zip(got_logits, want_logits, strict=True))
        assert err < ATOL, (n, err)
        worst.append(err)
    return worst


def test_llama_prefill_and_decode_through_kiln_torch_match_eager(
    compiled_llama: tuple[dict[str, Any], Any],
) -> None:
    fns, fast = compiled_llama
    _agree(fast.prefill, fast.decode, fns["prefill"].module, fns["decode"].module)
    mlir = fast.exported.mlir
    assert "func.func @prefill(%arg0: !torch.vtensor<[1,?],si64>)" in mlir
    assert "!torch.vtensor<[2,1,2,?,16],f32>" in mlir  # 2 layers, 2 KV heads of 16: GQA
    # One global per weight, read by both functions.
    names = list(fast.exported.params)
    assert mlir.count("util.global private") == len(names) == len(set(names))
    # The caches come back at the right length.
    _, keys, values = fast.prefill(torch.zeros(1, 5, dtype=torch.long))
    _, keys, values = fast.decode(torch.zeros(1, 1, dtype=torch.long), keys, values)
    assert keys.shape == values.shape == llm.cache_shape(fns["decode"].module.lm, 6)


def test_a_weight_written_in_place_reaches_both_functions(
    compiled_llama: tuple[dict[str, Any], Any], llama: Any,
) -> None:
    fns, fast = compiled_llama
    head = llama.lm_head.weight
    saved = head.detach().clone()
    try:
        with torch.no_grad():
            head.mul_(-1.0)
        _agree(fast.prefill, fast.decode, fns["prefill"].module, fns["decode"].module)
    finally:
        with torch.no_grad():
            head.copy_(saved)


def test_gpt2_prefill_and_decode_through_kiln_torch_match_eager() -> None:
    fns = llm.functions(tiny_gpt2())
    fast = kiln.torch.compile_functions(fns, target="cpu")
    _agree(fast.prefill, fast.decode, fns["prefill"].module, fns["decode"].module)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, cache_dir: Path,
          compiled_llama: Any) -> Path:
    """The example's graphs written and ``kiln build`` run on its manifest (in-process)."""
    from kiln.cli import main

    src = tmp_path_factory.mktemp("llm-example")
    _example().main(src)
    shutil.copy(EXAMPLE / "kiln.toml", src / "kiln.toml")
    out = src / "out"
    assert main(["build", str(src / "kiln.toml"), "-o", str(out), "--no-progress"]) == 0
    return out


def _numpy_fn(fn: Callable[..., Any]) -> Callable[..., tuple[torch.Tensor, ...]]:
    def call(*args: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return tuple(torch.from_numpy(np.asarray(o)) for o in fn(*(a.numpy() for a in args)))
    return call


def _load(out: Path, name: str, params: Path) -> Any:
    from kiln.client.params import ParamsArchive
    from kiln.client.runtime import load_vmfb

    doc = json.loads((out / "manifest.json").read_text())
    (entry,) = [a for a in doc["artifacts"] if a["model"] == name]
    return load_vmfb((out / entry["path"]).read_bytes(), driver="local-task",
                     params=ParamsArchive.open(params))


def test_the_onnx_route_built_from_the_manifest_with_weights_apart_matches_eager(
    built: Path, llama: Any,
) -> None:
    doc = json.loads((built / "manifest.json").read_text())
    assert doc["errors"] == []
    onnx = {a["model"]: a for a in doc["artifacts"] if a["model"] in ("prefill", "decode")}
    assert {a["params"]["path"] for a in onnx.values()} == {"prefill.irpa", "decode.irpa"}
    prefill = _load(built, "prefill", built / "prefill.irpa").main_graph
    decode = _load(built, "decode", built / "decode.irpa").main_graph
    fns = llm.functions(llama)
    _agree(_numpy_fn(prefill), _numpy_fn(decode), fns["prefill"].module, fns["decode"].module)


def test_the_torch_route_built_from_the_manifest_runs_with_its_saved_archive(
    built: Path, llama: Any,
) -> None:
    doc = json.loads((built / "manifest.json").read_text())
    (entry,) = [a for a in doc["artifacts"] if a["model"] == "decoder"]
    assert "params" not in entry  # the MLIR reads named parameters: its weights never left
    mod = _load(built, "decoder", built.parent / "decoder.irpa")
    fns = llm.functions(llama)
    _agree(_numpy_fn(mod.prefill), _numpy_fn(mod.decode), fns["prefill"].module,
           fns["decode"].module)
