"""PyTorch in, torch out, weights apart from code (``pip install "kiln[torch]"``; docs/torch.md).

    import kiln.torch
    mlir, params = kiln.torch.export(model, (x,))             # weight-free torch-dialect MLIR
    fast = kiln.torch.compile(model, (x,), server=None)       # a callable: torch in, torch out
    opt = torch.compile(model, backend="kiln", options={"server": None, "device": "auto"})
    fns = kiln.torch.compile_functions({"prefill": Function(prefill, (tokens,), dyn), ...})
    fns.prefill(tokens)                                        # several functions, one weight set

The executable holds code only: each parameter and buffer is a named parameter
(``#flow.parameter.named<"model"::"fc1.weight">``) bound at load time from the module's live
tensors, so a model with other weight values reuses the same compiled executable.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

from kiln.torch import dynamo as _dynamo  # noqa: F401 - registers backend="kiln"
from kiln.torch.compiled import CompiledFunctions, CompiledModule
from kiln.torch.importer import (
    Exported,
    ExportError,
    export_program,
    import_program,
    import_programs,
)

if TYPE_CHECKING:
    from kiln import Client

__all__ = ["CompiledFunctions", "CompiledModule", "ExportError", "Exported", "Function",
           "compile", "compile_functions", "export", "export_functions", "save_params"]


@dataclass(frozen=True)
class Function:
    """One function of a multi-function executable: ``module`` called on ``args`` (and
    ``kwargs``), with ``torch.export``'s ``dynamic_shapes``."""

    module: torch.nn.Module
    args: Sequence[Any]
    dynamic_shapes: Any = None
    kwargs: Mapping[str, Any] = field(default_factory=dict)


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


def export_functions(functions: Mapping[str, Function]) -> Exported:
    """Several modules as one weight-free MLIR module, one public function per entry, named
    by its key (``prefill``, ``decode``). Parameters are named by each module's state-dict
    names: modules wrapping one model under the same attribute (``self.lm``) share them, and a
    name two functions read is one parameter, so they must read the same tensor. Raises
    ``ExportError`` (``invalid_graph``) when an export or the import fails, or when one name
    stands for different tensors."""
    return import_programs({
        name: export_program(f.module, f.args, kwargs=f.kwargs, dynamic_shapes=f.dynamic_shapes)
        for name, f in functions.items()})


def compile_functions(
    functions: Mapping[str, Function],
    *,
    server: str | Client | None = None,
    device: str = "auto",
    target: str | None = None,
    driver: str | None = None,
) -> CompiledFunctions:
    """Several modules compiled as one executable (``export_functions``): ``fns.<name>`` (or
    ``fns[name]``) is called like its module. The weights are bound once for all functions
    and re-bound, as ``compile``'s, when one was replaced or written. Arguments and failures as
    ``compile``'s."""
    from kiln.torch.compiled import load

    ex = export_functions(functions)
    loaded = load(ex.mlir, server=server, device=device, target=target, driver=driver,
                  function=next(iter(functions)))
    return CompiledFunctions({name: f.module for name, f in functions.items()}, ex, loaded)


def save_params(params: Mapping[str, torch.Tensor], path: str | os.PathLike[str]) -> None:
    """Write ``params`` (``export``'s or ``Exported.params``) as an IREE parameter archive
    (``.irpa``), scope-free: an executable compiled from the MLIR loads it under scope
    ``model`` (``kiln.client.params.ParamsArchive``, ``iree-run-module
    --parameters=model=PATH``). The tensors are copied to the file as they are now."""
    import iree.runtime as rt

    from kiln.torch.runtime import host_view

    rt.save_archive_file({name: host_view(t) for name, t in params.items()}, path)
