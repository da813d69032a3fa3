"""Kiln: tensor graphs in (ONNX, MLIR: linalg, StableHLO, TOSA, torch), IREE executables out.

Embedded use::

    from kiln import Pipeline
    with Pipeline() as p:
        result = p.compile(open("model.onnx", "rb").read(), targets=["cpu", "vulkan"])

Remote use (a ``kiln serve`` daemon)::

    from kiln import Client
    c = Client("http://127.0.0.1:8000")
    mod = c.load("model.onnx", device="auto")
"""

from __future__ import annotations

from typing import Any

from kiln.errors import (
    CompileError,
    CompileTimeout,
    IntegrityError,
    InvalidGraph,
    InvalidRequest,
    KilnError,
    UnsupportedTarget,
)

__version__ = "0.1.0"
__all__ = [
    "AsyncClient",
    "Client",
    "CompileError",
    "CompileTimeout",
    "IntegrityError",
    "InvalidGraph",
    "InvalidRequest",
    "KilnError",
    "Pipeline",
    "UnsupportedTarget",
    "load_vmfb",
]


def __getattr__(name: str) -> Any:
    # Lazy: `import kiln` stays cheap and never loads the compiler or the runtime.
    if name == "Pipeline":
        from kiln.compiler.pipeline import Pipeline

        return Pipeline
    if name in ("Client", "AsyncClient"):
        from kiln import client

        return getattr(client, name)
    if name == "load_vmfb":
        from kiln.client.runtime import load_vmfb

        return load_vmfb
    raise AttributeError(name)
