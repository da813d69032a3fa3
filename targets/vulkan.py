"""Vulkan targets: ``vulkan`` (portable default profile) or ``vulkan:ARCH`` (a vendor profile)."""

from __future__ import annotations

from kiln.targets.registry import pick_arch, register_target
from kiln.targets.types import KindInfo, TargetSpec

# "generic" is Kiln's name for IREE's default profile (vp_android_baseline_2022, SPIR-V 1.3): it is
# never passed to the compiler (which segfaults on names it does not know).
ARCHS = (
    "generic",
    "rdna1", "rdna2", "rdna3", "rdna4", "cdna3",
    "pascal", "volta", "turing", "ampere", "ada",
    "valhall1", "valhall4", "adreno", "llvmpipe",
)
ALIASES = {
    "default": "generic",
    "lavapipe": "llvmpipe",
    "valhall": "valhall1",
    "mali": "valhall4",
    "rx7900xtx": "rdna3",
    "a100": "ampere",
    "rtx4090": "ada",
}


@register_target("vulkan")
class Vulkan:
    kind = "vulkan"

    def info(self) -> KindInfo:
        return KindInfo(
            kind="vulkan",
            default="vulkan:generic",
            archs=ARCHS,
            aliases=dict(ALIASES),
            notes="vulkan alone = the portable default SPIR-V profile",
        )

    def resolve(self, parts: list[str]) -> TargetSpec:
        arch = pick_arch(
            "vulkan", parts, archs=ARCHS, aliases=ALIASES, default="generic"
        )
        flags = ["--iree-hal-target-device=vulkan"]
        if arch != "generic":
            flags.append(f"--iree-vulkan-target={arch}")
        return TargetSpec(
            target=f"vulkan:{arch}",
            kind="vulkan",
            arch=arch,
            flags=tuple(flags),
            driver="vulkan",
            executable_format="vulkan-spirv-fb",
        )
