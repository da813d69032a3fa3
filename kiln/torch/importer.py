"""PyTorch programs to weight-free torch-dialect MLIR.

``torch.export`` traces the module; a decomposition table (core ATen, plus the batch-norm forms
``torch.export``'s defaults keep and iree-compile rejects) leaves only ops IREE's torch input
conversion lowers; IREE's ``FxImporter`` (bundled with iree-base-compiler) writes the MLIR. Each
parameter and buffer becomes a module global read from a named parameter instead of a literal::

    util.global private @__param_fc1_weight {noinline} =
        #flow.parameter.named<"model"::"fc1.weight"> : tensor<16x8xf32>

so the executable holds code only and the weights are bound at load time
(``iree.runtime.ParameterIndex``; ``kiln.torch.runtime``). Boolean buffers (masks) stay inline:
IREE stores ``i1`` parameters in a packed layout the host tensor does not have. Tensors created
inside ``forward`` (``torch.tensor(...)`` constants) stay inline too: they are part of the code.

Failure semantics: anything ``torch.export`` or the importer cannot take raises ``ExportError``
(a ``KilnError``, code ``invalid_graph``) with the original exception as ``__cause__``.
"""

from __future__ import annotations

import functools
import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from kiln.errors import InvalidGraph

__all__ = ["PARAM_SCOPE", "ExportError", "Exported", "decomposition_table", "export_program",
           "import_program"]

#: The scope of every ``#flow.parameter.named`` this module writes (the provider's scope).
PARAM_SCOPE = "model"

_ELEMENT = {
    torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16", torch.float64: "f64",
    torch.int64: "i64", torch.int32: "i32", torch.int16: "i16", torch.int8: "i8",
    torch.uint8: "i8",
}


class ExportError(InvalidGraph):
    """``torch.export`` or the MLIR import failed for this module and these inputs."""


@dataclass(frozen=True)
class Exported:
    """A module as weight-free MLIR.

    ``mlir``: torch-dialect MLIR text with one public function ``main``. ``params``: the tensors
    it reads, by parameter name (the state-dict name), in the order the function first reads
    them; each is the module's own tensor (no copy). ``program``: the decomposed
    ``ExportedProgram`` (its ``call_spec`` flattens inputs and rebuilds outputs).
    """

    mlir: str
    params: dict[str, torch.Tensor]
    program: torch.export.ExportedProgram


@functools.cache
def decomposition_table() -> Mapping[Any, Any]:
    """Core ATen decompositions plus the batch-norm forms that survive them.

    ``run_decompositions()``'s default keeps ``_native_batch_norm_legit_no_training`` (a core ATen
    op), which IREE 3.13's torch conversion rejects; its decomposition goes through the other
    ``_native_batch_norm_legit`` forms, which must then decompose too.
    """
    from torch._decomp import get_decompositions

    aten = torch.ops.aten
    table = torch.export.default_decompositions()
    table.update(get_decompositions([  # type: ignore[no-untyped-call]
        aten._native_batch_norm_legit_no_training,
        aten._native_batch_norm_legit,
        aten._native_batch_norm_legit_functional,
        aten.native_batch_norm,
        # squeeze over several dims (Swin's pooled head, a GRU's last step): IREE 3.13's torch
        # conversion has no lowering for it; its decomposition is a view.
        aten.squeeze.dims,
    ]))
    return table


def export_program(
    module: torch.nn.Module,
    args: Sequence[Any],
    *,
    kwargs: Mapping[str, Any] | None = None,
    dynamic_shapes: Any = None,
) -> torch.export.ExportedProgram:
    """``torch.export`` (non-strict) then the decomposition table. Raises ``ExportError``."""
    try:
        with torch.no_grad(), warnings.catch_warnings():
            # torch 2.13's own export deep-copies a deprecated LeafSpec (a FutureWarning that
            # is torch's business, not the caller's).
            warnings.filterwarnings("ignore", message=r".*LeafSpec.*", category=FutureWarning)
            ep = torch.export.export(module, tuple(args), dict(kwargs or {}),
                                     dynamic_shapes=dynamic_shapes, strict=False)
            decomposed: torch.export.ExportedProgram = ep.run_decompositions(
                decomposition_table())
            return decomposed
    except Exception as exc:
        raise ExportError(f"torch.export failed: {type(exc).__name__}: {exc}") from exc


def _symbol(name: str, taken: set[str]) -> str:
    base = "__param_" + re.sub(r"[^A-Za-z0-9_]", "_", name)
    sym, n = base, 1
    while sym in taken:
        n += 1
        sym = f"{base}_{n}"
    taken.add(sym)
    return sym


def _tensor_type(t: torch.Tensor) -> str:
    dims = "".join(f"{d}x" for d in t.shape)
    return f"tensor<{dims}{_ELEMENT[t.dtype]}>"


def _hooks_class() -> type:
    from iree.compiler import ir
    from iree.compiler.extras.fx_importer import FxImporterHooks

    class ParameterHooks(FxImporterHooks):  # type: ignore[misc]
        """Parameters and buffers as ``util.global`` s read from named parameters."""

        def __init__(self, names: Mapping[str, str]) -> None:
            self.names = names  # state-dict target -> parameter name
            self.params: dict[str, torch.Tensor] = {}
            self._symbols: set[str] = set()

        def resolve_input(self, gni: Any, value: Any, info: Any) -> Any:
            if not isinstance(value, torch.Tensor) or value.dtype not in _ELEMENT:
                return None  # the importer's default: an inline literal
            if info.mutable_producer_node_name is not None:
                return None
            target = info.input_spec.target
            name = self.names.get(target, target)
            ttype = ir.RankedTensorType.parse(_tensor_type(value))
            sym = _symbol(name, self._symbols)
            module = gni.fx_importer._m
            glob = ir.Operation.parse(
                f'util.global private @{sym} {{noinline}} = '
                f'#flow.parameter.named<"{PARAM_SCOPE}"::"{name}"> : {ttype}'
            )
            ir.InsertionPoint.at_block_begin(module.body).insert(glob)
            load = ir.Operation.create(
                "util.global.load", results=[ttype],
                attributes={"global": ir.FlatSymbolRefAttr.get(sym)},
            )
            tensor = ir.Operation.create("torch_c.from_builtin_tensor", results=[info.ir_type],
                                         operands=[load.result])
            self.params[name] = value
            return tensor.result

    return ParameterHooks


def import_program(
    ep: torch.export.ExportedProgram, *, names: Mapping[str, str] | None = None
) -> Exported:
    """The program as weight-free MLIR (``Exported``). ``names`` renames parameters (state-dict
    target -> parameter name); unnamed ones keep their target. Raises ``ExportError``."""
    from iree.compiler import ir
    from iree.compiler.extras.fx_importer import FxImporter

    sig = ep.graph_signature
    if sig.user_inputs_to_mutate or sig.buffers_to_mutate:
        written = [*sig.user_inputs_to_mutate.values(), *sig.buffers_to_mutate.values()]
        raise ExportError(f"the program writes its inputs or buffers ({', '.join(written)}); "
                          "Kiln compiles programs that only read them")
    hooks = _hooks_class()(names or {})
    try:
        with ir.Context() as ctx:
            imp = FxImporter(context=ctx, hooks=hooks)
            imp.import_program(ep, func_name="main")
            imp.module.operation.verify()
            text = imp.module.operation.get_asm(enable_debug_info=False,
                                                large_elements_limit=None)
    except Exception as exc:
        raise ExportError(f"importing the exported program failed: {type(exc).__name__}: {exc}"
                          ) from exc
    # The hook saw the exported program's own tensors: give back the module's live ones.
    live = dict(ep.state_dict)
    live.update(ep.constants)
    params = {}
    rev = {v: k for k, v in (names or {}).items()}
    for name, t in hooks.params.items():
        src = live.get(rev.get(name, name))
        params[name] = src if isinstance(src, torch.Tensor) else t
    return Exported(text, params, ep)
