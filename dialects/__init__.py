"""Dialects: what comes in. Detect the format (ONNX protobuf, MLIR text, MLIR bytecode), import
ONNX, parse and verify MLIR, and classify the input dialect (linalg, StableHLO, TOSA, torch, ONNX)."""

from kiln.dialects.detect import detect_format, dialect_of
from kiln.dialects.types import GraphFormat, InputDialect, PreparedGraph

__all__ = ["GraphFormat", "InputDialect", "PreparedGraph", "detect_format", "dialect_of"]
