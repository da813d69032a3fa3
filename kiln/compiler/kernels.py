"""The kernel cache: GPU and Vulkan executables built from per-dispatch kernels shared across models.

Where the kernel cache is on (``enabled``: by default for ``rocm``; ``KILN_KERNEL_CACHE`` names
the kinds), a whole-executable miss (``Pipeline.compile_prepared``) on a ``vulkan``, ``cuda`` or
``rocm`` target runs as worker jobs of three kinds instead of one ``CompileJob``:

All three compile with ``kernel_flags``: IREE's binding fusion off, so a kernel does not hold
the constant buffer offsets of the place it is called from.

1. ``KernelSourcesJob`` compiles the graph to IREE's ``executable-sources`` phase and renames each
   dispatch executable from its positional name (``main_dispatch_3``) to one derived from its own
   text (``k<24 hex>``, the sha256 of the executable with its name replaced by a placeholder and
   its bindings' alignment clamped to 64 bytes), in the executable, its exports and every
   reference to them. The same kernel in two models then has one name and one text.
2. The engine looks each kernel up in the artifact cache (the same disk, Redis and S3 stores as
   executables: an action record per kernel key naming a CAS blob). The kernel key is a
   ``CompileKey`` whose ``graph_digest`` is the sha256 of the kernel's text, with the whole
   compile's target, flags and compiler identity, and ``options = {"kernel": KERNEL_FORMAT}``.
   The misses go to ``KernelTranslateJob``s, one per worker, in parallel: each translates its
   executables alone (without the program around them) and returns, per kernel, a stub (the
   executable with its exports as translated: workgroup count and size, no code) and the binary.
3. ``KernelAssembleJob`` puts each kernel's stub (the executable as translated, its code
   replaced by the binary as an object) in the place of its executable in the renamed module's
   text and compiles it from ``executable-targets`` on, with ``--iree-hal-link-executables=false``
   (host code and serialization only). The new kernels are stored once it succeeds.

The executable's bytes do not depend on which kernels were cached; they differ from a one-job
compile's (content-derived names, unlinked executables), and it computes bit-identical results
(``tests/test_kernel_cache.py``, on lavapipe). The compile key and the cached executable are the
whole compile's as before: the kernel cache only makes a miss cheaper.

Not used: on ``cpu`` (IREE 3.13 segfaults in ``LLVMCPUTargetBackend::serializeExecutable`` on
substituted executables), with Kiln's linalg rewrites (a staged compile), without a cache, or
for a kind ``KILN_KERNEL_CACHE`` leaves out (``enabled``). Failure semantics: any failure
of the kernel path other than a timeout or a full queue (a bad stored kernel, a substitution the
compiler refuses, a worker crash) falls back to the one-job compile, counted as ``fallback``;
kernel lookups and stores that fail are misses and skipped writes, as for executables.
"""

from __future__ import annotations

import dataclasses
import functools
import glob
import hashlib
import json
import logging
import os
import re
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kiln.errors import CompileError, CompileFailure, CompileTimeout, KilnError, Overloaded

if TYPE_CHECKING:
    from kiln.cache import ArtifactCache
    from kiln.cache.key import CompileKey
    from kiln.compiler.tasks import Compiled
    from kiln.compiler.workers import WorkerPool
    from kiln.targets import TargetSpec
    from kiln.targets.toolchain import CompilerIdentity

__all__ = [
    "KERNEL_FORMAT",
    "KERNEL_KINDS",
    "MAX_MLIR_BYTES",
    "Assembled",
    "Kernel",
    "KernelSources",
    "Translated",
    "assemble",
    "compile_with_kernels",
    "enabled",
    "executable_sources",
    "kernel_flags",
    "kernel_key",
    "translate",
]

log = logging.getLogger("kiln.kernels")

#: Version of the stored kernel (stub text + binary framing, the flags of both jobs); part of
#: every kernel key, so changing it makes old kernels misses.
KERNEL_FORMAT = 2
#: Target kinds whose compiles go through the kernel cache.
KERNEL_KINDS = frozenset({"vulkan", "cuda", "rocm"})
#: A graph whose MLIR is longer (its weights inline) compiles in one job: the kernel path handles
#: the whole module as text twice more than one job does, which cost more than the cached
#: kernels saved on ResNet-18/34 with inline weights (93 and 170 MB of MLIR: 1.07-1.32x one
#: job's time on Vulkan and CUDA, bench/RESULTS.md "Kernel cache"). With ``params: external``
#: the same models are 0.2 MB and take 0.16-0.56x.
MAX_MLIR_BYTES = 16 << 20

_PLACEHOLDER = "__kiln_kernel"
_BINARY_PATH = "kiln-kernel.bin"  # the stub's object path until the assemble job writes the binary
_EXE_RE = re.compile(r"^  hal\.executable private @([\w$.-]+) \{$", re.M)
_PLACEHOLDER_RE = re.compile(re.escape(_PLACEHOLDER))
_TOKEN_RE = re.compile("\0([0-9]+)\0")
_ASSEMBLE_FLAGS = ("--iree-hal-link-executables=false",)
# Every job of the kernel path compiles without IREE's binding fusion and dispatch-site
# specialization: with it, each call site's constant buffer offsets are folded into the kernel
# (``offset(%c634816)``, ``util.assume.int`` ranges), so the same layer in two models (or twice in
# one) is two texts. Without it the offsets stay the runtime's binding offsets. ResNet-34 after
# ResNet-18: 3 of 27 kernels found with it, 26 of 27 without (docs/caching.md, "Kernel cache").
_KERNEL_FLAGS = ("--iree-scheduling-optimize-bindings=false",)
# A binding's ``alignment(N)`` is what IREE proved about the offsets of its call sites, so it also
# varies from model to model; a kernel is keyed and translated with it clamped to this (the
# runtime's minimum binding alignment: a weaker assumption holds wherever a stronger one did).
_MAX_ALIGNMENT = 64
_ALIGNMENT_RE = re.compile(r"\balignment\(([0-9]+)\)")


#: The kinds the kernel cache is on for when ``KILN_KERNEL_CACHE`` is unset or ``auto``: where a
#: compile whose kernels are all new costs at most 1.05x one job and a model whose sibling was
#: compiled before costs at most 0.5x (docs/caching.md, "Kernel cache": the table).
DEFAULT_KINDS = frozenset({"rocm"})
_ON = ("1", "true", "yes", "on", "all")
_OFF = ("0", "false", "no", "off", "none", "")


def kinds_setting(value: str | None) -> frozenset[str]:
    """The kinds ``KILN_KERNEL_CACHE=value`` turns the kernel cache on for: unset or ``auto``,
    ``DEFAULT_KINDS``; ``1``/``on``/``all``, every kind of ``KERNEL_KINDS``; ``0``/``off``, none;
    else a comma-separated list of kinds (``vulkan,rocm``). ValueError for anything else."""
    text = (value if value is not None else "auto").strip().lower()
    if text == "auto":
        return DEFAULT_KINDS
    if text in _ON:
        return KERNEL_KINDS
    if text in _OFF:
        return frozenset()
    kinds = frozenset(k.strip() for k in text.split(",") if k.strip())
    unknown = kinds - KERNEL_KINDS
    if unknown:
        raise ValueError(
            f"unknown kind {', '.join(sorted(unknown))}: use auto, on, off or a comma-separated "
            f"list of {', '.join(sorted(KERNEL_KINDS))}")
    return kinds


@functools.cache
def _warn_once(message: str) -> None:
    log.warning("%s", message)


def enabled(kind: str, mlir_bytes: int = 0) -> bool:
    """Whether a compile for ``kind`` of a graph whose canonical MLIR is ``mlir_bytes`` long uses
    the kernel cache: ``kind`` among the kinds of ``KILN_KERNEL_CACHE`` (``kinds_setting``; by
    default ``DEFAULT_KINDS``, where it pays) and at most ``MAX_MLIR_BYTES`` of MLIR. A value
    ``kinds_setting`` refuses is warned about once and taken as ``auto`` (``kiln serve`` and
    ``kiln worker`` refuse it at start)."""
    if kind not in KERNEL_KINDS or mlir_bytes > MAX_MLIR_BYTES:
        return False
    value = os.environ.get("KILN_KERNEL_CACHE")
    try:
        on = kinds_setting(value)
    except ValueError as exc:
        _warn_once(f"KILN_KERNEL_CACHE={value!r}: {exc}; using auto")
        on = DEFAULT_KINDS
    return kind in on


# -- what the jobs return -----------------------------------------------------------------------


@dataclass(frozen=True)
class Kernel:
    """One dispatch executable of a module: its content-derived symbol and the sha256 (hex) of
    its canonical text (the executable with its own name replaced by a placeholder)."""

    name: str
    digest: str
    source: str = dataclasses.field(default="", repr=False)  # the renamed executable's text


@dataclass(frozen=True)
class KernelSources:
    """The module at the ``executable-sources`` phase, its executables renamed (``Kernel.name``)."""

    text: str
    kernels: tuple[Kernel, ...]
    seconds: float
    #: The graph's ``input`` phase (bytecode) when asked for (``kiln.compiler.frontend``).
    front: bytes | None = None


@dataclass(frozen=True)
class Assembled:
    """The executable (.vmfb bytes) built from kernels."""

    data: bytes
    seconds: float
    warnings: tuple[str, ...]


@dataclass(frozen=True)
class Translated:
    """Kernels translated to binaries: ``(kernel name, blob)``, the blob as ``pack_kernel``'s."""

    built: tuple[tuple[str, bytes], ...]
    seconds: float
    warnings: tuple[str, ...]


# -- the stored kernel --------------------------------------------------------------------------


def pack_kernel(stub: str, binary: bytes, ext: str) -> bytes:
    """A kernel's blob: one JSON line (format, binary extension, stub length), the stub, the
    binary; ``kiln.cache.kinds.KERNEL`` recognises it (the stub starts
    ``hal.executable private @``)."""
    stub_b = stub.encode("utf-8")
    head = json.dumps({"format": KERNEL_FORMAT, "ext": ext, "stub": len(stub_b)},
                      sort_keys=True, separators=(",", ":"))
    return head.encode() + b"\n" + stub_b + binary


def unpack_kernel(blob: bytes) -> tuple[str, bytes, str]:
    """``(stub, binary, ext)``; ValueError if ``blob`` is not a kernel of this format."""
    head, sep, rest = blob.partition(b"\n")
    if not sep:
        raise ValueError("no kernel header")
    meta = json.loads(head)
    n = meta.get("stub") if isinstance(meta, dict) else None
    ext = meta.get("ext") if isinstance(meta, dict) else None
    if meta.get("format") != KERNEL_FORMAT or not isinstance(n, int) or not isinstance(ext, str):
        raise ValueError(f"not a kernel of format {KERNEL_FORMAT}")
    if not re.fullmatch(r"\.[A-Za-z0-9]{1,8}", ext) or not 0 < n < len(rest):
        raise ValueError("malformed kernel header")
    return rest[:n].decode("utf-8"), rest[n:], ext


def kernel_flags(flags: Sequence[str]) -> tuple[str, ...]:
    """The flags every job of the kernel path compiles with: the whole compile's, then
    ``_KERNEL_FLAGS`` (binding offsets left to the runtime, so kernels do not depend on where
    they are called). Kernel keys are made with these."""
    return (*flags, *_KERNEL_FLAGS)


def kernel_key(digest: str, *, target: str, flags: Sequence[str],
               compiler: CompilerIdentity) -> CompileKey:
    """The cache key of one kernel: its canonical text's sha256, the whole compile's target,
    flags and compiler, and ``KERNEL_FORMAT``."""
    from kiln.cache.key import CompileKey

    return CompileKey(
        graph_digest=digest, target=target, options={"kernel": KERNEL_FORMAT},
        flags=tuple(flags), compiler_version=compiler.version, compiler_hash=compiler.hash,
    )


# -- in the worker ------------------------------------------------------------------------------


def rename_executables(text: str) -> tuple[str, tuple[Kernel, ...]]:
    """Give every top-level ``hal.executable`` of ``text`` its content-derived name: the sha256 of
    its text with its own name replaced by a placeholder and its bindings' ``alignment(N)``
    clamped to ``_MAX_ALIGNMENT`` (what IREE proved about the offsets at its call sites).

    Two executables that differ only in those alignments would get one name: the second keeps
    its own alignments. CompileError (the engine falls back) if two executables have the same
    text: IREE deduplicates them, so that would mean a form this function does not know."""
    # Weights are most of a module's text: work on the text around their hex literals.
    skeleton, literals = _hide_literals(text)

    def shown(part: str) -> str:
        return _TOKEN_RE.sub(lambda m: literals[int(m.group(1))], part)

    kernels: list[Kernel] = []
    renames: dict[str, str] = {}
    for name in _EXE_RE.findall(skeleton):
        body = _symbol_re(name).sub(_PLACEHOLDER, shown(_executable_text(skeleton, name)))
        canonical = _clamp_alignments(body)
        digest = hashlib.sha256(canonical.encode("utf-8")).hexdigest()
        new = "k" + digest[:24]
        if new in renames.values():
            canonical = body
            digest = hashlib.sha256(canonical.encode("utf-8")).hexdigest()
            new = "k" + digest[:24]
        if new in renames.values():
            raise CompileError(f"two executables have the same text ({name}); not renamed")
        renames[name] = new
        kernels.append(Kernel(new, digest, _PLACEHOLDER_RE.sub(new, canonical)))
    if renames:
        pattern = re.compile(
            r"(?<![\w$.])(" + "|".join(re.escape(n) for n in sorted(renames, key=len, reverse=True))
            + r")(?![0-9A-Za-z])"
        )
        skeleton = pattern.sub(lambda m: renames[m.group(1)], skeleton)
    return shown(skeleton), tuple(kernels)


def _clamp_alignments(text: str) -> str:
    """``text`` with every ``alignment(N)`` above ``_MAX_ALIGNMENT`` lowered to it."""
    return _ALIGNMENT_RE.sub(
        lambda m: f"alignment({min(int(m.group(1)), _MAX_ALIGNMENT)})", text)


def _hide_literals(text: str) -> tuple[str, list[str]]:
    """``text`` with each long hex literal (``"0x…"``, 64 digits or more) replaced by
    a token (NUL, its index, NUL), and the literals."""
    out: list[str] = []
    literals: list[str] = []
    pos = 0
    while True:
        start = text.find('"0x', pos)
        if start < 0:
            break
        end = text.find('"', start + 3)
        if end < 0:
            break
        if end - start - 3 >= 64:
            out.append(text[pos:start])
            out.append(f"\0{len(literals)}\0")
            literals.append(text[start:end + 1])
        else:
            out.append(text[pos:end + 1])
        pos = end + 1
    out.append(text[pos:])
    return "".join(out), literals


def _symbol_re(name: str) -> re.Pattern[str]:
    return re.compile(r"(?<![\w$.])" + re.escape(name) + r"(?![0-9A-Za-z])")


def _executable_text(text: str, name: str) -> str:
    start = text.index(f"  hal.executable private @{name} {{\n")
    end = text.index("\n  }\n", start) + len("\n  }\n")
    return text[start:end]


def executable_sources(*, mlir: str, flags: list[str], module_attr: str | None = None,
                       timeout: float | None = None, front: bytes | None = None,
                       want_front: bool = False) -> KernelSources:
    """Compile to ``executable-sources`` and rename the executables (``rename_executables``).
    ``front``/``want_front``: the front-end cache, as for ``tasks.compile_module``."""
    from kiln.compiler.tasks import _with_module_attr, front_readable

    if front is not None and not front_readable(front):
        front = None  # compiled from the text
    if module_attr and front is None:  # a front holds it already (its key names it)
        mlir = _with_module_attr(mlir, module_attr)
    t0 = time.perf_counter()
    got = _sources_in_session(mlir, flags, front=front, want_front=want_front)
    front_out = None
    if got is not None:
        text, front_out = got
    else:
        text, front_out = _sources_cli(mlir, flags, timeout=timeout, front=front,
                                       want_front=want_front)
    renamed, kernels = rename_executables(text)
    return KernelSources(renamed, kernels, time.perf_counter() - t0, front_out)


def _sources_cli(mlir: str, flags: list[str], *, timeout: float | None, front: bytes | None,
                 want_front: bool) -> tuple[str, bytes | None]:
    """``_sources_in_session`` with the native ``iree-compile`` (flags only its command line
    takes): one run, or two with a stop at the ``input`` phase (``want_front``), or one from
    ``front``. Each run's module is named like the source (the compiler embeds the name)."""
    from kiln.compiler.tasks import _FRONT_PHASE, SOURCE_NAME

    deadline = None if timeout is None else time.monotonic() + timeout
    front_out = None
    with tempfile.TemporaryDirectory(prefix="kiln-kernels-") as tmp:
        with open(os.path.join(tmp, SOURCE_NAME), "w", encoding="utf-8") as f:
            f.write(mlir)
        cwd, start = tmp, list[str]()
        if front is not None or want_front:
            staged = os.path.join(tmp, "front")
            os.mkdir(staged)
            if front is None:
                _iree_compile([*flags, f"--compile-to={_FRONT_PHASE}", "--emit-mlir-bytecode",
                               SOURCE_NAME, "-o", os.path.join(staged, SOURCE_NAME)],
                              cwd=tmp, timeout=_left(deadline))
                with open(os.path.join(staged, SOURCE_NAME), "rb") as fb:
                    front_out = fb.read()
            else:
                with open(os.path.join(staged, SOURCE_NAME), "wb") as fb:
                    fb.write(front)
            cwd, start = staged, [f"--compile-from={_FRONT_PHASE}"]
        out = os.path.join(tmp, "sources.mlir")
        _iree_compile([*flags, *start, "--compile-to=executable-sources", SOURCE_NAME, "-o", out],
                      cwd=cwd, timeout=_left(deadline))
        with open(out, encoding="utf-8") as f:
            return f.read(), front_out


def _sources_in_session(mlir: str, flags: list[str], *, front: bytes | None = None,
                        want_front: bool = False) -> tuple[str, bytes | None] | None:
    """The module at ``executable-sources`` as text (and, ``want_front``, its ``input`` phase as
    bytecode), compiled in this (worker) process through the compiler's API: no process start,
    no files (0.28 against 0.45 s for a small MLP). None when a flag is one only the command line
    knows (the caller runs ``iree-compile``); CompileError with the compiler's diagnostics if it
    fails. ``front``: start from the graph's cached ``input`` phase."""
    from iree.compiler.api import Output, Session

    from kiln.compiler.tasks import (
        _FRONT_PHASE,
        _bytecode,
        _CapturedStderr,
        _failure_message,
        _open_graph,
        _set_phase,
        cli_command,
        parse_diagnostics,
    )

    text = None
    front_out = None
    with _CapturedStderr() as cap:
        session = Session()
        try:
            try:
                session.set_flags(*flags)
            except ValueError:
                return None
            inv, sources, ok, from_front = _open_graph(session, mlir.encode("utf-8"), front, cap)
            invs = [inv]
            try:
                if ok and want_front and not from_front:
                    _set_phase(inv, "to", _FRONT_PHASE)
                    ok = inv.execute()
                    if ok:
                        front_out = _bytecode(inv)
                        nxt = session.invocation()
                        nxt.enable_console_diagnostics()
                        nxt.import_module(inv.export_module())
                        invs.append(nxt)
                        from_front = True
                if ok:
                    if from_front:
                        _set_phase(invs[-1], "from", _FRONT_PHASE)
                    _set_phase(invs[-1], "to", "executable-sources")
                    ok = invs[-1].execute()
                if ok:
                    out = Output.open_membuffer()
                    invs[-1].output_ir(out)
                    text = bytes(out.map_memory()).decode("utf-8")
                    out.close()
            finally:
                for each in reversed(invs):
                    each.close()
                for src in sources:
                    src.close()
        finally:
            session.close()
    if text is None:
        diags = parse_diagnostics(cap.text)
        raise CompileError(
            _failure_message(cap.text, diags),
            failure=CompileFailure(command=cli_command(flags), exit_code=1, stderr=cap.text,
                                   diagnostics=diags))
    return text, front_out


def translate(*, executables: Sequence[str], flags: list[str], timeout: float | None = None
              ) -> Translated:
    """Translate executables (``Kernel.source`` texts) alone, without the program around them,
    to their stored form: one ``iree-compile`` run to ``executable-targets`` (each translated
    executable's exports hold their workgroup count and size: the stubs are taken there), one
    on to ``hal``, dumping the binaries. CompileError if the compiler fails."""
    t0 = time.perf_counter()
    deadline = None if timeout is None else time.monotonic() + timeout
    names = []
    body = []
    for text in executables:
        m = _EXE_RE.match(text)
        if m is None:
            raise CompileError("not an executable's source")
        names.append(m.group(1))
        # public: a private executable nothing refers to would be dropped
        body.append(text.replace("  hal.executable private @", "  hal.executable public @", 1))
    base = [*flags, *_ASSEMBLE_FLAGS]
    with tempfile.TemporaryDirectory(prefix="kiln-kernels-") as tmp:
        dumps = os.path.join(tmp, "dumps")
        with open(os.path.join(tmp, "kernels.mlir"), "w", encoding="utf-8") as f:
            f.write("module {\n" + "".join(body) + "}\n")
        stderr = _iree_compile(
            [*base, "--compile-from=executable-sources", "--compile-to=executable-targets",
             "--emit-mlir-bytecode", "kernels.mlir", "-o", "targets.mlirbc"],
            cwd=tmp, timeout=_left(deadline))
        with open(os.path.join(tmp, "targets.mlirbc"), "rb") as f:
            stub_texts = _stubs(f.read(), set(names))
        stderr += _iree_compile(
            [*base, f"--iree-hal-dump-executable-binaries-to={dumps}",
             "--compile-from=executable-targets", "--compile-to=hal", "--emit-mlir-bytecode",
             "targets.mlirbc", "-o", "hal.mlirbc"],
            cwd=tmp, timeout=_left(deadline))
        built = []
        for name in names:
            found = glob.glob(os.path.join(dumps, f"*_{name}_*"))
            if len(found) != 1 or name not in stub_texts:
                raise CompileError(f"kernel {name}: expected one binary and one stub, "
                                   f"found {len(found)} and {int(name in stub_texts)}")
            with open(found[0], "rb") as f:
                binary = f.read()
            stub = stub_texts[name].replace("hal.executable public @", "hal.executable private @", 1)
            built.append((name, pack_kernel(stub, binary, os.path.splitext(found[0])[1] or ".bin")))
    return Translated(tuple(built), time.perf_counter() - t0, _warnings(stderr))


def assemble(*, sources: str, flags: list[str], kernels: Sequence[tuple[str, bytes]],
             timeout: float | None = None) -> Assembled:
    """Compile ``sources`` (a ``KernelSources.text``) to a .vmfb with every executable replaced
    by its stored kernel ``(kernel name, blob)``: the stub (the executable as translated, no
    code) naming its binary takes the executable's place in the text, and the compiler goes on
    from ``executable-targets`` (host code, serialization). The bytes do not depend on which
    kernels were cached. CompileError if a kernel is malformed, the module holds an executable
    no kernel replaces, or the compiler fails.

    Replacing the text, rather than IREE's
    ``--iree-hal-substitute-executable-configurations-from``, spares the compiler parsing and
    configuring every executable it would then throw away: 0.26 against 0.40 s for ResNet-34's
    27 kernels on CUDA."""
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="kiln-kernels-") as tmp:
        bins = os.path.join(tmp, "bins")
        os.mkdir(bins)
        stubs = {name: _stub_text(bins, name, blob) for name, blob in kernels}
        found = _EXE_RE.findall(sources)
        if set(found) != set(stubs) or len(found) != len(stubs):
            raise CompileError(f"the module's executables ({len(found)}) are not the "
                               f"kernels given ({len(stubs)})")
        parts, pos = [], 0
        for name in found:  # in the order they appear
            start = sources.index(f"  hal.executable private @{name} {{\n", pos)
            end = sources.index("\n  }\n", start) + len("\n  }\n")
            parts += [sources[pos:start], stubs[name]]
            pos = end
        parts.append(sources[pos:])
        with open(os.path.join(tmp, "sources.mlir"), "w", encoding="utf-8") as f:
            f.write("".join(parts))
        stderr = _iree_compile(
            [*flags, *_ASSEMBLE_FLAGS, "--compile-from=executable-targets", "sources.mlir",
             "-o", "out.vmfb"], cwd=tmp, timeout=timeout)
        with open(os.path.join(tmp, "out.vmfb"), "rb") as f:
            data = f.read()
    return Assembled(data, time.perf_counter() - t0, _warnings(stderr))


def _warnings(stderr: str) -> tuple[str, ...]:
    from kiln.compiler.tasks import parse_diagnostics

    return tuple(str(d) for d in parse_diagnostics(stderr) if d.severity == "warning")


def _stub_text(bins: str, name: str, blob: bytes) -> str:
    """The stub of a stored kernel, indented as a top-level op of the module, naming its binary
    written to ``bins/NAME.EXT``. CompileError if ``blob`` is malformed."""
    try:
        stub, binary, ext = unpack_kernel(blob)
    except (ValueError, UnicodeDecodeError) as exc:
        raise CompileError(f"stored kernel {name} is malformed: {exc}") from None
    if f'"{_BINARY_PATH}"' not in stub or f"hal.executable private @{name} " not in stub:
        raise CompileError(f"stored kernel {name} is not a stub for {name}")
    path = os.path.join(bins, name + ext)
    with open(path, "wb") as f:
        f.write(binary)
    text = stub.replace(f'"{_BINARY_PATH}"', json.dumps(path)).strip("\n")
    return "\n".join("  " + line if line else line for line in text.split("\n")) + "\n"


def _left(deadline: float | None) -> float | None:
    return None if deadline is None else max(0.1, deadline - time.monotonic())


def _iree_compile(args: list[str], *, cwd: str, timeout: float | None) -> str:
    """Run the native ``iree-compile`` (the kernel path's flags include some that only its
    command line accepts); its stderr, or its failure as a CompileError / CompileTimeout."""
    from kiln.compiler.tasks import _run_cli
    from kiln.targets.toolchain import iree_compile_path

    deadline = None if timeout is None else time.monotonic() + timeout
    return _run_cli([str(iree_compile_path()), *args], cwd, deadline, timeout)


def _stubs(bytecode: bytes, names: set[str]) -> dict[str, str]:
    """For each executable in ``names`` of a module at ``executable-targets``: the executable
    with its exports as translated (workgroup count and size) and no code, its one object the
    binary at ``_BINARY_PATH``. An executable of another form (several variants) is left out."""
    from iree.compiler import ir
    from iree.compiler.api import Session

    session = Session()
    try:
        ctx = session.context
        module = ir.Module.parse(bytecode, context=ctx)
        objects = ir.Attribute.parse(
            f'[#hal.executable.object<{{path = "{_BINARY_PATH}"}}>]', context=ctx)
        out: dict[str, str] = {}
        for op in module.body.operations:
            if op.operation.name != "hal.executable":
                continue
            name = ir.StringAttr(op.attributes["sym_name"]).value
            if name not in names:
                continue
            variants = [v for v in op.regions[0].blocks[0].operations
                        if v.operation.name == "hal.executable.variant"]
            if len(variants) != 1:
                continue
            for inner in list(variants[0].regions[0].blocks[0].operations):
                if inner.operation.name == "builtin.module":
                    inner.operation.erase()
            variants[0].attributes["objects"] = objects
            out[name] = op.operation.get_asm(enable_debug_info=False, large_elements_limit=None)
        del module
        return out
    finally:
        session.close()


# -- in the engine ------------------------------------------------------------------------------


def compile_with_kernels(
    *,
    pool: WorkerPool,
    cache: ArtifactCache,
    mlir: str,
    spec: TargetSpec,
    flags: Sequence[str],
    compiler: CompilerIdentity,
    timeout: float,
    on_kernel: Callable[[str, str], None] | None = None,
    front: bytes | None = None,
    want_front: bool = False,
) -> Compiled | None:
    """The executable of ``mlir`` built from cached and newly translated kernels, or None when
    the kernel path failed (the caller then compiles in one job; counted as ``fallback``).

    ``on_kernel(kind, result)`` is called once per kernel (``hit`` or ``miss``) and once per
    fallback (``fallback``). The jobs share ``timeout`` (seconds). CompileTimeout and Overloaded
    propagate: a fall-back would only wait again. ``front``/``want_front``: the front-end cache
    (``kiln.compiler.frontend``), for the sources job; the phase asked for is ``Compiled.front``."""
    from kiln.compiler.tasks import (
        Compiled,
        KernelAssembleJob,
        KernelSourcesJob,
        KernelTranslateJob,
        cli_command,
    )

    def count(result: str) -> None:
        if on_kernel is not None:
            on_kernel(spec.kind, result)

    t0 = time.perf_counter()
    flags = kernel_flags(flags)
    hint = cli_command(list(flags))

    def left() -> float:  # the jobs share the compile's timeout
        return max(1.0, timeout - (time.perf_counter() - t0))

    try:
        src: KernelSources = pool.run(
            KernelSourcesJob(mlir, tuple(flags), spec.module_attr, left(), front, want_front),
            timeout=left() + 5, command_hint=hint)
        keys = {k.name: kernel_key(k.digest, target=spec.target, flags=flags, compiler=compiler)
                for k in src.kernels}
        blobs: dict[str, bytes] = {}
        misses: list[Kernel] = []
        for k in src.kernels:
            blob = _lookup(cache, keys[k.name].digest())
            if blob is None:
                misses.append(k)
            else:
                blobs[k.name] = blob
        # the misses in parallel, one job per worker, largest first
        groups: list[list[Kernel]] = [[] for _ in range(min(len(misses), max(1, pool.size)))]
        for k in sorted(misses, key=lambda k: len(k.source), reverse=True):
            min(groups, key=lambda g: sum(len(x.source) for x in g)).append(k)
        futures = [pool.submit(KernelTranslateJob(tuple(k.source for k in g), tuple(flags),
                                                  left()), timeout=left() + 5, command_hint=hint)
                   for g in groups]
        built: list[tuple[str, bytes]] = []
        translate_seconds = 0.0
        for fut in futures:
            done: Translated = fut.result()
            built += done.built
            translate_seconds += done.seconds
        blobs.update(built)
        out: Assembled = pool.run(
            KernelAssembleJob(src.text, tuple(flags),
                              tuple((k.name, blobs[k.name]) for k in src.kernels), left()),
            timeout=left() + 5, command_hint=hint)
    except (CompileTimeout, Overloaded):
        raise
    except KilnError as exc:
        log.warning("kiln kernels: %s: falling back to one compile: %s", spec.target, exc.message)
        count("fallback")
        return None
    log.debug("kiln kernels: %s: sources %.2f s (front %s), %d of %d kernels cached, "
              "translate %.2f s (worker time), assemble %.2f s, in all %.2f s", spec.target,
              src.seconds, "given" if front is not None else "not given",
              len(src.kernels) - len(misses), len(src.kernels), translate_seconds, out.seconds,
              time.perf_counter() - t0)
    for _ in range(len(src.kernels) - len(misses)):
        count("hit")
    for _ in misses:
        count("miss")
    for name, blob in built:
        _store(cache, keys[name], blob, seconds=translate_seconds / max(1, len(built)))
    return Compiled(out.data, time.perf_counter() - t0, out.warnings, src.front)


def _lookup(cache: ArtifactCache, kh: str) -> bytes | None:
    """A kernel's verified blob, or None (absent, corrupt, or the store unreachable). Not counted
    in the cache's hit/miss counters: those are about executables."""
    try:
        found = cache.storage.find(kh, load=True)
    except (KilnError, OSError) as exc:
        log.debug("kiln kernels: lookup %s failed: %s", kh, exc)
        return None
    if found is None:
        return None
    data = found.data
    if data is None:
        try:
            data = cache.storage.get_blob(found.record.digest)
        except (KilnError, OSError):
            return None
    return data


def _store(cache: ArtifactCache, key: CompileKey, blob: bytes, *, seconds: float,
           what: str = "kernel") -> None:
    """Store one kernel (or ``what`` else) like an executable (blob, then its record; signed when
    the cache signs); a failure is logged and it stays a miss."""
    from kiln.cache import ActionRecord, CompilerInfo
    from kiln.cache.store import blob_digest

    record = ActionRecord(
        key=key.digest(), digest=blob_digest(blob), size=len(blob), target=key.target,
        flags=key.flags, compiler=CompilerInfo(cache.compiler_name, key.compiler_version,
                                               key.compiler_hash),
        compile_seconds=float(seconds), created=time.time(),
    )
    if cache.authority is not None:
        record = dataclasses.replace(record, provenance=cache.authority.seal(key, record))
    try:
        cache.storage.put(record, blob)
    except (KilnError, OSError) as exc:
        log.warning("kiln kernels: could not store %s %s: %s", what, key.digest(), exc)
