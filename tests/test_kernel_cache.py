"""The kernel cache (kiln/compiler/kernels.py): GPU and Vulkan executables assembled from cached
per-dispatch kernels, checked against a one-job compile on lavapipe, bit for bit."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from kiln.cache import ArtifactCache, open_cache
from kiln.compiler import kernels
from kiln.compiler.pipeline import Artifact, Pipeline
from kiln.targets import normalize_options, parse_target

# (in, out, relu?) per layer; DEEP is SHALLOW with one more hidden layer before the head, so it
# shares SHALLOW's first three kernels.
SHALLOW = [(64, 128, True), (128, 256, True), (256, 128, True), (128, 10, False)]
DEEP = [(64, 128, True), (128, 256, True), (256, 128, True), (128, 64, True), (64, 10, False)]
BATCH = 16


def mlp(layers: Sequence[tuple[int, int, bool]]) -> bytes:
    """A linalg MLP ``main(x, w1, w2, ...)``: matmul, then ReLU on the hidden layers."""
    args = [f"%x: tensor<{BATCH}x{layers[0][0]}xf32>"]
    body = ["  %zero = arith.constant 0.0 : f32"]
    cur = "%x"
    for i, (din, dout, relu) in enumerate(layers):
        t = f"tensor<{BATCH}x{dout}xf32>"
        args.append(f"%w{i}: tensor<{din}x{dout}xf32>")
        body += [
            f"  %e{i} = tensor.empty() : {t}",
            f"  %f{i} = linalg.fill ins(%zero : f32) outs(%e{i} : {t}) -> {t}",
            f"  %m{i} = linalg.matmul ins({cur}, %w{i} : tensor<{BATCH}x{din}xf32>, "
            f"tensor<{din}x{dout}xf32>) outs(%f{i} : {t}) -> {t}",
        ]
        cur = f"%m{i}"
        if relu:
            body += [
                f"  %r{i} = linalg.generic {{indexing_maps = [#id, #id], iterator_types = "
                f'["parallel", "parallel"]}} ins({cur} : {t}) outs(%e{i} : {t}) {{',
                "  ^bb0(%a: f32, %o: f32):",
                "    %v = arith.maximumf %a, %zero : f32",
                "    linalg.yield %v : f32",
                f"  }} -> {t}",
            ]
            cur = f"%r{i}"
    out = f"tensor<{BATCH}x{layers[-1][1]}xf32>"
    text = ("#id = affine_map<(i, j) -> (i, j)>\n"
            f"func.func @main({', '.join(args)}) -> {out} {{\n" + "\n".join(body)
            + f"\n  return {cur} : {out}\n}}\n")
    return text.encode()


def inputs(layers: Sequence[tuple[int, int, bool]]) -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    xs = [rng.standard_normal((BATCH, layers[0][0])).astype(np.float32)]
    xs += [(rng.standard_normal((i, o)) / np.sqrt(i)).astype(np.float32) for i, o, _ in layers]
    return xs


def reference(layers: Sequence[tuple[int, int, bool]], xs: list[np.ndarray]) -> np.ndarray:
    y = xs[0]
    for (_, _, relu), w in zip(layers, xs[1:], strict=True):
        y = y @ w
        y = np.maximum(y, 0) if relu else y
    return y


@pytest.fixture(autouse=True)
def _kernel_cache_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KILN_KERNEL_CACHE", "1")


class Kernels:
    """A cached pipeline whose kernel events are counted per compile."""

    def __init__(self, cache: ArtifactCache) -> None:
        self.cache = cache
        self.pipeline = Pipeline(cache=cache, workers=1, compile_timeout=240)
        self.events: Counter[str] = Counter()
        self.pipeline.on_kernel = lambda kind, result: self.events.update([result])

    def compile(self, layers: Sequence[tuple[int, int, bool]], target: str, *,
                again: bool = False) -> Artifact:
        """Compile; with ``again``, drop the whole executable's record first (kernels stay)."""
        self.events.clear()
        graph = self.pipeline.prepare(mlp(layers))
        spec, opts = parse_target(target), normalize_options(None)
        if again:
            assert self.cache.disk is not None
            self.cache.disk.delete_record(self.pipeline.key_for(graph, spec, opts).digest())
        art = self.pipeline.compile_prepared(graph, spec, opts)
        assert not art.cached
        return art


@pytest.fixture(scope="module")
def vulkan_kernels(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernels]:
    k = Kernels(open_cache(cache_dir=tmp_path_factory.mktemp("kernel-cache")))
    yield k
    k.pipeline.close()


def run(art: Artifact | bytes, layers: Sequence[tuple[int, int, bool]]) -> np.ndarray:
    from kiln.client.runtime import load_vmfb

    data = art if isinstance(art, bytes) else art.data
    return np.asarray(load_vmfb(data, driver="vulkan")["main"](*inputs(layers)))


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and bool(np.array_equal(a.view(np.uint32),
                                                                             b.view(np.uint32)))


# -- without the compiler -------------------------------------------------------------------------

EXE = """  hal.executable private @{name} {{
    hal.executable.export public @{name}_matmul_{n} ordinal(0)
    func.func @{name}_matmul_{n}() {{ return }}
  }}
"""


def sources(*exes: tuple[str, int]) -> str:
    refs = "".join(f"  flow.dispatch @{name}::@{name}_matmul_{n}\n" for name, n in exes)
    return "module {\n" + "".join(EXE.format(name=name, n=n) for name, n in exes) + refs + "}\n"


def test_the_same_kernel_gets_the_same_name_wherever_it_is() -> None:
    a_text, a = kernels.rename_executables(sources(("main_dispatch_0", 4), ("main_dispatch_1", 8)))
    b_text, b = kernels.rename_executables(sources(*((f"f_dispatch_{i}", i) for i in range(11))))
    assert (a[0], a[1]) == (b[4], b[8]) and a[0].name == "k" + a[0].digest[:24]
    assert len({x.name for x in b}) == 11
    # every reference renamed; f_dispatch_1 never taken for a prefix of f_dispatch_10
    assert "dispatch_" not in a_text + b_text
    for i, x in enumerate(b):
        assert f"@{x.name}::@{x.name}_matmul_{i}\n" in b_text


def test_kernels_differing_only_in_the_alignment_their_call_sites_gave_share_a_name() -> None:
    # IREE writes what it proved about a binding's offsets into the kernel (alignment(N)): the
    # same layer elsewhere in another model gets another N. Above 64 it is clamped to 64.
    def exe(align: int) -> str:
        return sources(("main_dispatch_0", 4)).replace(
            "    func.func", f"    // subspan alignment({align})\n    func.func")

    found = [kernels.rename_executables(exe(a))[1][0] for a in (64, 2048, 16384, 32)]
    assert found[0] == found[1] == found[2] != found[3]
    assert "alignment(64)" in found[2].source and "alignment(16384)" not in found[2].source
    # two such executables in one module: the second keeps its own alignment (its own name)
    two = sources(("main_dispatch_0", 4), ("main_dispatch_1", 4))
    for i, align in ((0, 64), (1, 2048)):
        two = two.replace(f"    func.func @main_dispatch_{i}_",
                          f"    // subspan alignment({align})\n    func.func @main_dispatch_{i}_")
    _, (a, b) = kernels.rename_executables(two)
    assert a == found[0] and a.name != b.name and "alignment(2048)" in b.source


def test_two_executables_with_one_text_are_refused() -> None:
    from kiln.errors import CompileError

    with pytest.raises(CompileError):
        kernels.rename_executables(sources(("main_dispatch_0", 4), ("main_dispatch_1", 4)))


def test_a_kernel_blob_round_trips_and_garbage_is_refused() -> None:
    blob = kernels.pack_kernel('hal.executable private @k1 {"kiln-kernel.bin"}', b"\x03\x02", ".spv")
    assert kernels.unpack_kernel(blob) == ('hal.executable private @k1 {"kiln-kernel.bin"}',
                                           b"\x03\x02", ".spv")
    for bad in (b"", b"not a kernel", b'{"format": 0}\nxx', blob.replace(b".spv", b"/../x")):
        with pytest.raises(ValueError):
            kernels.unpack_kernel(bad)


def test_only_gpu_and_vulkan_kinds_and_the_ones_the_setting_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def on() -> list[str]:
        return [k for k in ("cpu", "vulkan", "cuda", "rocm", "metal") if kernels.enabled(k)]

    assert on() == ["vulkan", "cuda", "rocm"]  # KILN_KERNEL_CACHE=1 (the fixture)
    for off in ("0", "", "off"):
        monkeypatch.setenv("KILN_KERNEL_CACHE", off)
        assert on() == []
    monkeypatch.setenv("KILN_KERNEL_CACHE", "rocm, vulkan")
    assert on() == ["vulkan", "rocm"]
    monkeypatch.setenv("KILN_KERNEL_CACHE", "1")
    # a graph with its weights inline past the bound compiles in one job
    assert kernels.enabled("vulkan", kernels.MAX_MLIR_BYTES)
    assert not kernels.enabled("vulkan", kernels.MAX_MLIR_BYTES + 1)
    # By default (unset or auto): the kinds where it was measured to pay.
    monkeypatch.delenv("KILN_KERNEL_CACHE")
    assert set(on()) == kernels.DEFAULT_KINDS
    monkeypatch.setenv("KILN_KERNEL_CACHE", "auto")
    assert set(on()) == kernels.DEFAULT_KINDS
    # A value it cannot read: the default, and `kiln serve` refuses it (one line, exit 2).
    monkeypatch.setenv("KILN_KERNEL_CACHE", "vulkan,metal")
    assert set(on()) == kernels.DEFAULT_KINDS
    with pytest.raises(ValueError, match="unknown kind metal"):
        kernels.kinds_setting("vulkan,metal")
    import io

    from kiln.cli import main

    err = io.StringIO()
    assert main(["serve", "--port", "1"], stdout=io.StringIO(), stderr=err) == 2
    assert err.getvalue().startswith("kiln serve: invalid settings: KILN_KERNEL_CACHE='vulkan,metal'")
    assert "unknown kind metal" in err.getvalue() and len(err.getvalue().splitlines()) == 1


def test_kernel_keys_change_with_target_flags_and_compiler() -> None:
    from kiln.targets.toolchain import compiler_identity

    ident = compiler_identity()
    base = kernels.kernel_key("ab" * 32, target="vulkan", flags=("-a",), compiler=ident)
    assert base.options_dict == {"kernel": kernels.KERNEL_FORMAT}
    others = [
        kernels.kernel_key("cd" * 32, target="vulkan", flags=("-a",), compiler=ident),
        kernels.kernel_key("ab" * 32, target="vulkan:rdna3", flags=("-a",), compiler=ident),
        kernels.kernel_key("ab" * 32, target="vulkan", flags=("-b",), compiler=ident),
    ]
    assert len({base.digest(), *(k.digest() for k in others)}) == 4


# -- through the compiler -------------------------------------------------------------------------


@pytest.mark.vulkan
def test_a_model_sharing_layers_reuses_their_kernels_with_identical_results(
    vulkan_kernels: Kernels, pipeline: Pipeline
) -> None:
    k = vulkan_kernels
    k.compile(SHALLOW, "vulkan")
    assert k.events == {"miss": 4}
    deep = k.compile(DEEP, "vulkan")
    assert k.events == {"hit": 3, "miss": 2}  # SHALLOW's three hidden layers hit
    warm = k.compile(DEEP, "vulkan", again=True)
    assert k.events == {"hit": 5}
    # the bytes do not depend on which kernels were cached; the compile key is the usual one
    assert warm.digest == deep.digest and warm.key == deep.key
    normal = pipeline.compile(mlp(DEEP), targets=["vulkan"]).artifacts[0]  # one job, no cache
    assert normal.key == deep.key
    got, want = run(deep, DEEP), run(normal, DEEP)
    assert same_bits(got, want)
    np.testing.assert_allclose(got, reference(DEEP, inputs(DEEP)), rtol=1e-4, atol=1e-4)


@pytest.mark.vulkan
def test_a_corrupt_or_malformed_kernel_falls_back_to_a_correct_executable(
    vulkan_kernels: Kernels, pipeline: Pipeline
) -> None:
    k = vulkan_kernels
    first = k.compile(SHALLOW, "vulkan", again=True)  # SHALLOW's kernels are cached (or made)
    graph = k.pipeline.prepare(mlp(SHALLOW))
    key = k.pipeline.key_for(graph, parse_target("vulkan"), normalize_options(None))
    kflags = kernels.kernel_flags(key.flags)
    src = kernels.executable_sources(mlir=graph.mlir, flags=list(kflags))
    kkeys = [kernels.kernel_key(x.digest, target=key.target, flags=kflags,
                                compiler=k.pipeline.compiler) for x in src.kernels]
    records = [k.cache.storage.get_record(kk.digest()) for kk in kkeys]
    assert all(r is not None for r in records)

    # bytes on disk flipped: the verified read drops the kernel, which is translated again
    path = k.cache.blob_path(records[0].digest)  # type: ignore[union-attr]
    assert path is not None
    Path(path).write_bytes(b"\0" + Path(path).read_bytes()[1:])
    again = k.compile(SHALLOW, "vulkan", again=True)
    assert k.events == {"hit": 3, "miss": 1} and k.cache.counters.corrupt >= 1
    assert again.digest == first.digest

    # a kernel whose blob verifies but is no kernel: the compile falls back to one job
    bogus = b"not a kernel"
    from kiln.compiler.kernels import _store

    _store(k.cache, kkeys[1], bogus, seconds=0.0)
    assert k.cache.storage.get_record(kkeys[1].digest()).digest == (  # type: ignore[union-attr]
        "sha256:" + hashlib.sha256(bogus).hexdigest())
    fallback = k.compile(SHALLOW, "vulkan", again=True)
    assert k.events == {"fallback": 1}
    normal = pipeline.compile(mlp(SHALLOW), targets=["vulkan"]).artifacts[0]
    assert fallback.digest == normal.digest  # the one-job compile's bytes
    assert same_bits(run(first, SHALLOW), run(fallback, SHALLOW))


@pytest.mark.parametrize(("target", "marker"), [("cuda:sm_80", b".target sm_80"),
                                                ("rocm:gfx942", b"gfx942")])
def test_cuda_and_rocm_compile_through_kernels(tmp_path: Path, target: str, marker: bytes) -> None:
    k = Kernels(open_cache(cache_dir=tmp_path / "cache"))
    try:
        k.compile(SHALLOW, target)
        assert k.events == {"miss": 4}
        deep = k.compile(DEEP, target)
        assert k.events == {"hit": 3, "miss": 2}
        warm = k.compile(DEEP, target, again=True)
        assert k.events == {"hit": 5} and warm.digest == deep.digest
        assert marker in warm.data
    finally:
        k.pipeline.close()


def test_cpu_compiles_never_use_kernels(tmp_path: Path) -> None:
    k = Kernels(open_cache(cache_dir=tmp_path / "cache"))
    try:
        k.compile(SHALLOW, "cpu")
        assert not k.events
    finally:
        k.pipeline.close()
