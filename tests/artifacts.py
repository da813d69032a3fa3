"""Structural checks of .vmfb files for targets that cannot run here (no GPU)."""

from __future__ import annotations

import re
import struct

EM = {62: "x86_64", 183: "aarch64", 243: "riscv64", 224: "amdgpu"}


def elf_machines(data: bytes) -> list[str]:
    out = []
    for m in re.finditer(rb"\x7fELF", data):
        off = m.start()
        if len(data) < off + 20:
            continue
        (machine,) = struct.unpack_from("<H", data, off + 18)
        out.append(EM.get(machine, str(machine)))
    return out


def ptx_targets(data: bytes) -> list[str]:
    return [m.decode() for m in re.findall(rb"\.target\s+(sm_\w+)", data)]


# EF_AMDGPU_MACH_AMDGCN_* (LLVM's ELF.h), the low byte of an HSACO's e_flags.
AMDGPU_MACH = {
    0x30: "gfx908",
    0x3F: "gfx90a",
    0x4C: "gfx942",
    0x4F: "gfx950",
    0x36: "gfx1030",
    0x41: "gfx1100",
    0x44: "gfx1103",
    0x43: "gfx1150",
    0x4A: "gfx1151",
    0x46: "gfx1101",
    0x48: "gfx1200",
    0x4E: "gfx1201",
}


def hsaco_archs(data: bytes) -> list[str]:
    """The GPU arch of every AMDGPU ELF (HSACO) inside the blob, read from its ELF header."""
    out = []
    for m in re.finditer(rb"\x7fELF", data):
        off = m.start()
        if len(data) < off + 52:
            continue
        (machine,) = struct.unpack_from("<H", data, off + 18)
        if machine != 224:
            continue
        (flags,) = struct.unpack_from("<I", data, off + 48)
        out.append(AMDGPU_MACH.get(flags & 0xFF, hex(flags & 0xFF)))
    return out


def has_spirv(data: bytes) -> bool:
    return struct.pack("<I", 0x07230203) in data


def has_format(data: bytes, fmt: str) -> bool:
    return fmt.encode() in data
