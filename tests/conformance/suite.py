"""The ONNX backend node tests as data: discovery, loading, and comparison with the references.

The tests ship inside the ``onnx`` wheel (``onnx/backend/test/data/node``, present up to onnx 1.22;
pyproject pins a version that has them). Each test is a directory with ``model.onnx`` and one or
more ``test_data_set_N`` folders of ``input_*.pb`` / ``output_*.pb`` tensors.

A test whose inputs or outputs cannot cross the iree.runtime numpy boundary (sequences, optionals,
maps, strings, bfloat16, float8, 4-bit types) is ``unsupported_io``: it is classified without
compiling, the same way for Kiln and for raw IREE.
"""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import onnx

__all__ = [
    "Outcome",
    "NodeTest",
    "node_dir",
    "node_test_names",
    "load_node_test",
    "compare_outputs",
    "RTOL",
    "ATOL",
]

RTOL = 1e-4
ATOL = 1e-5


class Outcome(enum.StrEnum):
    """Classes of a test on one target, in the order a graph meets them."""

    PASS = "pass"
    MISMATCH = "mismatch"  # ran, but an output differs from the reference (shape, dtype or values)
    IMPORT_FAIL = "import_fail"  # the ONNX importer refused or crashed (Kiln: ``invalid_graph``)
    COMPILE_FAIL = "compile_fail"  # iree-compile failed or crashed
    RUN_FAIL = "run_fail"  # the executable would not load or call, or crashed the runtime
    TIMEOUT = "timeout"  # import, compile or run ran past its limit
    UNSUPPORTED_IO = "unsupported_io"  # inputs/outputs numpy + iree.runtime cannot carry


# ONNX element types iree.runtime takes and returns as numpy arrays.
_SUPPORTED_ELEM = {
    "FLOAT", "DOUBLE", "FLOAT16", "BOOL",
    "INT8", "INT16", "INT32", "INT64", "UINT8", "UINT16", "UINT32", "UINT64",
}


@cache
def node_dir() -> Path:
    import onnx

    d = Path(onnx.__file__).parent / "backend" / "test" / "data" / "node"
    if not d.is_dir():
        raise RuntimeError(
            f"onnx {onnx.__version__} does not ship the backend node tests ({d}); "
            "install onnx<=1.22 (pyproject pins one that does)"
        )
    return d


def node_test_names() -> list[str]:
    """Every node test, sorted (deterministic)."""
    return sorted(p.name for p in node_dir().iterdir() if (p / "model.onnx").is_file())


@dataclass
class NodeTest:
    name: str
    model_bytes: bytes
    # One (inputs, expected outputs) pair per test_data_set; empty when ``unsupported`` is set.
    data_sets: list[tuple[list[np.ndarray], list[np.ndarray]]] = field(default_factory=list)
    unsupported: str | None = None  # why the test's I/O cannot be run, or None


def _io_problem(model: onnx.ModelProto) -> str | None:
    import onnx

    for kind, values in (("input", model.graph.input), ("output", model.graph.output)):
        for v in values:
            which = v.type.WhichOneof("value")
            if which != "tensor_type":
                return f"{kind} {v.name!r} is a {which}"
            elem = onnx.TensorProto.DataType.Name(v.type.tensor_type.elem_type)
            if elem not in _SUPPORTED_ELEM:
                return f"{kind} {v.name!r} has element type {elem}"
    return None


def _read_tensor(path: Path) -> np.ndarray:
    import onnx
    from onnx import numpy_helper

    t = onnx.TensorProto()
    t.ParseFromString(path.read_bytes())
    return numpy_helper.to_array(t)


def _numbered(d: Path, prefix: str) -> list[Path]:
    files = [p for p in d.iterdir() if p.name.startswith(prefix) and p.suffix == ".pb"]
    return sorted(files, key=lambda p: int(p.stem.split("_")[-1]))


def load_node_test(name: str) -> NodeTest:
    import onnx

    d = node_dir() / name
    data = (d / "model.onnx").read_bytes()
    model = onnx.load_model_from_string(data)
    test = NodeTest(name=name, model_bytes=data)
    test.unsupported = _io_problem(model)
    if test.unsupported:
        return test
    for ds in sorted(d.glob("test_data_set_*"), key=lambda p: int(p.name.rsplit("_", 1)[1])):
        ins = [_read_tensor(p) for p in _numbered(ds, "input_")]
        outs = [_read_tensor(p) for p in _numbered(ds, "output_")]
        test.data_sets.append((ins, outs))
    return test


def compare_outputs(got: list[np.ndarray], want: list[np.ndarray]) -> str | None:
    """None when every output matches; otherwise the first difference, in words.

    Floats: ``|got - want| <= ATOL + RTOL * |want|`` elementwise, NaN equal to NaN, infinities
    equal only with the same sign. Integers and booleans: exactly. Shapes and dtypes: exactly
    (an executable that changed a function's types is a mismatch).
    """
    if len(got) != len(want):
        return f"{len(got)} outputs, expected {len(want)}"
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        g = np.asarray(g)
        if g.dtype != w.dtype:
            return f"output {i}: dtype {g.dtype}, expected {w.dtype}"
        if g.shape != w.shape:
            return f"output {i}: shape {g.shape}, expected {w.shape}"
        if np.issubdtype(w.dtype, np.floating):
            ok = np.isclose(g, w, rtol=RTOL, atol=ATOL, equal_nan=True)
            if not ok.all():
                bad = int((~ok).sum())
                err = np.abs(g.astype(np.float64) - w.astype(np.float64))
                err = err[~ok]
                return (
                    f"output {i}: {bad}/{w.size} elements differ "
                    f"(max abs error {np.nanmax(err) if err.size else float('nan'):.3g})"
                )
        elif not np.array_equal(g, w):
            bad = int((g != w).sum())
            return f"output {i}: {bad}/{w.size} elements differ"
    return None


def repo_root() -> Path:
    return Path(os.path.dirname(os.path.abspath(__file__))).parent.parent
