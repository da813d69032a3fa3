"""The resolver: this machine's CPU target and devices, and the ranking best first, CPU last."""

from __future__ import annotations

import platform
from pathlib import Path
from typing import Any

import pytest

from kiln.client import resolver
from kiln.client.resolver import CpuInfo, DeviceInfo, detect_cpu, rank
from kiln.targets import parse_target
from kiln.targets.toolchain import llvm_cpu_catalog

EMR_FLAGS = (
    "fpu sse sse2 pni pclmulqdq ssse3 fma cx16 sse4_1 sse4_2 movbe popcnt aes xsave avx f16c "
    "rdrand lahf_lm abm bmi1 avx2 bmi2 avx512f avx512dq adx avx512ifma avx512cd sha_ni avx512bw "
    "avx512vl "
    "avx512vbmi avx512_vbmi2 gfni vaes vpclmulqdq avx512_vnni avx512_bitalg avx512_vpopcntdq"
)
ZEN3_FLAGS = (
    "fpu sse sse2 pni pclmulqdq ssse3 fma cx16 sse4_1 sse4_2 movbe popcnt aes xsave avx f16c "
    "rdrand lahf_lm abm sse4a bmi1 avx2 bmi2 adx sha_ni clzero vaes vpclmulqdq rdpid fsrm"
)


def _cpuinfo(vendor: str, family: int, model: int, flags: str) -> str:
    return (f"processor\t: 0\nvendor_id\t: {vendor}\ncpu family\t: {family}\nmodel\t\t: {model}\n"
            f"model name\t: Some CPU\nflags\t\t: {flags}\n\nprocessor\t: 1\n")


def test_emerald_rapids_vm_gets_its_name_minus_what_the_hypervisor_hides() -> None:
    cpu = detect_cpu(_cpuinfo("GenuineIntel", 6, 207, EMR_FLAGS), machine="x86_64")
    assert cpu.name == "emeraldrapids"
    # LLVM's emeraldrapids has AMX, AVX512-BF16/FP16 and AVX-VNNI; this CPU does not report them.
    for f in ("-amx-tile", "-avx512bf16", "-avx512fp16", "-avxvnni"):
        assert f in cpu.features
    assert not any(f[1:] in ("avx512f", "avx2", "fma") for f in cpu.features)
    assert parse_target(cpu.target).target == cpu.target  # the server accepts it as is


def test_amd_zen3_and_unknown_models() -> None:
    cpu = detect_cpu(_cpuinfo("AuthenticAMD", 25, 0x21, ZEN3_FLAGS), machine="x86_64")
    assert cpu.name == "znver3"
    assert parse_target(cpu.target).target == cpu.target
    unknown = detect_cpu(_cpuinfo("GenuineIntel", 6, 0x01, EMR_FLAGS), machine="x86_64")
    assert unknown.name == "x86-64-v4"  # generic level from the flags
    old = detect_cpu(_cpuinfo("GenuineIntel", 6, 0x01, "fpu sse sse2 pni ssse3 cx16 sse4_1 "
                              "sse4_2 popcnt lahf_lm"), machine="x86_64")
    assert old.name == "x86-64-v2" and parse_target(old.target)
    assert detect_cpu("", machine="sparc64").target == "cpu:x86_64"  # unknown arch: baseline


@pytest.mark.skipif(platform.machine() != "x86_64", reason="x86_64 host")
def test_this_machines_cpu_target() -> None:
    fields = resolver._cpuinfo_fields(Path("/proc/cpuinfo").read_text())
    flags = set(fields["flags"].split())
    cpu = detect_cpu()
    cat = llvm_cpu_catalog("x86_64-unknown-linux-gnu")
    assert cpu.name in cat.cpus and cpu.name not in ("generic", "x86-64")
    if fields.get("vendor_id") == "GenuineIntel" and fields.get("model") == "207":
        assert cpu.name == "emeraldrapids"
    for linux, llvm in (("avx2", "avx2"), ("avx512f", "avx512f"), ("amx_tile", "amx-tile"),
                        ("avx512_fp16", "avx512fp16")):
        if linux in flags:
            assert f"-{llvm}" not in cpu.features
        else:
            assert f"+{llvm}" not in cpu.features
    assert parse_target(cpu.target).target == cpu.target
    cands = resolver.candidates("auto")
    assert cands[-1].target == cpu.target and cands[-1].driver == "local-task"


def test_this_machine_has_lavapipe_for_forced_vulkan() -> None:
    devices = resolver.detect_devices()
    if not any(d.driver == "vulkan" for d in devices):
        pytest.skip("no Vulkan device here")
    lvp = [d for d in devices if "llvmpipe" in d.name]
    if lvp:
        assert lvp[0].target == "vulkan:llvmpipe" and lvp[0].software
        assert resolver.candidates("vulkan")[0].target == "vulkan:llvmpipe"
        # Software Vulkan runs on this CPU and is slower than native code: auto skips it.
        assert "vulkan:llvmpipe" not in [c.target for c in resolver.candidates("auto")]


class FakeRuntime:
    def __init__(self, devices: dict[str, list[dict[str, Any]]]) -> None:
        self.devices = devices

    def query_available_drivers(self) -> list[str]:
        return ["cuda", "hip", "local-task", "vulkan"]

    def get_driver(self, name: str) -> Any:
        if name not in self.devices:
            raise RuntimeError(f"{name} driver library not available")
        devs = self.devices[name]
        return type("D", (), {"query_available_devices": lambda self: devs})()


def test_ranking_gpu_first_cpu_last_and_forced_kinds(monkeypatch: pytest.MonkeyPatch) -> None:
    # As on a machine whose libcuda is absent: the arch comes from the device name.
    monkeypatch.setattr(resolver, "_cuda_arch", lambda i, name: resolver._product(name, "cuda"))
    rt = FakeRuntime({
        "cuda": [{"name": "NVIDIA H100 80GB HBM3", "path": "GPU-1"}],
        "vulkan": [{"name": "llvmpipe (LLVM 15.0.6, 256 bits)", "path": "a"},
                   {"name": "AMD Radeon RX 7900 XTX (RADV NAVI31)", "path": "b"}],
    })
    devices = resolver.detect_devices(rt)
    assert [d.target for d in devices] == ["cuda:sm_90", "vulkan:llvmpipe", "vulkan:rdna3"]
    cpu = CpuInfo("x86_64", "znver3")
    auto = [c.target for c in rank("auto", devices, cpu)]
    assert auto == ["cuda:sm_90", "vulkan:rdna3", "cpu:x86_64:znver3"]
    assert [c.target for c in rank("vulkan", devices, cpu)] == ["vulkan:rdna3", "vulkan:llvmpipe"]
    assert [c.driver for c in rank("cuda", devices, cpu)] == ["cuda"]
    assert rank("rocm", devices, cpu) == []  # no such device: load() says so
    assert [c.target for c in rank("cpu", [], cpu)] == ["cpu:x86_64:znver3"]
    with pytest.raises(Exception, match="unknown device"):
        rank("tpu", devices, cpu)
    assert [d.target for d in resolver.detect_devices(FakeRuntime({}))] == []
    assert DeviceInfo("vulkan", "x", "vulkan").software is False


def test_a_full_target_string_is_a_device_too() -> None:
    devices = [DeviceInfo("vulkan", "AMD Radeon RX 7900 XTX (RADV NAVI31)", "vulkan:rdna3"),
               DeviceInfo("vulkan", "llvmpipe (LLVM 15.0.6, 256 bits)", "vulkan:llvmpipe", True)]
    cpu = CpuInfo("x86_64", "znver3")
    # The device whose detected target it is (lavapipe here, though it is the software one).
    assert rank("vulkan:llvmpipe", devices, cpu) == [
        resolver.Candidate("vulkan:llvmpipe", "vulkan", "llvmpipe (LLVM 15.0.6, 256 bits)")]
    assert [(c.target, c.driver) for c in rank("vulkan:ampere", devices, cpu)] == [
        ("vulkan:ampere", "vulkan")]  # a profile of the kind, on its first device
    assert [(c.target, c.driver) for c in rank("CPU:x86_64:skylake", [], cpu)] == [
        ("cpu:x86_64:skylake", "local-task")]
    assert rank("rocm:gfx942", devices, cpu) == []  # no such device here: load() says NotFound
    with pytest.raises(Exception, match="vulkan:llvmpipe or cpu:x86_64:znver3"):
        rank("tpu:v5", devices, cpu)


@pytest.mark.parametrize(
    ("name", "cuda", "vulkan"),
    [
        ("NVIDIA H100 80GB HBM3", "sm_90", "vulkan"),  # no Vulkan profile for Hopper
        ("NVIDIA A100-SXM4-80GB", "sm_80", "vulkan:ampere"),
        ("NVIDIA GeForce RTX 4090", "sm_89", "vulkan:ada"),
        ("Tesla T4", "sm_75", "vulkan:turing"),
        ("NVIDIA L40S", "sm_89", "vulkan:ada"),
        ("AMD Radeon RX 7900 XTX (RADV NAVI31)", None, "vulkan:rdna3"),
        ("AMD Instinct MI300X", None, "vulkan:cdna3"),
        ("llvmpipe (LLVM 15.0.6, 256 bits)", None, "vulkan:llvmpipe"),
        ("Adreno (TM) 740", None, "vulkan:adreno"),
        ("Some Unknown GPU", None, "vulkan"),
    ],
)
def test_device_names_are_read_with_the_target_kinds_own_tables(
    name: str, cuda: str | None, vulkan: str
) -> None:
    assert resolver._product(name, "cuda") == cuda
    assert resolver._vulkan_target(name) == vulkan


@pytest.mark.parametrize(
    ("name", "cuda", "vulkan"),
    [
        ("NVIDIA GeForce RTX 3080", "sm_86", "vulkan:ampere"),
        ("NVIDIA GeForce RTX 2070 SUPER", "sm_75", "vulkan:turing"),
        ("NVIDIA RTX 4000 Ada Generation", "sm_89", "vulkan:ada"),
        ("AMD Radeon RX 7600 (RADV NAVI33)", None, "vulkan:rdna3"),
        ("AMD Radeon RX 6800 XT", None, "vulkan:rdna2"),
        ("Mali-G52 MC2", None, "vulkan:valhall1"),
        ("Mali-G710 MC10", None, "vulkan:valhall4"),
    ],
)
def test_product_series_without_an_alias_still_resolve(
    name: str, cuda: str | None, vulkan: str
) -> None:
    assert resolver._cuda_arch(99, name) == cuda  # no libcuda here: read from the name
    assert resolver._vulkan_target(name) == vulkan


def test_every_product_alias_of_the_targets_is_a_device_name_the_resolver_knows() -> None:
    # One table: a product added to kiln.targets.cuda/rocm ALIASES is recognised here too.
    from kiln.targets import cuda, rocm

    for kind, table in (("cuda", cuda.ALIASES), ("rocm", rocm.ALIASES)):
        for alias, arch in table.items():
            assert resolver._product(f"Vendor {alias.upper()} 64GB", kind) == arch, alias
