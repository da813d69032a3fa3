"""Metal targets: ``metal`` / ``metal:macos`` / ``metal:ios`` (compile-only here: MSL source is
embedded; no Xcode toolchain to build a .metallib)."""

from __future__ import annotations

from kiln.targets.registry import register_target, unsupported
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
        if len(parts) > 1:
            raise unsupported("metal", "target", ":".join(parts), list(ARCHS))
        arch = parts[0].lower() if parts and parts[0] else "macos"
        arch = ALIASES.get(arch, arch)
        if arch not in ARCHS:
            raise unsupported("metal", "platform", arch, list(ARCHS) + sorted(ALIASES))
        return TargetSpec(
            target=f"metal:{arch}",
            kind="metal",
            arch=arch,
            flags=("--iree-hal-target-device=metal", f"--iree-metal-target-platform={arch}"),
            driver="metal",
            executable_format="metal-msl-fb",
        )
