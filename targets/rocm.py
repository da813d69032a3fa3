"""ROCm targets: ``rocm:gfxNNNN`` (and aliases such as ``mi300x``) for the HIP/AMDGPU backend."""

from __future__ import annotations

from kiln.targets.registry import pick_arch, register_target
from kiln.targets.types import KindInfo, TargetSpec

# IREE 3.13's ROCm table (gfx1030 and gfx940/941 are refused by the compiler: not listed).
ARCHS = (
    "gfx908", "gfx90a", "gfx942", "gfx950",
    "gfx1100", "gfx1101", "gfx1103", "gfx1150", "gfx1151", "gfx1200", "gfx1201",
)
# CDNA2/3/4: LLVM's AMDGPULowerBufferFatPointers recurses without end on plain conv nets
# (shared/iree-notes/conv4_crashes_gfx9.mlir). Lowering without buffer instructions avoids it;
# docs/research/targets.md has the measurements (stack size does not help; O0/O3 still crash).
NO_BUFFER_INSTRUCTIONS = ("gfx90a", "gfx942", "gfx950")
ALIASES = {
    "mi100": "gfx908",
    "mi210": "gfx90a",
    "mi250": "gfx90a",
    "mi250x": "gfx90a",
    "mi300a": "gfx942",
    "mi300x": "gfx942",
    "mi325x": "gfx942",
    "mi350x": "gfx950",
    "mi355x": "gfx950",
    "rx7900xtx": "gfx1100",
    "w7900": "gfx1100",
    "rx7800xt": "gfx1101",
    "rx9060xt": "gfx1200",
    "rx9070xt": "gfx1201",
    "strix-halo": "gfx1151",
}


@register_target("rocm")
class Rocm:
    kind = "rocm"

    def info(self) -> KindInfo:
        return KindInfo(
            kind="rocm",
            default="rocm:gfx942",
            archs=ARCHS,
            aliases=dict(ALIASES),
        )

    def resolve(self, parts: list[str]) -> TargetSpec:
        arch = pick_arch(
            "rocm", parts, archs=ARCHS, aliases=ALIASES, default="gfx942"
        )
        return TargetSpec(
            target=f"rocm:{arch}",
            kind="rocm",
            arch=arch,
            flags=("--iree-hal-target-device=hip", f"--iree-rocm-target={arch}")
            + (
                ("--iree-rocdl-enable-buffer-instructions=false",)
                if arch in NO_BUFFER_INSTRUCTIONS
                else ()
            ),
            driver="hip",
            executable_format="rocm-hsaco-fb",
        )
