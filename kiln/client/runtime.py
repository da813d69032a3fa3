"""Load a .vmfb into iree.runtime and call it with numpy arrays (numpy in, numpy out).

Works around iree.runtime 3.13 on Mesa lavapipe (and other Vulkan drivers whose
``minImportedHostPointerAlignment`` is 4096): numpy arrays are never imported as host allocations.
Inputs are copied into device-local buffers, and results are copied out through a mapped staging
buffer rather than ``DeviceArray.to_host()``. The CPU drivers (``local-task``, ``local-sync``)
have no such restriction and read results with ``to_host()`` directly: the staging copy is a
queue operation through the task system, and it cost 0.7 ms per call on a 4 ms transformer
encoder.

On ``local-task`` a call does not sleep until its results are ready: it runs the function's
asynchronous form (``name$async``, IREE's coarse-fences ABI: the same arguments plus a wait and a
signal fence) and polls the signal semaphore, yielding the core between polls (``wait="poll"``,
the default there). A caller that blocks on the fence sleeps in the kernel and must be woken by
the worker that finishes the last dispatch; on a VM that wake-up can wait for the next scheduler
tick (measured on a 2-vCPU KVM guest: 29 % of a transformer encoder's calls ended 1.5-6 ms after
its last dispatch, a mean of 1.1 ms a call on 3.1 ms of work). A polling caller that yields also
keeps its vCPU from halting, so the workers' own wake-ups between dispatches stay short. After
``poll_budget_s`` (a long call, where a wake-up is noise) the caller blocks as before.
docs/performance.md ("How a call waits") has the measurements.

Interpreter exit: every object that owns runtime objects (each ``LoadedModule``, each
``kiln.torch`` executable, through ``release_at_exit``) is released by an ``atexit`` handler,
callers before what they call: invokers, contexts, VM modules, parameters, then devices and the
shared ``VmInstance``. Python's own teardown clears module globals before it frees the cycles
they held; a runtime object reachable only from such a cycle (the polling invoker class, a
compiled graph cached by Dynamo) would never be freed, and nanobind reports each one as
"leaked" when the process ends.
"""

from __future__ import annotations

import atexit
import functools
import os
import re
import struct
import threading
import time
import weakref
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

if TYPE_CHECKING:
    from kiln.client.params import ParamsArchive
    from kiln.dialects.types import FunctionSignature

__all__ = ["EXECUTABLE_HEAD_BYTES", "LoadedModule", "driver_for_target", "is_executable",
           "load_vmfb", "public_function_names", "read_signatures", "release_at_exit",
           "shared_instance", "vm_signatures"]

# How long a call polls before it blocks on its fence (see the module docstring).
POLL_BUDGET_S = 0.25
_CCONV = re.compile(r"\((\w*)\)")
_SCALAR_TYPES = {"i": "i32", "I": "i64", "f": "f32", "F": "f64"}  # VM calling convention
_SCALAR_KINDS = frozenset(_SCALAR_TYPES)
_DRIVERS = {"cpu": "local-task", "vulkan": "vulkan", "cuda": "cuda", "rocm": "hip", "metal": "metal"}


#: How many leading bytes ``is_executable`` needs.
EXECUTABLE_HEAD_BYTES = 512


def is_executable(head: bytes) -> bool:
    """Whether ``head`` (a file's first ``EXECUTABLE_HEAD_BYTES`` bytes, or all of it) starts an
    IREE executable: the ``.vmfb`` zip wrapper whose first entry is ``module.fb``, or a bare
    (optionally size-prefixed) FlatBuffer, each with the ``IREE`` file identifier. A cheap format
    check, not a validation. The client's copy of ``kiln.cache.kinds.EXECUTABLE`` (the light
    client has no ``kiln.cache``); tests/test_cache_kinds.py checks that the two agree."""
    if head[:4] == b"PK\x03\x04" and len(head) >= 30:
        name_len, extra_len = struct.unpack("<HH", head[26:30])
        data = 30 + name_len + extra_len
        return head[30 : 30 + name_len] == b"module.fb" and b"IREE" in head[data + 4 : data + 12]
    return head[4:8] == b"IREE" or head[8:12] == b"IREE"


def driver_for_target(target: str) -> str:
    return _DRIVERS[target.split(":", 1)[0]]


class Releasable(Protocol):
    def release(self) -> None: ...


_LIVE: weakref.WeakSet[Releasable] = weakref.WeakSet()
_LOCK = threading.Lock()
_INSTANCE: Any = None


def release_at_exit(owner: Releasable) -> None:
    """Have ``owner.release()`` called at interpreter exit if ``owner`` is still alive then
    (a weak reference: this keeps nothing alive). ``release`` must drop every runtime object
    ``owner`` holds and leave later calls failing with an error rather than crashing."""
    _LIVE.add(owner)


def shared_instance() -> Any:
    """This process's shared ``VmInstance`` (created on first use); released at exit after
    every object registered with ``release_at_exit``."""
    global _INSTANCE
    with _LOCK:
        if _INSTANCE is None:
            import iree.runtime as rt

            _INSTANCE = rt.VmInstance()
        return _INSTANCE


@atexit.register
def _release_all() -> None:
    """Runs before Python's teardown, while every module is whole: the live owners first, then
    the polling invoker class (a cycle through ``iree.runtime.function``'s globals), then the
    shared instance. Devices go with the last reference to them (``iree.runtime``'s cache)."""
    global _INSTANCE
    for owner in list(_LIVE):
        owner.release()
    _LIVE.clear()
    _polling_invoker_class.cache_clear()
    with _LOCK:
        _INSTANCE = None


class LoadedModule:
    """A loaded executable. Attribute access returns its functions as numpy callables.

    Released at interpreter exit (``release``) if still alive: a function called after that
    raises ``RuntimeError``."""

    def __init__(
        self, data: bytes, *, driver: str, device: Any = None, wait: str = "auto",
        poll_budget_s: float = POLL_BUDGET_S, signatures: Iterable[FunctionSignature] = (),
        params: ParamsArchive | None = None,
    ) -> None:
        import iree.runtime as rt

        if wait not in ("auto", "poll", "block"):
            raise ValueError(f"wait must be 'auto', 'poll' or 'block', not {wait!r}")
        self._rt = rt
        self.driver = driver
        # Polling pays only where the device's work runs on the host's own threads.
        self.wait = ("poll" if driver == "local-task" else "block") if wait == "auto" else wait
        self.poll_budget_s = poll_budget_s
        self._functions: dict[str, Callable[..., Any]] = {}
        self._invokers: dict[str, Any] = {}  # name -> iree.runtime's callable (holds the context)
        self._given = tuple(signatures)
        self._signatures: dict[str, FunctionSignature] | None = None
        self.device = device if device is not None else rt.get_device(driver)
        self._ctx = rt.SystemContext(config=rt.Config(device=self.device))
        #: The weights' archive of a code-only executable (``kiln.client.params``), or None.
        self.params = params
        if params is not None:  # its parameters module first: the executable imports it
            self._ctx.add_vm_module(params.module(self._ctx.instance))
        self._vm = rt.VmModule.copy_buffer(self._ctx.instance, data)
        self._ctx.add_vm_module(self._vm)
        self.module_name = self._vm.name
        self._mod = self._ctx.modules[self.module_name]
        release_at_exit(self)

    def release(self) -> None:
        """Drop the runtime objects, callers before what they use: the functions' invokers,
        the context, the VM module, the parameters, the device. Later calls raise
        ``RuntimeError``. Idempotent."""
        self._invokers.clear()
        self._functions.clear()
        self._mod = self._ctx = self._vm = None
        self.params = None
        self.device = None

    @property
    def function_names(self) -> list[str]:
        """The functions a caller can call, in the executable's order (``f$async`` forms and
        ``__init``-style internals left out)."""
        return public_function_names(self._vm)

    @property
    def signatures(self) -> dict[str, FunctionSignature]:
        """Name -> argument and result types of each callable function (see
        ``vm_signatures``); where the executable does not record them (ONNX and torch
        imports), the ones given at load (``signatures=``, e.g. from the server's answer)."""
        if self._signatures is None:
            given = {s.name: s for s in self._given}
            self._signatures = {}
            for name, sig in vm_signatures(self._vm).items():
                alt = given.get(name)
                known = all(v.dtype for v in (*sig.inputs, *sig.outputs))
                if not known and alt is not None and len(alt.inputs) == len(sig.inputs):
                    sig = alt
                self._signatures[name] = sig
        return dict(self._signatures)

    def __dir__(self) -> list[str]:
        return sorted({*super().__dir__(), *(n for n in self.function_names if n.isidentifier())})

    def __repr__(self) -> str:
        sigs = "".join(f"\n  {s}" for s in self.signatures.values())
        return f"<{type(self).__name__} {self.module_name!r} on {self.driver}:{sigs or ' no functions'}>"

    def function(self, name: str) -> Callable[..., Any]:
        # Built once per name: ``mod.f(x)`` in a loop must not redo the lookups and the ABI
        # parsing (11 us a call).
        if name not in self._functions:
            if self._vm is None:
                raise RuntimeError(f"the module {self.module_name!r} was released")
            self._functions[name] = self._build(name)
        return self._functions[name]

    def _build(self, name: str) -> Callable[..., Any]:
        fn = self._mod[name]
        # Arguments that are scalars in the VM's signature (i32, i64, f32, f64: "0ri" is a buffer
        # view and an i32) are passed as Python numbers, not as buffers.
        sig = _signature(self._vm.lookup_function(name))
        scalar = frozenset(i for i, k in enumerate(sig[0] if sig else "") if k in _SCALAR_KINDS)
        if self.wait == "poll":
            fn = self._polling(name) or fn
        # The callable reaches the invoker through this dict, which ``release`` empties: a
        # function the caller keeps holds no runtime object of its own.
        invokers = self._invokers
        invokers[name] = fn

        def convert(i: int, a: Any) -> Any:
            a = np.asarray(a)
            if i not in scalar:
                return self._to_device(a)
            if a.size != 1:
                raise ValueError(f"argument {i} of {name!r} is a scalar; got shape {a.shape}")
            return a.item()

        def call(*args: Any) -> Any:
            fn = invokers.get(name)
            if fn is None:
                raise RuntimeError(f"the module {self.module_name!r} was released")
            if scalar:
                inputs = [convert(i, a) for i, a in enumerate(args)]
            else:
                inputs = [self._to_device(np.asarray(a)) for a in args]
            out = fn(*inputs)
            # Release the inputs before reading the results: with an input still held, reading
            # a large result took 0.6 ms more on local-task (a 56x56x64 convolution: 1.94 ms a
            # call against 1.32 ms; measured in one process, interleaved).
            del inputs
            if isinstance(out, tuple):
                return tuple(self._to_host(o) for o in out)
            if isinstance(out, list):
                return [self._to_host(o) for o in out]
            return self._to_host(out)

        call.__name__ = name
        return call

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self.function(name)
        except (KeyError, AttributeError) as exc:
            have = ", ".join(map(repr, self.function_names)) or "none"
            raise AttributeError(f"the module has no function {name!r}; it has {have}") from exc

    def __getitem__(self, name: str) -> Callable[..., Any]:
        return self.function(name)

    def _polling(self, name: str) -> Any:
        """An invoker of ``name`` through ``name$async`` that polls for completion, or None when
        the module has no such form (a function compiled with another execution model)."""
        sync_fn = self._vm.lookup_function(name)
        async_fn = self._vm.lookup_function(name + "$async")
        sync_sig, async_sig = _signature(sync_fn), _signature(async_fn)
        if sync_sig is None or async_sig is None:
            return None
        if async_sig != (sync_sig[0] + "rr", sync_sig[1]):
            return None
        return _polling_invoker_class()(self._ctx.vm_context, self.device, sync_fn, async_fn,
                                        budget_s=self.poll_budget_s)

    def _to_device(self, a: np.ndarray) -> Any:
        rt = self._rt
        # np.ascontiguousarray would turn a 0-d (scalar) input into shape (1,): keep the rank.
        a = np.asarray(a)
        if not a.flags.c_contiguous:
            a = a.copy(order="C")
        return rt.asdevicearray(self.device, a, memory_type=rt.MemoryType.DEVICE_LOCAL)

    def _to_host(self, value: Any) -> Any:
        rt = self._rt
        if not isinstance(value, rt.DeviceArray):
            return value
        if self.driver.startswith("local-"):
            return np.array(value.to_host(), copy=True)
        bv = value._buffer_view
        dtype = value.dtype
        raw = rt.HalElementType.map_to_dtype(bv.element_type)
        src = bv.get_buffer()
        size = src.byte_length()
        if size == 0:
            return np.empty(tuple(bv.shape), dtype=dtype)
        alloc = self.device.allocator
        staging = alloc.allocate_buffer(
            memory_type=int(rt.MemoryType.HOST_LOCAL | rt.MemoryType.DEVICE_VISIBLE),
            allowed_usage=int(rt.BufferUsage.TRANSFER_TARGET | rt.BufferUsage.MAPPING_SCOPED),
            allocation_size=size,
        )
        sem = self.device.create_semaphore(0)
        self.device.queue_copy(
            src,
            staging,
            wait_semaphores=rt.HalFence.create_at(sem, 0),
            signal_semaphores=rt.HalFence.create_at(sem, 1),
        )
        rt.HalFence.create_at(sem, 1).wait()
        mapped = staging.map()
        host = np.array(mapped.asarray(tuple(bv.shape), raw), copy=True)
        if dtype != raw:
            host = host.astype(dtype)
        return host


def public_function_names(vm: Any) -> list[str]:
    """The callable functions of an ``iree.runtime.VmModule``: its exports less the
    asynchronous forms (``f$async``) and the internals (``__init``)."""
    return [n for n in vm.function_names if not n.startswith("__") and "$" not in n]


def vm_signatures(vm: Any) -> dict[str, FunctionSignature]:
    """Name -> signature of each callable function of an ``iree.runtime.VmModule``, read from
    the executable's own reflection (``iree.abi.declaration``). A function without one (IREE
    records none for ONNX and torch imports) gets what its calling convention says: scalars
    typed, buffers as tensors of unknown shape and type. Never raises."""
    from kiln.dialects.types import FunctionSignature, ValueType

    out: dict[str, FunctionSignature] = {}
    for name in public_function_names(vm):
        fn = vm.lookup_function(name)
        decl = fn.reflection.get("iree.abi.declaration") if fn is not None else None
        sig = FunctionSignature.from_declaration(str(decl)) if decl else None
        if sig is None:
            cc = _signature(fn) or ("", "")
            sig = FunctionSignature(name, *(tuple(
                ValueType("scalar", _SCALAR_TYPES[k], ()) if k in _SCALAR_TYPES
                else ValueType("tensor", "", None) for k in kinds) for kinds in cc))
        out[name] = FunctionSignature(name, sig.inputs, sig.outputs)
    return out


def read_signatures(data: bytes) -> dict[str, FunctionSignature]:
    """The signatures of a ``.vmfb``'s callable functions (``vm_signatures``), without a device.
    Raises ``ValueError`` when ``data`` is not an executable this runtime can read."""
    import iree.runtime as rt

    if not is_executable(data[:EXECUTABLE_HEAD_BYTES]):
        raise ValueError("not an IREE executable (.vmfb)")
    try:
        vm = rt.VmModule.copy_buffer(rt.VmInstance(), data)
    except RuntimeError as exc:
        raise ValueError(f"this iree.runtime cannot read the executable: {exc}") from exc
    return vm_signatures(vm)


def _signature(fn: Any) -> tuple[str, str] | None:
    """A VM function's calling convention as (argument kinds, result kinds): ``0rri_r`` is
    ``("rri", "r")`` (``r`` a ref such as a buffer view, ``i``/``I`` i32/i64, ``f``/``F``
    f32/f64); None without a function or a convention."""
    cc = _CCONV.search(repr(fn)) if fn is not None else None
    if cc is None:
        return None
    args, _, results = cc.group(1).partition("_")
    return args[1:], results


@functools.cache
def _polling_invoker_class() -> type:
    """iree.runtime's invoker (its argument packing and result unpacking, driven by the sync
    function's ABI) with the call routed through the ``$async`` form and a polling wait. Built
    on first use, so importing this module does not import iree.runtime."""
    import iree.runtime as rt
    from iree.runtime.function import FunctionInvoker

    class PollingInvoker(FunctionInvoker):  # type: ignore[misc]
        __slots__ = ["_async_fn", "_budget_s"]

        def __init__(self, vm_context: Any, device: Any, sync_fn: Any, async_fn: Any, *,
                     budget_s: float) -> None:
            super().__init__(vm_context, device, sync_fn)
            self._async_fn = async_fn
            self._budget_s = budget_s

        def _invoke(self, arg_list: Any, ret_list: Any) -> None:
            sem = self._device.create_semaphore(0)
            done = rt.HalFence.create_at(sem, 1)
            arg_list.push_ref(rt.HalFence(0))  # nothing to wait for: the inputs are ready
            arg_list.push_ref(done)
            self._vm_context.invoke(self._async_fn, arg_list, ret_list)
            deadline = time.perf_counter() + self._budget_s
            # query() raises if the work failed (the semaphore carries the failure).
            while sem.query() < 1:
                if time.perf_counter() > deadline:
                    done.wait()
                    break
                os.sched_yield()

    return PollingInvoker


def load_vmfb(
    data: bytes, *, driver: str, device: Any = None, wait: str = "auto",
    poll_budget_s: float = POLL_BUDGET_S, signatures: Iterable[FunctionSignature] = (),
    params: ParamsArchive | None = None,
) -> LoadedModule:
    """Load ``data`` on ``driver``. ``wait``: how a call waits for its results on the device;
    ``"auto"`` polls on ``local-task`` and blocks elsewhere (see the module docstring).
    ``signatures``: the functions' types where the executable does not record them (the
    ``signatures`` of a compile answer). ``params``: the weights of a code-only executable
    (compiled with ``params: "external"``)."""
    return LoadedModule(data, driver=driver, device=device, wait=wait,
                        poll_budget_s=poll_budget_s, signatures=signatures, params=params)
