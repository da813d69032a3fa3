"""PyTorch in, torch out, weights apart from code (``pip install "kiln[torch]"``; docs/torch.md).

    import kiln.torch
    mlir, params = kiln.torch.export(model, (x,))             # weight-free torch-dialect MLIR
    fast = kiln.torch.compile(model, (x,), server=None)       # a callable: torch in, torch out
    opt = torch.compile(model, backend="kiln", options={"server": None, "device": "auto"})

The executable holds code only: each parameter and buffer is a named parameter
(``#flow.parameter.named<"model"::"fc1.weight">``) bound at load time from the module's live
tensors, so a model with other weight values reuses the same compiled executable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import torch

from kiln.torch import dynamo as _dynamo  # noqa: F401 - registers backend="kiln"
from kiln.torch.compiled import CompiledModule
from kiln.torch.importer import ExportError, export_program, import_program

if TYPE_CHECKING:
    from kiln import Client

__all__ = ["CompiledModule", "ExportError", "compile", "export"]


def export(
    module: torch.nn.Module,
    example_args: Sequence[Any],
    dynamic_shapes: Any = None,
    *,
    kwargs: Mapping[str, Any] | None = None,
) -> tuple[str, dict[str, torch.Tensor]]:
    """``module`` as weight-free torch-dialect MLIR (one public function ``main``) and the
    tensors it reads, by parameter name (the state-dict names; the module's own tensors, not
    copies). ``dynamic_shapes`` is ``torch.export``'s. Raises ``ExportError`` (``invalid_graph``)
    when ``torch.export`` or the import fails."""
    ex = import_program(export_program(module, example_args, kwargs=kwargs,
                                       dynamic_shapes=dynamic_shapes))
    return ex.mlir, ex.params


def compile(
    module: torch.nn.Module,
    example_args: Sequence[Any],
    *,
    server: str | Client | None = None,
    device: str = "auto",
    target: str | None = None,
    dynamic_shapes: Any = None,
    kwargs: Mapping[str, Any] | None = None,
    driver: str | None = None,
) -> CompiledModule:
    """``module`` compiled by Kiln: a callable with the module's signature, torch tensors in and
    out (DLPack, no copies on the CPU drivers).

    ``server=None`` compiles in this process (``kiln.Pipeline`` on the shared disk cache), a URL
    on that Kiln server, a ``kiln.Client`` through that client (its token, trusted keys and
    local cache). ``device``: ``"auto"`` (the best device here, CPU last), ``"cpu"``,
    ``"vulkan"``, ...; ``target`` names one target instead. ``driver`` overrides the runtime
    driver (``"local-sync"`` runs a CPU target on the calling thread: the least overhead per
    call for small models). Weights are read from ``module`` at each call and re-bound when
    one was replaced or written. Inference only: run it under ``torch.no_grad()`` or on
    tensors that need no grad; no gradient flows through it.

    Raises ``ExportError`` when the module cannot be exported, the compile's Kiln error when no
    candidate target compiles and loads.
    """
    from kiln.torch.compiled import load

    ex = import_program(export_program(module, example_args, kwargs=kwargs,
                                       dynamic_shapes=dynamic_shapes))
    loaded = load(ex.mlir, server=server, device=device, target=target, driver=driver)
    return CompiledModule(module, ex, loaded)
