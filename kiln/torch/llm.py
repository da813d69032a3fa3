"""A decoder-only language model as two exportable functions over a plain-tensor KV cache.

``transformers``' causal LMs keep their KV cache in a ``DynamicCache`` object, which
``torch.export`` and ``torch.onnx.export`` take neither as an input nor as an output. ``Prefill``
and ``Decode`` wrap one model (``LlamaForCausalLM``, ``GPT2LMHeadModel``, ...) and carry the
cache as two tensors, every layer's keys and values stacked::

    prefill(tokens[1, S])                      -> logits[1, S, V], keys[L, 1, H, S, D], values
    decode(token[1, 1], keys[..P..], values)   -> logits[1, 1, V], keys[L, 1, H, P+1, D], values

``L`` layers, ``H`` key/value heads (fewer than the attention heads under grouped-query
attention), ``D`` the head size. ``S`` and ``P`` are dynamic (``functions``), so one executable
serves every prompt length and every step. Each wrapper builds a ``DynamicCache`` from the
tensors inside ``forward`` and reads it back: the model's own attention, RoPE and norms run
unchanged. Both wrappers hold the model as ``self.lm``, so their parameters have the same
names (``lm.model.layers.0.self_attn.q_proj.weight``) and ``kiln.torch.compile_functions``
binds one weight set for both.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from kiln.torch import Function

__all__ = ["Decode", "Prefill", "cache_shape", "functions", "generate"]


def _cache(lm: torch.nn.Module) -> Any:
    from transformers.cache_utils import DynamicCache

    return DynamicCache(config=_config(lm))


def _config(lm: torch.nn.Module) -> Any:
    """The model's ``transformers`` config (``PreTrainedConfig``)."""
    return lm.config


def _stacked(cache: Any) -> tuple[torch.Tensor, torch.Tensor]:
    return (torch.stack([layer.keys for layer in cache.layers]),
            torch.stack([layer.values for layer in cache.layers]))


class Prefill(torch.nn.Module):
    """``tokens[1, S]`` -> ``(logits[1, S, V], keys, values)``, the cache of the ``S`` tokens."""

    def __init__(self, lm: torch.nn.Module) -> None:
        super().__init__()
        self.lm = lm

    def forward(self, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        cache = _cache(self.lm)
        out = self.lm(input_ids=tokens, cache=cache, use_cache=True)
        return (out.logits, *_stacked(cache))


class Decode(torch.nn.Module):
    """``(token[1, 1], keys, values)`` with a cache of ``P`` positions -> ``(logits[1, 1, V],
    keys, values)`` with ``P + 1``; the token is at position ``P``."""

    def __init__(self, lm: torch.nn.Module) -> None:
        super().__init__()
        self.lm = lm

    def forward(self, token: torch.Tensor, keys: torch.Tensor,
                values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        cache = _cache(self.lm)
        for i in range(keys.shape[0]):
            cache.update(keys[i], values[i], i)
        p = keys.shape[3]
        pos = torch.arange(p, p + 1).unsqueeze(0)
        out = self.lm(input_ids=token, cache=cache, use_cache=True, position_ids=pos,
                      cache_position=pos[0])
        return (out.logits, *_stacked(cache))


def cache_shape(lm: torch.nn.Module, length: int) -> tuple[int, int, int, int, int]:
    """``[L, 1, H, length, D]``: the shape of ``keys`` (and ``values``) after ``length``
    tokens."""
    cfg = _config(lm)
    heads = cfg.num_attention_heads
    kv = getattr(cfg, "num_key_value_heads", None) or heads
    dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // heads
    return (cfg.num_hidden_layers, 1, kv, length, dim)


def functions(lm: torch.nn.Module, *, example_len: int = 7) -> dict[str, Function]:
    """``{"prefill", "decode"}`` for ``kiln.torch.compile_functions`` / ``export_functions``:
    the wrappers, example inputs (``example_len`` tokens, a cache of that many positions) and
    the dynamic dims (``S``: the prompt's length; ``P``: the cache's). ``example_len`` must be
    at least 2 (``torch.export`` specializes a size-1 example)."""
    from torch.export import Dim

    vocab = _config(lm).vocab_size
    gen = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, vocab, (1, example_len), generator=gen)
    keys = torch.zeros(cache_shape(lm, example_len))
    dyn = Dim.DYNAMIC
    return {
        "prefill": Function(Prefill(lm), (tokens,), ({1: dyn},)),
        "decode": Function(Decode(lm), (tokens[:, :1], keys, keys.clone()),
                           ({}, {3: dyn}, {3: dyn})),
    }


Step = Callable[..., tuple[torch.Tensor, torch.Tensor, torch.Tensor]]


def generate(prefill: Step, decode: Step, tokens: torch.Tensor, steps: int
             ) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """Greedy decoding: ``steps`` new tokens after ``tokens[1, S]`` (the prefill's argmax, then
    one decode per further token). Returns the new tokens ``[1, steps]`` and the logits of
    each step (``[1, V]``). ``prefill``/``decode``: the wrappers, or their compiled
    functions."""
    with torch.no_grad():
        logits, keys, values = prefill(tokens)
        last = logits[:, -1]
        out, seen = [], [last]
        for _ in range(steps - 1):
            tok = last.argmax(-1, keepdim=True)
            out.append(tok)
            logits, keys, values = decode(tok, keys, values)
            last = logits[:, -1]
            seen.append(last)
        out.append(last.argmax(-1, keepdim=True))
    return torch.cat(out, dim=1), seen

