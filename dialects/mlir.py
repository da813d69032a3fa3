"""Parse and verify MLIR (text or bytecode) with IREE's bundled MLIR Python bindings.

Runs inside a compile worker (the parser is native code). Diagnostics are returned in the error,
never printed. A parsed module is checked against what a graph may carry (``kiln.dialects.allowlist``:
no HAL/target declarations, no attribute that names host files, anywhere in the module), else
``invalid_graph``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from kiln.dialects.allowlist import check_module
from kiln.errors import Diagnostic, InvalidGraph

if TYPE_CHECKING:
    from iree.compiler import ir

_LOC_RE = re.compile(r'^loc\("(?P<file>[^"]*)":(?P<line>\d+):(?P<col>\d+)\)$')
SOURCE_NAME = "input.mlir"
# Parser diagnostics about types that do not agree (the text itself is well formed).
_TYPE_ERROR = re.compile(
    r"expects different type|type mismatch|mismatch(?:ed)? types?|incompatible|inferred type|"
    r"(?:operand|result|argument|element) types?\b.*(?:match|same|expected)|"
    r"(?:match|same).*\btypes?\b"
)


def to_diagnostic(location: str, message: str, severity: str = "error") -> Diagnostic:
    m = _LOC_RE.match(location)
    if m:
        return Diagnostic(
            message=message,
            severity=severity,
            file=m.group("file"),
            line=int(m.group("line")),
            col=int(m.group("col")),
        )
    return Diagnostic(message=f"{message} (at {location})" if location else message, severity=severity)


def parse_module(data: bytes | str, *, context: ir.Context) -> ir.Module:
    """Parse, verify and check against the allow-list; raise ``InvalidGraph`` with the parser's
    diagnostics, or naming what is not allowed."""
    from iree.compiler import ir

    try:
        module = ir.Module.parse(data, context=context)
    except ir.MLIRError as exc:
        diags = [to_diagnostic(str(d.location), d.message) for d in exc.error_diagnostics]
        first = diags[0].message if diags else str(exc)
        what = "has a type error" if _TYPE_ERROR.search(first) else "does not parse"
        raise InvalidGraph(f"the MLIR {what}: {first}", diagnostics=diags) from None
    except ValueError as exc:  # bytecode the reader rejects, embedded NULs, ...
        raise InvalidGraph(f"the MLIR does not parse: {exc}") from None
    try:
        module.operation.verify()
    except ir.MLIRError as exc:
        diags = [to_diagnostic(str(d.location), d.message) for d in exc.error_diagnostics]
        first = diags[0].message if diags else str(exc)
        raise InvalidGraph(f"the MLIR does not verify: {first}", diagnostics=diags) from None
    check_module(module)
    return module


def op_names(module: ir.Module) -> list[str]:
    from iree.compiler import ir

    names: list[str] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        names.append(op.name)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return names


def public_function_ops(module: ir.Module) -> list[tuple[ir.Operation, str]]:
    """The module's public entry points with a body, as (operation, name), in order."""
    from iree.compiler import ir

    out = []
    for op in module.body.operations:
        if op.operation.name in ("func.func", "util.func"):
            attrs = op.operation.attributes
            vis = attrs["sym_visibility"] if "sym_visibility" in attrs else None
            if vis is not None and ir.StringAttr(vis).value != "public":
                continue
            if op.operation.name == "func.func" and len(op.regions[0].blocks) == 0:
                continue  # a declaration (e.g. an external parameter loader)
            out.append((op.operation, ir.StringAttr(attrs["sym_name"]).value))
    return out


def public_functions(module: ir.Module) -> tuple[str, ...]:
    return tuple(name for _, name in public_function_ops(module))
