"""The daemon's wire types (pydantic): what ``POST /v1/compile`` accepts and what the routes
answer, as they appear in the OpenAPI document. ``shared/API.md`` is the contract; these mirror it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ArtifactOut",
    "CompileRequest",
    "CompileResponse",
    "GraphIn",
    "TargetErrorOut",
    "TargetsResponse",
]


class GraphIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    format: Literal["mlir", "onnx"] | None = Field(
        None, description="mlir (text or bytecode) or onnx; detected from the bytes when omitted"
    )
    encoding: Literal["utf-8", "base64"] = "utf-8"
    data: str = Field(description="the graph: MLIR text (utf-8) or any format base64-encoded")


class CompileRequest(BaseModel):
    """``POST /v1/compile`` as JSON. Unknown keys are refused (400 ``invalid_request``)."""

    model_config = ConfigDict(extra="forbid")

    graph: GraphIn
    targets: list[str] = Field(
        min_length=1, description="kind[:arch] strings, e.g. cpu, vulkan, cuda:sm_80"
    )
    options: dict[str, Any] | None = Field(
        None, description="allow-listed compile options (GET /v1/targets lists them)"
    )


class ArtifactOut(BaseModel):
    target: str
    key: str = Field(description="hex compile key (the action-cache key)")
    digest: str = Field(description="sha256:<hex> of the executable's bytes")
    size: int = Field(description="bytes")
    cached: bool
    compile_seconds: float
    url: str = Field(description="/v1/artifacts/<hex>")
    flags: list[str] = Field(description="the exact iree-compile flags used (provenance)")
    rewrites: list[str] = Field(
        default_factory=list,
        description="Kiln's linalg rewrites, each applied after the IREE phase it follows "
        "(--compile-to=PHASE, rewrite, --compile-from=PHASE; kiln.lowering.layout.REWRITES); "
        "empty: the flags alone reproduce it",
    )
    warnings: list[str]
    runtime: list[str] = Field(
        default_factory=list,
        description="IREE runtime versions this executable loads on, e.g. [\"3.13.x\"]",
    )


class TargetErrorOut(BaseModel):
    target: str
    error: dict[str, Any] = Field(description="{code, message, detail}")


class CompilerOut(BaseModel):
    name: str
    version: str


class CompileResponse(BaseModel):
    graph_digest: str = Field(description="sha256:<hex> of the graph's canonical form")
    input_dialect: Literal["linalg", "stablehlo", "tosa", "torch", "onnx"]
    functions: list[str] = Field(description="the module's public functions")
    compiler: CompilerOut
    artifacts: list[ArtifactOut]
    errors: list[TargetErrorOut] = Field(description="targets that failed while others succeeded")


class TargetsResponse(BaseModel):
    compiler: dict[str, str]
    kinds: list[dict[str, Any]]
    options: dict[str, list[Any]] = Field(description="allow-listed compile options and values")
