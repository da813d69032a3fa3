"""Detect what a graph's bytes are: ONNX protobuf, MLIR text or MLIR bytecode.

Detection looks at bytes only (no parser runs here), so it is safe in the daemon process and in
the light client. Each format is recognised positively: MLIR bytecode by its magic, MLIR text by
a top-level construct where the text starts (``module``, ``func.func``, an attribute alias...),
an ONNX model by a well-formed protobuf top level holding a graph. Anything else is refused with
``invalid_graph`` saying what the bytes look like (an ELF or PE executable, a zip, gzip, JSON,
plain text with its first line, ...) and their first bytes, instead of a parser's error about a
file that was never a graph. The dialect is decided after parsing, from the ops the module holds
(``dialect_of``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from kiln.dialects.types import GraphFormat, InputDialect
from kiln.errors import InvalidGraph

__all__ = [
    "MLIR_BYTECODE_MAGIC", "describe_bytes", "detect_format", "dialect_of", "looks_like_mlir_text",
    "looks_like_onnx",
]

MLIR_BYTECODE_MAGIC = b"ML\xefR"
_HEAD = 4096
# Where MLIR text starts, after blank lines and // comments: a module, a top-level op in custom
# form (``func.func @f``, ``util.global private @w``...), an attribute or type alias, an op in
# generic form, or a dialect resource block.
_MLIR_START = re.compile(
    r"""(?:module\b|builtin\.module\b|[a-z_][a-z0-9_]*\.[\w.$]+[ \t]+(?:(?:private|public|nested)[ \t]+)?[@"({<%]
        |[#!][A-Za-z_][\w.$-]*\s*=|"[A-Za-z_][\w$]*\.[\w.$]+"\s*\(|\{-\#)""",
    re.VERBOSE,
)
_COMMENT_OR_BLANK = re.compile(r"(?:[ \t\r]*(?://[^\n]*)?\n)*[ \t\r]*")

# ONNX ModelProto fields and their protobuf wire types (onnx.proto); a model always has a graph.
_ONNX_FIELDS = {1: 0, 2: 2, 3: 2, 4: 2, 5: 0, 6: 2, 7: 2, 8: 2, 14: 2, 20: 2, 25: 2, 26: 2}
_ONNX_GRAPH = 7

# Magic numbers of files people send by mistake: (prefix, offset, what it is).
_MAGIC: tuple[tuple[bytes, int, str], ...] = (
    (b"\x7fELF", 0, "an ELF executable or shared library"),
    (b"MZ", 0, "a Windows (PE) executable"),
    (b"\xcf\xfa\xed\xfe", 0, "a Mach-O executable"),
    (b"PK\x03\x04", 0, "a zip archive"),
    (b"\x1f\x8b", 0, "gzip-compressed data"),
    (b"BZh", 0, "bzip2-compressed data"),
    (b"\xfd7zXZ\x00", 0, "xz-compressed data"),
    (b"\x28\xb5\x2f\xfd", 0, "zstd-compressed data"),
    (b"7z\xbc\xaf\x27\x1c", 0, "a 7-zip archive"),
    (b"ustar", 257, "a tar archive"),
    (b"%PDF", 0, "a PDF document"),
    (b"\x89PNG", 0, "a PNG image"),
    (b"\xff\xd8\xff", 0, "a JPEG image"),
    (b"\x93NUMPY", 0, "a NumPy array (.npy)"),
    (b"\x89HDF", 0, "an HDF5 file (e.g. a Keras model)"),
    (b"TFL3", 4, "a TensorFlow Lite model"),
    (b"\x80", 0, "a Python pickle (e.g. a PyTorch checkpoint)"),
)


def detect_format(data: bytes, *, declared: str | None = None) -> GraphFormat:
    """Return the graph's format; ``declared`` ("mlir" | "onnx") is checked against the bytes.

    Raises ``InvalidGraph`` when the bytes are empty, not recognised as ONNX or MLIR (the
    message says what they look like), or not of the declared format.
    """
    if not isinstance(data, bytes | bytearray | memoryview):
        raise InvalidGraph(f"a graph is bytes, not {type(data).__name__}")
    data = bytes(data)
    if not data:
        raise InvalidGraph("the graph is empty")
    want = None
    if declared is not None:
        want = declared.lower()
        if want not in ("mlir", "onnx"):
            raise InvalidGraph(f"unknown graph format {declared[:32]!r}; valid: mlir, onnx")
    if data.startswith(MLIR_BYTECODE_MAGIC):
        fmt = GraphFormat.MLIR_BYTECODE
    elif looks_like_mlir_text(data):
        fmt = GraphFormat.MLIR
    elif looks_like_onnx(data):
        fmt = GraphFormat.ONNX
    else:
        said = f" (declared {want!r})" if want else ""
        raise InvalidGraph(
            f"the graph is not recognised as ONNX or MLIR{said}: {describe_bytes(data)}",
            detail={"seen": describe_bytes(data), "first_bytes": data[:16].hex(" ")},
        )
    if want == "mlir" and fmt is GraphFormat.ONNX:
        raise InvalidGraph("format is 'mlir' but the data is an ONNX model (protobuf)")
    if want == "onnx" and fmt is not GraphFormat.ONNX:
        what = "MLIR bytecode" if fmt is GraphFormat.MLIR_BYTECODE else "MLIR text"
        raise InvalidGraph(f"format is 'onnx' but the data is {what}")
    return fmt


def looks_like_onnx(data: bytes) -> bool:
    """Whether ``data``'s top level is a well-formed ONNX ``ModelProto``: every field has the
    wire type onnx.proto gives it (unknown fields allowed), lengths stay inside the data, and
    a graph is present. Reads only the top level (the graph itself is skipped over)."""
    return _onnx_top_level(data) == "model"


def _onnx_top_level(data: bytes) -> str | None:
    """``"model"``; ``"truncated"`` when the fields are well formed but the last one runs past
    the end (a model cut short); None for anything else."""
    pos, end, has_graph, fields = 0, len(data), False, 0
    while pos < end:
        tag, pos = _varint(data, pos)
        if tag is None:
            return "truncated" if fields else None
        field, wire = tag >> 3, tag & 7
        if field == 0 or (field in _ONNX_FIELDS and _ONNX_FIELDS[field] != wire):
            return None
        if wire == 0:
            value, pos = _varint(data, pos)
            if value is None:
                return "truncated" if fields else None
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
        elif wire == 2:
            size, pos = _varint(data, pos)
            if size is None:
                return "truncated" if fields else None
            pos += size
            has_graph = has_graph or field == _ONNX_GRAPH
        else:
            return None
        fields += 1
        if pos > end:
            return "truncated" if field in _ONNX_FIELDS else None
    return "model" if has_graph else None


def describe_bytes(data: bytes) -> str:
    """What ``data`` looks like, for an error message: a known file type by its magic number,
    JSON, XML/HTML or text (with its first line), else binary data; with the first bytes."""
    first = data[:8].hex(" ")
    if _is_vmfb(data):
        return ("an IREE executable (.vmfb), already compiled: run it with "
                "kiln.client.runtime.load_vmfb, list its functions with `kiln inspect`")
    if _onnx_top_level(data) == "truncated":
        return f"an ONNX model cut short: its protobuf ends inside a field (first bytes {first})"
    for magic, offset, what in _MAGIC:
        if data[offset : offset + len(magic)] == magic:
            return f"{what} (first bytes {first})"
    if len(data) > 8 and data[8:10] == b'{"':  # 8-byte header length, then JSON
        return f"a safetensors file of weights, not a graph (first bytes {first})"
    text = _text(data[:_HEAD])
    if text is None:
        return f"binary data (first bytes {first})"
    stripped = text.lstrip()
    line = stripped.split("\n", 1)[0].strip()[:60]
    if stripped.startswith(("{", "[")):
        if _looks_like_toml(stripped):
            return f"TOML text (a kiln build manifest? `kiln build FILE` reads one): {line!r}"
        return f"JSON text: {line!r}"
    if stripped.startswith("<"):
        return f"XML or HTML text: {line!r}"
    if not stripped:
        return "only whitespace"
    return f"text whose first line is {line!r}"


def _looks_like_toml(text: str) -> bool:
    """A ``[table]`` / ``[[array]]`` header line or a ``key = value`` line: TOML, which JSON never
    is (JSON separates keys with ':')."""
    return bool(re.search(r"^\s*\[\[?[A-Za-z0-9_.\"' -]+\]\]?\s*$|^\s*[A-Za-z0-9_.-]+\s*=",
                          text[:_HEAD], re.MULTILINE))


def _is_vmfb(data: bytes) -> bool:
    return data[:4] == b"PK\x03\x04" and b"module.fb" in data[:64] or data[4:8] == b"IREE"


def _varint(data: bytes, pos: int) -> tuple[int | None, int]:
    value = shift = 0
    while pos < len(data) and shift < 64:
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7
    return None, pos


def _text(head: bytes) -> str | None:
    """``head`` as text when it is printable UTF-8 (a multibyte character cut at the end of the
    window is allowed), else None."""
    for cut in (0, 1, 2, 3):
        try:
            text = head[: len(head) - cut].decode("utf-8")
            break
        except UnicodeDecodeError:
            continue
    else:
        return None
    if all(c.isprintable() or c in "\t\r\n\f" for c in text):
        return text
    return None


def looks_like_mlir_text(data: bytes) -> bool:
    """Whether ``data`` starts as MLIR text does (printable UTF-8; after blank lines and ``//``
    comments, a top-level construct: see ``_MLIR_START``)."""
    text = _text(data[:_HEAD])
    if text is None:
        return False
    start = _COMMENT_OR_BLANK.match(text)
    rest = text[start.end() if start else 0 :]
    return bool(_MLIR_START.match(rest))


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
