"""CPU targets: ``cpu[:ARCH[:CPU[:FEATURES]]]`` for x86_64, aarch64 and riscv64 (llvm-cpu backend).

``cpu`` alone is a portable x86_64 baseline (LLVM's ``generic`` x86-64), never ``host``: the server
never resolves the client's CPU; the client SDK detects its CPU name and features and sends them.
CPU names and features are validated against the installed compiler's own LLVM lists (a bad one
makes ``iree-compile`` ``exit``). Features are written ``+avx2,+fma,-avx512f`` and normalized sorted.

``isa_level`` names the vector ISA a target's code may use (``LEVELS``), from LLVM's own feature
list for its CPU name plus the target's explicit features; the CPU presets are chosen per level
(``kiln.targets.presets``, docs/performance.md "Defaults per ISA level").
"""

from __future__ import annotations

import difflib
import functools
import re
import subprocess
from collections.abc import Sequence

from kiln.errors import UnsupportedTarget
from kiln.targets.registry import register_target, unsupported
from kiln.targets.toolchain import iree_compile_path, llvm_cpu_catalog
from kiln.targets.types import KindInfo, TargetSpec

__all__ = ["ARCHS", "LEVELS", "cpu_features", "cpu_model", "isa_level"]

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

# ISA levels, each with the LLVM features that define it; the first level whose features a target
# has all of is its level (x86_64: "x86-64", LLVM's ``generic``, when none holds). The x86 names
# follow the psABI levels where they coincide: "x86-64-v2" = SSE4.2 (16-byte vectors), "avx2" =
# AVX2 + FMA (x86-64-v3, 32-byte vectors), "avx512" = AVX-512F (64-byte vectors; also the
# condition on which IREE 3.13 data-tiles convolutions on x86: without it a data-tiled convolution
# silently stays an untiled one). aarch64 and riscv64 are one level each: no measurement here
# tells their CPUs apart (compile-only on this machine).
LEVELS: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    "x86_64": (
        ("avx512", ("avx512f",)),
        ("avx2", ("avx2", "fma")),
        ("x86-64-v2", ("sse4.2",)),
        ("x86-64", ()),
    ),
    "aarch64": (("aarch64", ()),),
    "riscv64": (("riscv64", ()),),
}
_CPU_FEATURES_RE = re.compile(r'cpu_features = "([^"]*)"')


@functools.cache
def cpu_features(arch: str, cpu: str, features: tuple[str, ...] = ()) -> frozenset[str]:
    """The features (names without ``+``) LLVM enables for ``cpu`` on ``arch`` with ``features``
    (``+x``/``-x``) applied, as IREE resolves them into its executable target.

    Read from the compiler itself (a tiny module compiled to ``preprocessing``, a subprocess of
    ~0.1 s, cached per process). Raises ``RuntimeError`` when the compiler does not answer (the
    target was validated first, so that is a broken installation, not a bad request).
    """
    base = ARCHS[arch]
    flags = [
        "--iree-hal-target-device=local",
        "--iree-hal-local-target-device-backends=llvm-cpu",
        f"--iree-llvmcpu-target-triple={base['triple']}",
        f"--iree-llvmcpu-target-cpu={cpu or base['cpu']}",
    ]
    if features:
        flags.append(f"--iree-llvmcpu-target-cpu-features={','.join(features)}")
    proc = subprocess.run(
        [str(iree_compile_path()), *flags, "--compile-to=preprocessing", "-", "-o", "-"],
        input="func.func @f() { return }\n",
        capture_output=True, text=True, timeout=120, check=False,
    )
    m = _CPU_FEATURES_RE.search(proc.stdout)
    if proc.returncode != 0 or m is None:
        raise RuntimeError(
            f"could not read the features of {arch} CPU {cpu!r}: {proc.stderr[-2000:]}"
        )
    # LLVM's list for the CPU comes first and the explicit features after: the last mention of
    # a feature wins, as in LLVM.
    state: dict[str, bool] = {}
    for f in m.group(1).split(","):
        if f[:1] in "+-" and len(f) > 1:
            state[f[1:]] = f[0] == "+"
    return frozenset(name for name, on in state.items() if on)


def isa_level(arch: str, cpu: str = "", features: Sequence[str] = ()) -> str:
    """The ``LEVELS`` name of a normalized CPU target (``cpu`` ``""``: the arch's default CPU)."""
    levels = LEVELS[arch]
    if len(levels) == 1:
        return levels[0][0]
    have = cpu_features(arch, cpu, tuple(features))
    return next(name for name, need in levels if all(f in have for f in need))


def cpu_model(spec: TargetSpec) -> tuple[str, tuple[str, ...]]:
    """(LLVM CPU name, explicit features) of a CPU target; ``("", ())`` for any other kind."""
    if spec.kind != "cpu":
        return "", ()
    parts = spec.target.split(":")
    return parts[2], tuple(f for f in (parts[3] if len(parts) > 3 else "").split(",") if f)


def _unknown(what: str, value: str, valid: list[str], arch: str) -> UnsupportedTarget:
    """A refusal whose message names a few close matches instead of the compiler's 100+ names
    (``detail["valid"]`` still holds all of them)."""
    close = difflib.get_close_matches(value.lower(), valid, n=5, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    where = (f"`kiln targets --cpus {arch}` lists all {len(valid)}" if "CPU" in what
             else f"the error's detail.valid lists all {len(valid)} LLVM features")
    return UnsupportedTarget(f"unsupported cpu {what} {value!r}{hint} ({where})",
                             valid={"cpu": valid})


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
            raise _unknown(f"{arch} CPU name", cpu, sorted(catalog.cpus), arch)
        feats = list(base["features"])  # type: ignore[call-overload]
        if len(parts) > 2 and parts[2]:
            for f in parts[2].split(","):
                if not _FEATURE_RE.match(f) or f[1:] not in catalog.features:
                    raise _unknown(f"{arch} feature", f,
                                   sorted("+" + x for x in catalog.features), arch)
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
