"""CPU targets: ``cpu[:ARCH[:CPU[:FEATURES]]]`` for x86_64, aarch64 and riscv64 (llvm-cpu backend).

``cpu`` alone is a portable x86_64 baseline (LLVM's ``generic`` x86-64), never ``host``: the server
never resolves the client's CPU; the client SDK detects its CPU name and features and sends them.
CPU names and features are validated against the installed compiler's own LLVM lists (a bad one
makes ``iree-compile`` ``exit``). Features are written ``+avx2,+fma,-avx512f`` and normalized sorted.
"""

from __future__ import annotations

import re

from kiln.targets.registry import register_target, unsupported
from kiln.targets.toolchain import llvm_cpu_catalog
from kiln.targets.types import KindInfo, TargetSpec

ARCHS: dict[str, dict[str, object]] = {
    "x86_64": {"triple": "x86_64-unknown-linux-gnu", "cpu": "generic", "features": (), "abi": None},
    "aarch64": {"triple": "aarch64-unknown-linux-gnu", "cpu": "generic", "features": (), "abi": None},
    # RV64GC baseline with the LP64D ABI, what Linux distributions target.
    "riscv64": {
        "triple": "riscv64-unknown-linux-gnu",
        "cpu": "generic-rv64",
        "features": ("+a", "+c", "+d", "+f", "+m"),
        "abi": "lp64d",
    },
}
ALIASES = {"x86-64": "x86_64", "amd64": "x86_64", "arm64": "aarch64", "riscv": "riscv64"}
_FEATURE_RE = re.compile(r"^[+-][a-z0-9_.\-]+$")


@register_target("cpu")
class Cpu:
    kind = "cpu"

    def info(self) -> KindInfo:
        return KindInfo(
            kind="cpu",
            default="cpu:x86_64:generic",
            archs=tuple(ARCHS),
            aliases=dict(ALIASES),
            notes="cpu[:ARCH[:CPU[:+feat,-feat]]]; CPU and features are LLVM names, "
            "validated against the compiler (kiln targets --cpus ARCH lists them)",
        )

    def resolve(self, parts: list[str]) -> TargetSpec:
        if len(parts) > 3:
            raise unsupported("cpu", "target", ":".join(parts), ["cpu[:ARCH[:CPU[:FEATURES]]]"])
        arch = parts[0].lower() if parts and parts[0] else "x86_64"
        arch = ALIASES.get(arch, arch)
        if arch not in ARCHS:
            raise unsupported("cpu", "architecture", arch, sorted(ARCHS) + sorted(ALIASES))
        base = ARCHS[arch]
        triple = str(base["triple"])
        catalog = llvm_cpu_catalog(triple)
        cpu = parts[1] if len(parts) > 1 and parts[1] else str(base["cpu"])
        if cpu == "host" or cpu not in catalog.cpus:
            raise unsupported("cpu", f"{arch} CPU name", cpu, sorted(catalog.cpus))
        feats = list(base["features"])  # type: ignore[call-overload]
        if len(parts) > 2 and parts[2]:
            for f in parts[2].split(","):
                if not _FEATURE_RE.match(f) or f[1:] not in catalog.features:
                    raise unsupported(
                        "cpu", f"{arch} feature", f, sorted("+" + x for x in catalog.features)
                    )
                feats.append(f)
        # Last mention of a feature wins; normalize to a sorted, de-duplicated list.
        by_name = {f[1:]: f for f in feats}
        feats = sorted(by_name.values(), key=lambda f: f[1:])
        extra = ",".join(f for f in feats if f not in base["features"])  # type: ignore[operator]
        target = f"cpu:{arch}:{cpu}" + (f":{extra}" if extra else "")
        flags = [
            "--iree-hal-target-device=local",
            "--iree-hal-local-target-device-backends=llvm-cpu",
            f"--iree-llvmcpu-target-triple={triple}",
            f"--iree-llvmcpu-target-cpu={cpu}",
        ]
        if feats:
            flags.append(f"--iree-llvmcpu-target-cpu-features={','.join(feats)}")
        if base["abi"]:
            flags.append(f"--iree-llvmcpu-target-abi={base['abi']}")
        # CPUs have f64: keep the graph's own types instead of IREE's default demotion to f32.
        flags.append("--iree-input-demote-f64-to-f32=false")
        return TargetSpec(
            target=target,
            kind="cpu",
            arch=arch,
            flags=tuple(flags),
            driver="local-task",
            executable_format="embedded-elf-" + {"x86_64": "x86_64", "aarch64": "arm_64", "riscv64": "riscv_64"}[arch],
            has_f64=True,
        )
