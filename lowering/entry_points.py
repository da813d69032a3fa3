"""Asynchronous entry points for MLIR inputs: ``f$async`` beside each public ``f``.

An ONNX model reaches IREE as torch-dialect functions, and IREE's torch input conversion gives
each one two exports: ``f$async`` (the coarse-fences ABI: the same arguments plus a wait and a
signal fence; the body is compiled into it) and ``f``, a synchronous stub that calls
``f$async`` and waits on its fence. Kiln's runtime calls ``f$async`` on ``local-task`` and
polls the signal fence instead of sleeping in the kernel until a worker wakes it
(``kiln.client.runtime``; docs/performance.md, "How a call waits"). A function written in linalg, StableHLO
or TOSA gets only ``f``: IREE converts ``func.func`` to ``util.func`` before it wraps the entry
points, and drops the ``iree.abi.model`` attribute that would ask for the other form.

So Kiln gives those functions the same pair of exports before compiling. For a public
``func.func @f``:
- ``f`` is renamed ``f$kiln`` (private; calls to it follow) and marked ``no_inline`` so the
  TOSA and StableHLO input pipelines' inliner leaves it where their ``func.func`` passes
  convert it; IREE inlines it into ``f$async`` later;
- ``util.func public @"f$async"(buffer views and scalars, %wait, %signal)`` imports each tensor
  argument after ``%wait`` (``hal.tensor.import wait``; a dynamic extent is read from the
  buffer view), calls ``f$kiln``, signals ``%signal`` when the tensor results are ready
  (``hal.tensor.barrier``) and exports them;
- ``util.func public @f(buffer views and scalars)`` creates a fence, calls ``f$async`` and waits
  on it, carrying the reflection IREE would have written (``iree.abi.declaration``).

Both are ``iree.abi.stub``, so IREE's ABI pass leaves them as written. This is the structure of
IREE's torch conversion: one call of the body. (Two exports each calling the body, which IREE's
ABI pass would write from an ``iree.abi.model`` attribute, trip IREE 3.13's interprocedural pass
``iree-util-ipo`` on results that are arguments or share their dimensions: "'util.return' op has
2 operands, but enclosing function-like op returns 3", "operation's operand is unlinked".)

Functions are left as they are, with their one synchronous export that the runtime calls with a
blocking wait, when the stubs could change their meaning:
- a signature with anything but ranked tensors of f16, bf16, f32, i8, i16, i32 or i64 and
  scalars of those types (f64, which IREE demotes to f32 for the GPU targets after the stubs
  are written; unsigned or signed integers such as ``ui8``/``si32``, which the input
  conversion makes signless after the stubs are written; i1; unranked tensors, torch types,
  tuples, tokens);
- no tensor argument (nothing would wait on ``%wait``) or no tensor result (nothing would
  signal ``%signal``);
- ``iree.abi.*`` argument or result attributes;
- a name ending in ``$async``, or an ``f$async`` or ``f$kiln`` that already exists.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from iree.compiler import ir

__all__ = ["ASYNC_SUFFIX", "BODY_SUFFIX", "add_async_entry_points"]

ASYNC_SUFFIX = "$async"
BODY_SUFFIX = "$kiln"


def _element_ok(t: ir.Type) -> bool:
    from iree.compiler import ir

    if isinstance(t, ir.IntegerType):
        # Signless only: IREE's StableHLO/TOSA input conversion rewrites unsigned and signed
        # element types to signless after the stubs are written, and a ``hal.tensor.import`` of
        # ``tensor<...xui16>`` then fails to legalize (20 of StableHLO's testdata).
        return t.is_signless and t.width in (8, 16, 32, 64)
    return isinstance(t, (ir.F16Type, ir.BF16Type, ir.F32Type))


def _kind(t: ir.Type) -> str | None:
    """``"tensor"``, ``"scalar"``, or None for a type the stubs do not carry."""
    from iree.compiler import ir

    if isinstance(t, ir.RankedTensorType):
        return "tensor" if _element_ok(t.element_type) else None
    return "scalar" if _element_ok(t) else None


def _has_abi_attrs(func: ir.Operation) -> bool:
    from iree.compiler import ir

    attrs = func.attributes
    for key in ("arg_attrs", "res_attrs"):
        if key not in attrs:
            continue
        for d in ir.ArrayAttr(attrs[key]):
            entries = ir.DictAttr(d)
            for i in range(len(entries)):
                if entries[i].name.startswith("iree.abi"):
                    return True
    return False


def _candidates(module: ir.Module) -> list[tuple[ir.Operation, str, ir.FunctionType]]:
    from iree.compiler import ir

    from kiln.dialects.mlir import public_function_ops

    symbols = ir.SymbolTable(module.operation)
    out = []
    for o, name in public_function_ops(module):
        if o.name != "func.func" or name.endswith(ASYNC_SUFFIX):
            continue
        if name + ASYNC_SUFFIX in symbols or name + BODY_SUFFIX in symbols:
            continue
        ftype = ir.FunctionType(ir.TypeAttr(o.attributes["function_type"]).value)
        ins = [_kind(t) for t in ftype.inputs]
        outs = [_kind(t) for t in ftype.results]
        if None in ins or None in outs or "tensor" not in ins or "tensor" not in outs:
            continue
        if _has_abi_attrs(o):
            continue
        out.append((o, name, ftype))
    return out


def _dynamic_dims(t: ir.Type) -> list[int]:
    from iree.compiler import ir

    shaped = ir.RankedTensorType(t)
    return [k for k in range(shaped.rank) if shaped.is_dynamic_dim(k)]


def _dims(names: list[str]) -> str:
    return "{" + ", ".join(names) + "}" if names else ""


def _declaration(name: str, ftype: ir.FunctionType) -> str:
    """The reflection IREE's ABI pass writes for a synchronous export (autotune reads it)."""
    ins = ", ".join(f"%input{i}: {t}" for i, t in enumerate(ftype.inputs))
    outs = ", ".join(f"%output{i}: {t}" for i, t in enumerate(ftype.results))
    return f"sync func @{name}({ins}) -> ({outs})"


def _stubs_text(name: str, ftype: ir.FunctionType) -> str:
    from iree.compiler import ir

    body = str(ir.FlatSymbolRefAttr.get(name + BODY_SUFFIX))
    async_ = str(ir.FlatSymbolRefAttr.get(name + ASYNC_SUFFIX))
    sync = str(ir.FlatSymbolRefAttr.get(name))
    ins = [str(t) for t in ftype.inputs]
    outs = [str(t) for t in ftype.results]
    abi_ins = ["!hal.buffer_view" if _kind(t) == "tensor" else str(t) for t in ftype.inputs]
    abi_outs = ["!hal.buffer_view" if _kind(t) == "tensor" else str(t) for t in ftype.results]
    sig = f"({', '.join(ins)}) -> ({', '.join(outs)})"
    abi_res = f"({', '.join(abi_outs)})"
    args = [f"%a{i}" for i in range(len(ins))]
    params = ", ".join(f"{a}: {t}" for a, t in zip(args, abi_ins, strict=True))

    lines = [f"func.func private {body}{sig}"]
    # f$async: import after %wait, call the body, signal %signal when the tensors are ready
    lines.append(
        f"util.func public {async_}({params}, %wait: !hal.fence, %signal: !hal.fence) -> "
        f"{abi_res} attributes {{inlining_policy = #util.inline.never, "
        f'iree.abi.model = "coarse-fences", iree.abi.stub}} {{'
    )
    call_args = []
    for i, (a, t) in enumerate(zip(args, ftype.inputs, strict=True)):
        if _kind(t) == "tensor":
            dims = []
            for k in _dynamic_dims(t):  # a dynamic extent is read from the buffer view
                lines.append(f"  %d{i}_{k} = hal.buffer_view.dim<{a} : !hal.buffer_view>[{k}] "
                             ": index")
                dims.append(f"%d{i}_{k}")
            lines.append(f'  %t{i} = hal.tensor.import wait(%wait) => {a} "input{i}" : '
                         f"!hal.buffer_view -> {t}{_dims(dims)}")
            call_args.append(f"%t{i}")
        else:
            call_args.append(a)
    n = len(outs)
    lines.append(f"  %r:{n} = func.call {body}({', '.join(call_args)}) : {sig}")
    tensors = [i for i, t in enumerate(ftype.results) if _kind(t) == "tensor"]
    joined = ", ".join(f"%r#{i}" for i in tensors)
    lines.append(f"  %j:{len(tensors)} = hal.tensor.barrier join({joined} : "
                 f"{', '.join(outs[i] for i in tensors)}) => %signal : !hal.fence")
    rets = []
    for i in range(n):
        if i in tensors:
            m = tensors.index(i)
            dims = []
            for k in _dynamic_dims(ftype.results[i]):
                lines.append(f"  %c{i}_{k} = arith.constant {k} : index")
                lines.append(f"  %e{i}_{k} = tensor.dim %j#{m}, %c{i}_{k} : {outs[i]}")
                dims.append(f"%e{i}_{k}")
            lines.append(f'  %v{i} = hal.tensor.export %j#{m} "output{i}" : '
                         f"{outs[i]}{_dims(dims)} -> !hal.buffer_view")
            rets.append(f"%v{i}")
        else:
            rets.append(f"%r#{i}")
    lines.append(f"  util.return {', '.join(rets)} : {', '.join(abi_outs)}")
    lines.append("}")
    # f: a fence of its own, f$async, and a wait for the fence
    decl = _declaration(name, ftype).replace("\\", "\\\\").replace('"', '\\"')
    lines.append(
        f"util.func public {sync}({params}) -> {abi_res} attributes {{iree.abi.stub, "
        f'iree.reflection = {{iree.abi.declaration = "{decl}"}}}} {{'
    )
    lines += [
        "  %none = util.null : !hal.fence",
        "  %forever = arith.constant -1 : i32",
        "  %c0 = arith.constant 0 : index",
        "  %device = hal.devices.get %c0 : !hal.device",
        '  %done = hal.fence.create device(%device : !hal.device) flags("None") : !hal.fence',
        (f"  %r:{n} = util.call {async_}({', '.join([*args, '%none', '%done'])}) : "
         f"({', '.join([*abi_ins, '!hal.fence', '!hal.fence'])}) -> {abi_res}"),
        '  %status = hal.fence.await until([%done]) timeout_millis(%forever) flags("None") : i32',
        f"  util.return {', '.join(f'%r#{i}' for i in range(n))} : {', '.join(abi_outs)}",
        "}",
    ]
    return "\n".join(lines) + "\n"


def add_async_entry_points(module: ir.Module) -> list[str]:
    """Give each eligible public function ``f`` of ``module`` the exports ``f`` and ``f$async``
    (in place); return the names of those functions."""
    from iree.compiler import ir

    done = []
    with module.context:
        for func, name, ftype in _candidates(module):
            try:  # before the module changes: a type the stubs cannot spell leaves f as it is
                helper = ir.Module.parse(_stubs_text(name, ftype))
            except ir.MLIRError:
                continue
            body_name = name + BODY_SUFFIX
            ir.SymbolTable.replace_all_symbol_uses(name, body_name, module.operation)
            func.attributes["sym_name"] = ir.StringAttr.get(body_name)
            func.attributes["sym_visibility"] = ir.StringAttr.get("private")
            func.attributes["no_inline"] = ir.UnitAttr.get()
            anchor = func
            for op in list(helper.body.operations)[1:]:  # [0] declares the body
                op.operation.move_after(anchor)
                anchor = op.operation
            done.append(name)
        if done:
            module.operation.verify()
    return done
