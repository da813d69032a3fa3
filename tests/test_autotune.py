"""Autotune: compile allow-listed presets, time them here, keep the fastest, remember it."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kiln.cli.backends import EmbeddedBackend, compile_fn
from kiln.client.autotune import autotune, cheap_traits, tuned_options
from kiln.compiler.pipeline import Pipeline
from kiln.errors import InvalidRequest
from kiln.targets.presets import PRESETS
from tests.graphs import onnx_mlp
from tests.test_presets import LINALG_CONV, onnx_cnn

CPU = "cpu:x86_64:generic"


class CountingCompiler:
    """Wraps a compile callable and records the options of every compile it was asked for."""

    def __init__(self, pipeline: Pipeline, graph: bytes) -> None:
        self.inner = compile_fn(EmbeddedBackend(pipeline), graph, target=CPU)
        self.calls: list[dict[str, Any]] = []

    def __call__(self, options: Mapping[str, Any]) -> bytes:
        self.calls.append(dict(options))
        return self.inner(options)


def test_autotune_picks_a_variant_with_default_among_them_and_remembers_it(
    pipeline: Pipeline, tmp_path: Path
) -> None:
    graph = onnx_cnn()
    comp = CountingCompiler(pipeline, graph)
    first = autotune(graph, target=CPU, compile=comp, repeats=3, cache_dir=tmp_path)
    assert not first.cached
    assert {} in comp.calls  # the default preset is always a candidate
    assert "default" in first.timings_ms
    assert first.preset in first.timings_ms and first.preset in PRESETS
    # Never slower than the default on this machine's own measurement.
    assert first.timings_ms[first.preset] <= first.timings_ms["default"]
    assert first.options == ({} if first.preset == "default" else {"preset": first.preset})
    assert len(first.timings_ms) >= 2 or first.skipped  # several variants were really tried
    assert first.compiles == len(comp.calls)

    n = len(comp.calls)
    second = autotune(graph, target=CPU, compile=comp, repeats=3, cache_dir=tmp_path)
    assert second.cached and len(comp.calls) == n  # remembered: no compile at all
    assert (second.preset, second.options, second.key) == (first.preset, first.options, first.key)
    assert tuned_options(graph, target=CPU, compile=comp, cache_dir=tmp_path) == first.options
    assert len(comp.calls) == n


def test_the_choice_is_keyed_by_graph_and_target(pipeline: Pipeline, tmp_path: Path) -> None:
    graph = onnx_mlp()
    comp = CountingCompiler(pipeline, graph)
    a = autotune(graph, target=CPU, compile=comp, repeats=2, cache_dir=tmp_path)
    other = autotune(onnx_cnn(), target=CPU, compile=CountingCompiler(pipeline, onnx_cnn()),
                     repeats=2, cache_dir=tmp_path)
    assert a.key != other.key and not other.cached
    again = autotune(graph, target="cpu", compile=comp, repeats=2, cache_dir=tmp_path)
    assert again.cached and again.key == a.key  # "cpu" normalizes to the same target
    assert len(list(tmp_path.glob("*.json"))) == 2


def test_mlir_graph_inputs_come_from_the_executable(pipeline: Pipeline, tmp_path: Path) -> None:
    graph = LINALG_CONV.encode()
    res = autotune(graph, target=CPU, compile=CountingCompiler(pipeline, graph), repeats=2,
                   cache_dir=tmp_path, candidates=["default", "conv-im2col"])
    assert set(res.timings_ms) | set(res.skipped) == {"default", "conv-im2col"}


def test_unknown_candidate_is_an_invalid_request(pipeline: Pipeline, tmp_path: Path) -> None:
    with pytest.raises(InvalidRequest):
        autotune(onnx_mlp(), target=CPU, compile=CountingCompiler(pipeline, onnx_mlp()),
                 candidates=["default", "warp-speed"], cache_dir=tmp_path)


def test_cheap_traits_read_onnx_without_the_compiler() -> None:
    assert cheap_traits(onnx_cnn(depthwise=True)) == {
        "conv": 1, "depthwise_conv": 1, "matmul": 0, "attention": 0}
    assert cheap_traits(onnx_mlp())["matmul"] == 2
    assert cheap_traits(LINALG_CONV.encode())["conv"] == 1


def test_inputs_may_be_given(pipeline: Pipeline, tmp_path: Path) -> None:
    graph = onnx_mlp()
    x = np.ones((4, 8), np.float32)
    res = autotune(graph, target=CPU, compile=CountingCompiler(pipeline, graph), inputs=[x],
                   repeats=2, cache_dir=tmp_path, candidates=["default", "baseline"])
    assert set(res.timings_ms) <= {"default", "baseline"} and "default" in res.timings_ms
