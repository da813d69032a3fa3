"""Presets: named, allow-listed flag sets per target kind, chosen from measurements.

A client picks a preset with the ``preset`` compile option (default ``"default"``); it never sends
flags. A preset's flags depend on the target kind and, for ``"default"`` on CPU, on the graph's
traits (``kiln.dialects.types.GraphTraits``: counts of convolutions, depthwise convolutions,
matmuls, attention ops), so a CNN and a transformer get the lowering that measured fastest for
their class. The resulting flags go into the compile key like every other flag: changing a preset
or the traits that select it never serves an old executable. The measurements behind each choice
are in ``docs/performance.md`` (``bench/executables.py`` re-measures them on this machine's CPU,
``bench/levels.py`` at every x86 ISA level).

Presets:

- ``default``   — fastest measured, per target class and, on CPU, per ISA level
  (``cpu_level``: x86-64, x86-64-v2, avx2, avx512, aarch64, riscv64, from LLVM's features for
  the target's CPU). CPU: ``--iree-opt-level=O3`` + data tiling + the mmt4d ukernel, without
  transpose propagation, for graphs with matmuls or softmax/attention (``model_class``
  "dense"); a graph with convolutions ("cnn") gets O3 + data tiling + all ukernels + aggressive
  fusion with, at the avx512 level, channels-last (NHWC) data-tiled convolutions and Kiln's CNN
  rewrites (``conv-tiled``) and, below it and on aarch64/riscv64, im2col (``conv-im2col``: IREE
  3.13 data-tiles convolutions only with AVX-512F); one with depthwise convolutions
  ("depthwise-cnn") gets direct channels-last convolutions (``conv-direct``) and Kiln's
  ``depthwise-nhwc`` rewrite at every level. Graphs with neither keep IREE's own defaults
  (nothing to tile; the conformance suite measures those).
  CUDA/ROCm: ``O3`` and aggressive fusion as IREE's GPU guides recommend; CUDA adds horizontal
  fusion of contractions (measured on an H200), ROCm the tuning specs shipped with the
  compiler. Vulkan/Metal: IREE's defaults.
- ``baseline``  — no Kiln tuning: exactly the target's flags, what Kiln compiled before presets.
- ``fast-compile`` — shortest compile: no const-eval, O0 (IREE's default level), no data tiling.
- ``size``      — smallest executable measured: ``O3`` without data tiling or ukernels (packed,
  padded constants and linked ukernel code make the module larger).
- ``conv-tiled`` / ``conv-im2col`` / ``conv-direct`` (CPU) — the convolution lowering forced:
  NHWC data-tiled convolutions (what ``default`` picks for a CNN at avx512), im2col +
  data-tiled matmuls (``default`` below avx512), or NHWC direct convolutions. For a graph
  without convolutions they equal ``default``.
  Autotune tries them against ``default`` on the device at hand.

Options given alongside a preset win over it flag by flag (``opt_level="O2"`` with any preset
compiles at O2): the flags are merged by option name, the later value replacing the earlier.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

__all__ = [
    "PRESETS",
    "autotune_presets",
    "cpu_level",
    "merge_flags",
    "model_class",
    "preset_flags",
    "preset_rewrites",
]

PRESETS: tuple[str, ...] = (
    "default",
    "baseline",
    "fast-compile",
    "size",
    "conv-tiled",
    "conv-im2col",
    "conv-direct",
)

# -- flag groups (each measured; see docs/performance.md) ----------------------------------------

_CPU_TUNED = (
    "--iree-opt-level=O3",
    "--iree-opt-data-tiling",
    "--iree-llvmcpu-enable-ukernels=all",
    "--iree-dispatch-creation-enable-aggressive-fusion",
)
# Dense graphs (transformers, MLPs). Measured on the encoder (docs/performance.md): with IREE's
# transpose propagation the head split/merge transposes are folded into the Q/K/V projections,
# which then become 3-D "matmul_like" generics that data tiling skips (no mmt4d, 1/3.5 of the
# speed); without it every projection is a data-tiled mmt4d (0.71x the time of the CNN set).
# The non-mmt4d ukernels measured within noise here and are left out. Aggressive fusion, which
# O2 and O3 turn on, is turned off: with it IREE 3.13 fuses a LayerNorm's reduction into a
# dispatch whose stack exceeds the 32 KiB limit on a pre-LN block at batch 4 (compile failure at
# every x86 level, bench/levels.py gpt-causal-b4); turning off the fusion fixes that.
_CPU_DENSE = (
    "--iree-opt-level=O3",
    "--iree-opt-data-tiling",
    "--iree-llvmcpu-enable-ukernels=mmt4d",
    "--iree-global-opt-propagate-transposes=false",
    "--iree-dispatch-creation-enable-aggressive-fusion=false",
)
_CHANNELS_LAST = (
    "--iree-preprocessing-pass-pipeline="
    "builtin.module(util.func(iree-preprocessing-convert-conv-to-channels-last))",
)
_IM2COL = ("--iree-global-opt-use-im2col-for-convs",)
# A list option: given once per value. The default set is {matmul, scaled_matmul}; convolutions
# are IREE's experimental addition (data-tiled convolutions, no im2col buffer).
_CONV_DATA_TILING = tuple(
    f"--iree-dispatch-creation-experimental-set-data-tiling-ops={op}"
    for op in ("matmul", "scaled_matmul", "convolution")
)
_FAST_COMPILE = ("--iree-opt-level=O0", "--iree-opt-const-eval=false")
# Measured on the encoder: O3 alone gave the smallest module (weights dominate every size; data
# tiling and ukernels add a little, strip-assertions/no-hoisting saved nothing).
_SIZE = ("--iree-opt-level=O3",)

# GPU recommendations from IREE's documentation (not measured here; no GPU in the measuring
# session): iree.dev/reference/optimization-options (O3 for performance; IREE's default is O0),
# iree.dev/reference/tuning (default tuning specs shipped for AMD CDNA3), and the ROCm model
# recipes (aggressive fusion). Sources are listed in docs/performance.md.
_GPU_TUNED = ("--iree-opt-level=O3", "--iree-dispatch-creation-enable-aggressive-fusion")
# Measured on an H200 (bench/gpu.py, docs/performance.md): fusing contractions that share an
# operand (a transformer's Q/K/V projections) into one dispatch took the encoder from 2.04 to
# 1.63 ms at batch 1 (launch-bound); the CNNs compile to identical bytes with it.
_CUDA_TUNED = _GPU_TUNED + ("--iree-dispatch-creation-enable-fuse-horizontal-contractions",)
# Kiln's rewrites after IREE's global optimization, for plain CNNs on CPU (preset_rewrites).
_CNN_REWRITES = ("pool-nhwc", "stem-s2d", "conv1x1-matmul", "conv-narrow-tiles")
_ROCM_TUNING_SPECS = ("--iree-codegen-enable-default-tuning-specs",)
_ROCM_SPEC_ARCHS = ("gfx942", "gfx950")


def model_class(traits: Mapping[str, int] | None) -> str:
    """``"depthwise-cnn"`` (has depthwise convolutions), ``"cnn"`` (other convolutions, at least
    as many as matmuls), ``"dense"`` (matmuls or attention outnumbering any convolutions: a
    vision transformer's one patch-embedding convolution does not make it a CNN) or ``"other"``.

    Measured (bench/cpu_matrix.py, zoo ``vit_tiny`` at haswell): as a CNN a ViT ran 2.6x the
    baseline's time; ResNets, DenseNet, RegNet, U-Net and detection heads have 19-120
    convolutions and at most one matmul.
    """
    t = traits or {}
    if t.get("depthwise_conv", 0) > 0:
        return "depthwise-cnn"
    if t.get("conv", 0) > 0 and t.get("conv", 0) >= t.get("matmul", 0):
        return "cnn"
    if t.get("matmul", 0) > 0 or t.get("attention", 0) > 0:
        return "dense"
    return "other"


# The convolution lowerings (``conv-*`` presets force one; ``default`` picks one per level).
_CONV_LOWERINGS: dict[str, tuple[str, ...]] = {
    "tiled": _CHANNELS_LAST + _CONV_DATA_TILING,
    "im2col": _IM2COL,
    "direct": _CHANNELS_LAST,
}
# Lowerings without data tiling or ukernels (O3 only), for the SSE levels: there IREE 3.13 has no
# mmt4d ukernel and its generated mmt4d code made every data-tiled graph slower than the
# baseline (2-4x on the transformers, 1.15x on ResNet-18, 1.7x on the MobileNet).
_O3 = ("--iree-opt-level=O3",)
_PLAIN_LOWERINGS: dict[str, tuple[str, ...]] = {
    "im2col-O3": _IM2COL + _O3,
    "direct-O3": _CHANNELS_LAST + _O3,
}
# CPU ``default`` per ISA level (``kiln.targets.cpu.LEVELS``) and class: the convolution lowering
# of a CNN / depthwise CNN, and the flag set of a dense graph. Measured with bench/levels.py,
# bench/cpu_matrix.py and the probes recorded beside them (docs/performance.md, "Defaults per
# ISA level"; bench/RESULTS.md, "CPU defaults per ISA level"):
# - avx512: data-tiled channels-last convolutions (+ Kiln's CNN rewrites) for a plain CNN, direct
#   channels-last ones (+ depthwise-nhwc) for a depthwise CNN; dense: O3 + data tiling.
# - avx2: IREE 3.13 data-tiles convolutions only with AVX-512F; below it the data-tiled request
#   leaves channels-last convolutions to the direct convolution pipeline
#   (ConvTileAndDecomposeExpert, vector tiles of 4 channels), no faster than IREE's defaults.
#   im2col turns them into data-tiled matmuls on the mmt4d ukernel. Depthwise CNNs keep direct
#   convolutions (their 1x1 and depthwise layers are not the slow shape). Dense: as avx512 (on
#   the zoo's T5 data tiling at O0 instead ran 1.46x the baseline's time; O3 0.73x).
# - x86-64-v2, x86-64 (SSE): no data tiling at all (above); im2col + O3 for a CNN, direct
#   channels-last + depthwise-nhwc + O3 for a depthwise CNN, IREE's defaults for a dense graph
#   (O3 alone made the encoder slower).
# - aarch64, riscv64: not measured (compile-only here): per class the choice that was never
#   slower than the baseline on any measured x86 level (the SSE level's).
_CPU_LEVEL_DEFAULTS: dict[str, dict[str, str]] = {
    "avx512": {"cnn": "tiled", "depthwise-cnn": "direct", "dense": "O3"},
    "avx2": {"cnn": "im2col", "depthwise-cnn": "direct", "dense": "O3"},
    "x86-64-v2": {"cnn": "im2col-O3", "depthwise-cnn": "direct-O3", "dense": "baseline"},
    "x86-64": {"cnn": "im2col-O3", "depthwise-cnn": "direct-O3", "dense": "baseline"},
    "aarch64": {"cnn": "im2col-O3", "depthwise-cnn": "direct-O3", "dense": "baseline"},
    "riscv64": {"cnn": "im2col-O3", "depthwise-cnn": "direct-O3", "dense": "baseline"},
}
_DENSE_LOWERINGS: dict[str, tuple[str, ...]] = {
    "O3": _CPU_DENSE,
    "baseline": (),
}


def cpu_level(arch: str = "", cpu: str = "", features: Sequence[str] = ()) -> str:
    """The ISA level the CPU presets are chosen by (``kiln.targets.cpu.isa_level``); ``arch``
    ``""`` is x86_64 and ``cpu`` ``""`` the arch's default CPU (x86_64: LLVM's ``generic``)."""
    from kiln.targets.cpu import isa_level

    return isa_level(arch or "x86_64", cpu, tuple(features))


def _cpu_plan(
    traits: Mapping[str, int] | None, preset: str, level: Callable[[], str]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(flags, rewrites) of a CPU ``default`` or ``conv-*`` preset. ``level`` is called only when
    the choice depends on it (a compiler subprocess the first time for a target)."""
    cls = model_class(traits)
    if cls == "other":
        return (), ()
    if cls == "dense":
        # conv-* on a graph without convolutions is the default.
        return _DENSE_LOWERINGS[_CPU_LEVEL_DEFAULTS[level()]["dense"]], ()
    conv = preset.removeprefix("conv-") if preset.startswith("conv-") else (
        _CPU_LEVEL_DEFAULTS[level()][cls])
    if conv in _PLAIN_LOWERINGS:
        flags = _PLAIN_LOWERINGS[conv]
    else:
        flags = _CONV_LOWERINGS[conv] + _CPU_TUNED
    if cls == "cnn":
        return flags, (_CNN_REWRITES if conv == "tiled" else ())
    # conv-im2col keeps the channels-first depthwise form: IREE 3.13's im2col path fails to
    # compile a channels-last depthwise convolution ("failed to run translation").
    return flags, (("depthwise-nhwc",) if not conv.startswith("im2col") else ())


def preset_flags(
    kind: str,
    preset: str,
    *,
    arch: str = "",
    cpu: str = "",
    features: Sequence[str] = (),
    traits: Mapping[str, int] | None = None,
) -> tuple[str, ...]:
    """The flags ``preset`` adds for a target of ``kind`` and a graph.

    ``arch``, ``cpu`` and ``features`` are the normalized target's (``kiln.targets.cpu.cpu_model``
    gives the last two): on CPU they select the ISA level (``cpu_level``) the ``default`` and
    ``conv-*`` flags are chosen for. Raises ``KeyError`` for a preset not in ``PRESETS`` (the
    options layer rejects those first, as ``invalid_request``). Presets that do not apply to
    ``kind`` (``conv-*`` on a GPU) are the kind's ``default``.
    """
    if preset not in PRESETS:
        raise KeyError(preset)
    if preset == "baseline":
        return ()
    if preset == "fast-compile":
        return _FAST_COMPILE
    if preset == "size":
        return _SIZE
    if kind == "cpu":
        return _cpu_plan(traits, preset, lambda: cpu_level(arch, cpu, features))[0]
    if kind == "cuda":
        return _CUDA_TUNED
    if kind == "rocm":
        return _GPU_TUNED + (_ROCM_TUNING_SPECS if arch in _ROCM_SPEC_ARCHS else ())
    return ()  # vulkan, metal: IREE's defaults (no measured or documented better set)


def preset_rewrites(
    kind: str,
    preset: str,
    *,
    arch: str = "",
    cpu: str = "",
    features: Sequence[str] = (),
    traits: Mapping[str, int] | None = None,
) -> tuple[str, ...]:
    """Kiln's own linalg rewrites (``kiln.lowering.rewrites.REWRITES``) a preset adds for a graph
    (``arch``, ``cpu``, ``features`` as for ``preset_flags``).

    ``depthwise-nhwc`` (channels-first depthwise convolutions run channels-last), for a graph with
    depthwise convolutions:

    - CPU ``default`` and ``conv-*`` but ``conv-im2col`` (and ``default`` where the level's
      lowering is im2col): 3.5x faster MobileNet (docs/performance.md);
    - Vulkan, every preset but ``baseline``: IREE 3.13 miscompiles a channels-first depthwise
      convolution for the generic Vulkan profile (wrong results on lavapipe, max error 2.66 on the
      test MobileNet); channels-last it is right, and 1.4x faster there.

    ``baseline``, ``fast-compile`` and ``size`` add none on CPU. CUDA does not get it: on an H200
    it made the MobileNet 1.26x slower (bench/gpu.py). ROCm and Metal: not measured, none.

    ``pool-nhwc``, ``stem-s2d`` and ``conv1x1-matmul`` (``kiln.lowering.cnn``: poolings read and
    write channels-last tensors as elementwise ops over strided slices; a 7x7 stride-2 stem over
    RGB as a 4x4 convolution over 12 channels; 1x1 convolutions as data-tiled 2-D matmuls), for
    a plain CNN on CPU with data-tiled convolutions (``conv-tiled``, and ``default`` at the
    ``avx512`` level): ResNet-18 in about 0.75x the time, a ResNet-50-style network in 0.28x
    (docs/performance.md). With them, ``conv-narrow-tiles`` (``kiln.lowering.tiles``): a
    data-tiled convolution on an image at most half a vector tile wide (ResNet's 7x7 stage) gets
    a vector tile of the image's width and a workgroup tile of all its rows (0.75x the time of
    those layers).
    """
    if preset not in PRESETS:
        raise KeyError(preset)
    if preset in ("baseline", "fast-compile", "size"):
        if kind == "vulkan" and preset != "baseline" and model_class(traits) == "depthwise-cnn":
            return ("depthwise-nhwc",)
        return ()
    if kind == "cpu":
        return _cpu_plan(traits, preset, lambda: cpu_level(arch, cpu, features))[1]
    if kind == "vulkan" and model_class(traits) == "depthwise-cnn":
        return ("depthwise-nhwc",)
    return ()


def autotune_presets(
    kind: str,
    traits: Mapping[str, int] | None = None,
    *,
    arch: str = "",
    cpu: str = "",
    features: Sequence[str] = (),
) -> tuple[str, ...]:
    """The presets worth timing for a graph on ``kind``, ``"default"`` first, no duplicates.

    Only presets whose flags differ for this graph are listed (``conv-*`` only for a CNN). On CPU
    the comparison is made for the target ``arch``/``cpu``/``features`` describe (``cpu_level``);
    without them every candidate is listed (which ``conv-*`` equals ``default`` depends on the
    level; the caller's digest comparison finds identical executables).
    """
    names = ["default", "baseline"]
    if kind == "cpu" and model_class(traits) in ("cnn", "depthwise-cnn"):
        names += ["conv-tiled", "conv-im2col", "conv-direct"]
    if kind == "cpu" and not (arch or cpu or features):
        return tuple(names)  # which equal ``default`` depends on the level: list them all
    target = {"arch": arch, "cpu": cpu, "features": features}
    seen: dict[tuple[tuple[str, ...], tuple[str, ...]], str] = {}
    for name in names:
        plan = (
            preset_flags(kind, name, traits=traits, **target),
            preset_rewrites(kind, name, traits=traits, **target),
        )
        seen.setdefault(plan, name)
    return tuple(seen.values())


def _flag_name(flag: str) -> str:
    return flag.split("=", 1)[0]


def merge_flags(*groups: Iterable[str]) -> tuple[str, ...]:
    """Concatenate flag groups; a later group's option replaces every earlier flag of that name.

    The replacement takes the place of the first replaced flag (target flags stay first), and
    within one group a name may repeat (list options such as the data-tiling op set). So every
    option is set by exactly one group: ``iree-compile`` rejects most scalar options given twice.
    """
    out: list[tuple[str, str]] = []
    for group in groups:
        mine = [(_flag_name(f), f) for f in group]
        names = {n for n, _ in mine}
        merged: list[tuple[str, str]] = []
        placed: set[str] = set()
        for n, f in out:
            if n not in names:
                merged.append((n, f))
            elif n not in placed:
                merged.extend(x for x in mine if x[0] == n)
                placed.add(n)
        merged.extend(x for x in mine if x[0] not in placed)
        out = merged
    return tuple(f for _, f in out)
