"""The daemon's wire types (pydantic): what ``POST /v1/compile`` accepts and what the routes
answer, as they appear in the OpenAPI document (``openapi.py`` registers every one of them under
``components.schemas``). ``docs/api.md`` is the contract; these mirror it.

The JSON schema of a field may be stricter than the server (a schema-valid request is one the
server's parsers accept up to the graph itself): target strings carry the pattern
``kiln.targets`` checks before resolving the kind (without the surrounding whitespace the server
strips), and ``options`` lists each allow-listed key with its values (``kiln.targets.options``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from kiln.compiler.pipeline import MAX_TARGETS
from kiln.targets import kinds
from kiln.targets.options import OPTIONS
from kiln.targets.presets import PRESETS

from .errors import ErrorInfo
from .tuning import MAX_MS, MIN_MS

__all__ = [
    "TARGET_PATTERN",
    "ArtifactOut",
    "CompileRequest",
    "CompileResponse",
    "DsseEnvelope",
    "GraphIn",
    "Health",
    "KeyOut",
    "ParamsOut",
    "Readiness",
    "TargetErrorOut",
    "TargetsResponse",
    "TuningAccepted",
    "TuningEvidence",
    "TuningRecordIn",
    "options_schema",
    "target_schema",
]

#: A registered kind, then ``:``-separated parts in the characters
#: ``kiln.targets.registry.parse_target`` accepts (up to 128 in all; the server also takes
#: surrounding whitespace and upper case, which it normalizes away).
TARGET_PATTERN = r"^(?:" + "|".join(sorted(kinds())) + r")(?::[A-Za-z0-9_.+,\-]*)*$"


def target_schema() -> dict[str, Any]:
    return {
        "type": "string",
        "minLength": 1,
        "maxLength": 128,
        "pattern": TARGET_PATTERN,
        "description": "kind[:arch], e.g. cpu, cpu:x86_64:znver3, vulkan, cuda:sm_80, "
        "rocm:gfx942, metal (GET /v1/targets lists kinds, archs and aliases; an unknown one is "
        "400 unsupported_target)",
        "examples": ["cpu", "cuda:sm_80"],
    }


def options_schema() -> dict[str, Any]:
    """The allow-listed options, each key with its allowed values (null: the default)."""
    return {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            key: {"enum": [*allowed, None]} for key, allowed in sorted(OPTIONS.items())
        },
        "description": "allow-listed compile options (GET /v1/targets lists them); an unknown "
        "key or value is 400 invalid_request",
    }


Target = Annotated[str, WithJsonSchema(target_schema())]


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
    targets: list[Target] = Field(
        min_length=1, max_length=MAX_TARGETS,
        description="target strings; duplicates (after normalizing) are compiled once",
    )
    options: Annotated[
        dict[str, Any] | None,
        WithJsonSchema({"anyOf": [options_schema(), {"type": "null"}]}),
    ] = None


class ArtifactOut(BaseModel):
    target: str = Field(description="the normalized target")
    key: str = Field(description="hex compile key (the action-cache key)")
    digest: str = Field(description="sha256:<hex> of the executable's bytes")
    size: int = Field(description="bytes")
    cached: bool = Field(description="true: the executable came from the cache, nothing compiled")
    compile_seconds: float = Field(
        description="seconds this request spent compiling this executable: 0 when `cached` "
        "(the build that made it is not repeated, nor is its time)"
    )
    url: str = Field(description="/v1/artifacts/<hex>")
    flags: list[str] = Field(description="the exact iree-compile flags used (provenance)")
    rewrites: list[str] = Field(
        default_factory=list,
        description="Kiln's linalg rewrites, each applied after the IREE phase it follows "
        "(--compile-to=PHASE, rewrite, --compile-from=PHASE; kiln.lowering.rewrites.REWRITES); "
        "empty: the flags alone reproduce it",
    )
    warnings: list[str]
    runtime: list[str] = Field(
        default_factory=list,
        description="IREE runtime versions this executable loads on, e.g. [\"3.13.x\"]",
    )


class TargetErrorOut(BaseModel):
    target: str
    error: ErrorInfo


class CompilerOut(BaseModel):
    name: str
    version: str


class ParamsOut(BaseModel):
    """The weights of a graph compiled with ``params: "external"``: one archive for all targets."""

    digest: str = Field(description="sha256:<hex> of the archive's bytes")
    size: int = Field(description="bytes")
    url: str = Field(description="/v1/params/<hex>")
    scope: Literal["model"] = Field(description="the parameter scope the executables read")
    format: Literal["irpa"] = Field(description="IREE's parameter archive")


class CompileResponse(BaseModel):
    graph_digest: str = Field(description="sha256:<hex> of the graph's canonical form")
    input_dialect: Literal["linalg", "stablehlo", "tosa", "torch", "onnx"]
    functions: list[str] = Field(description="the module's public functions")
    compiler: CompilerOut
    artifacts: list[ArtifactOut]
    errors: list[TargetErrorOut] = Field(description="targets that failed while others succeeded")
    params: ParamsOut | None = Field(
        None, description="with options.params external (ONNX): the weights' archive; the "
        "executables hold code only")


class JobProgress(BaseModel):
    targets_done: int = Field(ge=0)
    targets_total: int = Field(ge=1)


class JobOut(BaseModel):
    """An asynchronous compile (``POST /v1/jobs``). ``error`` is what the error envelope of
    /v1/compile would hold under ``"error"``."""

    id: str = Field(pattern="^[0-9a-f]{32}$")
    state: Literal["queued", "running", "done", "failed"]
    progress: JobProgress
    result: CompileResponse | None = Field(description="the /v1/compile answer, once done")
    error: ErrorInfo | None = Field(description="why it failed, once failed")
    graph_digest: str = Field(description="sha256:<hex> of the graph's canonical form")
    created: float = Field(description="seconds since the epoch")
    updated: float = Field(description="seconds since the epoch, of the last change")


class KindOut(BaseModel):
    kind: str = Field(description="cpu, cuda, rocm, vulkan, metal")
    default: str = Field(description="the normalized target the bare kind means")
    archs: list[str]
    aliases: dict[str, str] = Field(description="alias -> arch, e.g. a100 -> sm_80")
    notes: str = ""


class TargetsResponse(BaseModel):
    compiler: dict[str, str] = Field(description="name, version, hash of the IREE compiler")
    kinds: list[KindOut]
    options: dict[str, list[Any]] = Field(description="allow-listed compile options and values")


class KeyOut(BaseModel):
    keyid: str
    algorithm: Literal["ed25519"]
    public_key_pem: str


class DsseSignature(BaseModel):
    keyid: str
    sig: str = Field(description="base64")


class DsseEnvelope(BaseModel):
    """A DSSE envelope over an in-toto Statement v1 (docs/trust.md)."""

    payloadType: str = Field(examples=["application/vnd.in-toto+json"])
    payload: str = Field(description="base64 of the statement")
    signatures: list[DsseSignature]


class Health(BaseModel):
    status: Literal["ok"]


class Readiness(BaseModel):
    status: Literal["ready"]
    checks: dict[str, str] = Field(description="each check -> \"ok\"")


# -- tuning records (POST /v1/tuning, GET /v1/tuning/{graph_hex}; service/tuning.py) -------------

#: An IREE runtime version as ``X-Kiln-Runtime`` carries it.
RUNTIME_PATTERN = r"^[0-9]+\.[0-9]+[.A-Za-z0-9_+-]*$"
_PRESET = Annotated[str, WithJsonSchema({"type": "string", "enum": list(PRESETS)})]
_GRAPH_DIGEST = Field(pattern="^sha256:[0-9a-f]{64}$",
                      description="sha256:<hex> of the graph's canonical form (/v1/compile's "
                      "graph_digest)")


class TuningTime(BaseModel):
    model_config = ConfigDict(extra="forbid")

    median_ms: float = Field(
        ge=MIN_MS, le=MAX_MS, allow_inf_nan=False,
        description=f"median call time, milliseconds (finite, {MIN_MS:g} to {MAX_MS:g}; "
        "outside: 400 invalid_request)")
    samples: int = Field(description="timed calls behind the median (at least 3)")


class TuningDevice(BaseModel):
    """What the record was measured on; ``kind`` and ``name`` make its device class."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["cpu", "gpu"]
    name: str = Field(min_length=1, max_length=200,
                      description="the CPU model or the GPU's name")
    features: str = Field("", max_length=1000,
                          description="CPU: the Kiln CPU target (name and feature deltas)")
    driver: str = Field("", max_length=64, description="the IREE driver, e.g. local-task")


class TuningRecordIn(BaseModel):
    """``POST /v1/tuning``: one autotune result (kiln/client/autotune.py). Refused (400
    invalid_request) when a time is not finite or outside its bounds; (422 tuning_rejected)
    unless the chosen preset is the fastest of ``times``, every preset is allow-listed,
    ``default`` is timed, each time has 3 samples or more and no preset is more than 10x faster
    or slower than ``default``; (409 tuning_outlier) when its speedup is more than 2x away from
    the median of the other submitters on the same device class (service/tuning.py)."""

    model_config = ConfigDict(extra="forbid")

    graph_digest: str = _GRAPH_DIGEST
    target: Target
    runtime: str | None = Field(
        None, pattern=RUNTIME_PATTERN, max_length=64,
        description="the IREE runtime version it ran on; default: the X-Kiln-Runtime header "
        "(both given: they must agree)")
    preset: _PRESET = Field(description="the preset chosen: the fastest of times")
    times: dict[_PRESET, TuningTime] = Field(
        min_length=1, max_length=len(PRESETS),
        description="per preset timed: its median time and sample count (default included)")
    device: TuningDevice


class TuningRecordOut(BaseModel):
    """An accepted record, as the server signed and keeps it."""

    id: str = Field(description="arrival time (ns) and a hash: the order records age out in")
    graph_digest: str
    target: str = Field(description="the normalized target")
    runtime: str
    preset: str
    times: dict[str, TuningTime]
    device: dict[str, str]
    device_class: str = Field(description="the device kind and the normalized target "
                              "(kind:target): outliers are judged against records of the "
                              "same class; the device's free-text name is not part of it")
    speedup: float = Field(description="default's median time / the chosen preset's")
    received: float = Field(description="seconds since the epoch")
    submitter: str = Field(description="who posted it: the bearer token's hash (token:...), "
                           "the address's (addr:...) or the server itself (kiln-server)")
    trusted: bool = Field(False, description="a trusted submitter's record (the server's own, "
                          "or a token in KILN_TUNING_TRUSTED_TOKENS): it counts alone")


class TuningPresetOut(BaseModel):
    preset: str
    median_speedup: float = Field(description="median over the records of default's time / "
                                  "this preset's")
    reports: int = Field(description="records that timed this preset")
    reporters: int = Field(description="distinct submitters that timed this preset (each "
                           "submitter is one vote: the median of its records)")


class TuningChoiceOut(TuningPresetOut):
    options: dict[str, str] = Field(description="the compile options of the choice ({} for "
                                    "default)")


class TuningEvidence(BaseModel):
    """``GET /v1/tuning/{graph_hex}``: the accepted records, per preset the median speedup over
    the submitters, and the choice (service/tuning.py, "Who decides the choice")."""

    graph_digest: str
    target: str = Field(description="the normalized target")
    runtime: str
    choice: TuningChoiceOut | None = Field(
        description="null without records, and until `quorum` submitters (or one trusted "
        "submitter) reported: one client's word alone steers no one")
    quorum: int = Field(description="independent submitters whose agreement makes a choice")
    presets: list[TuningPresetOut]
    records: list[TuningRecordOut]
    provenance: DsseEnvelope | None = Field(
        description="a DSSE envelope, signed by the server's key, over an in-toto statement "
        "whose subject is the graph and whose predicate (type https://kiln.invalid/tuning/v1, "
        "kind evidence) is this object without provenance; null without a choice")


class TuningAccepted(BaseModel):
    id: str
    speedup: float
    evidence: TuningEvidence
