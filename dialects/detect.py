"""Detect what a graph's bytes are: ONNX protobuf, MLIR text or MLIR bytecode.

Detection looks at bytes only (no parser runs here), so it is safe in the daemon process. The
dialect is decided after parsing, from the ops the module holds (``dialect_of``).
"""

from __future__ import annotations

from collections.abc import Iterable

from kiln.dialects.types import GraphFormat, InputDialect
from kiln.errors import InvalidGraph

MLIR_BYTECODE_MAGIC = b"ML\xefR"
_MLIR_TEXT_HINTS = ("module", "func.func", "util.func", "#", "//", "\"builtin.module\"", "!")


def detect_format(data: bytes, *, declared: str | None = None) -> GraphFormat:
    """Return the graph's format; ``declared`` ("mlir" | "onnx") is checked against the bytes."""
    if not data:
        raise InvalidGraph("the graph is empty")
    if data.startswith(MLIR_BYTECODE_MAGIC):
        fmt = GraphFormat.MLIR_BYTECODE
    elif _looks_like_mlir_text(data):
        fmt = GraphFormat.MLIR
    else:
        fmt = GraphFormat.ONNX
    if declared is not None:
        want = declared.lower()
        if want not in ("mlir", "onnx"):
            raise InvalidGraph(f"unknown graph format {declared[:32]!r}; valid: mlir, onnx")
        if want == "mlir" and fmt is GraphFormat.ONNX:
            raise InvalidGraph("format is 'mlir' but the data is neither MLIR text nor bytecode")
        if want == "onnx" and fmt is not GraphFormat.ONNX:
            raise InvalidGraph("format is 'onnx' but the data looks like MLIR")
    return fmt


def _looks_like_mlir_text(data: bytes) -> bool:
    head = data[:4096]
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        # A multibyte character may be cut at 4096; decide on what decodes.
        try:
            text = head[:-4].decode("utf-8")
        except UnicodeDecodeError:
            return False
    stripped = text.lstrip()
    if stripped.startswith(_MLIR_TEXT_HINTS) or "func.func" in text:
        return True
    # Otherwise: text is MLIR-looking if it is printable (an ONNX protobuf starts with a field
    # tag such as 0x08 and carries control bytes).
    return bool(stripped) and all(c.isprintable() or c in "\t\r\n" for c in text)


def dialect_of(op_names: Iterable[str]) -> InputDialect:
    """Classify a module by the dialects of its ops (torch > stablehlo > tosa > linalg)."""
    namespaces = {name.split(".", 1)[0] for name in op_names}
    if "torch" in namespaces:
        return InputDialect.TORCH
    if "stablehlo" in namespaces or "chlo" in namespaces or "mhlo" in namespaces:
        return InputDialect.STABLEHLO
    if "tosa" in namespaces:
        return InputDialect.TOSA
    return InputDialect.LINALG
