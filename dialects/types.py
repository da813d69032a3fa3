"""Input domain types: the formats and dialects a graph can arrive in."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


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
class PreparedGraph:
    """A graph imported, verified and put in canonical form (see ``kiln.lowering.canonical``).

    ``mlir`` is the canonical MLIR text that is compiled; ``digest`` is ``sha256:<hex>`` of it.
    ``functions`` are the public entry points (an ONNX model's is named after its graph).
    """

    mlir: str
    digest: str
    input_format: GraphFormat
    input_dialect: InputDialect
    functions: tuple[str, ...]
