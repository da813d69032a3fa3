"""What a graph may carry: an allow-list of op dialects, attribute names and attribute dialects.

A graph is data; it must not steer the compiler towards the server's own files. IREE acts on
attributes a graph can carry anywhere (``hal.executable.objects = [#hal.executable.object<{path =
"/server/file.o"}>]`` on any inner op is linked into the executable; ``.bc`` paths are opened at
translation time), so ``check_module`` refuses everything not listed here rather than what is
known to be dangerous:

- every op's dialect is one of ``OP_DIALECTS`` (``hal``, ``flow``, ``stream`` and the rest of
  IREE's internals are not);
- every attribute name with a dialect prefix (``ns.name``), on any op, the module, or nested in a
  dictionary (function argument and result attributes, ``iree.reflection``...) starts with one
  of ``ATTRIBUTE_NAME_PREFIXES``; names without a dot are an op's own (inherent) attributes;
- every dialect attribute or type (``#ns.mnemonic<...>``, ``#ns<...>``, ``!ns.type``), wherever
  it appears (op attributes, arrays and dictionaries at any depth, inside other dialect
  attributes, tensor encodings in types), belongs to a dialect of ``VALUE_DIALECTS`` or is one
  of ``VALUE_ATTRIBUTES``.

The check runs on the module printed in generic form (every attribute of every op spelled out,
none hidden behind custom syntax, weights elided), lexed so that string literals are never read
as names: a path inside a string is only ever data of an allowed attribute. The module that is
compiled is printed from the same IR, so nothing reaches the compiler that this check did not
see. A refusal is ``invalid_graph`` naming the op, attribute or dialect, never a path and never
after anything was opened, so the answer is the same whether a named file exists or not.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from kiln.errors import InvalidGraph

if TYPE_CHECKING:
    from iree.compiler import ir

__all__ = [
    "ATTRIBUTE_NAME_PREFIXES", "OP_DIALECTS", "VALUE_ATTRIBUTES", "VALUE_DIALECTS", "check_module",
]

#: Dialects whose ops a graph may hold: the input dialects Kiln accepts (linalg with the upstream
#: tensor-level dialects around it, StableHLO, TOSA, torch and the ONNX importer's output) and
#: ``util`` for globals (external parameters).
OP_DIALECTS = frozenset({
    "builtin", "func", "arith", "math", "complex", "index", "tensor", "linalg", "scf", "affine",
    "cf", "shape", "ml_program", "stablehlo", "chlo", "tosa", "torch", "torch_c", "util",
})

#: Dotted attribute names a graph may carry: exporters' annotations (JAX, StableHLO, torch, the
#: ONNX importer's ``torch.onnx.*`` and ``torch.onnx_meta.*``) and IREE's calling-convention
#: attributes (``iree.abi.*``, ``iree.reflection``), which name no files.
ATTRIBUTE_NAME_PREFIXES = (
    "mhlo.", "jax.", "stablehlo.", "chlo.", "tosa.", "torch.", "linalg.", "arith.",
    "iree.abi.", "iree.reflection",
)

#: Dialects whose attributes and types may appear anywhere in a graph.
VALUE_DIALECTS = frozenset({
    "arith", "math", "complex", "tensor", "linalg", "scf", "affine", "shape", "ml_program",
    "stablehlo", "chlo", "tosa", "torch", "torch_c", "util",
})

#: Single attributes of other dialects a graph may use: named parameters (weights read from a
#: parameter archive at run time, never from a path at compile time).
VALUE_ATTRIBUTES = frozenset({"flow.parameter.named", "stream.parameter.named"})

# The ONNX importer's record of the model's operator sets: ``{domain = version : si64, ...}``.
# Its keys are ONNX domain names (``ai.onnx.ml``, ``ai.onnx.preview.training``, ``com.microsoft``
# or a custom one), data no part of IREE reads as an attribute; the value holds nothing but
# such integer entries, or it is checked like any other.
_OPSET_VERSIONS = re.compile(
    r"(torch\.onnx_meta\.opset_versions[ \t]*=[ \t]*)\{((?:[ \t]*[A-Za-z_][\w$.]*[ \t]*="
    r"[ \t]*-?[0-9]+[ \t]*:[ \t]*si64[ \t]*,?)*)[ \t]*\}"
)

# One token of generic-form MLIR that matters here: a string literal (possibly an attribute name
# in quotes, when ``=`` follows), a dialect attribute or type reference, or a dotted attribute
# name followed by ``=``. String literals are matched first, so nothing inside them is a token.
_TOKEN = re.compile(
    r'''"(?:[^"\\]|\\.)*"(?P<quoted>[ \t]*=(?!=))?'''
    r'''|[#!](?P<ns>[A-Za-z_][\w$]*)(?P<mnemonic>(?:\.[\w$]+)*)(?P<open><)?'''
    r'''|(?<![\w$.%#!^@-])(?P<name>[A-Za-z_][\w$]*(?:\.[\w$]+)+)[ \t]*=(?!=)'''
)


def check_module(module: ir.Module, *, what: str = "the graph") -> None:
    """Raise ``InvalidGraph`` unless every op, attribute name and dialect attribute or type in
    ``module`` is allowed (see the module docstring). ``what`` names the graph in messages."""
    _check_ops(module, what)
    text = module.operation.get_asm(
        print_generic_op_form=True, large_elements_limit=16, enable_debug_info=False,
        assume_verified=True,
    )
    check_generic_text(text, what=what)


def check_generic_text(text: str, *, what: str = "the graph") -> None:
    """The attribute half of ``check_module`` on a module already printed in generic form.

    Everything is read before anything is refused, so that the most telling refusal is the one
    reported: a ``hal.*`` attribute name, then any other name, then a value (the printer defines
    aliases first, so the value of ``hal.device.targets`` precedes its name in the text)."""
    text = _OPSET_VERSIONS.sub(r"\1{}", text)
    hal_name: str | None = None
    bad_name: str | None = None
    bad_value: tuple[str, str, str] | None = None
    for m in _TOKEN.finditer(text):
        if m.group("quoted") is not None:
            name: str | None = _unquote(m.group(0)[: m.start("quoted") - m.start()])
        else:
            name = m.group("name")
        if name is not None:
            if "." in name and not name.startswith(ATTRIBUTE_NAME_PREFIXES):
                if name.startswith("hal."):
                    hal_name = hal_name or name
                else:
                    bad_name = bad_name or name
        elif bad_value is None and m.group("ns") is not None and (
            m.group("mnemonic") or m.group("open")
        ):
            # ``#ns.mnemonic``, ``!ns.type`` or the opaque ``#ns<...>``; a bare ``#name`` is an
            # alias the printer chose, whose definition is itself in the text.
            ns, mnemonic = m.group("ns"), m.group("mnemonic")
            if ns not in VALUE_DIALECTS and ns + mnemonic not in VALUE_ATTRIBUTES:
                bad_value = (ns, mnemonic, m.group(0)[0])
    if hal_name is not None or bad_name is not None:
        _refuse_name(hal_name or bad_name or "", what)
    if bad_value is not None:
        _refuse_value(*bad_value, what)


def _check_ops(module: ir.Module, what: str) -> None:
    from iree.compiler import ir

    found: list[str] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name.split(".", 1)[0] not in OP_DIALECTS:
            found.append(op.name)
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    if found:
        name = found[0]
        if name.startswith(("hal.", "flow.", "stream.")):
            raise InvalidGraph(
                f"{what} contains {name!r}: IREE-internal (hal/flow/stream) ops are not accepted "
                "as input", detail={"op": name},
            )
        raise InvalidGraph(
            f"{what} contains {name!r}: ops of the {name.split('.', 1)[0]!r} dialect are not "
            f"accepted as input (accepted: {', '.join(sorted(OP_DIALECTS))})",
            detail={"op": name},
        )


def _refuse_name(name: str, what: str) -> None:
    shown = name[:80]
    if name.startswith("hal."):
        raise InvalidGraph(
            f"{what} carries {shown!r}: HAL attributes (targets, executable objects) are Kiln's "
            "to set, not a graph's; targets are chosen with 'targets'",
            detail={"attribute": shown},
        )
    raise InvalidGraph(
        f"{what} carries the attribute {shown!r}, which is not accepted in a graph (dotted "
        f"attribute names accepted: {', '.join(p.rstrip('.') + '.*' if p.endswith('.') else p for p in ATTRIBUTE_NAME_PREFIXES)})",
        detail={"attribute": shown},
    )


def _refuse_value(ns: str, mnemonic: str, sigil: str, what: str) -> None:
    shown = f"{sigil}{ns}{mnemonic}"[:80]
    kind = "type" if sigil == "!" else "attribute"
    raise InvalidGraph(
        f"{what} carries the {kind} {shown!r}: {kind}s of the {ns[:40]!r} dialect are not "
        "accepted in a graph", detail={kind: shown},
    )


def _unquote(literal: str) -> str:
    body = literal[1:-1]
    return re.sub(r"\\(.)", r"\1", body) if "\\" in body else body
