"""Run a code-only executable on torch tensors, its weights bound from live torch tensors.

One ``VmInstance`` per process (``kiln.client.runtime.shared_instance``) and one device per
driver (``iree.runtime.get_device``'s cache, the one ``kiln.client`` uses too): arrays read back
on a CPU driver alias device memory, so two devices of one driver in one process would hand out
memory neither owns. Every ``Executable`` is released at interpreter exit
(``kiln.client.runtime.release_at_exit``): Dynamo keeps compiled graphs where Python's teardown
never frees them.

Weights: ``bind(params)`` puts each tensor in an in-memory ``ParameterIndex`` (no copy, no
archive) under scope ``model``; the executable's ``#flow.parameter.named`` globals are read from
it when a ``VmContext`` is created. On the CPU drivers IREE maps those host buffers rather than
copying them, so an executable's weights may alias the module's tensors; callers re-bind on any
change anyway (``Binding``), which is right on every driver.

Tensors cross by DLPack on the CPU drivers (``local-task``, ``local-sync``): an input's memory is
imported, a result's buffer is exported, no copies. Other drivers copy inputs into device-local
buffers and results out through a mapped staging buffer (lavapipe rejects imported host memory
whose alignment is under 4096; see ``kiln.client.runtime``).

On ``local-task`` a call runs the function's asynchronous form (``main$async``) and polls its
fence, yielding the core, for up to ``POLL_BUDGET_S`` before it blocks (``docs/client.md``, "How
a call waits").
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch.utils.dlpack import from_dlpack, to_dlpack  # type: ignore[attr-defined]

from kiln.client.runtime import release_at_exit, shared_instance
from kiln.torch.importer import PARAM_SCOPE

__all__ = ["POLL_BUDGET_S", "Executable", "device", "host_view"]

POLL_BUDGET_S = 0.25
_LOCK = threading.Lock()
_KDL_CPU = 1


def _rt() -> Any:
    import iree.runtime as rt

    return rt


def instance() -> Any:
    """This process's ``VmInstance``."""
    return shared_instance()


def device(driver: str) -> Any:
    """This process's device for ``driver`` (created on first use, then cached)."""
    with _LOCK:
        return _rt().get_device(driver)


def host_view(t: torch.Tensor) -> np.ndarray:
    """A numpy view of ``t``'s memory (CPU, contiguous); a copy only where it is neither."""
    t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    if not t.is_contiguous():
        t = t.contiguous()
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    return t.numpy()


class Executable:
    """A code-only ``.vmfb`` loaded on one driver; ``bind`` gives it a weight set.

    A call runs ``function`` (``main`` unless given) or, with ``function=`` at the call,
    another public function of the same executable; all read the one bound weight set.
    Thread-safe for calls; ``bind`` replaces the context atomically (a call in flight finishes
    on the weights it started with).
    """

    def __init__(self, data: bytes, *, driver: str, function: str = "main",
                 poll_budget_s: float = POLL_BUDGET_S) -> None:
        rt = _rt()
        self.driver = driver
        self.device = device(driver)
        self._host = driver.startswith("local-")
        self._inst = instance()
        self._vm = rt.VmModule.copy_buffer(self._inst, data)
        self._hal = rt.create_hal_module(self._inst, self.device)
        self._fns: dict[str, tuple[Any, Any]] = {}
        self._fn, self._async = self._lookup(function)
        self.function = function
        self.poll_budget_s = poll_budget_s
        self._ctx: Any = None
        self._held: tuple[np.ndarray, ...] = ()
        release_at_exit(self)

    def _lookup(self, function: str) -> tuple[Any, Any]:
        """The function and, on ``local-task``, its ``$async`` form. Raises ``KeyError``."""
        found = self._fns.get(function)
        if found is None:
            fn = self._vm.lookup_function(function)
            if fn is None:
                raise KeyError(f"the executable has no function {function!r}")
            async_fn = self._vm.lookup_function(function + "$async")
            found = (fn, async_fn if self.driver == "local-task" else None)
            self._fns[function] = found
        return found

    def release(self) -> None:
        """Drop the runtime objects, the context before the modules and the modules before the
        device. Later calls raise ``RuntimeError``. Called at interpreter exit for every live
        executable (one cached by Dynamo is never freed otherwise)."""
        self._ctx = None
        self._held = ()
        self._fn = self._async = None
        self._fns = {}
        self._vm = self._hal = self._inst = None
        self.device = None

    def bind(self, params: Mapping[str, torch.Tensor]) -> None:
        """Make ``params`` (parameter name -> tensor) the weights of the following calls."""
        if self._vm is None:
            raise RuntimeError("the executable was released")
        rt = _rt()
        index = rt.ParameterIndex()
        held = []
        for name, t in params.items():
            host = host_view(t)
            held.append(host)
            index.add_buffer(name, host)
        provider = index.create_provider(scope=PARAM_SCOPE)
        pmod = rt.create_io_parameters_module(self._inst, provider)
        ctx = rt.VmContext(self._inst, modules=[self._hal, pmod, self._vm])
        self._ctx, self._held = ctx, tuple(held)

    # -- calls --------------------------------------------------------------------------------

    def __call__(self, inputs: Sequence[torch.Tensor], *,
                 function: str | None = None) -> list[torch.Tensor]:
        rt = _rt()
        ctx = self._ctx
        if ctx is None:
            raise RuntimeError("the executable was released" if self._vm is None
                               else "bind() the weights before calling")
        if function is None or function == self.function:
            fn, async_fn = self._fn, self._async
        else:
            fn, async_fn = self._lookup(function)
        args = rt.VmVariantList(len(inputs) + 2)
        keep = []
        for t in inputs:
            bv, owner = self._to_device(t)
            keep.append(owner)
            args.push_ref(bv)
        results = rt.VmVariantList(4)
        if async_fn is not None:
            sem = self.device.create_semaphore(0)
            done = rt.HalFence.create_at(sem, 1)
            args.push_ref(rt.HalFence(0))  # nothing to wait for: the inputs are ready
            args.push_ref(done)
            ctx.invoke(async_fn, args, results)
            deadline = time.perf_counter() + self.poll_budget_s
            # query() raises when the work failed (the semaphore carries the failure).
            while sem.query() < 1:
                if time.perf_counter() > deadline:
                    done.wait()
                    break
                os.sched_yield()
        else:
            ctx.invoke(fn, args, results)
        del args, keep
        return [self._to_torch(results.get_as_ref(i).deref(rt.HalBufferView))
                for i in range(len(results))]

    def _to_device(self, t: torch.Tensor) -> tuple[Any, Any]:
        if self._host and t.device.type == "cpu":
            if not t.is_contiguous():
                t = t.contiguous()
            if t.data_ptr() % 64:
                # IREE imports host memory only 64-byte aligned (torch.from_numpy may not be):
                # a copy, which torch's allocator aligns, rather than an OUT_OF_RANGE error.
                t = t.clone()
            return self.device.from_dlpack_capsule(to_dlpack(t.detach())), t
        rt = _rt()
        host = host_view(t)
        from iree.runtime.array_interop import map_dtype_to_element_type

        bv = self.device.allocator.allocate_buffer_copy(
            memory_type=rt.MemoryType.DEVICE_LOCAL, allowed_usage=rt.BufferUsage.DEFAULT,
            device=self.device, buffer=host,
            element_type=map_dtype_to_element_type(host.dtype),
        )
        return bv, host

    def _to_torch(self, bv: Any) -> torch.Tensor:
        if self._host:
            capsule = self.device.create_dlpack_capsule(bv, _KDL_CPU, 0)
            return from_dlpack(capsule)
        return torch.from_numpy(self._staged(bv))

    def _staged(self, bv: Any) -> np.ndarray:
        rt = _rt()
        dtype = rt.HalElementType.map_to_dtype(bv.element_type)
        shape = tuple(bv.shape)
        src = bv.get_buffer()
        size = src.byte_length()
        if size == 0:
            return np.empty(shape, dtype=dtype)
        staging = self.device.allocator.allocate_buffer(
            memory_type=int(rt.MemoryType.HOST_LOCAL | rt.MemoryType.DEVICE_VISIBLE),
            allowed_usage=int(rt.BufferUsage.TRANSFER_TARGET | rt.BufferUsage.MAPPING_SCOPED),
            allocation_size=size,
        )
        sem = self.device.create_semaphore(0)
        self.device.queue_copy(src, staging, wait_semaphores=rt.HalFence.create_at(sem, 0),
                               signal_semaphores=rt.HalFence.create_at(sem, 1))
        rt.HalFence.create_at(sem, 1).wait()
        return np.array(staging.map().asarray(shape, dtype), copy=True)
