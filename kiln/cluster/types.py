"""What crosses the queue between an API replica and a compile worker: one typed, JSON-only task.

``CompileTask`` names one target's compile of a prepared graph. The graph's canonical MLIR text
does not travel in the message: it is stashed in Redis by its sha256 (``GraphStash``), so a
message stays small however large the graph, and a redelivered message finds the same text.
``key`` is the compile key the API replica computed; the worker recomputes it from the same
inputs and refuses the task when the two differ (another compiler build, another Kiln), so a
result is never filed under a key that does not describe it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from kiln.dialects.types import (
    FunctionSignature,
    GraphFormat,
    GraphTraits,
    InputDialect,
    PreparedGraph,
)
from kiln.errors import CompileError, CompileFailure, KilnError

__all__ = [
    "GPU_KINDS",
    "KINDS",
    "CompileTask",
    "error_from_json",
    "graph_from_json",
    "graph_to_json",
    "mlir_ref",
    "queue_for",
    "queues_for",
]

#: Target kinds, each with its own queue; ``gpu`` in ``--queues`` stands for the GPU kinds.
KINDS = ("cpu", "cuda", "rocm", "vulkan", "metal")
GPU_KINDS = ("cuda", "rocm", "vulkan", "metal")
_QUEUE_PREFIX = "kiln."


def queue_for(kind: str) -> str:
    """The queue a compile for target kind ``kind`` goes to (``kiln.cpu``, ``kiln.cuda``, ...)."""
    if kind not in KINDS:
        raise ValueError(f"no queue for target kind {kind!r}")
    return _QUEUE_PREFIX + kind


def queues_for(names: str) -> list[str]:
    """``cpu,gpu`` -> the queue names; ``gpu`` expands to every GPU kind. ValueError on others."""
    out: list[str] = []
    for raw in names.split(","):
        name = raw.strip().lower()
        if not name:
            continue
        kinds = GPU_KINDS if name == "gpu" else (name,)
        for k in kinds:
            if k not in KINDS:
                raise ValueError(f"unknown queue {name!r}: use {', '.join((*KINDS, 'gpu'))}")
            if queue_for(k) not in out:
                out.append(queue_for(k))
    if not out:
        raise ValueError("no queue named")
    return out


def mlir_ref(mlir: str) -> str:
    """The stash name of a canonical text: the hex sha256 of its UTF-8 bytes."""
    return hashlib.sha256(mlir.encode("utf-8")).hexdigest()


def graph_to_json(graph: PreparedGraph) -> dict[str, Any]:
    """A prepared graph without its text (``mlir_ref`` names that)."""
    return {
        "digest": graph.digest,
        "input_format": graph.input_format.value,
        "input_dialect": graph.input_dialect.value,
        "functions": list(graph.functions),
        "traits": graph.traits.to_json(),
        "signatures": [s.to_json() for s in graph.signatures],
    }


def graph_from_json(data: dict[str, Any], mlir: str) -> PreparedGraph:
    return PreparedGraph(
        mlir=mlir,
        digest=str(data["digest"]),
        input_format=GraphFormat(data["input_format"]),
        input_dialect=InputDialect(data["input_dialect"]),
        functions=tuple(data.get("functions") or ()),
        traits=GraphTraits.from_json(data.get("traits")),
        signatures=tuple(FunctionSignature.from_json(s) for s in data.get("signatures") or ()),
    )


def error_from_json(data: dict[str, Any]) -> KilnError:
    """The error a worker filed, as the class its code names (a compile error keeps its detail)."""
    err = KilnError.from_json(data)
    if isinstance(err, CompileError) and not hasattr(err, "failure"):
        err.failure = CompileFailure()
    return err


@dataclass(frozen=True)
class CompileTask:
    """Compile ``graph`` (text stashed under ``mlir``) for ``target`` with ``options``."""

    key: str  # hex compile key, as the API replica computed it
    target: str  # normalized
    options: dict[str, Any]  # normalized (CompileOptions.to_json())
    graph: dict[str, Any]  # graph_to_json()
    mlir: str  # mlir_ref() of the canonical text

    def to_json(self) -> dict[str, Any]:
        return {"v": 1, "key": self.key, "target": self.target, "options": self.options,
                "graph": self.graph, "mlir": self.mlir}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CompileTask:
        if data.get("v") != 1:
            raise KilnError(f"unknown compile task version {data.get('v')!r}")
        return cls(key=str(data["key"]), target=str(data["target"]),
                   options=dict(data.get("options") or {}), graph=dict(data["graph"]),
                   mlir=str(data["mlir"]))
