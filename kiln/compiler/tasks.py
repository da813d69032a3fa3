"""Jobs that run inside compile worker processes (see ``kiln.compiler.workers``); never in the caller.

A job is a frozen dataclass (``PrepareJob``, ``CompileJob``, the kernel cache's ``KernelSourcesJob``,
``KernelTranslateJob`` and ``KernelAssembleJob``: ``JOBS`` lists every one a worker accepts) whose
``run()`` returns a picklable result. Native code (the MLIR parser, the ONNX importer, the
compiler) may crash the process: the pool turns that into a ``CompileError``.
"""

from __future__ import annotations

import ctypes
import os
import re
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from kiln.errors import CompileError, CompileFailure, CompileTimeout, Diagnostic, InvalidGraph

# The compiler embeds the input buffer's name; a constant keeps the output bytes identical run to
# run (and equal between the in-process and the CLI engine).
SOURCE_NAME = "input.mlir"
#: A diagnostic's first line: ``LOC: severity: message``, LOC being ``file:line:col``, ``file:line``
#: (``<unknown>:0``) or nothing. Other lines (the source line, the caret, an op dump) continue the
#: diagnostic above them.
_DIAG_RE = re.compile(
    r"(?:(?P<file>[^\s:][^:\n]*?):(?P<line>\d+)(?::(?P<col>\d+))?: )?"
    r"(?P<sev>error|warning|note|remark): (?P<msg>.*)$"
)
#: Bounds of a failure message: the error line, then at most this many of its notes, each cut.
_MESSAGE_NOTES = 3
_LINE_CHARS = 400
#: What a diagnostic that names the compiler's internals means for the graph that caused it.
_HINTS = (
    ("'vm.import' op must reference a function in a module",
     "hint: the graph calls a function it declares without a body; nothing is linked in, "
     "so every called function must be defined in the graph"),
)

STDERR_PATH: str | None = None  # set by the worker process at start (kiln.compiler.workers)

if TYPE_CHECKING:
    from kiln.compiler.kernels import Assembled, KernelSources, Translated
    from kiln.dialects.types import FunctionSignature, PreparedGraph


@dataclass(frozen=True)
class PrepareJob:
    """Detect, import, verify and canonicalize a graph (``prepare``)."""

    name: ClassVar[str] = "prepare"
    data: bytes
    declared_format: str | None = None
    external_data_dir: str | None = None
    #: ``"external"``: the weights go to a parameter archive (``PreparedGraph.params``).
    params: str = "embedded"
    #: The files of ``external_data_dir`` that the model must each name (an upload's side
    #: files); None: whatever the directory holds (a local model's folder).
    side_files: tuple[str, ...] | None = None
    #: Where the parameter archive is written (a new file in it); None: the temp directory.
    params_dir: str | None = None

    def run(self) -> PreparedGraph:
        return prepare(data=self.data, declared_format=self.declared_format,
                       external_data_dir=self.external_data_dir, params=self.params,
                       side_files=self.side_files, params_dir=self.params_dir)


@dataclass(frozen=True)
class Compiled:
    """One executable from ``CompileJob``."""

    data: bytes
    seconds: float
    warnings: tuple[str, ...] = ()
    #: The graph's ``input`` phase as MLIR bytecode when the job was asked for it
    #: (``kiln.compiler.frontend``), else None.
    front: bytes | None = None


@dataclass(frozen=True)
class CompileJob:
    """Compile canonical MLIR text to a .vmfb (``compile_module``)."""

    name: ClassVar[str] = "compile_module"
    mlir: str
    flags: tuple[str, ...]
    module_attr: str | None = None
    engine: str = "session"
    timeout: float = 300.0
    rewrites: tuple[str, ...] = ()
    #: The graph's cached ``input`` phase to start from (``kiln.compiler.frontend``).
    front: bytes | None = None
    #: Return the ``input`` phase (``Compiled.front``) for the front-end cache.
    want_front: bool = False

    def run(self) -> Compiled:
        return compile_module(mlir=self.mlir, flags=list(self.flags), module_attr=self.module_attr,
                              engine=self.engine, timeout=self.timeout,
                              rewrites=list(self.rewrites), front=self.front,
                              want_front=self.want_front)


@dataclass(frozen=True)
class KernelSourcesJob:
    """Compile to IREE's executable sources, the executables renamed by their content
    (``kiln.compiler.kernels.executable_sources``)."""

    name: ClassVar[str] = "kernel_sources"
    mlir: str
    flags: tuple[str, ...]
    module_attr: str | None = None
    timeout: float = 300.0
    front: bytes | None = None  # as CompileJob's
    want_front: bool = False

    def run(self) -> KernelSources:
        from kiln.compiler.kernels import executable_sources

        return executable_sources(mlir=self.mlir, flags=list(self.flags),
                                  module_attr=self.module_attr, timeout=self.timeout,
                                  front=self.front, want_front=self.want_front)


@dataclass(frozen=True)
class KernelTranslateJob:
    """Translate executables alone to stored kernels (``kiln.compiler.kernels.translate``)."""

    name: ClassVar[str] = "kernel_translate"
    executables: tuple[str, ...]
    flags: tuple[str, ...]
    timeout: float = 300.0

    def run(self) -> Translated:
        from kiln.compiler.kernels import translate

        return translate(executables=self.executables, flags=list(self.flags),
                         timeout=self.timeout)


@dataclass(frozen=True)
class KernelAssembleJob:
    """Executable sources to a .vmfb, every executable substituted by its stored kernel
    ``(kernel name, blob)`` (``kiln.compiler.kernels.assemble``)."""

    name: ClassVar[str] = "kernel_assemble"
    sources: str
    flags: tuple[str, ...]
    kernels: tuple[tuple[str, bytes], ...]
    timeout: float = 300.0

    def run(self) -> Assembled:
        from kiln.compiler.kernels import assemble

        return assemble(sources=self.sources, flags=list(self.flags), kernels=self.kernels,
                        timeout=self.timeout)


#: Every job type a worker runs; anything else is refused.
JOBS: tuple[type, ...] = (
    PrepareJob, CompileJob, KernelSourcesJob, KernelTranslateJob, KernelAssembleJob,
)


# The dialects IREE's ONNX importer builds ops of without parsing them (its documented contract:
# ``func`` and ``torch`` only). An op of a dialect not loaded would be created unregistered.
_ONNX_IMPORTER_DIALECTS = ("func", "torch")
# ... and with its weights externalized (IREENodeImporter): globals and their loads.
_ONNX_EXTERNAL_DIALECTS = (*_ONNX_IMPORTER_DIALECTS, "torch_c", "util")


def _context(*load: str) -> Any:
    """A fresh, single-threaded MLIR context for one job: IREE's dialects (torch, stablehlo,
    tosa, hal, ...) registered, only ``load`` loaded up front.

    The parser loads each registered dialect it meets, so the printed IR is the same as with
    every dialect loaded; loading all of them (``ir.Context()``'s default) and the per-context
    thread pool cost ~40 ms and ~2 ms a parse on small graphs (bench/RESULTS.md, "Compile
    overhead"). Never reused across jobs: a context uniques resource blob names, so a second
    import of the same ONNX model in a reused context would name its weights ``w_1`` instead of
    ``w`` and change the graph digest."""
    from iree.compiler import ir

    ctx = ir.Context(load_on_create_dialects=list(load))
    ctx.enable_multithreading(False)
    return ctx


def prepare(
    *, data: bytes, declared_format: str | None = None, external_data_dir: str | None = None,
    params: str = "embedded", side_files: tuple[str, ...] | None = None,
    params_dir: str | None = None,
) -> PreparedGraph:
    """Detect, import, verify and canonicalize a graph; count its ops (``GraphTraits``).

    ``params="external"``: an ONNX model's weights go to a parameter archive, a new ``.irpa``
    file in ``params_dir`` (``PreparedGraph.params``; the caller removes it), and the canonical
    text names them (kiln.dialects.onnx); MLIR must already read its weights from named
    parameters, else ``InvalidRequest`` (``kiln.lowering.params.inline_weights``). A failure
    leaves no archive behind."""
    made: list[str] = []
    try:
        return _prepare(data=data, declared_format=declared_format,
                        external_data_dir=external_data_dir, params=params,
                        side_files=side_files, params_dir=params_dir, made=made)
    except BaseException:
        for path in made:
            _unlink(path)
        raise


def _prepare(
    *, data: bytes, declared_format: str | None, external_data_dir: str | None, params: str,
    side_files: tuple[str, ...] | None, params_dir: str | None, made: list[str],
) -> PreparedGraph:
    """``prepare``; appends the archive it creates to ``made`` (removed on failure)."""
    from kiln.dialects import mlir as mlir_dialect
    from kiln.dialects import onnx as onnx_dialect
    from kiln.dialects.detect import detect_format, dialect_of
    from kiln.dialects.traits import graph_traits
    from kiln.dialects.types import GraphFormat, InputDialect, ParamsFile, PreparedGraph
    from kiln.lowering.canonical import canonicalize, check_expansion, digest_text
    from kiln.lowering.entry_points import add_async_entry_points

    external = params == "external"
    archive: ParamsFile | None = None
    fmt = detect_format(data, declared=declared_format)
    if fmt is GraphFormat.ONNX:
        ctx = _context(*(_ONNX_EXTERNAL_DIALECTS if external else _ONNX_IMPORTER_DIALECTS))
    else:
        ctx = _context()
    if fmt is GraphFormat.ONNX:
        model = onnx_dialect.load_model(data, external_data_dir=external_data_dir,
                                        side_files=side_files, defer_weights=external)
        path = None
        if external:
            fd, path = tempfile.mkstemp(dir=params_dir, prefix=".tmp-params-", suffix=".irpa")
            os.close(fd)
            made.append(path)
        module, written = onnx_dialect.import_model(
            model, context=ctx, externalize=external, archive_path=path,
            external_data_dir=external_data_dir)
        if written is not None and path is not None:
            archive = ParamsFile(path, *written)
        elif path is not None:
            _unlink(path)
        del model
        try:
            module.operation.verify()
        except Exception as exc:  # noqa: BLE001 - MLIRError; keep the importer's words
            raise InvalidGraph(f"the imported ONNX model does not verify: {exc}") from None
        dialect = InputDialect.ONNX
    else:
        if fmt is GraphFormat.MLIR:
            try:
                text: bytes | str = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InvalidGraph(f"MLIR text is not valid UTF-8: {exc}") from None
            if "\x00" in text:
                raise InvalidGraph("MLIR text contains a NUL byte")
        else:
            text = data
        module = mlir_dialect.parse_module(text, context=ctx)
        dialect = dialect_of(mlir_dialect.op_names(module))
        if external:
            _refuse_inline_weights(module)
    # the canonical form may grow with what was sent, weights in external files included
    sent = len(data) + _dir_bytes(external_data_dir)
    check_expansion(module, request_bytes=sent)  # before anything prints it (issue 21)
    functions = mlir_dialect.public_functions(module)
    signatures = _signatures(mlir_dialect.public_function_ops(module))
    if not functions:
        # IREE would fail late and obscurely ("failed to generate bytecode"): say it here.
        raise InvalidGraph("the graph has no public function: nothing to compile")
    traits = graph_traits(module)
    if dialect not in (InputDialect.ONNX, InputDialect.TORCH):
        # IREE's torch conversion already exports f$async beside f (lowering/entry_points.py).
        add_async_entry_points(module)
    canonical = canonicalize(module)
    del module
    check_expansion(None, request_bytes=sent, text=canonical)
    return PreparedGraph(
        mlir=canonical,
        digest=digest_text(canonical),
        input_format=fmt,
        input_dialect=dialect,
        functions=tuple(functions),
        traits=traits,
        signatures=signatures,
        params=archive,
    )


def _refuse_inline_weights(module: Any) -> None:
    """``InvalidRequest`` when MLIR sent with ``params: "external"`` holds its weights inline."""
    from kiln.errors import InvalidRequest
    from kiln.lowering.params import inline_weights

    found = inline_weights(module)
    if found:
        raise InvalidRequest(
            "params \"external\" needs MLIR that reads its weights from named parameters "
            "(#flow.parameter.named, as kiln.torch.export writes); this graph holds "
            f"{len(found)} weight tensor(s) inline (first: {found[0]}): send it with "
            "params \"embedded\", or export it with its weights apart",
            detail={"inline_weights": found[:20]},
        )


def _signatures(ops: list[tuple[Any, str]]) -> tuple[FunctionSignature, ...]:
    """The argument and result types of each public function op, as imported."""
    from iree.compiler import ir

    from kiln.dialects.types import FunctionSignature

    out = []
    for op, name in ops:
        ftype = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
        out.append(FunctionSignature.from_types(name, map(str, ftype.inputs),
                                                map(str, ftype.results)))
    return tuple(out)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _dir_bytes(path: str | None) -> int:
    """Bytes of the files directly in ``path`` (0 for None or an unreadable directory)."""
    if not path:
        return 0
    try:
        return sum(e.stat().st_size for e in os.scandir(path) if e.is_file())
    except OSError:
        return 0


def _with_module_attr(mlir: str, module_attr: str) -> str:
    from iree.compiler import ir

    ctx = _context()
    module = ir.Module.parse(mlir, context=ctx)
    module.operation.attributes["hal.device.targets"] = ir.Attribute.parse(module_attr, context=ctx)
    text: str = module.operation.get_asm(enable_debug_info=False, large_elements_limit=None)
    return text


def parse_diagnostics(stderr: str) -> list[Diagnostic]:
    """The diagnostics in a compiler's stderr, in the order printed (an error, then its notes).

    A line that starts a diagnostic (``_DIAG_RE``, or ``LLVM ERROR: ...``) opens one; the lines
    after it (source excerpt, caret, a multi-line op dump) belong to it: an indented line is never
    taken for another diagnostic."""
    out: list[Diagnostic] = []
    for raw in stderr.splitlines():
        line = raw.strip()
        if line.startswith("LLVM ERROR:"):
            out.append(Diagnostic(message=line.split(":", 1)[1].strip()))
            continue
        m = _DIAG_RE.match(line) if raw[:1] not in (" ", "\t") else None
        if m is None:
            continue
        out.append(
            Diagnostic(
                message=m.group("msg").strip(),
                severity=m.group("sev"),
                file=m.group("file"),
                line=int(m.group("line")) if m.group("line") else None,
                col=int(m.group("col")) if m.group("col") else None,
            )
        )
    return out


def _cut(text: str, limit: int = _LINE_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _failure_message(stderr: str, diags: list[Diagnostic]) -> str:
    """The first error line, location included, then up to ``_MESSAGE_NOTES`` of the notes printed
    right after it (one line each, cut to ``_LINE_CHARS``); the full text is in ``detail``."""
    first = next((i for i, d in enumerate(diags) if d.severity == "error"), None)
    if first is not None:
        lines = [_cut(str(diags[first]))]
        for d in diags[first + 1 :]:
            if d.severity != "note" or len(lines) > _MESSAGE_NOTES:
                break
            if not d.message.endswith(":"):  # an op dump on the lines below: in detail only
                lines.append(_cut(str(d)))
        hint = next((h for m, h in _HINTS if m in diags[first].message), None)
        return "\n".join(lines + ([hint] if hint else []))
    if any(m in stderr for m in ("out of memory", "bad_alloc", "pthread_create failed")):
        return "the compiler ran out of memory (worker memory cap)"
    tail = stderr.strip().splitlines()[-1:] if stderr.strip() else []
    return "compilation failed" + (f": {_cut(tail[0], 300)}" if tail else "")


def compile_module(
    *,
    mlir: str,
    flags: list[str],
    module_attr: str | None = None,
    engine: str = "session",
    timeout: float = 300.0,
    rewrites: list[str] | None = None,
    front: bytes | None = None,
    want_front: bool = False,
) -> Compiled:
    """Compile canonical MLIR text to a .vmfb.

    ``engine="session"`` runs the compiler library in this (worker) process, warm;
    ``engine="cli"`` runs the native ``iree-compile`` binary as a child of this worker.
    ``front``: the graph's ``input`` phase (bytecode) to start from instead of the text;
    ``want_front``: return that phase (``Compiled.front``). Both for the session engine only
    (``kiln.compiler.frontend``); the executable is the same bytes either way.
    """
    if front is not None and not front_readable(front):
        front = None  # the compile starts from the text
    if module_attr and front is None:  # a front holds it already (its key names it)
        mlir = _with_module_attr(mlir, module_attr)
    source = mlir.encode("utf-8")
    temps = _keep_temps(source, flags, rewrites or [])
    if temps is not None:
        # Diagnostics only: dumps do not change the executable, so the key keeps its flags.
        flags = [*flags, f"--iree-hal-dump-executable-files-to={temps}/executables"]
    t0 = time.perf_counter()
    front_out = None
    try:
        if engine == "session":
            data, stderr, front_out = _compile_session(source, flags, rewrites, front=front,
                                                       want_front=want_front)
        else:
            data, stderr, front_out = _compile_cli(source, flags, timeout=timeout,
                                                   rewrites=rewrites, front=front,
                                                   want_front=want_front)
    except CompileError as exc:
        if temps is not None and isinstance(exc.detail, dict):
            exc.detail["temps"] = temps
        raise
    seconds = time.perf_counter() - t0
    warnings = [str(d) for d in parse_diagnostics(stderr) if d.severity == "warning"]
    return Compiled(data, seconds, tuple(warnings), front_out)


def _keep_temps(source: bytes, flags: list[str], rewrites: list[str]) -> str | None:
    """With ``KILN_KEEP_TEMPS=DIR``: keep this job's input, command and the compiler's executable
    intermediates in a fresh directory under DIR (named in the error's ``detail.temps``)."""
    root = os.environ.get("KILN_KEEP_TEMPS")
    if not root:
        return None
    os.makedirs(root, exist_ok=True)
    d = tempfile.mkdtemp(prefix="kiln-compile-", dir=root)
    with open(os.path.join(d, SOURCE_NAME), "wb") as f:
        f.write(source)
    with open(os.path.join(d, "command.txt"), "w") as f:
        if rewrites:
            base = cli_command(flags)[:-3]
            stages, last = _cli_stages(rewrites)
            src = SOURCE_NAME
            for i, (args, _, names) in enumerate(stages, 1):
                f.write(" ".join([*base, *args, src, "-o", f"stage{i}.mlirbc"]) + "\n")
                f.write(f"# then kiln.lowering.rewrites.apply_rewrites(module, {names!r})\n")
                src = f"stage{i}.mlirbc"
            f.write(" ".join([*base, *last, src, "-o", "out.vmfb"]) + "\n")
        else:
            f.write(" ".join(cli_command(flags)) + "\n")
    return d


def _cli_stages(
    rewrites: list[str],
) -> tuple[list[tuple[list[str], str, list[str]]], list[str]]:
    """The ``iree-compile`` arguments of a staged compile: for each phase a rewrite follows,
    (arguments, phase, rewrite names), then the last run's arguments."""
    from kiln.lowering.rewrites import rewrite_stages

    stages, prev = [], None
    for phase, names in rewrite_stages(rewrites):
        start: list[str] = [f"--compile-from={prev}"] if prev else []
        stages.append(([*start, f"--compile-to={phase}", "--emit-mlir-bytecode"], phase, names))
        prev = phase
    return stages, [f"--compile-from={prev}"]


def cli_command(flags: list[str]) -> list[str]:
    from kiln.targets.toolchain import iree_compile_path

    return [str(iree_compile_path()), *flags, SOURCE_NAME, "-o", "out.vmfb"]


def _compile_session(
    source: bytes, flags: list[str], rewrites: list[str] | None = None, *,
    front: bytes | None = None, want_front: bool = False,
) -> tuple[bytes, str, bytes | None]:
    """The .vmfb, the compiler's stderr and (``want_front``) the ``input`` phase as bytecode.

    With ``rewrites``, the compile stops after each phase a rewrite follows, rewrites the module
    in place (it lives in the session's context) and resumes from there in a fresh invocation.
    ``front``/``want_front``: the front-end cache (``kiln.compiler.frontend``): start at the
    ``input`` phase from ``front``, or stop there once to return it."""
    from iree.compiler.api import Output, Session

    from kiln.lowering.rewrites import rewrite_stages

    front_out = None
    with _CapturedStderr() as cap:
        session = Session()
        try:
            session.set_flags(*flags)
        except ValueError:
            # A flag only the global command line knows: run the binary instead.
            return _compile_cli(source, flags, timeout=None, rewrites=rewrites, front=front,
                                want_front=want_front)
        stages = rewrite_stages(rewrites) if rewrites else []
        if (front is not None or want_front) and not any(p == _FRONT_PHASE for p, _ in stages):
            stages.insert(0, (_FRONT_PHASE, []))  # the first phase a stage can follow
        inv, sources, ok, from_front = _open_graph(session, source, front, cap)
        invocations = [inv]
        module = None
        try:
            prev: str | None = None
            for phase, names in stages if ok else []:
                cur = invocations[-1]
                skipped = phase == _FRONT_PHASE and from_front  # the module is at that phase
                if not skipped:
                    if prev is not None:
                        _set_phase(cur, "from", prev)
                    _set_phase(cur, "to", phase)
                    ok = cur.execute()
                    if not ok:
                        break
                    if phase == _FRONT_PHASE and want_front:
                        front_out = _bytecode(cur)
                prev = phase
                if names or not skipped:
                    module = cur.export_module()
                    if names:
                        _rewrite_stage(module, names, phase, flags)
                    nxt = session.invocation()
                    nxt.enable_console_diagnostics()
                    nxt.import_module(module)
                    invocations.append(nxt)
            if ok:
                if prev is not None:
                    _set_phase(invocations[-1], "from", prev)
                ok = invocations[-1].execute()
            data = b""
            if ok:
                # Serializing runs verifiers of its own (a call to a function declared without a
                # body fails here): its diagnostics are in the capture like any pass's.
                out = Output.open_membuffer()
                try:
                    invocations[-1].output_vm_bytecode(out)
                    data = bytes(out.map_memory())
                except ValueError:
                    ok = False
                finally:
                    out.close()
        finally:
            module = None  # an exported module must go before its context does
            for each in reversed(invocations):
                each.close()
            for src in sources:
                src.close()
            session.close()
    stderr = cap.text
    if not ok:
        diags = parse_diagnostics(stderr)
        msg = _failure_message(stderr, diags)
        if rewrites:
            msg += f" (compiled in phases around Kiln's rewrites {', '.join(rewrites)})"
        raise CompileError(
            msg,
            failure=CompileFailure(
                command=cli_command(flags), exit_code=1, stderr=stderr, diagnostics=diags
            ),
        )
    return data, stderr, front_out


#: The phase the front-end cache keeps (``kiln.compiler.frontend.PHASE``).
_FRONT_PHASE = "input"


def _open_graph(
    session: Any, source: bytes, front: bytes | None, cap: _CapturedStderr
) -> tuple[Any, list[Any], bool, bool]:
    """A fresh invocation holding the graph, parsed from ``front`` (a cached ``input`` phase,
    bytecode) when given and readable, else from the text ``source``: ``(invocation, source
    handles to close after it, parsed, from_front)``. A ``front`` the parser refuses leaves
    no diagnostics behind (the compile goes on from the text)."""
    from iree.compiler.api import Source

    sources = []
    if front is not None:
        mark = cap.mark()
        inv = session.invocation()
        inv.enable_console_diagnostics()
        src = Source.wrap_buffer(session, front, buffer_name=SOURCE_NAME)
        sources.append(src)
        if inv.parse_source(src):
            return inv, sources, True, True
        inv.close()
        cap.rewind(mark)
    inv = session.invocation()
    inv.enable_console_diagnostics()
    src = Source.wrap_buffer(session, source + b"\0", buffer_name=SOURCE_NAME)
    sources.append(src)
    return inv, sources, inv.parse_source(src), False


def _bytecode(inv: Any) -> bytes:
    """The invocation's module as MLIR bytecode (source locations included)."""
    from iree.compiler.api import Output

    out = Output.open_membuffer()
    inv.output_ir_bytecode(out)
    data = bytes(out.map_memory())
    out.close()
    return data


def _set_phase(inv: Any, which: str, phase: str) -> None:
    """``--compile-to``/``--compile-from`` for one invocation (C API; not wrapped in Python)."""
    from ctypes import c_char_p, c_void_p

    from iree.compiler.api import ctypes_dl

    fn = getattr(
        ctypes_dl._dylib,
        "ireeCompilerInvocationSetCompileToPhase"
        if which == "to"
        else "ireeCompilerInvocationSetCompileFromPhase",
    )
    fn.restype, fn.argtypes = None, [c_void_p, c_char_p]
    fn(inv._inv_p, phase.encode())


class _CapturedStderr:
    """Send fd 2 (where the compiler's C++ diagnostics go) to a temp file for the duration."""

    def __enter__(self) -> _CapturedStderr:
        # The pool knows this path: if the compiler kills the process, it reads what was written.
        self._file = open(STDERR_PATH, "w+b") if STDERR_PATH else tempfile.TemporaryFile()
        self._saved = os.dup(2)
        os.dup2(self._file.fileno(), 2)
        self.text = ""
        return self

    def mark(self) -> int:
        """Where the capture is now (``rewind`` drops what is written after it)."""
        return os.lseek(2, 0, os.SEEK_CUR)

    def rewind(self, mark: int) -> None:
        os.ftruncate(2, mark)
        os.lseek(2, mark, os.SEEK_SET)

    def __exit__(self, *exc: object) -> None:
        os.dup2(self._saved, 2)
        os.close(self._saved)
        self._file.seek(0)
        self.text = self._file.read().decode("utf-8", "replace")
        self._file.close()


def _die_with_parent() -> None:
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: the compiler dies with its worker


def _compile_cli(
    source: bytes, flags: list[str], *, timeout: float | None, rewrites: list[str] | None = None,
    front: bytes | None = None, want_front: bool = False,
) -> tuple[bytes, str, bytes | None]:
    """Run the native ``iree-compile``; with ``rewrites``, in one run per phase a rewrite follows
    (``--compile-to=PHASE``, bytecode, the rewrites in this process) and a last run
    ``--compile-from=`` the last phase. ``front``/``want_front``: the front-end cache, as for
    ``_compile_session`` (a stop at the ``input`` phase is one run more; ``compile_module``
    has checked that the compiler reads ``front``).
    """
    from kiln.lowering.rewrites import rewrite_stages
    from kiln.targets.toolchain import iree_compile_path

    deadline = None if timeout is None else time.monotonic() + timeout
    stages = rewrite_stages(rewrites) if rewrites else []
    if (front is not None or want_front) and not any(p == _FRONT_PHASE for p, _ in stages):
        stages.insert(0, (_FRONT_PHASE, []))
    front_out = None
    with tempfile.TemporaryDirectory(prefix="kiln-compile-") as tmp:
        out = os.path.join(tmp, "out.vmfb")
        with open(os.path.join(tmp, SOURCE_NAME), "wb") as f:
            f.write(source)
        exe = str(iree_compile_path())
        stderr = ""
        # Each stage's module is named like the source, in a folder of its own, so the
        # compiler sees the same buffer name as in one run (it is embedded in the output).
        cwd, prev = tmp, None
        start: list[str]
        for i, (phase, names) in enumerate(stages, 1):
            stage = os.path.join(tmp, f"stage{i}")
            os.mkdir(stage)
            staged_path = os.path.join(stage, SOURCE_NAME)
            if phase == _FRONT_PHASE and front is not None:
                staged = front
            else:
                start = [f"--compile-from={prev}"] if prev else []
                cmd = [exe, *flags, *start, f"--compile-to={phase}", "--emit-mlir-bytecode",
                       SOURCE_NAME, "-o", staged_path]
                stderr += _run_cli(cmd, cwd, deadline, timeout)
                with open(staged_path, "rb") as f:
                    staged = f.read()
                if phase == _FRONT_PHASE and want_front:
                    front_out = staged
            with open(staged_path, "wb") as f:
                f.write(_rewrite_bytecode(staged, names, phase, flags) if names else staged)
            cwd, prev = stage, phase
        start = [f"--compile-from={prev}"] if prev else []
        stderr += _run_cli([exe, *flags, *start, SOURCE_NAME, "-o", out], cwd, deadline, timeout)
        with open(out, "rb") as f:
            return f.read(), stderr, front_out


def front_readable(front: bytes) -> bool:
    """Whether the compiler can read ``front`` (a stored ``input`` phase) as MLIR; a stored
    phase that it cannot is ignored (the compile starts from the graph's text)."""
    from iree.compiler import ir
    from iree.compiler.api import Session

    session = Session()
    try:
        ir.Module.parse(front, context=session.context)
        return True
    except Exception:  # noqa: BLE001 - MLIRError or worse: not a module
        return False
    finally:
        session.close()


def _rewrite_stage(module: Any, names: list[str], phase: str, flags: list[str]) -> None:
    """Apply Kiln's rewrites ``names`` to ``module``; a failure is this compile's
    ``compile_failed`` (with the way around it), never a crashed worker task."""
    from kiln.lowering.rewrites import apply_rewrites

    try:
        apply_rewrites(module, names)
    except Exception as exc:  # noqa: BLE001 - a rewrite bug must not look like a worker crash
        msg = (f"Kiln's rewrite ({', '.join(names)}) after IREE's {phase} phase failed: "
               f"{type(exc).__name__}: {exc}; preset=baseline compiles without Kiln's rewrites")
        raise CompileError(
            msg, failure=CompileFailure(command=cli_command(flags), stderr=msg)
        ) from exc


def _rewrite_bytecode(data: bytes, rewrites: list[str], phase: str, flags: list[str]) -> bytes:
    """Parse MLIR bytecode, apply Kiln's rewrites, write bytecode back.

    The context is a compiler session's (every IREE dialect registered: after global
    optimization the module holds ``util``, ``hal`` and ``flow`` ops); nothing is compiled in it.
    """
    import io

    from iree.compiler import ir
    from iree.compiler.api import Session

    session = Session()
    try:
        module = ir.Module.parse(data, context=session.context)
        _rewrite_stage(module, rewrites, phase, flags)
        buf = io.BytesIO()
        module.operation.write_bytecode(buf)
        del module
        return buf.getvalue()
    finally:
        session.close()


def _run_cli(cmd: list[str], cwd: str, deadline: float | None, timeout: float | None) -> str:
    """Run one ``iree-compile`` command; return its stderr or raise the failure as a CompileError."""
    left = None if deadline is None else max(0.1, deadline - time.monotonic())
    try:
        proc = subprocess.run(
            cmd,
            cwd=cwd,
            capture_output=True,
            timeout=left,
            preexec_fn=_die_with_parent,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise CompileTimeout(
            f"iree-compile ran past its {timeout:g} s timeout and was killed",
            failure=CompileFailure(command=cmd, signal="SIGKILL"),
        ) from None
    stderr = proc.stderr.decode("utf-8", "replace")
    if proc.returncode != 0:
        sig = None
        if proc.returncode < 0:
            try:
                sig = signal.Signals(-proc.returncode).name
            except ValueError:
                sig = f"signal {-proc.returncode}"
        diags = parse_diagnostics(stderr)
        msg = _failure_message(stderr, diags)
        if sig:
            msg = f"iree-compile was killed by {sig}: " + msg
        raise CompileError(
            msg,
            failure=CompileFailure(
                command=cmd,
                exit_code=proc.returncode,
                signal=sig,
                stderr=stderr,
                diagnostics=diags,
            ),
        )
    return stderr
