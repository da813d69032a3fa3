"""ISA features as LLVM names: what the kernel says a CPU has, what a CPU target's code may use,
and whether one runs the other.

    host = kernel_isa("x86_64", cpuinfo_fields)      # frozenset({"avx2", "crc32", "sse4.2", ...})
    runs(host, target_isa("x86_64", "haswell", ()))  # True on any AVX2 CPU, AMD or Intel

The kernel's words (x86 ``flags``, aarch64 ``Features``, the riscv64 ``isa`` string) are mapped to
LLVM's feature names and closed under ``IMPLIES`` (SSE4.2 includes CRC32; an extension includes
what it extends). A target's features are LLVM's list for its CPU name, read from the compiler
(``kiln.targets.cpu.cpu_features``), closed the same way, with its ``+f``/``-f`` applied as LLVM
applies them: ``+f`` adds ``f`` and what it implies, ``-f`` removes ``f`` and everything that
implies it (``-avx512f`` drops every AVX-512 extension).

A target runs on a host when every feature in ``JUDGED`` that the target enables is one the host
has. ``JUDGED`` holds, per arch, the instruction-set extensions compiled code can contain that the
kernel reports: system features (x86 ``invpcid``, ``sgx``, ``shstk``; Arm ``ras``, ``spe``,
``pauth``), features compiled tensor code only reaches through intrinsics (``rdrnd``, ``clwb``)
and features no kernel line reports (riscv64 vector length ``zvl256b``) are left out, so none of
them makes a target non-executable. LLVM's CPU lists are explicit lists, not closures: its
``znver4`` list lacks ``cmov``, which ``x86-64-v2`` has, so comparing two LLVM lists says an
AVX-512 EPYC cannot run ``x86-64-v2`` code; the host's side therefore always comes from the kernel.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

__all__ = ["IMPLIES", "JUDGED", "apply_features", "closure", "kernel_isa", "kernel_to_llvm", "runs", "target_isa"]

# Linux /proc/cpuinfo x86 flag -> LLVM feature, where the names differ (others are the same).
X86_FLAGS = {
    "fpu": "x87", "pni": "sse3", "sse4_1": "sse4.1", "sse4_2": "sse4.2", "pclmulqdq": "pclmul",
    "lahf_lm": "sahf", "abm": "lzcnt", "bmi1": "bmi", "rdrand": "rdrnd", "erms": "ermsb",
    "sha_ni": "sha", "3dnowprefetch": "prfchw",
    "avx512_vbmi2": "avx512vbmi2", "avx512_vnni": "avx512vnni", "avx512_bitalg": "avx512bitalg",
    "avx512_vpopcntdq": "avx512vpopcntdq", "avx512_bf16": "avx512bf16",
    "avx512_fp16": "avx512fp16", "avx512_vp2intersect": "avx512vp2intersect",
    "avx_vnni": "avxvnni", "avx_ifma": "avxifma", "avx_vnni_int8": "avxvnniint8",
    "avx_vnni_int16": "avxvnniint16", "avx_ne_convert": "avxneconvert",
    "amx_tile": "amx-tile", "amx_bf16": "amx-bf16", "amx_int8": "amx-int8",
    "amx_fp16": "amx-fp16", "amx_complex": "amx-complex",
}
# aarch64 ``Features`` word (the kernel's hwcap names) -> LLVM features.
ARM_FLAGS: dict[str, tuple[str, ...]] = {
    "fp": ("fp-armv8",), "asimd": ("neon",), "aes": ("aes",), "pmull": ("aes",),
    "sha1": ("sha2",), "sha2": ("sha2",), "sha3": ("sha3",), "sha512": ("sha3",),
    "sm3": ("sm4",), "sm4": ("sm4",), "crc32": ("crc",), "atomics": ("lse",),
    "fphp": ("fullfp16",), "asimdhp": ("fullfp16",), "asimdrdm": ("rdm",), "jscvt": ("jsconv",),
    "fcma": ("complxnum",), "lrcpc": ("rcpc",), "ilrcpc": ("rcpc-immo",), "dcpop": ("ccpp",),
    "dcpodp": ("ccdp",), "asimddp": ("dotprod",), "asimdfhm": ("fp16fml",), "sve": ("sve",),
    "sve2": ("sve2",), "svebitperm": ("sve-bitperm",), "i8mm": ("i8mm",), "bf16": ("bf16",),
    "svei8mm": ("sve", "i8mm"), "svebf16": ("sve", "bf16"), "flagm": ("flagm",),
    "ssbs": ("ssbs",), "sb": ("sb",), "paca": ("pauth",), "pacg": ("pauth",), "dit": ("dit",),
    "uscat": ("lse2",), "rng": ("rand",), "bti": ("bti",), "mte": ("mte",), "sme": ("sme",),
    "frint": ("fptoint",),
}
# riscv64 single-letter extensions of the ``isa`` string that are LLVM features.
_RV_LETTERS = frozenset("imafdcvhb")

# LLVM's implied features (X86TargetParser / AArch64 and RISC-V ``Implies`` lists), as far as
# they reach the judged features. Applied transitively by ``closure``.
IMPLIES: dict[str, dict[str, tuple[str, ...]]] = {
    "x86_64": {
        "cx16": ("cx8",), "sse2": ("sse",), "sse3": ("sse2",), "ssse3": ("sse3",),
        "sse4.1": ("ssse3",), "sse4.2": ("sse4.1", "crc32"), "sse4a": ("sse3",),
        "avx": ("sse4.2",), "avx2": ("avx",), "f16c": ("avx",), "fma": ("avx",),
        "fma4": ("avx", "sse4a"), "xop": ("fma4",), "aes": ("sse2",), "pclmul": ("sse2",),
        "sha": ("sse2",), "gfni": ("sse2",), "vaes": ("aes", "avx"), "vpclmulqdq": ("avx", "pclmul"),
        "avx512f": ("avx2", "f16c", "fma"), "avx512cd": ("avx512f",), "avx512dq": ("avx512f",),
        "avx512bw": ("avx512f",), "avx512vl": ("avx512f",), "avx512ifma": ("avx512f",),
        "avx512vbmi": ("avx512bw",), "avx512vbmi2": ("avx512bw",), "avx512bitalg": ("avx512bw",),
        "avx512vnni": ("avx512f",), "avx512vpopcntdq": ("avx512f",), "avx512bf16": ("avx512bw",),
        "avx512fp16": ("avx512bw", "avx512dq", "avx512vl"), "avx512vp2intersect": ("avx512f",),
        "avxvnni": ("avx2",), "avxifma": ("avx2",), "avxvnniint8": ("avx2",),
        "avxvnniint16": ("avx2",), "avxneconvert": ("avx2",), "amx-int8": ("amx-tile",),
        "amx-bf16": ("amx-tile",), "amx-fp16": ("amx-tile",), "amx-complex": ("amx-tile",),
    },
    "aarch64": {
        "neon": ("fp-armv8",), "fullfp16": ("fp-armv8",), "fp16fml": ("fullfp16",),
        "dotprod": ("neon",), "rdm": ("neon",), "aes": ("neon",), "sha2": ("neon",),
        "sha3": ("sha2",), "sm4": ("neon",), "complxnum": ("neon",), "jsconv": ("fp-armv8",),
        "rcpc-immo": ("rcpc",), "sve": ("fullfp16",), "sve2": ("sve",), "sve-bitperm": ("sve2",),
        "sme": ("bf16", "fullfp16"),
        "v8.1a": ("crc", "lse", "rdm"), "v8.2a": ("v8.1a",),
        "v8.3a": ("v8.2a", "rcpc", "complxnum", "jsconv"), "v8.4a": ("v8.3a", "flagm", "rcpc-immo"),
        "v8.5a": ("v8.4a", "fptoint"), "v8.6a": ("v8.5a", "bf16", "i8mm"), "v9a": ("v8.5a", "sve2"),
    },
    "riscv64": {
        "d": ("f",), "f": ("zicsr",), "m": ("zmmul",), "a": ("zaamo", "zalrsc"), "c": ("zca",),
        "zcd": ("zca", "d"), "b": ("zba", "zbb", "zbs"), "zfh": ("zfhmin",), "zfhmin": ("f",),
        "v": ("zve64d", "zvl128b"), "zve64d": ("zve64f", "d"), "zve64f": ("zve32f", "zve64x"),
        "zve64x": ("zve32x", "zvl64b"), "zve32f": ("zve32x", "f"), "zve32x": ("zvl32b",),
        "zvfh": ("zvfhmin", "zfhmin"), "zvfhmin": ("zve32f",), "zvl128b": ("zvl64b",),
        "zvl64b": ("zvl32b",),
    },
}

JUDGED: dict[str, frozenset[str]] = {
    "x86_64": frozenset({
        "x87", "cmov", "cx8", "cx16", "mmx", "fxsr", "sse", "sse2", "sse3", "ssse3", "sse4.1",
        "sse4.2", "sse4a", "crc32", "popcnt", "lzcnt", "sahf", "movbe", "bmi", "bmi2", "adx",
        "prfchw", "f16c", "fma", "fma4", "xop", "avx", "avx2", "aes", "pclmul", "sha", "gfni",
        "vaes", "vpclmulqdq", "avx512f", "avx512cd", "avx512dq", "avx512bw", "avx512vl",
        "avx512ifma", "avx512vbmi", "avx512vbmi2", "avx512vnni", "avx512bitalg",
        "avx512vpopcntdq", "avx512bf16", "avx512fp16", "avx512vp2intersect", "avxvnni",
        "avxifma", "avxvnniint8", "avxvnniint16", "avxneconvert", "amx-tile", "amx-int8",
        "amx-bf16", "amx-fp16", "amx-complex",
    }),
    "aarch64": frozenset({
        "fp-armv8", "neon", "fullfp16", "fp16fml", "dotprod", "rdm", "i8mm", "bf16", "aes",
        "sha2", "sha3", "sm4", "crc", "lse", "rcpc", "rcpc-immo", "complxnum", "jsconv",
        "fptoint", "flagm", "sve", "sve2", "sve-bitperm", "sme",
    }),
    "riscv64": frozenset({
        "m", "a", "f", "d", "c", "v", "zmmul", "zaamo", "zalrsc", "zca", "zcd", "zcb", "zba",
        "zbb", "zbc", "zbs", "zicond", "zfa", "zfh", "zfhmin", "zvfh", "zvfhmin", "zve32x",
        "zve32f", "zve64x", "zve64f", "zve64d", "zvbb", "zvbc",
    }),
}


def closure(arch: str, features: Iterable[str]) -> frozenset[str]:
    """``features`` with everything they imply (``IMPLIES``), transitively."""
    table = IMPLIES.get(arch, {})
    out: set[str] = set()
    todo = list(features)
    while todo:
        f = todo.pop()
        if f not in out:
            out.add(f)
            todo.extend(table.get(f, ()))
    if arch == "riscv64" and {"c", "d"} <= out:
        out.add("zcd")  # C with D includes the compressed double loads and stores
    return frozenset(out)


def kernel_to_llvm(arch: str, fields: Mapping[str, str]) -> frozenset[str]:
    """The LLVM names of the features one processor block of ``/proc/cpuinfo`` reports (its
    ``key: value`` lines, keys lower-case), closed under ``IMPLIES``; not restricted to
    ``JUDGED``, and without the words that name no feature. Empty when the block has no feature
    line for ``arch``."""
    words: set[str] = set()
    if arch == "x86_64":
        words = {X86_FLAGS.get(f, f) for f in fields.get("flags", "").split()}
    elif arch == "aarch64":
        words = {g for f in fields.get("features", "").split() for g in ARM_FLAGS.get(f, ())}
    elif arch == "riscv64":
        isa = fields.get("isa", "").lower()
        if isa.startswith(("rv64", "rv32")):
            base, _, rest = isa[4:].partition("_")
            letters = set(base.replace("g", "imafd"))
            words = {x for x in letters if x in _RV_LETTERS}
            words |= {x for x in rest.split("_") if x}
            if "i" in words:  # rv64i includes Zicsr/Zifencei (ISA manual before 2.1)
                words |= {"zicsr", "zifencei"}
    return closure(arch, words) if words else frozenset()


def kernel_isa(arch: str, fields: Mapping[str, str]) -> frozenset[str]:
    """``kernel_to_llvm`` restricted to ``JUDGED[arch]``: what ``runs`` compares."""
    return kernel_to_llvm(arch, fields) & JUDGED.get(arch, frozenset())


def apply_features(arch: str, base: Iterable[str], features: Sequence[str]) -> frozenset[str]:
    """``base`` closed under ``IMPLIES``, then each ``+f``/``-f`` of ``features`` in order, as
    LLVM applies a feature string (``-f`` also removes every feature that implies ``f``)."""
    have = set(closure(arch, base))
    for feat in features:
        name = feat[1:]
        if feat.startswith("+"):
            have |= closure(arch, [name])
        elif feat.startswith("-"):
            have = {f for f in have if name not in closure(arch, [f])}
    return frozenset(have)


def target_isa(arch: str, cpu: str, features: Sequence[str]) -> frozenset[str]:
    """The ``JUDGED`` features a normalized CPU target ``cpu:ARCH:CPU[:FEATURES]`` enables: LLVM's
    list for ``cpu`` (from the compiler), then the arch's base features (riscv64 ``+a,+c,+d,+f,
    +m``) and ``features``. Raises ``RuntimeError`` when the compiler cannot tell (see
    ``kiln.targets.cpu.cpu_features``)."""
    from kiln.targets import kinds

    kinds()  # the registry loads every kind before one kind module is imported
    from kiln.targets.cpu import ARCHS, cpu_features

    base_feats = tuple(str(f) for f in ARCHS[arch]["features"])  # type: ignore[attr-defined]
    listed = cpu_features(arch, cpu)
    return apply_features(arch, listed, (*base_feats, *features)) & JUDGED.get(arch, frozenset())


def runs(host: frozenset[str], want: frozenset[str]) -> bool:
    """Whether code that may use ``want`` runs on a CPU with ``host`` (both ``JUDGED`` sets); never
    when ``host`` is empty (nothing known about it)."""
    return bool(host) and want <= host
