"""Weight-free MLIR to a loaded executable, and the torch-in, torch-out callables over it.

Where the compile runs is one seam (``compile_mlir``): in this process (one ``kiln.Pipeline``
per process, on the shared disk cache that ``kiln compile`` uses, records signed the same way),
or on a Kiln server (``kiln.Client``, whose local cache answers a repeated request without
asking). Either way the executable holds code only; the graph digest, and so the cache entry,
depends on the weights' names, shapes and dtypes and never on their values.

Which target: ``target=`` when given, else ``kiln.client.resolver.candidates(device)`` best
first; a target that does not compile or load is skipped for the next (``fallbacks``).

Weights (``WeightSet``): read from the module at call time, and re-bound when any of them is a
different tensor or was written since the last call (``(id(t), t._version, t.data_ptr())``:
``model.fc.weight = nn.Parameter(...)``, an in-place ``add_`` and ``p.data = ...`` all show).
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from kiln.errors import KilnError
from kiln.torch.runtime import Executable

__all__ = ["CompiledFunctions", "CompiledModule", "Loaded", "WeightSet", "compile_mlir", "load",
           "rebuild", "weight_sources"]

_DRIVERS = {"cpu": "local-task", "vulkan": "vulkan", "cuda": "cuda", "rocm": "hip",
            "metal": "metal"}
_LOCK = threading.Lock()
_PIPELINE: Any = None
_CLIENTS: dict[str, Any] = {}


def _pipeline() -> Any:
    """This process's embedded compile engine, on the default disk cache (``KILN_CACHE_DIR``)."""
    global _PIPELINE
    with _LOCK:
        if _PIPELINE is None:
            from kiln import Pipeline
            from kiln.cache import open_cache
            from kiln.provenance import Authority

            cache = open_cache(authority=Authority.from_env())
            _PIPELINE = Pipeline(cache=cache, workers=1)
            atexit.register(_PIPELINE.close)
        return _PIPELINE


def _client(url: str) -> Any:
    with _LOCK:
        if url not in _CLIENTS:
            from kiln import Client

            _CLIENTS[url] = Client(url)
        return _CLIENTS[url]


def compile_mlir(mlir: str, target: str, *, server: Any = None) -> bytes:
    """The executable of ``mlir`` for ``target``: in-process (``server=None``), on the server at
    a URL, or through a ``kiln.Client`` (one with a token or trusted keys). Raises the Kiln
    error of the failed compile (``CompileError``, ``UnsupportedTarget``...)."""
    data = mlir.encode("utf-8")
    if server is None:
        res = _pipeline().compile(data, targets=[target], format="mlir")
        if res.errors:
            raise res.errors[0].error
        return bytes(res.artifacts[0].data)
    client = _client(server) if isinstance(server, str) else server
    blob, _ = client.artifact(data, target, format="mlir")
    return bytes(blob)


def _candidates(device: str, target: str | None) -> list[tuple[str, str]]:
    """``(target, driver)`` pairs to try, best first."""
    if target is not None:
        return [(target, _DRIVERS[target.split(":", 1)[0]])]
    try:
        from kiln.client.resolver import candidates
    except ImportError:  # the layout before kiln/client/ existed
        from kiln.resolver import candidates  # type: ignore[no-redef]
    return [(c.target, c.driver) for c in candidates(device)]


@dataclass
class Loaded:
    executable: Executable
    target: str
    fallbacks: list[tuple[str, str]]  # (target, why) for each candidate skipped


def load(mlir: str, *, server: Any, device: str, target: str | None,
         driver: str | None = None, function: str = "main") -> Loaded:
    """Compile and load ``mlir`` for the first candidate that works. ``driver`` overrides the
    runtime driver (e.g. ``local-sync`` for a CPU target: no worker threads, the least per-call
    overhead for small graphs); ``function``: the executable's default function. Raises the
    last candidate's error when none works."""
    tried: list[tuple[str, str]] = []
    last: Exception | None = None
    cands = _candidates(device, target)
    if not cands:
        from kiln.errors import NotFound

        raise NotFound(f"no {device!r} device on this machine")
    for tgt, drv in cands:
        try:
            data = compile_mlir(mlir, tgt, server=server)
            exe = Executable(data, driver=driver or drv, function=function)
        except (KilnError, RuntimeError, ValueError) as exc:
            tried.append((tgt, f"{type(exc).__name__}: {exc}"))
            last = exc
            continue
        return Loaded(exe, tgt, tried)
    assert last is not None
    raise last


class WeightSet:
    """An executable's weights by parameter name, and whether they changed since ``bind``.

    ``sources``: parameter name -> a function returning the current tensor; without sources
    the caller hands the tensors to ``sync`` (in ``names`` order).
    """

    def __init__(self, names: Sequence[str],
                 sources: Sequence[Callable[[], torch.Tensor]] = ()) -> None:
        self.names = tuple(names)
        self._get = tuple(sources)
        self._bound: tuple[tuple[int, int, int], ...] | None = None
        self._kinds: list[tuple[tuple[int, ...], torch.dtype]] | None = None

    def sync(self, exe: Executable, tensors: Sequence[torch.Tensor] | None = None) -> None:
        """Bind the current tensors if any differs from the bound one: another tensor, or the
        same one written since (its version counter or its storage changed). Raises
        ``ValueError`` when one has another shape or dtype than the executable was compiled
        for (``model.half()``, a resized layer): that needs a new compile."""
        ts = [g() for g in self._get] if tensors is None else tensors
        state = tuple((id(t), t._version, t.data_ptr()) for t in ts)
        if state != self._bound:
            kinds = [(tuple(t.shape), t.dtype) for t in ts]
            if self._kinds is not None and kinds != self._kinds:
                bad = next(n for n, k, w in zip(self.names, kinds, self._kinds, strict=True)
                           if k != w)
                raise ValueError(f"parameter {bad!r} changed shape or dtype since the compile; "
                                 "compile the module again")
            exe.bind(dict(zip(self.names, ts, strict=True)))
            self._bound, self._kinds = state, kinds


def _constant(t: torch.Tensor) -> Callable[[], torch.Tensor]:
    return lambda: t


def _attr_getter(module: torch.nn.Module, name: str) -> Callable[[], torch.Tensor]:
    owner_name, _, attr = name.rpartition(".")
    owner = module.get_submodule(owner_name) if owner_name else module
    return lambda: getattr(owner, attr)


def weight_sources(modules: Sequence[torch.nn.Module],
                   params: Mapping[str, torch.Tensor]) -> WeightSet:
    """The weight set of ``params``, each read at call time from the first of ``modules`` that
    has it as an attribute path (the exported tensor where none has)."""
    sources: list[Callable[[], torch.Tensor]] = []
    for name, t in params.items():
        for module in modules:
            try:
                sources.append(_attr_getter(module, name))
                break
            except AttributeError:
                continue
        else:  # not an attribute path of any module: the exported tensor
            sources.append(_constant(t))
    return WeightSet(list(params), sources)


class CompiledModule:
    """``kiln.torch.compile``'s result: call it like the module (same arguments, same output
    structure); inputs whose shapes the export did not declare dynamic must keep their shapes.

    ``target``: the normalized target it runs; ``fallbacks``: candidates skipped and why;
    ``exported``: the ``kiln.torch.importer.Exported`` (MLIR and parameters). ``function``: the
    executable's function it calls; ``weights``: the weight set, shared by the functions of one
    executable (``CompiledFunctions``).
    """

    def __init__(self, module: torch.nn.Module, exported: Any, loaded: Loaded, *,
                 function: str = "main", weights: WeightSet | None = None) -> None:
        from torch.export.graph_signature import InputKind, OutputKind, TensorArgument

        self.module = module
        self.exported = exported
        self.target = loaded.target
        self.fallbacks = loaded.fallbacks
        self.function = function
        self._exe = loaded.executable
        program = exported.programs[function]
        sig = program.graph_signature
        users = [s for s in sig.input_specs if s.kind == InputKind.USER_INPUT]
        self._take = [i for i, s in enumerate(users) if isinstance(s.arg, TensorArgument)]
        outs = [s for s in sig.output_specs if s.kind == OutputKind.USER_OUTPUT]
        if not all(isinstance(s.arg, TensorArgument) for s in outs):
            from kiln.torch.importer import ExportError

            raise ExportError("only tensor outputs are supported")
        self._in_spec = program.call_spec.in_spec
        self._out_spec = program.call_spec.out_spec
        self.weights = weights or weight_sources([module], exported.params)

        # Positional tensors only, every one an input: no flattening per call.
        n = len(users)
        self._positional = (self._take == list(range(n))
                            and self._in_spec == _spec_of(((0,) * n, {})))
        self._rebuild = rebuild(self._out_spec)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._positional and not kwargs and all(type(a) is torch.Tensor for a in args):
            inputs: Sequence[Any] = args
        else:
            from torch.utils import _pytree as pytree

            flat, spec = pytree.tree_flatten((args, kwargs))
            if spec != self._in_spec:
                raise TypeError(f"the arguments' structure differs from the example's: {spec}")
            inputs = [flat[i] for i in self._take]
        self.weights.sync(self._exe)
        return self._rebuild(self._exe(inputs, function=self.function))


class CompiledFunctions:
    """``kiln.torch.compile_functions``' result: one executable with several functions, each a
    ``CompiledModule`` (``fns.prefill(tokens)``, ``fns["decode"](...)``), one weight set bound
    once for all (a weight read by two functions is one buffer).

    ``target``, ``fallbacks``, ``exported``: as ``CompiledModule``'s; ``functions``: name ->
    ``CompiledModule``.
    """

    def __init__(self, modules: Mapping[str, torch.nn.Module], exported: Any,
                 loaded: Loaded) -> None:
        self.exported = exported
        self.target = loaded.target
        self.fallbacks = loaded.fallbacks
        self.weights = weight_sources(list(modules.values()), exported.params)
        self.functions = {name: CompiledModule(m, exported, loaded, function=name,
                                               weights=self.weights)
                          for name, m in modules.items()}

    def __getitem__(self, name: str) -> CompiledModule:
        return self.functions[name]

    def __getattr__(self, name: str) -> CompiledModule:
        functions = self.__dict__.get("functions", {})
        if name in functions:
            return functions[name]  # type: ignore[no-any-return]
        raise AttributeError(name)


def _spec_of(tree: Any) -> Any:
    from torch.utils import _pytree as pytree

    return pytree.tree_flatten(tree)[1]


def rebuild(spec: Any) -> Callable[[list[torch.Tensor]], Any]:
    """The function from an executable's flat results to ``spec``'s structure (one tensor and a
    tuple of tensors without pytree's general walk)."""
    if spec == _spec_of(0):
        return lambda outs: outs[0]
    if spec == _spec_of(tuple(range(spec.num_leaves))):
        return tuple
    from torch.utils import _pytree as pytree

    return lambda outs: pytree.tree_unflatten(outs, spec)
