"""Write the graphs of ``examples/llm_decoder/kiln.toml``: a tiny Llama-class decoder
(``transformers``' ``LlamaForCausalLM`` from a config, seeded random weights: 2 layers, hidden
64, 4 attention heads over 2 key/value heads, vocabulary 256) as prefill and decode
(``kiln.torch.llm``):

- ``decoder.mlir``: both functions in one weight-free torch-dialect module
  (``kiln.torch.export_functions``), and ``decoder.irpa``: its weights (``kiln.torch.save_params``);
- ``prefill.onnx``, ``decode.onnx``: the same functions through ``torch.onnx.export``, the
  sequence and cache lengths dynamic, weights inside (``kiln build`` takes them apart).

    .venv/bin/python examples/llm_decoder/make_llm_decoder.py [OUT_DIR]   # default: beside this file
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def tiny_llama(seed: int = 0) -> Any:
    """The decoder: ``LlamaForCausalLM`` with seeded random weights, in eval mode."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=128,
                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                      max_position_embeddings=256, bos_token_id=0, eos_token_id=1)
    return LlamaForCausalLM(cfg).eval()


def write_onnx(fn: Any, path: Path, inputs: list[str], outputs: list[str]) -> None:
    """``fn`` (a ``kiln.torch.Function``) as a self-contained ONNX model at ``path``."""
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.onnx's own deprecation and progress notes
        torch.onnx.export(fn.module, tuple(fn.args), str(path), input_names=inputs,
                          output_names=outputs, dynamic_shapes=fn.dynamic_shapes,
                          dynamo=True, external_data=False, verbose=False)


def main(out: Path = HERE) -> None:
    import kiln.torch
    from kiln.torch import llm

    out.mkdir(parents=True, exist_ok=True)
    fns = llm.functions(tiny_llama())
    ex = kiln.torch.export_functions(fns)
    (out / "decoder.mlir").write_text(ex.mlir)
    kiln.torch.save_params(ex.params, out / "decoder.irpa")
    write_onnx(fns["prefill"], out / "prefill.onnx", ["tokens"], ["logits", "keys", "values"])
    write_onnx(fns["decode"], out / "decode.onnx", ["token", "past_keys", "past_values"],
               ["logits", "keys", "values"])


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
