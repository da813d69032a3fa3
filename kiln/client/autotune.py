"""Autotune: compile a few allow-listed presets, time them on this machine, keep the fastest.

    from kiln.cli.backends import EmbeddedBackend, compile_fn
    from kiln.client.autotune import autotune
    with Pipeline() as p:
        result = autotune(data, target=t, compile=compile_fn(EmbeddedBackend(p), data, target=t))
    result.options          # {"preset": "conv-direct"} or {} (the default won)

The candidates are presets (``kiln.targets.presets.autotune_presets``), the ``default`` preset
always among them, so only allow-listed flag sets are ever compiled and the choice is part of every
later compile key like any other option. ``compile`` is any callable ``options -> executable
bytes``: any ``kiln.cli.backends.Backend`` (``compile_fn``) or the HTTP client, so tuning works in
both modes and the compile itself is cached where it always is.

Timing: every candidate is loaded with ``iree.runtime`` on ``driver``, warmed up, then all are
called in turn ``repeats`` times (alternating, so load on a shared machine hits them alike); the
median wins. A candidate is kept only if it is strictly faster than ``default`` (ties go to
``default``) and its outputs agree with ``default``'s (rtol 1e-3, atol 1e-4); a candidate that
fails to compile, load or run is skipped (recorded in ``TuneResult.skipped``).

Memory: the choice is stored as one small JSON file per key under ``$KILN_CLIENT_CACHE_DIR/tuning``
(else ``~/.cache/kiln/tuning``), keyed by sha256 of: the graph (the sha256 of its bytes, or
``graph_digest`` when given), the normalized target, the runtime identity (iree.runtime version,
driver, device: the CPU model and Kiln CPU target, or the GPU's name), and ``TUNING_KEY_VERSION``.
A later call with the same key returns the stored choice without compiling (``cached=True``).
Writes are atomic (temp file + rename); an unreadable entry is ignored and re-tuned.

Fleet (kiln/client/tuning.py): ``advice()`` is asked before tuning; a preset it names (one of
``candidates`` when they are given) is the choice, stored like a measured one, with no compile
and no timing (``source="fleet"``). ``report(result)`` is called after a measurement.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kiln.errors import InvalidRequest, KilnError
from kiln.files import atomic_write, cache_home

__all__ = [
    "TUNING_KEY_VERSION",
    "CompileFn",
    "TuneResult",
    "autotune",
    "default_tuning_dir",
    "tuned_options",
]

TUNING_KEY_VERSION = 1  # bump when an input of the tuning key or the stored format changes

CompileFn = Callable[[Mapping[str, Any]], bytes]
"""``options -> .vmfb bytes`` for the graph and target being tuned (raises ``KilnError``)."""


@dataclass(frozen=True)
class TuneResult:
    """What autotune chose. ``options`` are to be passed to later compiles (``{}`` = defaults).

    ``timings_ms``: preset → median call time in milliseconds on this machine (empty when
    ``cached`` and the entry was written by an older version, or when the choice came from the
    fleet); ``samples``: preset → timed calls behind it. ``compiles``: how many compiles this
    call requested (0 when ``cached``). ``source``: ``measured`` here, ``stored`` (read back) or
    ``fleet`` (the server's choice, kiln/client/tuning.py).
    """

    preset: str
    options: dict[str, Any]
    timings_ms: dict[str, float]
    key: str
    cached: bool
    compiles: int = 0
    runtime: dict[str, str] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    samples: dict[str, int] = field(default_factory=dict)
    source: str = "measured"

    def to_json(self) -> dict[str, Any]:
        return {
            "preset": self.preset,
            "options": dict(self.options),
            "timings_ms": dict(self.timings_ms),
            "key": self.key,
            "cached": self.cached,
            "compiles": self.compiles,
            "runtime": dict(self.runtime),
            "skipped": dict(self.skipped),
            "samples": dict(self.samples),
            "source": self.source,
        }


def default_tuning_dir() -> Path:
    """The client cache's ``tuning/`` folder (``kiln.files.cache_home("client")``), where
    ``Client.load(autotune=True)`` keeps its choices too."""
    return cache_home("client") / "tuning"


def autotune(
    graph: bytes,
    *,
    target: str,
    compile: CompileFn,
    inputs: Sequence[np.ndarray] | None = None,
    function: str | None = None,
    driver: str | None = None,
    candidates: Sequence[str] | None = None,
    graph_digest: str | None = None,
    repeats: int = 15,
    cache_dir: str | os.PathLike[str] | None = None,
    refresh: bool = False,
    advice: Callable[[], str | None] | None = None,
    report: Callable[[TuneResult], None] | None = None,
) -> TuneResult:
    """Tune ``graph`` (ONNX or MLIR bytes) for ``target`` on this machine; see the module doc.

    ``inputs`` default to seeded random arrays shaped like the entry point's arguments (from the
    ONNX graph inputs, else from the executable's reflection). ``function`` defaults to the
    executable's first exported function. ``candidates`` are preset names (``"default"`` is
    always added first); by default the presets that differ for this graph's class.
    ``refresh=True`` re-tunes even when a choice is stored. Raises ``InvalidRequest`` for an
    unknown preset and the ``default`` compile's own error if even that fails. ``advice`` and
    ``report``: the fleet's hooks (module docstring); neither may raise.
    """
    from kiln.client.runtime import driver_for_target
    from kiln.targets.presets import PRESETS, autotune_presets

    target = _normalize_target(target)
    driver = driver or driver_for_target(target)
    runtime = runtime_identity(driver, target)
    key = tuning_key(graph, target=target, runtime=runtime, graph_digest=graph_digest)
    path = Path(cache_dir) if cache_dir is not None else default_tuning_dir()
    entry = path / f"{key}.json"
    if not refresh:
        stored = _read_entry(entry)
        if stored is not None:
            return TuneResult(
                preset=stored["preset"],
                options=dict(stored["options"]),
                timings_ms=dict(stored.get("timings_ms", {})),
                key=key,
                cached=True,
                runtime=runtime,
                source="stored",
            )
        preset = advice() if advice is not None else None
        if preset is not None and (candidates is None or preset in ("default", *candidates)):
            told = TuneResult(preset=preset, options=_options_for(preset), timings_ms={},
                              key=key, cached=False, runtime=runtime, source="fleet")
            _write_entry(entry, {**told.to_json(), "target": target, "created": time.time()})
            return told

    kind = target.split(":", 1)[0]
    names = list(candidates) if candidates is not None else list(
        autotune_presets(kind, cheap_traits(graph))
    )
    for n in names:
        if n not in PRESETS:
            raise InvalidRequest(f"unknown preset {n!r}", detail={"allowed": list(PRESETS)})
    names = ["default", *[n for n in dict.fromkeys(names) if n != "default"]]

    fns: dict[str, Callable[..., Any]] = {}
    digests: dict[str, str] = {}
    skipped: dict[str, str] = {}
    compiles = 0
    args: list[np.ndarray] | None = list(inputs) if inputs is not None else None
    reference: Any = None
    for name in names:
        opts = _options_for(name)
        compiles += 1
        try:
            data = compile(opts)
        except Exception as exc:
            if name == "default":
                raise
            why = f"{exc.code}: {exc.message}" if isinstance(exc, KilnError) else repr(exc)
            skipped[name] = f"compile: {why[:200]}"
            continue
        digest = hashlib.sha256(data).hexdigest()
        same = next((n for n, d in digests.items() if d == digest), None)
        if same is not None:
            skipped[name] = f"same executable as {same!r}"
            continue
        try:
            fn, fname = _load(data, driver=driver, function=function)
            if args is None:
                args = default_inputs(graph, data=data, function=fname)
            out = fn(*args)
            if name == "default":
                reference = out
            elif not _agrees(out, reference):
                skipped[name] = "outputs differ from the default preset's"
                continue
        except Exception as exc:
            if name == "default":
                raise
            skipped[name] = f"run: {type(exc).__name__}: {str(exc)[:200]}"
            continue
        digests[name] = digest
        fns[name] = fn

    assert args is not None
    times: dict[str, list[float]] = {n: [] for n in fns}
    for fn in fns.values():  # warm-up (first calls allocate and page in)
        fn(*args)
    order = list(fns)
    for r in range(max(1, repeats)):
        # Rotate the order each round: no candidate always runs right after the same one
        # (what ran before moves a timing on a shared VM; docs/performance.md, "Measuring").
        for n in order[r % len(order):] + order[:r % len(order)]:
            t0 = time.perf_counter()
            fns[n](*args)
            times[n].append(time.perf_counter() - t0)
    timings = {n: statistics.median(v) * 1e3 for n, v in times.items()}
    best = min(timings, key=lambda n: (timings[n], n != "default"))
    if timings[best] >= timings["default"]:
        best = "default"

    result = TuneResult(
        preset=best,
        options=_options_for(best),
        timings_ms={n: round(v, 4) for n, v in timings.items()},
        key=key,
        cached=False,
        compiles=compiles,
        runtime=runtime,
        skipped=skipped,
        samples={n: len(v) for n, v in times.items()},
    )
    _write_entry(entry, {**result.to_json(), "target": target, "created": time.time()})
    if report is not None:
        report(result)
    return result


def tuned_options(
    graph: bytes, *, target: str, compile: CompileFn, **kwargs: Any
) -> dict[str, Any]:
    """The options to compile ``graph`` for ``target`` with on this machine: the stored choice, or
    a fresh ``autotune`` (same keyword arguments) when none is stored. For ``Client.load``."""
    return autotune(graph, target=target, compile=compile, **kwargs).options


# -- keys ------------------------------------------------------------------------------------


def tuning_key(
    graph: bytes, *, target: str, runtime: Mapping[str, str], graph_digest: str | None = None
) -> str:
    doc = {
        "v": TUNING_KEY_VERSION,
        "graph": graph_digest or "sha256:" + hashlib.sha256(graph).hexdigest(),
        "target": target,
        "runtime": dict(sorted(runtime.items())),
    }
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def runtime_identity(driver: str, target: str) -> dict[str, str]:
    """What decides which executable is fastest here: runtime version, driver and device."""
    return {"iree_runtime": _runtime_version(), "driver": driver, "device": _device_name(driver)}


@functools.cache
def _runtime_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    for dist in ("iree-base-runtime", "iree-runtime"):
        try:
            return version(dist)
        except PackageNotFoundError:
            continue
    return "unknown"


@functools.cache
def _device_name(driver: str) -> str:
    if driver.startswith("local"):
        from kiln.client.resolver import detect_cpu

        cpu = detect_cpu()
        return f"{cpu.model_name} | {cpu.target} | {os.cpu_count()} cpus"
    try:
        import iree.runtime as rt

        devices = rt.get_driver(driver).query_available_devices()
        return str(devices[0].get("name", "")) if devices else ""
    except Exception:  # noqa: BLE001 - identity is best effort; the driver name still keys it
        return ""


def _normalize_target(target: str) -> str:
    try:
        from kiln.targets import parse_target

        return parse_target(target).target
    except KilnError:
        raise
    except Exception:  # noqa: BLE001 - no compiler here (remote client): keep the given form
        return target


def _options_for(preset: str) -> dict[str, Any]:
    return {} if preset == "default" else {"preset": preset}


# -- the stored choice -----------------------------------------------------------------------


def _read_entry(path: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("options"), dict):
        return None
    if not isinstance(doc.get("preset"), str):
        return None
    return doc


def _write_entry(path: Path, doc: Mapping[str, Any]) -> None:
    atomic_write(path, json.dumps(doc, indent=1, sort_keys=True).encode())


# -- graphs, inputs, outputs -----------------------------------------------------------------

# An op name in MLIR text (custom or generic form): ``linalg.matmul``, ``"tosa.conv2d"``.
_MLIR_OP_NAME = re.compile(r"(?<![\w.%@#!$])([a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)+)\b")


def cheap_traits(graph: bytes) -> dict[str, int]:
    """Op counts without the compiler (the client may have none), from the same table as the
    server's ``kiln.dialects.traits``: from the ONNX protobuf, or a scan of MLIR text. Depthwise
    convolutions are told apart where the table or the ONNX weights say so (``stablehlo`` and
    ``torch`` ones count as plain convolutions here). Only used to choose which presets to try;
    unknown -> all zero."""
    from kiln.dialects.traits import ONNX_OPS, op_kind

    counts = {"conv": 0, "depthwise_conv": 0, "matmul": 0, "attention": 0}
    model = _onnx_model(graph)
    if model is not None:
        shapes = {t.name: list(t.dims) for t in model.graph.initializer}
        for node in model.graph.node:
            kind = ONNX_OPS.get(node.op_type)
            if kind == "conv":
                group = next((a.i for a in node.attribute if a.name == "group"), 1)
                w = shapes.get(node.input[1] if len(node.input) > 1 else "", [])
                if group > 1 and len(w) > 1 and w[1] == 1:
                    kind = "depthwise_conv"
            _add(counts, kind)
        return counts
    try:
        text = graph.decode("utf-8")
    except UnicodeDecodeError:
        return counts
    for m in _MLIR_OP_NAME.finditer(re.sub(r"//[^\n]*", "", text)):
        _add(counts, op_kind(m.group(1)))
    return counts


def _add(counts: dict[str, int], kind: str | None) -> None:
    if kind == "depthwise_conv":
        counts["conv"] += 1
    if kind is not None:
        counts[kind] += 1


def _onnx_model(graph: bytes) -> Any:
    from kiln.dialects.detect import detect_format
    from kiln.dialects.types import GraphFormat

    try:
        if detect_format(graph) is not GraphFormat.ONNX:
            return None
        import onnx

        model = onnx.load_model_from_string(graph)
    except Exception:  # noqa: BLE001 - not ONNX, or no onnx package here
        return None
    return model if len(model.graph.node) else None


_ONNX_DTYPES = {
    1: np.float32, 10: np.float16, 11: np.float64, 6: np.int32, 7: np.int64, 9: np.bool_,
}
_DECL_RE = re.compile(r"tensor<([0-9x?]*?)x?([a-z]+\d*)>")
_MLIR_DTYPES = {"f32": np.float32, "f16": np.float16, "f64": np.float64, "i32": np.int32,
                "i64": np.int64, "i1": np.bool_, "i8": np.int8}


def default_inputs(
    graph: bytes, *, data: bytes | None = None, function: str | None = None
) -> list[np.ndarray]:
    """Seeded random inputs for the graph's entry point: from the ONNX inputs (symbolic dims = 1),
    else from the executable's reflection (``iree.abi.declaration``). Raises ``InvalidRequest``
    when neither says (give ``inputs``)."""
    rng = np.random.default_rng(0)
    model = _onnx_model(graph)
    if model is not None:
        init = {t.name for t in model.graph.initializer}
        out = []
        for vi in model.graph.input:
            if vi.name in init:
                continue
            tt = vi.type.tensor_type
            dims = [d.dim_value if d.dim_value > 0 else 1 for d in tt.shape.dim]
            out.append(_random(rng, dims, _ONNX_DTYPES.get(tt.elem_type, np.float32)))
        return out
    decl = _declaration(data, function) if data is not None else ""
    args = decl.split("->", 1)[0]
    found = _DECL_RE.findall(args)
    if not found:
        raise InvalidRequest("cannot infer the inputs' shapes for autotuning; pass inputs=")
    out = []
    for dims, dt in found:
        shape = [int(d) if d.isdigit() else 1 for d in dims.split("x") if d]
        out.append(_random(rng, shape, _MLIR_DTYPES.get(dt, np.float32)))
    return out


def _random(rng: np.random.Generator, shape: list[int], dtype: Any) -> np.ndarray:
    if np.issubdtype(dtype, np.floating):
        return rng.standard_normal(shape).astype(dtype)
    if dtype is np.bool_:
        return rng.integers(0, 2, shape).astype(np.bool_)
    return rng.integers(0, 4, shape).astype(dtype)


def _declaration(data: bytes, function: str | None) -> str:
    import iree.runtime as rt

    inst = rt.VmInstance()
    vm = rt.VmModule.copy_buffer(inst, data)
    names = [function] if function else [
        n for n in vm.function_names if not n.startswith("__") and "$" not in n
    ]
    for n in names:
        fn = vm.lookup_function(n)
        if fn is not None:
            return str(fn.reflection.get("iree.abi.declaration", ""))
    return ""


def _load(data: bytes, *, driver: str, function: str | None) -> tuple[Callable[..., Any], str]:
    from kiln.client.runtime import load_vmfb

    mod = load_vmfb(data, driver=driver)
    name = function
    if name is None:
        import iree.runtime as rt

        vm = rt.VmModule.copy_buffer(rt.VmInstance(), data)
        public = [n for n in vm.function_names if not n.startswith("__") and "$" not in n]
        if not public:
            raise InvalidRequest("the executable exports no function to time")
        name = public[0]
    return mod[name], name


def _agrees(a: Any, b: Any) -> bool:
    if isinstance(a, (tuple, list)):
        return isinstance(b, (tuple, list)) and len(a) == len(b) and all(
            _agrees(x, y) for x, y in zip(a, b, strict=True)
        )
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if np.issubdtype(a.dtype, np.floating):
        return bool(np.allclose(a, b, rtol=1e-3, atol=1e-4, equal_nan=True))
    return bool(np.array_equal(a, b))
