"""``torch.compile(model, backend="kiln", options={...})``: a Dynamo backend (inference).

Registered through the ``torch_dynamo_backends`` entry point (``kiln = kiln.torch.dynamo:
kiln_backend``); importing ``kiln.torch.dynamo`` registers it too where the package metadata
lacks the entry point (a source checkout on ``sys.path``).

Options: ``server`` (None: compile in this process; a URL: on that Kiln server; a
``kiln.Client``: through that client, e.g. one with a token), ``device``
(``"auto"``, ``"cpu"``, ``"vulkan"``, ...), ``target`` (one target instead of ``device``),
``driver`` (the runtime driver, e.g. ``"local-sync"``).

Per graph Dynamo hands over:

- Dynamo lifts the module's parameters and buffers to graph inputs (their source is
  ``L['self']._modules['fc1']._parameters['weight']``); they become the executable's named
  parameters (``fc1.weight``), bound from the tensors Dynamo passes on each call and re-bound
  when one is another tensor or was written (Dynamo does not guard on a parameter's identity).
- A ``SymInt`` input (a dynamic size) is rewritten as ``aten.sym_size`` of the tensor input it
  measures, so the executable takes tensors only; the tensor's dynamic dims are exported as
  ``Dim.DYNAMIC``.
- Outputs are the graph's flat tuple; Dynamo rebuilds dicts, lists and tuples around it.
- ``nn.LSTM``, ``nn.GRU`` and ``nn.RNN``: Dynamo skips their frames unless
  ``torch._dynamo.config.allow_rnn`` is on, and then no graph reaches any backend (the module
  runs eagerly, silently). Importing this module turns it on, for the process: the recurrent
  modules are traced into graphs, which ``torch.export`` and the decompositions unroll into
  matrix products Kiln compiles. Dynamo reads its config while it traces, after the backend is
  chosen, so there is no narrower place to set it; a process that wants Dynamo's default back
  sets it to False after the import.

Failure semantics: a graph this backend cannot compile (export or import refused, a compile
error, no target that loads, mutated inputs or buffers, a symbolic size it cannot place) runs
eagerly, with one ``KilnFallbackWarning`` per graph saying why; so does a graph called with
grad enabled on inputs that require grad (inference only). Bad ``options`` raise
``InvalidRequest``.
"""

from __future__ import annotations

import re
import threading
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

from kiln.errors import InvalidRequest

__all__ = ["KilnFallbackWarning", "kiln_backend"]

_OPTIONS = frozenset({"server", "device", "target", "driver"})
_WEIGHT = re.compile(r"\._(?:modules|parameters|buffers)\['([^']+)'\]")


class KilnFallbackWarning(UserWarning):
    """A graph runs eagerly because Kiln could not compile it; the message says why."""


def _fallback(gm: torch.fx.GraphModule, why: str) -> Callable[..., Any]:
    warnings.warn(f"kiln: running this graph eagerly: {why}", KilnFallbackWarning, stacklevel=2)
    return gm.forward


def _source_name(node: torch.fx.Node) -> str | None:
    ga = node.meta.get("grapharg")
    source = getattr(ga, "source", None)
    return source.name if source is not None and hasattr(source, "name") else None


def _is_weight(node: torch.fx.Node, example: Any) -> bool:
    if isinstance(example, torch.nn.Parameter):
        return True
    name = _source_name(node) or ""
    return "._buffers[" in name


def _weight_name(node: torch.fx.Node, taken: set[str]) -> str:
    parts = _WEIGHT.findall(_source_name(node) or "")
    name = ".".join(parts) if parts else node.name
    base, n = name, 1
    while name in taken:
        n += 1
        name = f"{base}_{n}"
    taken.add(name)
    return name


class _Plan:
    """The graph rewritten for ``torch.export``: user tensors as inputs, weights as module
    attributes, symbolic sizes as ``sym_size`` of an input."""

    def __init__(self, gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> None:
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        if len(placeholders) != len(example_inputs):
            raise _Refused("the graph's inputs do not match the example inputs")
        self.weights: list[tuple[int, str]] = []  # (argument index, parameter name)
        self.inputs: list[int] = []
        sym: list[tuple[int, torch.fx.Node]] = []
        taken: set[str] = set()
        for i, (node, ex) in enumerate(zip(placeholders, example_inputs, strict=True)):
            if isinstance(ex, torch.Tensor):
                if _is_weight(node, ex):
                    self.weights.append((i, _weight_name(node, taken)))
                else:
                    self.inputs.append(i)
            elif isinstance(ex, torch.SymInt):
                sym.append((i, node))
            else:
                raise _Refused(f"input {node.name} is a {type(ex).__name__}, not a tensor")

        graph = torch.fx.Graph()
        env: dict[torch.fx.Node, torch.fx.Node] = {}
        for i in self.inputs:
            env[placeholders[i]] = graph.placeholder(placeholders[i].name)
        attrs: dict[str, Any] = {}
        for i, name in self.weights:
            env[placeholders[i]] = graph.get_attr(name)
            attrs[name] = example_inputs[i]
        for _, node in sym:
            env[node] = self._size_of(graph, env, placeholders, node)
        for node in gm.graph.nodes:
            if node.op == "placeholder":
                continue
            if node.op in ("get_attr", "call_module"):
                attrs[node.target] = gm.get_submodule(node.target) if node.op == "call_module" \
                    else _get_attr(gm, node.target)
            env[node] = graph.node_copy(node, lambda n: env[n])
            # torch.export traces afresh: none of Dynamo's metadata (fake tensors of its shape
            # environment, sources) is carried into the copy.
            env[node].meta = {}
        self.module = torch.fx.GraphModule(attrs, graph)
        for i, name in self.weights:  # a buffer must be a buffer for export to lift it
            t = example_inputs[i]
            if not isinstance(t, torch.nn.Parameter):
                owner_name, _, attr = name.rpartition(".")
                owner = self.module.get_submodule(owner_name) if owner_name else self.module
                delattr(owner, attr)
                owner.register_buffer(attr, t)
        self.args = [example_inputs[i] for i in self.inputs]
        self.dynamic = self._dynamic_shapes(placeholders)

    def _size_of(self, graph: torch.fx.Graph, env: Mapping[torch.fx.Node, torch.fx.Node],
                 placeholders: Sequence[torch.fx.Node], node: torch.fx.Node) -> torch.fx.Node:
        want = node.meta.get("example_value")
        expr = getattr(getattr(want, "node", None), "expr", None)
        for i in self.inputs:
            val = placeholders[i].meta.get("example_value")
            for d, size in enumerate(getattr(val, "shape", ())):
                if isinstance(size, torch.SymInt) and expr is not None and size.node.expr == expr:
                    return graph.call_function(torch.ops.aten.sym_size.int,
                                               (env[placeholders[i]], d))
        raise _Refused(f"the symbolic size {node.name} is no input tensor's dimension")

    def _dynamic_shapes(self, placeholders: Sequence[torch.fx.Node]) -> tuple[Any, ...] | None:
        from torch.export import Dim

        specs: list[Any] = []
        for i in self.inputs:
            val = placeholders[i].meta.get("example_value")
            dims = {d: Dim.DYNAMIC for d, s in enumerate(getattr(val, "shape", ()))
                    if isinstance(s, torch.SymInt) and not _is_constant(s)}
            specs.append(dims or None)
        return tuple(specs) if any(s is not None for s in specs) else None


def _is_constant(s: torch.SymInt) -> bool:
    try:
        return s.node.is_constant() or s.node.expr.is_number  # type: ignore[no-any-return]
    except AttributeError:
        return False


def _get_attr(gm: torch.nn.Module, target: str) -> Any:
    owner_name, _, attr = target.rpartition(".")
    owner = gm.get_submodule(owner_name) if owner_name else gm
    return getattr(owner, attr)


class _Refused(Exception):
    """This graph is not one the backend compiles (the message says why)."""


class _Compiled:
    """The compiled graph, called with every argument Dynamo passes (weights included)."""

    def __init__(self, plan: _Plan, exe: Any, out_spec: Any,
                 fixed: Mapping[str, torch.Tensor]) -> None:
        from kiln.torch.compiled import WeightSet, rebuild

        self._weights = [i for i, _ in plan.weights]
        self._fixed = list(fixed.values())  # tensors of the graph's own submodules
        self._inputs = plan.inputs
        self._exe = exe
        self._rebuild = rebuild(out_spec)
        self.weights = WeightSet([name for _, name in plan.weights] + list(fixed))

    def __call__(self, *args: Any) -> Any:
        self.weights.sync(self._exe, [args[i] for i in self._weights] + self._fixed)
        return self._rebuild(self._exe([args[i] for i in self._inputs]))


def _options(options: Mapping[str, Any] | None) -> dict[str, Any]:
    opts = dict(options or {})
    unknown = set(opts) - _OPTIONS
    if unknown:
        raise InvalidRequest(f"unknown kiln backend options {sorted(unknown)}; "
                             f"valid: {sorted(_OPTIONS)}")
    opts.setdefault("server", None)
    opts.setdefault("device", "auto")
    opts.setdefault("target", None)
    opts.setdefault("driver", None)
    return opts


def kiln_backend(gm: torch.fx.GraphModule, example_inputs: Sequence[Any],
                 options: Mapping[str, Any] | None = None) -> Callable[..., Any]:
    """Dynamo's entry point: ``gm`` compiled by Kiln on its first call, or ``gm.forward`` with
    a warning. The export runs at the first call rather than here: ``torch.export`` inside
    Dynamo's compile leaves guards on the frame being compiled that fail at once."""
    opts = _options(options)
    if torch.is_grad_enabled() and any(
        isinstance(t, torch.Tensor) and t.requires_grad for t in example_inputs
    ):
        return _fallback(gm, "grad is enabled and inputs require grad (Kiln compiles "
                             "inference graphs: use torch.no_grad() or torch.inference_mode())")
    try:
        plan = _Plan(gm, example_inputs)
    except _Refused as exc:
        return _fallback(gm, str(exc))
    return _Lazy(gm, plan, opts)


class _Lazy:
    """Compiles on the first call (once, under a lock); any failure runs ``gm`` eagerly from
    then on, after one ``KilnFallbackWarning``."""

    def __init__(self, gm: torch.fx.GraphModule, plan: _Plan, opts: Mapping[str, Any]) -> None:
        self._gm, self._opts = gm, opts
        self._plan: _Plan | None = plan
        self._fn: Callable[..., Any] | None = None
        self._lock = threading.Lock()

    def __call__(self, *args: Any) -> Any:
        fn = self._fn
        if fn is None:
            with self._lock:
                if self._fn is None:
                    self._fn = self._build()
                    self._plan = None  # its example inputs are no longer needed
                fn = self._fn
        return fn(*args)

    def _build(self) -> Callable[..., Any]:
        from kiln.errors import KilnError
        from kiln.torch.compiled import load
        from kiln.torch.importer import ExportError, export_program, import_program

        gm, plan, opts = self._gm, self._plan, self._opts
        assert plan is not None
        try:
            ex = import_program(export_program(plan.module, plan.args,
                                               dynamic_shapes=plan.dynamic))
            _check_outputs(ex.program)
            loaded = load(ex.mlir, server=opts["server"], device=opts["device"],
                          target=opts["target"], driver=opts["driver"])
        except _Refused as exc:
            return _fallback(gm, str(exc))
        except ExportError as exc:
            return _fallback(gm, exc.message)
        except KilnError as exc:
            return _fallback(gm, f"{exc.code}: {exc.message}")
        # A weight the program does not read is not bound (nor checked per call); tensors of
        # the graph's own submodules (a module Dynamo did not inline) are bound as they are.
        lifted = {n for _, n in plan.weights}
        plan.weights = [(i, n) for i, n in plan.weights if n in ex.params]
        fixed = {n: t for n, t in ex.params.items() if n not in lifted}
        return _Compiled(plan, loaded.executable, ex.program.call_spec.out_spec, fixed)


def _check_outputs(ep: torch.export.ExportedProgram) -> None:
    from torch.export.graph_signature import OutputKind, TensorArgument

    for s in ep.graph_signature.output_specs:
        if s.kind != OutputKind.USER_OUTPUT:
            raise _Refused(f"the graph writes {s.target or 'an input'} ({s.kind.name})")
        if not isinstance(s.arg, TensorArgument):
            raise _Refused("the graph returns a non-tensor value")


def _register() -> None:
    """Register ``"kiln"`` with Dynamo unless an installed entry point provides it (both at
    once would make Dynamo refuse the duplicate name)."""
    from importlib.metadata import entry_points

    if any(ep.name == "kiln" for ep in entry_points(group="torch_dynamo_backends")):
        return
    from torch._dynamo.backends.registry import _COMPILER_FNS, register_backend

    if "kiln" not in _COMPILER_FNS:
        register_backend(kiln_backend, name="kiln")


_register()
torch._dynamo.config.allow_rnn = True
