"""StableHLO testdata cases: made runnable, and judged as StableHLO's own interpreter judges them.

Each upstream case (``stablehlo/testdata/*.mlir``, JAX-generated) is one module whose public
``@main()`` takes no arguments: it calls a private ``@inputs()`` and ``@expected()`` (constants),
computes, and checks with ``stablehlo.custom_call @check.expect_eq|expect_almost_eq|expect_close
(%actual, %expected)``. IREE has no lowering for those custom calls, so ``runnable`` rewrites the
text (nothing else changes):

- ``@main`` takes the inputs as arguments (``%0:2 = call @inputs()`` is removed and ``%0#k``
  becomes argument k), so the graph's inputs cross the executable's ABI as a real caller's would;
- the check calls are removed and ``@main`` returns the actual value of each check, in order;
- ``@inputs`` and ``@expected`` become public: the runner calls ``inputs()``, passes its results
  to ``main``, and compares ``main``'s results with ``expected()``'s, all from one executable.

``compare`` applies the tolerance StableHLO's interpreter gives each custom call
(``stablehlo/tools/StablehloTranslateMain.cpp``): ``expect_eq`` exact (NaN equals NaN),
``expect_almost_eq`` ``|actual - expected| <= 1e-3`` (non-finite values must be equal),
``expect_close`` at most 3 ULP apart (non-finite values bitwise equal, NaN equals NaN; a complex
value by the larger of its parts' distances). Shapes and dtypes must match exactly, and the
dtype must be the one the case declares (``declared_dtype``): an executable that changed the
function's types (IREE demotes f64 to f32 unless told not to, and always for Vulkan) fails, as in
the ONNX suite, even where its f32 values match ``expected()`` demoted the same way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

__all__ = ["CaseError", "Check", "Runnable", "compare", "declared_dtype", "runnable",
           "split_types"]

ALMOST_EQ_TOLERANCE = 1e-3
MAX_ULP = 3


class CaseError(ValueError):
    """The case does not have the structure ``runnable`` rewrites."""


@dataclass(frozen=True)
class Check:
    kind: str  # "expect_eq" | "expect_almost_eq" | "expect_close"
    type: str  # the MLIR type of both operands


@dataclass(frozen=True)
class Runnable:
    """The rewritten module, the checks in ``main``'s result order, and how many inputs."""

    mlir: str
    checks: tuple[Check, ...]
    n_inputs: int


def split_types(text: str) -> list[str]:
    """``"(tensor<2xf32>, tensor<complex<f32>>)"`` or one bare type → its types, in order."""
    text = text.strip()
    if text.startswith("(") and text.endswith(")"):
        text = text[1:-1]
    out, depth, cur = [], 0, []
    for ch in text:
        if ch in "<([{":
            depth += 1
        elif ch in ">)]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


_MAIN = re.compile(r"^(\s*)func\.func public @main\(\)")
_INPUTS_CALL = re.compile(
    r"^\s*(%[\w$.-]+)(?::(\d+))? = (?:func\.)?call @inputs\(\) : \(\) -> (.+)$"
)
_CHECK = re.compile(
    r"^\s*stablehlo\.custom_call @check\.(\w+)\((%[\w$.#-]+), (%[\w$.#-]+)\)"
    r".*:\s*\((.+)\)\s*->\s*\(\)\s*$"
)
_RETURN = re.compile(r"^(\s*)(?:func\.)?return\b")
_NAME_END = r"(?![\w$.#-])"


def runnable(text: str) -> Runnable:
    """The rewrite described in the module docstring; ``CaseError`` when the case differs."""
    lines = [ln for ln in text.splitlines() if not ln.startswith("// RUN:")]
    start = next((i for i, ln in enumerate(lines) if _MAIN.match(ln)), None)
    if start is None:
        raise CaseError("no `func.func public @main()`")
    indent = _MAIN.match(lines[start]).group(1)  # type: ignore[union-attr]
    end = next(
        (i for i in range(start + 1, len(lines)) if lines[i] == f"{indent}}}"), None
    )
    if end is None:
        raise CaseError("@main has no closing brace")
    body: list[str] = []
    checks: list[Check] = []
    actuals: list[str] = []
    inputs: list[str] = []
    in_name, in_multi = None, False
    for ln in lines[start + 1 : end]:
        m = _INPUTS_CALL.match(ln)
        if m:
            in_name, in_multi = m.group(1), m.group(2) is not None
            inputs = split_types(m.group(3))
            continue
        c = _CHECK.match(ln)
        if c:
            kind, actual = c.group(1), c.group(2)
            if kind not in ("expect_eq", "expect_almost_eq", "expect_close"):
                raise CaseError(f"unknown check @check.{kind}")
            checks.append(Check(kind, split_types(c.group(4))[0]))
            actuals.append(actual)
            continue
        if _RETURN.match(ln):
            continue
        body.append(ln)
    if not checks:
        raise CaseError("@main has no check")
    names = [f"%kiln_in{k}" for k in range(len(inputs))]
    if in_name is not None:
        pat = re.escape(in_name)
        for k, new in enumerate(names):
            old = rf"{pat}#{k}{_NAME_END}" if in_multi else rf"{pat}{_NAME_END}"
            body = [re.sub(old, new, ln) for ln in body]
            actuals = [re.sub(old, new, a) for a in actuals]
    args = ", ".join(f"{n}: {t}" for n, t in zip(names, inputs, strict=True))
    types = ", ".join(c.type for c in checks)
    head = f"{indent}func.func public @main({args}) -> ({types}) {{"
    ret = f"{indent}  return {', '.join(actuals)} : {types}"
    out = lines[:start] + [head] + body + [ret] + lines[end:]
    mlir = "\n".join(out) + "\n"
    for fn in ("inputs", "expected"):
        mlir = mlir.replace(f"func.func private @{fn}()", f"func.func public @{fn}()")
    return Runnable(mlir, tuple(checks), len(inputs))


# -- comparison ----------------------------------------------------------------------------------

_DTYPES = {"f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64",
           "i1": "bool", "complex<f32>": "complex64", "complex<f64>": "complex128",
           **{f"{s}i{w}": f"{'u' if s == 'u' else ''}int{w}"
              for s in ("", "u", "si") for w in (8, 16, 32, 64)}}


def declared_dtype(mlir_type: str) -> str | None:
    """The numpy dtype name of a ``tensor<...xELEM>`` type (``"bfloat16"`` as ml_dtypes names
    it); None for an element type numpy does not carry."""
    inner = mlir_type.strip().removeprefix("tensor<").removesuffix(">")
    if inner.endswith(">"):  # complex<...>
        elem = inner[inner.rfind("complex<"):]
    else:
        elem = inner.rsplit("x", 1)[-1]
    return _DTYPES.get(elem)

_UINT = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def _ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """StableHLO's ULP difference per element (float16/32/64); ``2**64 - 1`` where it is
    meaningless (one side non-finite and the two not bitwise equal, NaN pairs excepted)."""
    ut = _UINT[a.dtype.itemsize]
    sign = np.array(1, ut) << np.array(8 * a.dtype.itemsize - 1, ut)
    ia, ib = a.view(ut), b.view(ut)
    ma, mb = (ia & ~sign).astype(np.uint64), (ib & ~sign).astype(np.uint64)
    same_sign = (ia & sign) == (ib & sign)
    with np.errstate(over="ignore"):
        dist = np.where(same_sign, np.maximum(ma, mb) - np.minimum(ma, mb), ma + mb)
    fa, fb = a.astype(np.float64), b.astype(np.float64)  # bfloat16 (ml_dtypes) has no ufuncs
    finite = np.isfinite(fa) & np.isfinite(fb)
    big = np.uint64(np.iinfo(np.uint64).max)
    dist = np.where(finite, dist, big)
    dist = np.where(ia == ib, np.uint64(0), dist)
    return np.where(np.isnan(fa) & np.isnan(fb), np.uint64(0), dist)


def _floating(dtype: np.dtype) -> bool:
    """numpy floats and complexes, and ml_dtypes' ``bfloat16`` (which numpy calls ``V``)."""
    return dtype.kind in "fc" or dtype.name == "bfloat16"


def _parts(a: np.ndarray) -> list[np.ndarray]:
    return [a.real.copy(), a.imag.copy()] if np.iscomplexobj(a) else [a]


def compare(kind: str, got: np.ndarray, want: np.ndarray) -> str | None:
    """None when ``got`` satisfies the check against ``want``; else what differs, in words.
    Never warns: NaN and infinities are values here, not errors."""
    with np.errstate(all="ignore"):
        return _compare(kind, np.asarray(got), np.asarray(want))


def _compare(kind: str, got: np.ndarray, want: np.ndarray) -> str | None:
    if got.dtype != want.dtype:
        return f"dtype {got.dtype}, expected {want.dtype}"
    if got.shape != want.shape:
        return f"shape {got.shape}, expected {want.shape}"
    if got.size == 0:
        return None
    floating = _floating(want.dtype)
    if not floating or kind == "expect_eq":
        if floating:
            bad = np.zeros(want.shape, bool)
            for g, w in zip(_parts(got), _parts(want), strict=True):
                g64, w64 = g.astype(np.float64), w.astype(np.float64)
                bad |= ~((g64 == w64) | (np.isnan(g64) & np.isnan(w64)))
        else:
            bad = got != want
        n = int(bad.sum())
        return None if n == 0 else f"{n}/{want.size} elements differ ({kind})"
    if kind == "expect_almost_eq":
        bad = np.zeros(want.shape, bool)
        for g, w in zip(_parts(got), _parts(want), strict=True):
            g64, w64 = g.astype(np.float64), w.astype(np.float64)
            with np.errstate(invalid="ignore", over="ignore"):
                close = np.abs(g64 - w64) <= ALMOST_EQ_TOLERANCE
            fin = np.isfinite(g64) & np.isfinite(w64)
            ok = np.where(fin, close, (g64 == w64) | (np.isnan(g64) & np.isnan(w64)))
            bad |= ~ok
        n = int(bad.sum())
        return None if n == 0 else f"{n}/{want.size} elements differ by more than 1e-3"
    dist = np.zeros(want.shape, np.uint64)
    for g, w in zip(_parts(got), _parts(want), strict=True):
        dist = np.maximum(dist, _ulp_distance(np.ascontiguousarray(g), np.ascontiguousarray(w)))
    bad = dist > MAX_ULP
    n = int(bad.sum())
    if n == 0:
        return None
    worst = int(dist.max())
    worst_s = "non-finite" if worst == np.iinfo(np.uint64).max else f"{worst} ULP"
    return f"{n}/{want.size} elements more than {MAX_ULP} ULP apart (worst {worst_s})"
