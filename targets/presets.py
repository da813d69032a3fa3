"""Presets: named, allow-listed flag sets per target kind, chosen from measurements.

A client picks a preset with the ``preset`` compile option (default ``"default"``); it never sends
flags. A preset's flags depend on the target kind and, for ``"default"`` on CPU, on the graph's
traits (``kiln.dialects.types.GraphTraits``: counts of convolutions, depthwise convolutions,
matmuls, attention ops), so a CNN and a transformer get the lowering that measured fastest for
their class. The resulting flags go into the compile key like every other flag: changing a preset
or the traits that select it never serves an old executable. The measurements behind each choice
are in ``docs/performance.md`` (``bench/executables.py`` re-measures them).

Presets:

- ``default``   — fastest measured. CPU: ``--iree-opt-level=O3`` + data tiling + ukernels +
  aggressive fusion for graphs with matmuls or convolutions; convolutions additionally go to
  channels-last (NHWC) and, if the graph has no depthwise convolution, im2col. Graphs with neither
  keep IREE's own defaults (nothing to tile; the conformance suite measures those unchanged).
  CUDA/ROCm: ``O3`` and aggressive fusion as IREE's GPU guides recommend (ROCm adds the tuning
  specs shipped with the compiler). Vulkan/Metal: IREE's defaults.
- ``baseline``  — no Kiln tuning: exactly the target's flags, what Kiln compiled before presets.
- ``fast-compile`` — shortest compile: no const-eval, O0 (IREE's default level), no data tiling.
- ``size``      — smallest executable: strip assertions, no constant-expression hoisting (hoisted
  and data-tiled constants are stored padded/packed in the module), no data tiling.
- ``conv-im2col`` / ``conv-direct`` (CPU) — the two convolution lowerings of ``default`` forced
  either way; autotune tries them against ``default`` on the device at hand.

Options given alongside a preset win over it flag by flag (``opt_level="O2"`` with any preset
compiles at O2): the flags are merged by option name, the later value replacing the earlier.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

__all__ = [
    "PRESETS",
    "autotune_presets",
    "merge_flags",
    "model_class",
    "preset_flags",
]

PRESETS: tuple[str, ...] = (
    "default",
    "baseline",
    "fast-compile",
    "size",
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
_CHANNELS_LAST = (
    "--iree-preprocessing-pass-pipeline="
    "builtin.module(util.func(iree-preprocessing-convert-conv-to-channels-last))",
)
_IM2COL = ("--iree-global-opt-use-im2col-for-convs",)
_FAST_COMPILE = ("--iree-opt-level=O0", "--iree-opt-const-eval=false")
_SIZE = ("--iree-opt-strip-assertions", "--iree-opt-const-expr-hoisting=false")

# GPU recommendations from IREE's documentation (not measured here; no GPU in the measuring
# session): iree.dev/reference/optimization-options (O3 for performance; IREE's default is O0),
# iree.dev/reference/tuning (default tuning specs shipped for AMD CDNA3), and the ROCm model
# recipes (aggressive fusion). Sources are listed in docs/performance.md.
_GPU_TUNED = ("--iree-opt-level=O3", "--iree-dispatch-creation-enable-aggressive-fusion")
_ROCM_TUNING_SPECS = ("--iree-codegen-enable-default-tuning-specs",)
_ROCM_SPEC_ARCHS = ("gfx942", "gfx950")


def model_class(traits: Mapping[str, int] | None) -> str:
    """``"cnn"`` (has convolutions), ``"dense"`` (matmuls, no convolution) or ``"other"``."""
    t = traits or {}
    if t.get("conv", 0) > 0:
        return "cnn"
    if t.get("matmul", 0) > 0 or t.get("attention", 0) > 0:
        return "dense"
    return "other"


def _cpu_default(traits: Mapping[str, int] | None, *, conv: str | None = None) -> tuple[str, ...]:
    cls = model_class(traits)
    if cls == "other":
        return ()
    if cls == "dense":
        return _CPU_TUNED
    t = traits or {}
    if conv is None:
        # Depthwise convolutions have no im2col form; measured, im2col of the pointwise and
        # regular convolutions around them did not pay for itself in a depthwise network.
        conv = "direct" if t.get("depthwise_conv", 0) > 0 else "im2col"
    return _CHANNELS_LAST + (_IM2COL if conv == "im2col" else ()) + _CPU_TUNED


def preset_flags(
    kind: str, preset: str, *, arch: str = "", traits: Mapping[str, int] | None = None
) -> tuple[str, ...]:
    """The flags ``preset`` adds for a target of ``kind`` (``arch`` as normalized) and a graph.

    Raises ``KeyError`` for a preset not in ``PRESETS`` (the options layer rejects those first,
    as ``invalid_request``). Presets that do not apply to ``kind`` (``conv-*`` on a GPU) are
    the kind's ``default``.
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
        if preset == "conv-im2col":
            return _cpu_default(traits, conv="im2col")
        if preset == "conv-direct":
            return _cpu_default(traits, conv="direct")
        return _cpu_default(traits)
    if kind == "cuda":
        return _GPU_TUNED
    if kind == "rocm":
        return _GPU_TUNED + (_ROCM_TUNING_SPECS if arch in _ROCM_SPEC_ARCHS else ())
    return ()  # vulkan, metal: IREE's defaults (no measured or documented better set)


def autotune_presets(kind: str, traits: Mapping[str, int] | None = None) -> tuple[str, ...]:
    """The presets worth timing for a graph on ``kind``, ``"default"`` first, no duplicates.

    Only presets whose flags differ for this graph are listed (``conv-*`` only for a CNN).
    """
    names = ["default", "baseline"]
    if kind == "cpu" and model_class(traits) == "cnn":
        names += ["conv-im2col", "conv-direct"]
    seen: dict[tuple[str, ...], str] = {}
    for name in names:
        seen.setdefault(preset_flags(kind, name, traits=traits), name)
    return tuple(seen.values())


def _flag_name(flag: str) -> str:
    return flag.split("=", 1)[0]


def merge_flags(*groups: Iterable[str]) -> tuple[str, ...]:
    """Concatenate flag groups; a later flag with the same option name replaces an earlier one.

    The replaced flag keeps its position (target flags stay first), so the result is stable
    and every option appears once (``iree-compile`` rejects most options given twice).
    """
    order: list[str] = []
    value: dict[str, str] = {}
    for group in groups:
        for flag in group:
            name = _flag_name(flag)
            if name not in value:
                order.append(name)
            value[name] = flag
    return tuple(value[name] for name in order)


def describe(kind: str) -> dict[str, Sequence[str]]:
    """Preset name → flags for a graph with convolutions and matmuls (for docs and ``kiln targets``)."""
    traits = {"conv": 1, "matmul": 1}
    return {p: list(preset_flags(kind, p, traits=traits)) for p in PRESETS}
