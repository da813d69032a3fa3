"""CPU detection on every vendor, from recorded ``/proc/cpuinfo`` texts (tests/fixtures/cpuinfo,
each file's header says where it comes from): the LLVM name, a target the server accepts, the
kernel's features as LLVM names, and which targets each CPU can execute (idle tuning's check),
whatever machine runs the tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from kiln.client import isa
from kiln.client.resolver import CpuInfo, detect_cpu
from kiln.service.idle_tuning import host_can_execute
from kiln.targets import parse_target
from kiln.targets.toolchain import llvm_cpu_catalog

FIXTURES = Path(__file__).parent / "fixtures" / "cpuinfo"
TRIPLES = {"x86_64": "x86_64-unknown-linux-gnu", "aarch64": "aarch64-unknown-linux-gnu",
           "riscv64": "riscv64-unknown-linux-gnu"}

# fixture -> (arch, detected LLVM name, CPU names it executes, CPU names it does not)
CASES: dict[str, tuple[str, str, list[str], list[str]]] = {
    "zen2-epyc-7b12": ("x86_64", "znver2",
                       ["x86-64", "x86-64-v2", "x86-64-v3", "haswell", "znver2"],
                       ["x86-64-v4", "skylake-avx512", "icelake-server", "znver3", "znver4"]),
    "zen3-epyc-7b13": ("x86_64", "znver3",
                       ["x86-64-v3", "haswell", "znver2", "znver3"],
                       ["x86-64-v4", "skylake-avx512", "znver4", "icelake-server"]),
    "zen4-epyc-9r14": ("x86_64", "znver4",
                       ["x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4", "haswell",
                        "skylake-avx512", "cascadelake", "cooperlake", "icelake-server",
                        "znver3", "znver4"],
                       ["znver5", "sapphirerapids"]),
    "zen5-ryzen-9950x": ("x86_64", "znver5",
                         ["x86-64-v4", "skylake-avx512", "icelake-server", "znver4", "znver5"],
                         ["sapphirerapids"]),
    "skylake-sp-xeon-8175m": ("x86_64", "skylake-avx512",
                              ["x86-64-v2", "x86-64-v3", "x86-64-v4", "haswell",
                               "skylake-avx512"],
                              ["cascadelake", "icelake-server", "znver2", "znver4"]),
    "icelake-sp-xeon-8375c": ("x86_64", "icelake-server",
                              ["x86-64-v4", "haswell", "skylake-avx512", "cascadelake",
                               "icelake-server"],
                              ["sapphirerapids", "cooperlake", "znver3", "znver4"]),
    "sapphirerapids-xeon-8480": ("x86_64", "sapphirerapids",
                                 ["x86-64-v2", "x86-64-v4", "haswell", "skylake-avx512",
                                  "cooperlake", "icelake-server", "sapphirerapids"],
                                 ["znver2", "znver4", "graniterapids"]),
    "graviton2-neoverse-n1": ("aarch64", "neoverse-n1", ["generic", "neoverse-n1"],
                              ["neoverse-v1", "neoverse-n2", "neoverse-v2"]),
    "graviton3-neoverse-v1": ("aarch64", "neoverse-v1",
                              ["generic", "neoverse-n1", "neoverse-v1"],
                              ["neoverse-n2", "neoverse-v2"]),
    "visionfive2-sifive-u74": ("riscv64", "sifive-u74", ["generic-rv64", "sifive-u74"],
                               ["sifive-x280", "spacemit-x60"]),
}


def cpuinfo(name: str) -> str:
    """A fixture's text without its ``#`` header (which /proc/cpuinfo never has)."""
    lines = (FIXTURES / f"{name}.txt").read_text().splitlines(keepends=True)
    return "".join(line for line in lines if not line.startswith("#"))


def test_every_fixture_has_a_case() -> None:
    assert sorted(p.stem for p in FIXTURES.glob("*.txt")) == sorted(CASES)


@pytest.mark.parametrize("fixture", sorted(CASES))
def test_detected_name_target_and_what_it_executes(fixture: str) -> None:
    arch, name, runs, not_runs = CASES[fixture]
    cpu = detect_cpu(cpuinfo(fixture), machine=arch)
    assert (cpu.arch, cpu.name) == (arch, name)
    assert parse_target(cpu.target).target == cpu.target  # the server accepts it as is
    assert cpu.flags and cpu.isa and cpu.isa <= isa.JUDGED[arch]
    assert host_can_execute(cpu.target, host=cpu)  # its own target, deltas included
    assert [n for n in runs if not host_can_execute(f"cpu:{arch}:{n}", host=cpu)] == []
    assert [n for n in not_runs if host_can_execute(f"cpu:{arch}:{n}", host=cpu)] == []
    other = next(a for a in TRIPLES if a != arch)
    assert not host_can_execute(f"cpu:{other}:{'generic-rv64' if other == 'riscv64' else 'generic'}",
                                host=cpu)


def test_features_the_kernel_words_differently_or_never_are_judged_right() -> None:
    zen4 = detect_cpu(cpuinfo("zen4-epyc-9r14"), machine="x86_64")
    # No crc32 flag: SSE4.2 includes it. cmov, x87 (fpu), sahf (lahf_lm) come from the flags,
    # not from LLVM's znver4 list, which lacks cmov.
    assert {"crc32", "cmov", "x87", "sahf", "prfchw", "lzcnt"} <= zen4.isa
    # System features never make a target non-executable: LLVM's icelake-server lists SGX and
    # PCONFIG, which no AMD CPU has.
    assert not {"sgx", "pconfig"} & zen4.flags
    assert host_can_execute("cpu:x86_64:icelake-server", host=zen4)
    # A VisionFive 2 kernel says nothing of zvl*; U74 code runs, vector code does not.
    vf2 = detect_cpu(cpuinfo("visionfive2-sifive-u74"), machine="riscv64")
    assert vf2.target == "cpu:riscv64:sifive-u74:+zba,+zbb" and "v" not in vf2.isa


def test_explicit_features_apply_as_llvm_applies_them() -> None:
    zen2 = detect_cpu(cpuinfo("zen2-epyc-7b12"), machine="x86_64")
    spr = detect_cpu(cpuinfo("sapphirerapids-xeon-8480"), machine="x86_64")
    # -avx512f removes every AVX-512 extension with it (not only the one named).
    assert host_can_execute("cpu:x86_64:skylake-avx512:-avx512f", host=zen2)
    assert not host_can_execute("cpu:x86_64:skylake-avx512:-avx512bw", host=zen2)
    # +f brings what it implies: generic plus AVX-512F is AVX2 and FMA code too.
    assert not host_can_execute("cpu:x86_64:generic:+avx512f", host=zen2)
    assert host_can_execute("cpu:x86_64:haswell:+amx-tile", host=spr)
    assert not host_can_execute("cpu:x86_64:haswell:+amx-tile", host=zen2)
    g2 = detect_cpu(cpuinfo("graviton2-neoverse-n1"), machine="aarch64")
    assert host_can_execute("cpu:aarch64:neoverse-v1:-sve,-i8mm,-bf16,-fp16fml,-sha3,-sm4,"
                            "-jsconv,-complxnum,-rcpc-immo,-flagm", host=g2)


def test_a_silent_kernel_or_an_unknown_machine_executes_nothing() -> None:
    empty = detect_cpu("", machine="x86_64")
    assert empty.isa == frozenset() and not host_can_execute("cpu:x86_64:generic", host=empty)
    sparc = detect_cpu("", machine="sparc64")
    assert not host_can_execute("cpu:x86_64:x86-64", host=sparc)
    assert not host_can_execute("cpu:x86_64:no-such-cpu", host=detect_cpu(
        cpuinfo("zen4-epyc-9r14"), machine="x86_64"))
    assert not host_can_execute("vulkan:generic", host=CpuInfo("x86_64", "znver4"))


def test_without_a_compiler_the_target_is_portable_and_the_features_known(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from kiln.targets import toolchain

    def broken(triple: str) -> object:
        raise RuntimeError("no iree-compile")

    monkeypatch.setattr(toolchain, "llvm_cpu_catalog", broken)
    cpu = detect_cpu(cpuinfo("graviton3-neoverse-v1"), machine="aarch64")
    assert cpu.target == "cpu:aarch64" and {"sve", "i8mm", "bf16"} <= cpu.isa


@pytest.mark.parametrize("arch", sorted(TRIPLES))
def test_every_feature_name_used_is_an_llvm_feature(arch: str) -> None:
    valid = set(llvm_cpu_catalog(TRIPLES[arch]).features)
    named = set(isa.JUDGED[arch]) | set(isa.IMPLIES[arch])
    named |= {f for fs in isa.IMPLIES[arch].values() for f in fs}
    if arch == "x86_64":
        named |= set(isa.X86_FLAGS.values()) - {"ermsb"}
    if arch == "aarch64":
        named |= {f for fs in isa.ARM_FLAGS.values() for f in fs}
    assert sorted(named - valid) == []
