"""The pipeline with the real disk cache: what hits, what misses, and why."""

from __future__ import annotations

from pathlib import Path

from kiln.cache import open_cache
from kiln.compiler.pipeline import Pipeline
from tests.graphs import LINALG
from tests.test_determinism import REFORMATTED


def test_reformatted_graph_hits_and_other_target_or_option_misses(tmp_path: Path) -> None:
    compiles: list[str] = []
    with Pipeline(cache=open_cache(cache_dir=tmp_path), workers=1) as p:
        p.on_compile = lambda kind, outcome, s: compiles.append(kind)
        first = p.compile(LINALG.encode(), targets=["cpu"])
        assert first.artifacts[0].cached is False and compiles == ["cpu"]

        again = p.compile(REFORMATTED.encode(), targets=["cpu"])
        assert again.graph_digest == first.graph_digest
        assert again.artifacts[0].cached is True
        assert again.artifacts[0].key == first.artifacts[0].key
        assert again.artifacts[0].digest == first.artifacts[0].digest
        assert compiles == ["cpu"], "a hit never runs the compiler"

        other_target = p.compile(LINALG.encode(), targets=["cpu:x86_64:znver3"])
        other_option = p.compile(LINALG.encode(), targets=["cpu"], options={"opt_level": "O3"})
        assert other_target.artifacts[0].cached is False
        assert other_option.artifacts[0].cached is False
        keys = {first.artifacts[0].key, other_target.artifacts[0].key, other_option.artifacts[0].key}
        assert len(keys) == 3
        assert compiles == ["cpu", "cpu", "cpu"]


def test_cached_artifact_bytes_equal_a_fresh_compile(tmp_path: Path, pipeline: Pipeline) -> None:
    with Pipeline(cache=open_cache(cache_dir=tmp_path), workers=1) as p:
        cached = p.compile(LINALG.encode(), targets=["vulkan"]).artifacts[0]
        blob = p.cache.read_blob(cached.digest)  # type: ignore[union-attr]
    fresh = pipeline.compile(LINALG.encode(), targets=["vulkan"]).artifacts[0]
    assert blob == fresh.data
