"""The front-end cache (kiln/compiler/frontend.py): a graph's input phase, imported once and shared
by its targets, with executables byte-identical to a compile from the graph's text."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from kiln.cache import open_cache
from kiln.compiler import frontend
from kiln.compiler.pipeline import Pipeline
from kiln.compiler.tasks import compile_module
from kiln.targets import normalize_options, parse_target
from tests.test_params_external import convnet, inputs, reference

RTOL, ATOL = 1e-4, 1e-4


@pytest.fixture(scope="module")
def model_bytes() -> bytes:
    """A small ONNX conv net (torch-onnx input conversion, like any ONNX model; small, so the
    module's dozen compiles take seconds)."""
    return bytes(convnet(3).SerializeToString())


@pytest.fixture(scope="module")
def uncached() -> Iterator[Pipeline]:
    with Pipeline(workers=1, compile_timeout=240) as p:
        yield p


def cached(path: Path) -> tuple[Pipeline, list[str]]:
    p = Pipeline(cache=open_cache(cache_dir=path), workers=1, compile_timeout=240)
    events: list[str] = []
    p.on_frontend = events.append
    return p, events


def test_the_key_keeps_input_flags_and_drops_later_phases_and_backends() -> None:
    flags = ("--iree-hal-target-device=cuda", "--iree-cuda-target=sm_80", "--iree-opt-level=O3",
             "--iree-dispatch-creation-enable-aggressive-fusion",
             "--iree-input-demote-f64-to-f32=false", "--iree-some-future-flag=1")
    assert frontend.front_flags(flags) == ("--iree-input-demote-f64-to-f32=false",
                                           "--iree-some-future-flag=1")


def test_a_graphs_input_phase_is_the_same_for_every_gpu_and_vulkan_target(
    uncached: Pipeline, model_bytes: bytes,
) -> None:
    """What makes one front-end key right for every target: the phase's bytes do not depend on
    the target (Kiln's own flag sets for each kind)."""
    graph = uncached.prepare(model_bytes)
    fronts = {}
    for target in ("vulkan", "cuda:sm_80", "rocm:gfx942"):
        spec = parse_target(target)
        flags = uncached.flags_for(spec, normalize_options(None), graph=graph)
        out = compile_module(mlir=graph.mlir, flags=list(flags), module_attr=spec.module_attr,
                             want_front=True)
        assert out.front, target
        fronts[target] = out.front
    assert len(set(fronts.values())) == 1
    assert len({frontend.frontend_key(graph.digest, flags=uncached.flags_for(
        parse_target(t), normalize_options(None), graph=graph), module_attr=None,
        compiler=uncached.compiler).digest() for t in fronts}) == 1


@pytest.mark.vulkan
def test_a_second_target_starts_from_the_first_ones_input_phase(
    tmp_path: Path, uncached: Pipeline, model_bytes: bytes,
) -> None:
    p, events = cached(tmp_path)
    with p:
        graph = p.prepare(model_bytes)
        opts = normalize_options(None)
        p.compile_prepared(graph, parse_target("cuda:sm_80"), opts)
        assert events == ["miss"]
        art = p.compile_prepared(graph, parse_target("vulkan"), opts)
        assert events == ["miss", "hit"]
        # the same bytes as a compile from the graph's text, and right on lavapipe
        plain = uncached.compile_prepared(graph, parse_target("vulkan"), opts)
        assert art.data == plain.data
        from kiln.client.runtime import load_vmfb

        model = convnet(3)
        x = inputs((1, 3, 16, 16))
        got = np.asarray(load_vmfb(art.data, driver="vulkan")[graph.functions[0]](x))
        np.testing.assert_allclose(got, reference(model, x), rtol=RTOL, atol=ATOL)
        # (the command-line engine starting from a stored phase: the sm_90 test below)


def test_an_unreadable_stored_phase_is_ignored(
    tmp_path: Path, uncached: Pipeline, model_bytes: bytes,
) -> None:
    """A stored phase the compiler cannot read (bytes that verify against their record but are
    not MLIR) costs the compile nothing: it goes on from the graph's text, same bytes, no error
    or warning from the bad phase."""
    p, events = cached(tmp_path)
    with p:
        graph = p.prepare(model_bytes)
        spec, opts = parse_target("vulkan"), normalize_options(None)
        assert p.cache is not None
        key = frontend.frontend_key(graph.digest, flags=p.flags_for(spec, opts, graph=graph),
                                    module_attr=spec.module_attr, compiler=p.compiler)
        frontend.store(p.cache, key, b"ML\xefR" + b"\x00not bytecode" * 8)
        art = p.compile_prepared(graph, spec, opts)
        assert events == ["hit"]  # it was offered
        assert art.data == uncached.compile_prepared(graph, spec, opts).data
        assert not art.warnings


def test_off_means_nothing_is_stored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     model_bytes: bytes) -> None:
    monkeypatch.setenv("KILN_FRONTEND_CACHE", "0")
    p, events = cached(tmp_path)
    with p:
        graph = p.prepare(model_bytes)
        spec, opts = parse_target("vulkan"), normalize_options(None)
        p.compile_prepared(graph, spec, opts)
        assert p.cache is not None
        key = frontend.frontend_key(graph.digest, flags=p.flags_for(spec, opts, graph=graph),
                                    module_attr=None, compiler=p.compiler)
        assert events == [] and frontend.lookup(p.cache, key) is None
    assert not frontend.enabled(10, engine="session")
    monkeypatch.delenv("KILN_FRONTEND_CACHE")
    assert frontend.enabled(10, engine="session")
    assert not frontend.enabled(10, engine="cli")
    assert not frontend.enabled(frontend.MAX_MLIR_BYTES + 1, engine="session")


def test_a_target_whose_module_names_its_device_has_its_own_phase(
    tmp_path: Path, uncached: Pipeline, model_bytes: bytes,
) -> None:
    """``cuda:sm_90`` is declared as a module attribute (no flag names it): its phase holds the
    attribute, so it is keyed apart from ``cuda:sm_80``'s, and a compile from it (without
    adding the attribute again) is byte-identical to one from the text."""
    p, events = cached(tmp_path)
    with p:
        graph = p.prepare(model_bytes)
        spec, opts = parse_target("cuda:sm_90"), normalize_options(None)
        assert spec.module_attr
        first = p.compile_prepared(graph, spec, opts)
        assert p.cache is not None and p.cache.disk is not None
        p.cache.disk.delete_record(p.key_for(graph, spec, opts).digest())
        again = p.compile_prepared(graph, spec, opts)
        assert events == ["miss", "hit"] and not again.cached
        assert again.data == first.data == uncached.compile_prepared(graph, spec, opts).data
        keys = {frontend.frontend_key(graph.digest, flags=p.flags_for(parse_target(t), opts,
                                                                      graph=graph),
                                      module_attr=parse_target(t).module_attr,
                                      compiler=p.compiler).digest()
                for t in ("cuda:sm_90", "cuda:sm_80")}
        assert len(keys) == 2
