"""What this machine can run: detect its devices and CPU; rank Kiln targets best first, CPU last.

    from kiln.client.resolver import candidates
    candidates("auto")   # [Candidate("cuda:sm_90", "cuda", ...), ..., Candidate("cpu:x86_64:...")]

Sources: ``iree.runtime`` drivers and their devices (cuda → ``sm_XX`` from the driver library's
compute capability or the device name; hip → ``gfxNNNN`` from the KFD topology or the name; vulkan
→ a vendor profile from the device name) and, for the CPU, ``platform.machine()`` plus
``/proc/cpuinfo``: the CPU's LLVM name from x86 vendor/family/model, aarch64 implementer/part or
riscv64 ``uarch``; its features from the kernel's x86 ``flags``, aarch64 ``Features`` or riscv64
``isa`` line, as LLVM names (``kiln.client.isa``), kept on ``CpuInfo.isa`` and turned into the
target's ``+f``/``-f`` deltas to the name's own LLVM list.

Failure semantics: detection never raises. A driver that cannot be created (no libcuda, no GPU) is
simply absent; an x86 CPU whose model is unknown gets the best generic level name (``x86-64-v4``/
``v3``/``v2``), an aarch64 or riscv64 one the arch's generic CPU with deltas; when the compiler's
LLVM lists cannot be read the CPU target is the portable ``cpu:ARCH`` (``isa`` still filled in).
Every CPU name and feature emitted is checked against ``llvm_cpu_catalog`` so the target is always
one the server accepts. Software Vulkan (llvmpipe/lavapipe, SwiftShader) runs on this same CPU and
is always slower than native CPU code, so ``"auto"`` leaves it out; ``device="vulkan"`` selects it.
"""

from __future__ import annotations

import ctypes
import functools
import glob
import logging
import platform
import re
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kiln.client import isa
from kiln.errors import InvalidRequest

__all__ = [
    "DEVICES",
    "Candidate",
    "CpuInfo",
    "DeviceInfo",
    "candidates",
    "detect_cpu",
    "detect_devices",
    "rank",
]

log = logging.getLogger(__name__)

DEVICES = ("auto", "cpu", "vulkan", "cuda", "rocm")


@dataclass(frozen=True)
class DeviceInfo:
    """One runtime device: its iree.runtime ``driver``, ``name`` and the Kiln ``target`` for it."""

    driver: str
    name: str
    target: str
    software: bool = False
    path: str = ""


@dataclass(frozen=True)
class CpuInfo:
    """The host CPU as Kiln targets it; ``features`` are deltas to ``name``'s own LLVM features.

    ``flags``: the kernel's own words for its features (x86 ``flags``, aarch64 ``Features``,
    riscv64 ``isa``); ``isa``: the same as LLVM names, closed under LLVM's implications and kept
    to ``kiln.client.isa.JUDGED`` (what ``isa.runs`` compares). Both are empty only when the
    kernel said nothing (no ``/proc/cpuinfo``, an unknown arch).
    """

    arch: str
    name: str
    features: tuple[str, ...] = ()
    vendor: str = ""
    model_name: str = ""
    flags: frozenset[str] = field(default=frozenset(), repr=False)
    isa: frozenset[str] = field(default=frozenset(), repr=False)

    @property
    def target(self) -> str:
        base = f"cpu:{self.arch}:{self.name}" if self.name else f"cpu:{self.arch}"
        return base + (":" + ",".join(self.features) if self.features else "")


@dataclass(frozen=True)
class Candidate:
    """A target to try, with the runtime driver that runs it."""

    target: str
    driver: str
    device: str = ""


# -- CPU ------------------------------------------------------------------------------------------

# The ISA features compiled kernels can use (vector units, FMA, bit manipulation, AMX). Only these
# are emitted as deltas: system features (sgx, shstk, waitpkg, ...) never appear in generated code,
# and listing them would overflow the 128-character target limit.
_X86_CODEGEN = frozenset({
    "sse3", "ssse3", "sse4.1", "sse4.2", "sse4a", "popcnt", "lzcnt", "bmi", "bmi2", "movbe", "adx",
    "fma", "fma4", "xop", "f16c", "avx", "avx2", "avx512f", "avx512cd", "avx512dq", "avx512bw",
    "avx512vl", "avx512ifma", "avx512vbmi", "avx512vbmi2", "avx512vnni", "avx512bitalg",
    "avx512vpopcntdq", "avx512bf16", "avx512fp16", "avx512vp2intersect", "avxvnni", "avxifma",
    "avxvnniint8", "avxvnniint16", "avxneconvert", "gfni", "vaes", "vpclmulqdq", "aes", "pclmul",
    "sha", "amx-tile", "amx-int8", "amx-bf16", "amx-fp16", "amx-complex",
})
_MAX_TARGET = 128  # kiln.targets.registry's limit on a target string

# (vendor, family) -> [(model range, LLVM name)], after LLVM's Host.cpp.
_INTEL_FAMILY6 = {
    0x1A: "nehalem", 0x1E: "nehalem", 0x1F: "nehalem", 0x2E: "nehalem",
    0x25: "westmere", 0x2C: "westmere", 0x2F: "westmere",
    0x2A: "sandybridge", 0x2D: "sandybridge",
    0x3A: "ivybridge", 0x3E: "ivybridge",
    0x3C: "haswell", 0x3F: "haswell", 0x45: "haswell", 0x46: "haswell",
    0x3D: "broadwell", 0x47: "broadwell", 0x4F: "broadwell", 0x56: "broadwell",
    0x4E: "skylake", 0x5E: "skylake", 0x8E: "skylake", 0x9E: "skylake", 0xA5: "skylake",
    0xA6: "skylake",
    0x55: "skylake-avx512",
    0x66: "cannonlake",
    0x7D: "icelake-client", 0x7E: "icelake-client",
    0x6A: "icelake-server", 0x6C: "icelake-server",
    0x8C: "tigerlake", 0x8D: "tigerlake",
    0xA7: "rocketlake",
    0x97: "alderlake", 0x9A: "alderlake", 0xBE: "alderlake",
    0xB7: "raptorlake", 0xBA: "raptorlake", 0xBF: "raptorlake",
    0xAA: "meteorlake", 0xAC: "meteorlake",
    0xC5: "arrowlake", 0xB5: "arrowlake", 0xC6: "arrowlake-s", 0xBD: "lunarlake",
    0xCC: "pantherlake",
    0x8F: "sapphirerapids",
    0xCF: "emeraldrapids",
    0xAD: "graniterapids", 0xAE: "graniterapids-d",
    0xAF: "sierraforest", 0xB6: "grandridge",
}
_AMD_RANGES: dict[int, list[tuple[range, str]]] = {
    0x17: [(range(0x30, 0x100), "znver2"), (range(0x30), "znver1")],
    0x19: [
        (range(0x10, 0x20), "znver4"), (range(0x60, 0x80), "znver4"), (range(0xA0, 0xB0), "znver4"),
        (range(0x100), "znver3"),
    ],
    0x1A: [(range(0x100), "znver5")],
}
# aarch64 (implementer, part) -> LLVM name.
_ARM_PARTS = {
    (0x41, 0xD08): "cortex-a72", (0x41, 0xD0B): "cortex-a76", (0x41, 0xD0C): "neoverse-n1",
    (0x41, 0xD40): "neoverse-v1", (0x41, 0xD49): "neoverse-n2", (0x41, 0xD4F): "neoverse-v2",
    (0x41, 0xD84): "neoverse-v3", (0x41, 0xD8E): "neoverse-n3", (0xC0, 0xAC3): "ampere1",
    (0xC0, 0xAC4): "ampere1a", (0x61, 0x022): "apple-m1", (0x61, 0x032): "apple-m2",
}
# riscv64 ``uarch`` (the device tree's compatible string) -> LLVM name.
_RISCV_UARCH = {
    "sifive,u74-mc": "sifive-u74", "sifive,u74": "sifive-u74", "sifive,u54-mc": "sifive-u54",
    "sifive,u54": "sifive-u54", "sifive,p550": "sifive-p550", "spacemit,x60": "spacemit-x60",
}


def _cpuinfo_fields(text: str) -> dict[str, str]:
    """The first processor's ``key: value`` lines (all processors are alike for targeting)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if out:
                break
            continue
        if ":" in line:
            k, v = line.split(":", 1)
            out.setdefault(k.strip().lower(), v.strip())
    return out


def _x86_name(vendor: str, family: int, model: int, have: frozenset[str]) -> str | None:
    if vendor == "GenuineIntel" and family == 6:
        name = _INTEL_FAMILY6.get(model)
        if name == "skylake-avx512":  # one model number for three generations, as in LLVM
            name = ("cooperlake" if "avx512bf16" in have
                    else "cascadelake" if "avx512vnni" in have else name)
        return name
    if vendor in ("AuthenticAMD", "HygonGenuine"):
        for models, name in _AMD_RANGES.get(family, []):
            if model in models:
                return name
    return None


def _x86_level(feats: set[str]) -> str:
    """The highest x86-64 micro-architecture level these features meet."""
    v2 = {"cx16", "popcnt", "sse3", "sse4.1", "sse4.2", "ssse3", "sahf"}
    v3 = v2 | {"avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe", "xsave"}
    v4 = v3 | {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}
    for level, need in (("x86-64-v4", v4), ("x86-64-v3", v3), ("x86-64-v2", v2)):
        if need <= feats:
            return level
    return "x86-64"


def _cpu_kind() -> Any:
    """``kiln.targets.cpu``, imported only after the registry loaded every kind (importing one kind
    module first would leave the lazy registry holding that kind alone)."""
    from kiln.targets import kinds

    kinds()
    from kiln.targets import cpu

    return cpu


def _triple(arch: str) -> str:
    cpu_kind = _cpu_kind()
    return str(cpu_kind.ARCHS[arch]["triple"])


@functools.cache
def implied_features(triple: str, cpu: str) -> frozenset[str]:
    """The features LLVM gives ``cpu`` by itself, read from the compiler
    (``--compile-to=preprocessing`` resolves them into the executable target). Empty when that
    cannot be read."""
    from kiln.targets.toolchain import iree_compile_path

    tiny = "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n  return %a : tensor<4xf32>\n}\n"
    try:
        proc = subprocess.run(
            [
                str(iree_compile_path()),
                "--iree-hal-target-device=local",
                "--iree-hal-local-target-device-backends=llvm-cpu",
                f"--iree-llvmcpu-target-triple={triple}",
                f"--iree-llvmcpu-target-cpu={cpu}",
                "--compile-to=preprocessing",
                "-",
            ],
            input=tiny, capture_output=True, text=True, timeout=60, check=False,
        )
    except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
        log.debug("cannot read the features of %s: %s", cpu, exc)
        return frozenset()
    m = re.search(r'cpu_features = "([^"]*)"', proc.stdout)
    if not m:
        return frozenset()
    return frozenset(f[1:] for f in m.group(1).split(",") if f.startswith("+"))


def detect_cpu(
    cpuinfo: str | None = None, *, machine: str | None = None, catalog: Any = None
) -> CpuInfo:
    """The host CPU as a valid Kiln CPU target (see the module docstring for the fallbacks), with
    ``isa``, what its kernel reports it has, always filled in when ``/proc/cpuinfo`` says it.

    ``cpuinfo``/``machine``/``catalog`` default to this machine's; pass them to resolve another.
    """
    cpu_kind = _cpu_kind()
    machine = (machine or platform.machine()).lower()
    arch = cpu_kind.ALIASES.get(machine, machine)
    if arch not in cpu_kind.ARCHS:
        return CpuInfo(arch="x86_64", name="")  # unknown arch: the portable baseline
    if cpuinfo is None:
        try:
            with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
                cpuinfo = f.read()
        except OSError:
            cpuinfo = ""
    fields = _cpuinfo_fields(cpuinfo)
    flags = frozenset(fields.get(_FEATURE_LINE[arch], "").split())
    have = isa.kernel_to_llvm(arch, fields)
    host = CpuInfo(arch, "", (), fields.get("vendor_id", fields.get("cpu implementer", "")),
                   fields.get("model name", fields.get("uarch", "")), flags,
                   have & isa.JUDGED[arch])
    if catalog is None:
        try:
            from kiln.targets.toolchain import llvm_cpu_catalog

            catalog = llvm_cpu_catalog(_triple(arch))
        except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
            log.info("no compiler to validate the CPU target against (%s); using cpu:%s", exc, arch)
            return host
    if arch == "x86_64":
        return _detect_x86(host, fields, have & set(catalog.features), catalog)
    name = _named(arch, fields)
    if name not in catalog.cpus:
        name = str(cpu_kind.ARCHS[arch]["cpu"])
    return _with_deltas(replace(host, name=name), have, catalog)


_FEATURE_LINE = {"x86_64": "flags", "aarch64": "features", "riscv64": "isa"}


def _named(arch: str, fields: dict[str, str]) -> str:
    """The LLVM name of a non-x86 CPU: aarch64 implementer/part, riscv64 ``uarch``; ``""``
    when unknown."""
    if arch == "riscv64":
        return _RISCV_UARCH.get(fields.get("uarch", "").strip().lower(), "")
    try:
        key = (int(fields.get("cpu implementer", "0"), 0), int(fields.get("cpu part", "0"), 0))
    except ValueError:
        return ""
    return _ARM_PARTS.get(key, "")


def _with_deltas(host: CpuInfo, have: frozenset[str], catalog: Any) -> CpuInfo:
    """``host`` with ``+f``/``-f`` for the judged ISA features (``isa.JUDGED``) its name's LLVM
    list and the kernel disagree on; no deltas when that list cannot be read, or when they would
    make the target too long (the name alone then: LLVM's own list for it)."""
    arch = host.arch
    base = tuple(str(f)[1:] for f in _cpu_kind().ARCHS[arch]["features"])
    listed = implied_features(_triple(arch), host.name)
    if not listed and host.name != str(_cpu_kind().ARCHS[arch]["cpu"]):
        return host  # the features the name implies are unknown: no deltas can be made safe
    implied = isa.closure(arch, listed | set(base))
    judged = set(isa.JUDGED[arch]) - set(base)
    feats = _deltas(set(have) & judged, judged, implied, catalog)
    out = replace(host, features=feats)
    return out if len(out.target) <= _MAX_TARGET else host


def _deltas(
    have: set[str], detectable: set[str], implied: frozenset[str], catalog: Any
) -> tuple[str, ...]:
    """``+f`` for detected features the name lacks, ``-f`` for the name's ones this CPU lacks."""
    valid = set(catalog.features)
    plus = {f for f in have - implied if f in valid}
    minus = {f for f in (implied & detectable) - have if f in valid}
    return tuple(sorted([f"+{f}" for f in plus] + [f"-{f}" for f in minus], key=lambda s: s[1:]))


def _detect_x86(
    host: CpuInfo, fields: dict[str, str], have: frozenset[str], catalog: Any
) -> CpuInfo:
    try:
        name = _x86_name(host.vendor, int(fields.get("cpu family", "0")),
                         int(fields.get("model", "0")), have)
    except ValueError:
        name = None
    level = _x86_level(set(have))
    tries = [n for n in (name, level, "x86-64", "generic") if n and n in catalog.cpus]
    for cand in tries:
        implied = implied_features(_triple("x86_64"), cand)
        if not implied and cand not in ("x86-64", "generic"):
            continue  # the features a name implies are unknown: cannot make it safe
        feats = _deltas(set(have & _X86_CODEGEN), set(_X86_CODEGEN), implied, catalog)
        info = replace(host, name=cand, features=feats)
        if len(info.target) <= _MAX_TARGET:
            return info
        # Too long: the level name alone is always safe (this CPU has all of its features).
    return replace(host, name=level if level in catalog.cpus else "generic")


# -- accelerators ---------------------------------------------------------------------------------

_SOFTWARE_VULKAN = re.compile(r"llvmpipe|lavapipe|swiftshader", re.IGNORECASE)
# Vulkan profile of a GPU generation, from its CUDA or ROCm arch (the product names themselves
# are the target kinds' alias tables: kiln.targets.cuda/rocm/vulkan ALIASES).
_SM_PROFILES = (("sm_89", "ada"), ("sm_8", "ampere"), ("sm_75", "turing"), ("sm_7", "volta"),
                ("sm_6", "pascal"))
_GFX_PROFILES = (("gfx12", "rdna4"), ("gfx11", "rdna3"), ("gfx103", "rdna2"), ("gfx101", "rdna1"),
                 ("gfx94", "cdna3"))


# Product *series* the alias tables cannot list one by one (an alias names one product): a
# GeForce RTX 3080 is an sm_86 part like the rtx3090 alias, an RX 7600 is RDNA3, a Mali-G52 is
# older than the G71+/G6xx+ the ``mali`` alias means. CUDA: tried when no alias matches; Vulkan:
# first (a series says more than a family alias in the same name).
_SERIES: dict[str, tuple[tuple[str, str], ...]] = {
    "cuda": ((r"RTX 50\d\d", "sm_120"), (r"RTX 40\d\d|RTX \d+ Ada", "sm_89"),
             (r"RTX 30\d\d|RTX A\d+", "sm_86"), (r"RTX 20\d\d|Quadro RTX|GTX 16\d\d", "sm_75"),
             (r"GTX 10\d\d", "sm_61")),
    "vulkan": ((r"RX 9\d{3}", "rdna4"), (r"RX 7\d{3}", "rdna3"), (r"RX 6\d{3}", "rdna2"),
               (r"RX 5\d{3}", "rdna1"), (r"Mali-G(?:7[1-9]|[6-9]\d\d|\d{3,})|Immortalis", "valhall4"),
               (r"Mali", "valhall1")),
}


def _series(name: str, kind: str) -> str | None:
    return next((arch for pattern, arch in _SERIES[kind] if re.search(pattern, name)), None)


def _kind_tables(kind: str) -> tuple[tuple[str, ...], dict[str, str]]:
    """(archs, aliases) of a target kind: pure-Python tables, there without the compiler."""
    _cpu_kind()  # the whole registry first (see _cpu_kind)
    import importlib

    mod = importlib.import_module(f"kiln.targets.{kind}")
    return tuple(mod.ARCHS), dict(mod.ALIASES)


def _product(name: str, kind: str) -> str | None:
    """The arch of ``kind`` a device name names: a word of the name, or two or three adjacent
    words run together, that is one of the kind's archs or aliases (``NVIDIA H100 80GB HBM3``
    -> ``h100`` -> ``sm_90``; ``AMD Radeon RX 7900 XTX`` -> ``rx7900xtx`` -> ``gfx1100``)."""
    archs, aliases = _kind_tables(kind)
    # Names are compared as runs of letters and digits: "dgx-spark" is "DGX Spark" or "dgxspark".
    table = {re.sub(r"[^a-z0-9]", "", a): arch for a, arch in aliases.items()}
    table.update({re.sub(r"[^a-z0-9]", "", a): a for a in archs})
    words = re.findall(r"[a-z0-9]+", name.lower())
    for n in (3, 2, 1):
        for i in range(len(words) - n + 1):
            arch = table.get("".join(words[i : i + n]))
            if arch is not None:
                return arch
    return None


def _cuda_arch(index: int, name: str) -> str | None:
    """Compute capability from libcuda (cuDeviceGetAttribute 75/76), else from the name."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
        dev, major, minor = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        if (
            cuda.cuInit(0) == 0
            and cuda.cuDeviceGet(ctypes.byref(dev), index) == 0
            and cuda.cuDeviceGetAttribute(ctypes.byref(major), 75, dev) == 0
            and cuda.cuDeviceGetAttribute(ctypes.byref(minor), 76, dev) == 0
        ):
            return f"sm_{major.value}{minor.value}"
    except (OSError, AttributeError):
        pass
    return _product(name, "cuda") or _series(name, "cuda")


def _hip_archs() -> list[str]:
    """``gfxNNNN`` of each GPU in the KFD topology (``gfx_target_version`` 110000 → gfx1100)."""
    out = []
    for props in sorted(glob.glob("/sys/class/kfd/kfd/topology/nodes/*/properties")):
        try:
            text = Path(props).read_text(encoding="ascii")
        except OSError:
            continue
        m = re.search(r"gfx_target_version\s+(\d+)", text)
        if m and int(m.group(1)):
            v = int(m.group(1))
            major, minor, step = v // 10000, (v // 100) % 100, v % 100
            out.append(f"gfx{major}{minor:x}{step:x}")
    return out


def _vulkan_target(name: str) -> str:
    """The Vulkan profile for a device name: named outright (``llvmpipe``, ``adreno``, an alias
    such as ``mali``), else the generation of the CUDA or ROCm arch the name says; else the
    portable default profile."""
    # A series (Mali-G52) says more than a family alias (``mali``) found in the same name.
    profile = _series(name, "vulkan") or _product(name, "vulkan")
    if profile is None:
        sm, gfx = _product(name, "cuda") or _series(name, "cuda"), _product(name, "rocm")
        table, arch = (_SM_PROFILES, sm) if sm else (_GFX_PROFILES, gfx)
        profile = next((p for prefix, p in table if arch and arch.startswith(prefix)), None)
    return f"vulkan:{profile}" if profile and profile != "generic" else "vulkan"


def detect_devices(rt: Any = None) -> list[DeviceInfo]:
    """Every accelerator device iree.runtime can open here (CPU excluded). Never raises."""
    if rt is None:
        try:
            import iree.runtime as iree_runtime
        except ImportError:
            return []
        rt = iree_runtime
    found: list[DeviceInfo] = []
    try:
        drivers = list(rt.query_available_drivers())
    except Exception:  # noqa: BLE001 - a broken runtime means "no devices", by contract
        return []
    hip = _hip_archs()
    for driver in ("cuda", "hip", "vulkan"):
        if driver not in drivers:
            continue
        try:
            devices = rt.get_driver(driver).query_available_devices()
        except Exception as exc:  # noqa: BLE001 - the driver library is missing: no device
            log.debug("driver %s unavailable: %s", driver, exc)
            continue
        for i, d in enumerate(devices):
            name = str(d.get("name", ""))
            path = str(d.get("path", ""))
            if driver == "cuda":
                arch = _cuda_arch(i, name)
                if arch:
                    found.append(DeviceInfo("cuda", name, f"cuda:{arch}", path=path))
            elif driver == "hip":
                arch = hip[i] if i < len(hip) else None
                if arch:
                    found.append(DeviceInfo("hip", name, f"rocm:{arch}", path=path))
            else:
                soft = bool(_SOFTWARE_VULKAN.search(name))
                found.append(DeviceInfo("vulkan", name, _vulkan_target(name), soft, path))
    return found


# -- ranking --------------------------------------------------------------------------------------

def rank(
    device: str, devices: Iterable[DeviceInfo], cpu: CpuInfo
) -> list[Candidate]:
    """Order targets best first: CUDA, ROCm, hardware Vulkan, then the CPU (always last).

    ``device`` is ``"auto"``, a kind that forces a choice (then only that kind is listed, and
    the list is empty when this machine has no such device) or a full target string such as
    ``vulkan:llvmpipe`` or ``cpu:x86_64:znver3``: that target alone, on a device of its kind (the
    one whose detected target it is, if any), empty when there is none. The target string is
    passed on as given; the server normalizes it and refuses what it does not accept.
    """
    device = device.strip().lower()
    kind, sep, _ = device.partition(":")
    known = kind in DEVICES[1:] if sep else device in DEVICES
    if not known:
        raise InvalidRequest(
            f"unknown device {device!r}; valid: {', '.join(DEVICES)}, or a target string of one "
            "of those kinds, e.g. vulkan:llvmpipe or cpu:x86_64:znver3")
    if sep:
        here = rank(kind, devices, cpu)
        same = [c for c in here if c.target == device] or here[:1]
        return [Candidate(device, c.driver, c.device) for c in same]
    order = {"cuda": 0, "hip": 1, "vulkan": 2}
    devs = sorted(devices, key=lambda d: (order.get(d.driver, 9), d.software))
    out: list[Candidate] = []
    seen: set[str] = set()

    def add(target: str, driver: str, name: str) -> None:
        if target not in seen:
            seen.add(target)
            out.append(Candidate(target, driver, name))

    if device == "cpu":
        add(cpu.target, "local-task", cpu.model_name)
        return out
    for d in devs:
        if device == "auto" and d.software:
            continue
        if device in ("auto", {"hip": "rocm"}.get(d.driver, d.driver)):
            add(d.target, d.driver, d.name)
    if device == "auto":
        add(cpu.target, "local-task", cpu.model_name)
    return out


def candidates(device: str = "auto") -> list[Candidate]:
    """The targets for this machine, best first, CPU last (``rank`` over what is detected here)."""
    on_cpu = device.strip().lower().partition(":")[0] == "cpu"
    return rank(device, [] if on_cpu else detect_devices(), _host_cpu())


@functools.cache
def _host_cpu() -> CpuInfo:
    return detect_cpu()

