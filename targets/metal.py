"""Metal targets: ``metal`` / ``metal:macos`` / ``metal:ios`` (compile-only here: MSL source is
embedded; no Xcode toolchain to build a .metallib)."""

from __future__ import annotations

from kiln.targets.registry import pick_arch, register_target
from kiln.targets.types import KindInfo, TargetSpec

ARCHS = ("macos", "ios")
ALIASES = {"mac": "macos", "osx": "macos", "iphone": "ios"}


@register_target("metal")
class Metal:
    kind = "metal"

    def info(self) -> KindInfo:
        return KindInfo(
            kind="metal", default="metal:macos", archs=ARCHS, aliases=dict(ALIASES),
            notes="compile-only on Linux: the executable embeds MSL source",
        )

    def resolve(self, parts: list[str]) -> TargetSpec:
        arch = pick_arch(
            "metal", parts, archs=ARCHS, aliases=ALIASES, default="macos", what="platform"
        )
        return TargetSpec(
            target=f"metal:{arch}",
            kind="metal",
            arch=arch,
            flags=("--iree-hal-target-device=metal", f"--iree-metal-target-platform={arch}"),
            driver="metal",
            executable_format="metal-msl-fb",
        )
