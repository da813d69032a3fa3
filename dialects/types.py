"""Input domain types: the formats and dialects a graph can arrive in."""

from __future__ import annotations

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
    """

    mlir: str
    digest: str
    input_format: GraphFormat
    input_dialect: InputDialect
    functions: tuple[str, ...]
    traits: GraphTraits = field(default_factory=GraphTraits)
