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
           "import_program", "import_programs"]

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
    """One or more programs as weight-free MLIR.

    ``mlir``: torch-dialect MLIR text with one public function per program (``main`` for a
    single module). ``params``: the tensors the functions read, by parameter name (the
    state-dict name), in the order they are first read; each is the module's own tensor (no
    copy); functions reading the same name read one parameter. ``programs``: function name ->
    the decomposed ``ExportedProgram`` (its ``call_spec`` flattens inputs and rebuilds outputs).
    """

    mlir: str
    params: dict[str, torch.Tensor]
    programs: Mapping[str, torch.export.ExportedProgram]

    @property
    def program(self) -> torch.export.ExportedProgram:
        """The program of ``main``, or the only one."""
        if "main" in self.programs or len(self.programs) != 1:
            return self.programs["main"]
        return next(iter(self.programs.values()))


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
        # interpolate (MobileViT's, a U-Net's upsampling): core ATen keeps the resize ops,
        # which IREE 3.13 lowers in none of their forms; each decomposes to index arithmetic
        # and a gather. An unlowered op leaves the torch.constant.* operands it reads behind,
        # and iree-compile names those ("failed to legalize operation 'torch.constant.bool'").
        *_RESIZE,
    ]))
    # torch.roll (Swin's shifted windows): torch's own decomposition gathers through an
    # integer fmod, which IREE 3.13 does not lower; two slices and a concatenation do the same.
    table[aten.roll.default] = _roll
    return table


_RESIZE_OPS = ("upsample_nearest1d", "upsample_nearest2d", "upsample_nearest3d",
               "_upsample_nearest_exact1d", "_upsample_nearest_exact2d",
               "_upsample_nearest_exact3d", "upsample_linear1d", "upsample_bilinear2d",
               "upsample_trilinear3d", "upsample_bicubic2d", "_upsample_bilinear2d_aa")
_RESIZE = [getattr(getattr(torch.ops.aten, op), form) for op in _RESIZE_OPS
           for form in ("default", "vec") if hasattr(getattr(torch.ops.aten, op), form)]


def _roll(a: torch.Tensor, shifts: Sequence[int], dims: Sequence[int] = ()) -> torch.Tensor:
    """``torch.roll`` as slices and a concatenation per rolled dim (static sizes); with no
    ``dims``, over the flattened tensor. A symbolic size takes torch's own decomposition."""
    if not dims:
        return _roll(a.flatten(), shifts, (0,)).view(a.shape)
    if len(shifts) != len(dims) or any(not isinstance(a.shape[d], int) for d in dims):
        return torch._refs.roll(a, tuple(shifts), tuple(dims))
    out = a
    for shift, dim in zip(shifts, dims, strict=True):
        n = a.shape[dim]
        s = shift % n if n else 0
        if s:
            out = torch.cat([out.narrow(dim, n - s, s), out.narrow(dim, 0, n - s)], dim)
    return out if out is not a else a.clone()  # a new tensor, never the input


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
            # nn.LSTM/GRU/RNN re-assign their _flat_weights list on each call; non-strict export
            # warns about it, and the weights are still read as the module's parameters.
            warnings.filterwarnings("ignore", message=r".*_flat_weights.*assigned during export",
                                    category=UserWarning)
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
            self._globals: dict[str, tuple[str, str]] = {}  # name -> (symbol, tensor type)

        def resolve_input(self, gni: Any, value: Any, info: Any) -> Any:
            if not isinstance(value, torch.Tensor) or value.dtype not in _ELEMENT:
                return None  # the importer's default: an inline literal
            if info.mutable_producer_node_name is not None:
                return None
            target = info.input_spec.target
            name = self.names.get(target, target)
            ttype = ir.RankedTensorType.parse(_tensor_type(value))
            if name in self._globals:  # another function read it first: the same global
                sym, seen = self._globals[name]
                if seen != str(ttype):
                    raise ExportError(f"parameter {name!r} is {ttype} in one function and "
                                      f"{seen} in another")
            else:
                sym = _symbol(name, self._symbols)
                self._globals[name] = (sym, str(ttype))
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
    """The program as weight-free MLIR with one function ``main`` (``Exported``). ``names``
    renames parameters (state-dict target -> parameter name); unnamed ones keep their target.
    Raises ``ExportError``."""
    return import_programs({"main": ep}, names=names)


def import_programs(
    programs: Mapping[str, torch.export.ExportedProgram], *,
    names: Mapping[str, str] | None = None,
) -> Exported:
    """Several programs as one weight-free MLIR module, one public function per entry (e.g. an
    LLM's ``prefill`` and ``decode``). A parameter name read by several programs is one global
    (one weight in memory): they must read the same tensor (same storage, shape and dtype),
    else ``ExportError``; so does anything the importer refuses."""
    from iree.compiler import ir
    from iree.compiler.extras.fx_importer import FxImporter

    if not programs:
        raise ExportError("no program to import")
    for fname, ep in programs.items():
        sig = ep.graph_signature
        if sig.user_inputs_to_mutate or sig.buffers_to_mutate:
            written = [*sig.user_inputs_to_mutate.values(), *sig.buffers_to_mutate.values()]
            raise ExportError(f"{fname}: the program writes its inputs or buffers "
                              f"({', '.join(written)}); Kiln compiles programs that only read "
                              "them")
    hooks = _hooks_class()(names or {})
    try:
        with ir.Context() as ctx:
            imp = FxImporter(context=ctx, hooks=hooks)
            for fname, ep in programs.items():
                imp.import_program(ep, func_name=fname)
            imp.module.operation.verify()
            text = imp.module.operation.get_asm(enable_debug_info=False,
                                                large_elements_limit=None)
    except ExportError:
        raise
    except Exception as exc:
        raise ExportError(f"importing the exported program failed: {type(exc).__name__}: {exc}"
                          ) from exc
    # The hook saw the exported programs' own tensors: give back the module's live ones.
    live: dict[str, dict[str, Any]] = {}
    for fname, ep in programs.items():
        live[fname] = {**ep.state_dict, **ep.constants}
    params: dict[str, torch.Tensor] = {}
    rev = {v: k for k, v in (names or {}).items()}
    for name, t in hooks.params.items():
        found = [src for d in live.values()
                 if isinstance(src := d.get(rev.get(name, name)), torch.Tensor)]
        if any(f.data_ptr() != found[0].data_ptr() for f in found[1:]):
            raise ExportError(f"parameter {name!r} is a different tensor in different functions; "
                              "functions compiled together share their weights by name")
        params[name] = found[0] if found else t
    return Exported(text, params, dict(programs))
