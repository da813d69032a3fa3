"""Decode throughput of a Llama-class decoder: Kiln's compiled decode against torch eager, CPU.

The model: ``LlamaForCausalLM`` from a config (seeded random weights; RoPE, RMSNorm,
grouped-query attention), bigger than the tests' (default 4 layers, hidden 256, 8 heads over 4
key/value heads, MLP 688, vocabulary 4096), as prefill and decode over a plain-tensor KV cache
(``kiln.torch.llm``), compiled once by ``kiln.torch.compile_functions`` for the CPU (one
executable, both functions, weights bound from the module). Each variant generates greedily
from the same prompt (``--prompt`` tokens) and must produce eager's tokens.

A block: one prefill, then ``--tokens`` decode steps; its figure is decode tokens per second
(the steps over the decode time, prefill excluded). Blocks alternate between the variants in a
fresh random order each round (seeded) with a 0.2 s pause before each; a variant's figure is the
median over ``--rounds`` rounds, its ratio the median of per-round ratios to eager. Variants:
torch eager (``torch.no_grad``, torch's own threads), Kiln on ``local-task`` (IREE's worker
pool) and on ``local-sync`` (the calling thread).

Run: ``.venv/bin/python bench/llm_decoder.py [--rounds N] [--tokens N] [--prompt N]
[--layers N] [--hidden N] [--threads N]``. Figures: bench/RESULTS.md, "LLM decoder".
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def model(layers: int, hidden: int, vocab: int) -> Any:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    heads = max(2, hidden // 32)
    cfg = LlamaConfig(vocab_size=vocab, hidden_size=hidden, intermediate_size=hidden * 43 // 16,
                      num_hidden_layers=layers, num_attention_heads=heads,
                      num_key_value_heads=heads // 2, max_position_embeddings=2048,
                      bos_token_id=0, eos_token_id=1)
    return LlamaForCausalLM(cfg).eval()


Step = Callable[..., Any]


def block(prefill: Step, decode: Step, prompt: Any, steps: int) -> tuple[float, list[int]]:
    """Decode tokens per second over ``steps`` greedy steps after one prefill, and the tokens."""
    import torch

    with torch.no_grad():
        logits, keys, values = prefill(prompt)
        tok = logits[:, -1].argmax(-1, keepdim=True)
        out = [int(tok)]
        t0 = time.perf_counter()
        for _ in range(steps):
            logits, keys, values = decode(tok, keys, values)
            tok = logits[:, -1].argmax(-1, keepdim=True)
            out.append(int(tok))
        dt = time.perf_counter() - t0
    return steps / dt, out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--tokens", type=int, default=64, help="decode steps per block")
    ap.add_argument("--prompt", type=int, default=32, help="prompt tokens")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--vocab", type=int, default=4096)
    ap.add_argument("--threads", type=int, default=0,
                    help="torch.set_num_threads for eager (0: torch's default)")
    args = ap.parse_args(argv)

    import torch

    import kiln.torch
    from kiln.torch import llm

    if args.threads:
        torch.set_num_threads(args.threads)
    lm = model(args.layers, args.hidden, args.vocab)
    fns = llm.functions(lm)
    t0 = time.perf_counter()
    task = kiln.torch.compile_functions(fns, device="cpu")
    first = time.perf_counter() - t0
    sync = kiln.torch.compile_functions(fns, device="cpu", driver="local-sync")  # cache hit
    prompt = torch.randint(0, args.vocab, (1, args.prompt), generator=torch.Generator().manual_seed(1))
    variants: dict[str, tuple[Step, Step]] = {
        "torch eager": (fns["prefill"].module, fns["decode"].module),
        "kiln local-task": (task.prefill, task.decode),
        "kiln local-sync": (sync.prefill, sync.decode),
    }
    want = block(*variants["torch eager"], prompt, args.tokens)[1]
    for name, (p, d) in variants.items():
        got = block(p, d, prompt, args.tokens)[1]  # also the warm-up
        if got != want:
            print(f"{name}: greedy tokens differ from eager's", file=sys.stderr)
            return 1

    load0 = os.getloadavg()[0]
    rng = random.Random(0)
    rates: dict[str, list[float]] = {n: [] for n in variants}
    ratios: dict[str, list[float]] = {n: [] for n in variants}
    for _ in range(args.rounds):
        order = list(variants)
        rng.shuffle(order)
        got: dict[str, float] = {}
        for name in order:
            time.sleep(0.2)
            got[name] = block(*variants[name], prompt, args.tokens)[0]
            rates[name].append(got[name])
        for name in variants:
            ratios[name].append(got[name] / got["torch eager"])

    load = f"{load0:.1f} -> {os.getloadavg()[0]:.1f}"
    cfg = lm.config
    print(f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores, 1-minute load {load}; torch {torch.__version__} "
          f"({torch.get_num_threads()} threads); target {task.target}")
    print(f"Llama: {cfg.num_hidden_layers} layers, hidden {cfg.hidden_size}, "
          f"{cfg.num_attention_heads} heads / {cfg.num_key_value_heads} KV, MLP "
          f"{cfg.intermediate_size}, vocab {cfg.vocab_size}; "
          f"{sum(p.numel() for p in lm.parameters()) / 1e6:.1f} M parameters; prompt "
          f"{args.prompt}, {args.tokens} decode steps per block, {args.rounds} rounds; "
          f"compile (both functions) {first:.1f} s")
    print()
    print("| variant | decode tokens/s (median) | min | max | vs eager (median of rounds) |")
    print("|---|---|---|---|---|")
    for name in variants:
        r = rates[name]
        print(f"| {name} | {statistics.median(r):.1f} | {min(r):.1f} | {max(r):.1f} | "
              f"{statistics.median(ratios[name]):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
