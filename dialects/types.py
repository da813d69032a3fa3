"""Input domain types: the formats and dialects a graph can arrive in, and the signatures of its
public functions (also read back from an executable by the client: pure Python, no compiler)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any


class GraphFormat(str, Enum):
    ONNX = "onnx"
    MLIR = "mlir"  # text
    MLIR_BYTECODE = "mlirbc"


class InputDialect(str, Enum):
    LINALG = "linalg"
    STABLEHLO = "stablehlo"
    TOSA = "tosa"
    TORCH = "torch"
    ONNX = "onnx"


@dataclass(frozen=True)
class GraphTraits:
    """Counts of the graph's compute ops (see ``kiln.dialects.traits``); all zero when unknown.

    ``conv`` counts every convolution, ``depthwise_conv`` the depthwise ones among them;
    ``attention`` counts softmax and fused attention ops.
    """

    conv: int = 0
    depthwise_conv: int = 0
    matmul: int = 0
    attention: int = 0

    def to_json(self) -> dict[str, int]:
        return {
            "conv": self.conv,
            "depthwise_conv": self.depthwise_conv,
            "matmul": self.matmul,
            "attention": self.attention,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> GraphTraits:
        if not data:
            return cls()
        keys = ("conv", "depthwise_conv", "matmul", "attention")
        return cls(**{k: int(data.get(k, 0)) for k in keys})


@dataclass(frozen=True)
class PreparedGraph:
    """A graph imported, verified and put in canonical form (see ``kiln.lowering.canonical``).

    ``mlir`` is the canonical MLIR text that is compiled; ``digest`` is ``sha256:<hex>`` of it.
    ``functions`` are the public entry points (an ONNX model's is named after its graph).
    ``traits`` count the graph's compute ops; the CPU presets choose flags from them.
    ``signatures``: the public functions' argument and result types, as imported (before any
    entry point is added), in ``functions`` order.
    ``params``: with weights apart (option ``params: "external"``), the parameter archive
    (``.irpa`` file) an ONNX import wrote; ``mlir`` then names the weights without their values.
    None otherwise (also for MLIR whose weights are already named parameters).
    """

    mlir: str
    digest: str
    input_format: GraphFormat
    input_dialect: InputDialect
    functions: tuple[str, ...]
    traits: GraphTraits = field(default_factory=GraphTraits)
    signatures: tuple[FunctionSignature, ...] = ()
    params: ParamsFile | None = field(default=None, repr=False)


@dataclass(frozen=True)
class ParamsFile:
    """A parameter archive (``.irpa``) that a prepare worker wrote to a file, so the weights never
    cross the worker's pipe nor sit in the caller's memory. The caller owns ``path`` (it removes
    the file once the archive is stored: ``kiln.compiler.pipeline``)."""

    path: str
    digest: str  # "sha256:<hex>" of the file's bytes
    size: int  # bytes


# -- function signatures ------------------------------------------------------------------------

# MLIR element type -> numpy dtype name (``ValueType.numpy_dtype``).
_NUMPY = {
    "f16": "float16", "f32": "float32", "f64": "float64", "bf16": "bfloat16",
    "i1": "bool", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
    "ui8": "uint8", "ui16": "uint16", "ui32": "uint32", "ui64": "uint64",
    "complex<f32>": "complex64", "complex<f64>": "complex128",
}
_SCALARS = frozenset({"i1", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64", "index"})
_TORCH_TENSOR = re.compile(r"^!torch\.(?:v|non_value_)?tensor<\[([^\]]*)\],(.+)>$")


@dataclass(frozen=True)
class ValueType:
    """One argument or result of a public function.

    ``kind``: ``"tensor"`` (``shape`` holds its dims, ``None`` for a dynamic one; ``shape`` is
    ``None`` when the rank is unknown), ``"scalar"`` (a bare number: pass a Python number) or
    ``"opaque"`` (anything else; ``dtype`` holds the type's text). ``dtype`` is the MLIR element
    type (``f32``, ``i64``, ``i1``...; signedness dropped: ``si64`` is ``i64``), ``""`` when
    the executable does not say.
    """

    kind: str
    dtype: str
    shape: tuple[int | None, ...] | None = None

    @property
    def numpy_dtype(self) -> str | None:
        """The numpy dtype name for ``dtype`` (``"float32"``), None when there is none."""
        return _NUMPY.get(self.dtype)

    def __str__(self) -> str:
        if self.kind != "tensor":
            return self.dtype
        if self.shape is None:
            return f"tensor<*x{self.dtype}>" if self.dtype else "tensor<?>"
        dims = "".join(("?" if d is None else str(d)) + "x" for d in self.shape)
        return f"tensor<{dims}{self.dtype or '?'}>"

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "dtype": self.dtype,
                "shape": None if self.shape is None else list(self.shape)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ValueType:
        shape = data.get("shape")
        return cls(kind=str(data.get("kind", "tensor")), dtype=str(data.get("dtype", "")),
                   shape=None if shape is None else tuple(None if d is None else int(d)
                                                          for d in shape))

    @classmethod
    def parse(cls, text: str) -> ValueType:
        """From an MLIR type's text: ``tensor<4x?xf32>``, ``tensor<*xf32>``, ``i32``,
        ``!torch.vtensor<[1,?],si64>``; anything else is ``opaque``. Never raises."""
        t = text.strip()
        m = _TORCH_TENSOR.match(t)
        if m:
            words = [d.strip() for d in m.group(1).split(",") if d.strip()]
            shape = tuple(int(d) if d.lstrip("-").isdigit() and int(d) >= 0 else None
                          for d in words)
            return cls("tensor", _signless(m.group(2).strip()), shape)
        if t.startswith("tensor<") and t.endswith(">"):
            body = _split_top(t[len("tensor<"):-1])[0]  # drop an encoding
            if body.startswith("*x"):
                return cls("tensor", _signless(body[2:]), None)
            dims, dtype = _dims_and_element(body)
            return cls("tensor", _signless(dtype), dims)
        if t in _SCALARS or re.fullmatch(r"[su]?i\d+|f\d+", t):
            return cls("scalar", _signless(t), ())
        return cls("opaque", t, None)


@dataclass(frozen=True)
class FunctionSignature:
    """A public function: its ``name`` and the types of its ``inputs`` and ``outputs``."""

    name: str
    inputs: tuple[ValueType, ...]
    outputs: tuple[ValueType, ...]

    def __str__(self) -> str:
        outs = ", ".join(map(str, self.outputs))
        if len(self.outputs) != 1:
            outs = f"({outs})"
        return f"{self.name}({', '.join(map(str, self.inputs))}) -> {outs}"

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "inputs": [v.to_json() for v in self.inputs],
                "outputs": [v.to_json() for v in self.outputs]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FunctionSignature:
        return cls(name=str(data.get("name", "")),
                   inputs=tuple(ValueType.from_json(v) for v in data.get("inputs") or ()),
                   outputs=tuple(ValueType.from_json(v) for v in data.get("outputs") or ()))

    @classmethod
    def from_types(cls, name: str, inputs: Iterable[str], outputs: Iterable[str]) -> FunctionSignature:
        """From the MLIR texts of the argument and result types."""
        return cls(name, tuple(map(ValueType.parse, inputs)), tuple(map(ValueType.parse, outputs)))

    @classmethod
    def from_declaration(cls, text: str) -> FunctionSignature | None:
        """From IREE's ``iree.abi.declaration`` reflection string
        (``sync func @main(%input0: tensor<4xf32>) -> (%output0: tensor<4xf32>)``); None when it
        cannot be read."""
        m = re.match(r"^\s*(?:\w+\s+)?func\s+@(\"[^\"]*\"|[^(\s]+)\s*\((.*)\)\s*->\s*(.*)$",
                     text, re.DOTALL)
        if m is None:
            return None
        name = m.group(1).strip('"')
        results = m.group(3).strip()
        if results.startswith("(") and results.endswith(")"):
            results = results[1:-1]

        def types(part: str) -> list[str]:
            return [p.split(":", 1)[1] if p.lstrip().startswith("%") and ":" in p else p
                    for p in _split_top(part) if p.strip()]

        return cls.from_types(name, types(m.group(2)), types(results))


def _signless(dtype: str) -> str:
    return dtype[1:] if re.fullmatch(r"si\d+", dtype) else dtype


def _dims_and_element(body: str) -> tuple[tuple[int | None, ...], str]:
    """``4x?x8xf32`` -> ((4, None, 8), "f32"); the element type may itself hold an ``x``
    (``complex<f32>``), so dims are read from the left while they are numbers or ``?``."""
    parts = body.split("x")
    dims: list[int | None] = []
    i = 0
    while i < len(parts) - 1 and (parts[i].isdigit() or parts[i] == "?"):
        dims.append(None if parts[i] == "?" else int(parts[i]))
        i += 1
    return tuple(dims), "x".join(parts[i:])


def _split_top(text: str) -> list[str]:
    """Split on commas outside ``<>``, ``()``, ``[]`` and ``{}``."""
    out: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        if ch in "<([{":
            depth += 1
        elif ch in ">)]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur).strip())
    return out
