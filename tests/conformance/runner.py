"""Run one node test through Kiln (or raw IREE) on a target, and classify the outcome.

Kiln path: ``Pipeline.compile`` (detect, Kiln's ONNX fix-ups, import, canonicalize; then compile in
the pool's worker processes) → the executable runs in an ``IsolatedChild`` → ``compare_outputs``.

Raw IREE path (the baseline): IREE's own ``iree-import-onnx`` main (default flags) in an
``IsolatedChild``, then ``iree-compile`` with IREE's defaults for the device only
(``RAW_FLAGS``; f64 is demoted to f32, as IREE does by default) in the same worker pool, then the
same runtime and comparison. Nothing Kiln adds is on this path.

Every failure becomes an ``Outcome``; nothing here raises for a bad test.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kiln.compiler.tasks import CompileJob
from tests.conformance.isolated import IsolatedChild, TaskCrashed, TaskFailed, TaskTimeout
from tests.conformance.suite import NodeTest, Outcome, compare_outputs, node_dir

if TYPE_CHECKING:
    from kiln.compiler.pipeline import Pipeline

__all__ = [
    "TargetResult",
    "KILN_TARGETS",
    "RAW_FLAGS",
    "run_kiln",
    "run_raw",
    "read_expectations",
    "write_expectations",
    "regressions",
]

# Column name → Kiln target string.
KILN_TARGETS = {"cpu": "cpu", "vulkan": "vulkan"}
# local-sync runs the same CPU executable as local-task, on the calling thread: no worker threads
# competing for the shared cores. The executable is what is under test, not the task system.
DRIVERS = {"cpu": "local-sync", "vulkan": "vulkan"}
# ``iree-compile`` with nothing but the device (IREE's defaults for everything else).
RAW_FLAGS = {
    "cpu": ("--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu"),
    "vulkan": ("--iree-hal-target-device=vulkan",),
}
RUN_TIMEOUT = 60.0
IMPORT_TIMEOUT = 60.0
_DETAIL = 300  # characters of detail kept per result


@dataclass(frozen=True)
class TargetResult:
    outcome: Outcome
    detail: str = ""
    graph_digest: str = ""  # Kiln's canonical digest of the imported graph ("" on the raw path)
    flags: tuple[str, ...] | None = None  # the iree-compile flags used, when known

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"outcome": self.outcome.value}
        if self.detail:
            d["detail"] = self.detail[:_DETAIL]
        if self.graph_digest:
            d["graph_digest"] = self.graph_digest
        if self.flags is not None:
            d["flags"] = list(self.flags)
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> TargetResult:
        flags = tuple(d["flags"]) if "flags" in d else None
        return cls(Outcome(d["outcome"]), d.get("detail", ""), d.get("graph_digest", ""), flags)


def _short(msg: str) -> str:
    return " ".join(msg.split())[:_DETAIL]


def execute_and_compare(
    child: IsolatedChild, test: NodeTest, vmfb: bytes, *, driver: str, function: str,
    digest: str = "",
) -> TargetResult:
    try:
        got = child.call(
            "execute",
            timeout=RUN_TIMEOUT,
            vmfb=vmfb,
            driver=driver,
            function=function,
            data_sets=[ins for ins, _ in test.data_sets],
        )
    except TaskTimeout as exc:
        return TargetResult(Outcome.TIMEOUT, f"run: {exc}", digest)
    except (TaskFailed, TaskCrashed) as exc:
        return TargetResult(Outcome.RUN_FAIL, _short(str(exc)), digest)
    for i, (outs, (_, want)) in enumerate(zip(got, test.data_sets, strict=True)):
        diff = compare_outputs(outs, want)
        if diff is not None:
            return TargetResult(Outcome.MISMATCH, f"data set {i}: {diff}", digest)
    return TargetResult(Outcome.PASS, "", digest)


def run_kiln(
    pipeline: Pipeline, child: IsolatedChild, test: NodeTest, columns: Sequence[str]
) -> dict[str, TargetResult]:
    """One compile request for every column's target, then one run per executable."""
    from kiln.errors import CompileError, CompileTimeout, InvalidGraph, KilnError

    if test.unsupported:
        return {c: TargetResult(Outcome.UNSUPPORTED_IO, test.unsupported) for c in columns}
    try:
        res = pipeline.compile(test.model_bytes, targets=[KILN_TARGETS[c] for c in columns])
    except CompileTimeout as exc:
        return {c: TargetResult(Outcome.TIMEOUT, _short(exc.message)) for c in columns}
    except InvalidGraph as exc:
        return {c: TargetResult(Outcome.IMPORT_FAIL, _short(exc.message)) for c in columns}
    except KilnError as exc:  # anything else before the per-target stage: the import failed
        return {c: TargetResult(Outcome.IMPORT_FAIL, _short(exc.message)) for c in columns}
    out: dict[str, TargetResult] = {}
    by_kind = {a.target.split(":", 1)[0]: a for a in res.artifacts}
    errors = {e.target.split(":", 1)[0]: e.error for e in res.errors}
    for c in columns:
        kind = KILN_TARGETS[c].split(":", 1)[0]
        if kind in errors:
            err = errors[kind]
            cls = Outcome.TIMEOUT if isinstance(err, CompileTimeout) else Outcome.COMPILE_FAIL
            failure = getattr(err, "failure", None) if isinstance(err, CompileError) else None
            cmd = list(failure.command) if failure is not None else []
            # cli_command: [iree-compile, *flags, input.mlir, -o, out.vmfb]
            flags = tuple(cmd[1:-3]) if len(cmd) > 4 else None
            out[c] = TargetResult(cls, _short(err.message), res.graph_digest, flags)
            continue
        art = by_kind[kind]
        assert art.data is not None
        r = execute_and_compare(
            child, test, art.data, driver=DRIVERS[kind], function=res.functions[0],
            digest=res.graph_digest,
        )
        # Kiln's own rewrites are recorded with the flags: a result holds only for both.
        used = tuple(art.flags) + tuple(f"kiln:rewrite={w}" for w in art.rewrites)
        out[c] = TargetResult(r.outcome, r.detail, r.graph_digest, used)
    return out


_FUNC_RE = re.compile(r'func\.func @("(?:[^"\\]|\\.)*"|[\w$.\-]+)\(')


def run_raw(
    pipeline: Pipeline, child: IsolatedChild, test: NodeTest, kinds: Sequence[str]
) -> dict[str, TargetResult]:
    """IREE alone: ``iree-import-onnx`` + ``iree-compile`` (defaults) + iree.runtime."""
    from kiln.errors import CompileError, CompileTimeout, KilnError

    if test.unsupported:
        return {k: TargetResult(Outcome.UNSUPPORTED_IO, test.unsupported) for k in kinds}
    try:
        mlir = child.call(
            "raw_import", timeout=IMPORT_TIMEOUT,
            model_path=str(node_dir() / test.name / "model.onnx"),
        )
    except TaskTimeout as exc:
        return {k: TargetResult(Outcome.TIMEOUT, f"import: {exc}") for k in kinds}
    except (TaskFailed, TaskCrashed) as exc:
        return {k: TargetResult(Outcome.IMPORT_FAIL, _short(str(exc))) for k in kinds}
    m = _FUNC_RE.search(mlir)
    function = m.group(1).strip('"') if m else test.name
    out: dict[str, TargetResult] = {}
    for k in kinds:
        try:
            built = pipeline.pool.run(
                CompileJob(mlir=mlir, flags=tuple(RAW_FLAGS[k]), engine="session", timeout=pipeline.compile_timeout),
                timeout=pipeline.compile_timeout + 5,
                command_hint=["iree-compile", *RAW_FLAGS[k]],
            )
        except CompileTimeout as exc:
            out[k] = TargetResult(Outcome.TIMEOUT, _short(exc.message))
            continue
        except (CompileError, KilnError) as exc:
            out[k] = TargetResult(Outcome.COMPILE_FAIL, _short(exc.message))
            continue
        out[k] = execute_and_compare(child, test, built.data, driver=DRIVERS[k], function=function)
    return out


# -- expectations: the ratchet -------------------------------------------------------------------

_HEADER = """\
# Node tests expected to PASS on this target (one name a line, sorted).
# Written by `python bench/conformance.py` (the full run); the CI sample fails when any test
# listed here fails. Removing a line is a regression: do it only with --accept-regressions.
"""


def read_expectations(path: Path) -> set[str]:
    if not path.is_file():
        return set()
    names = set()
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            names.add(line)
    return names


def write_expectations(path: Path, names: Iterable[str], *, header: str = "") -> None:
    body = "".join(f"{n}\n" for n in sorted(set(names)))
    path.write_text(_HEADER + header + body)


def regressions(
    expected: set[str], results: dict[str, TargetResult]
) -> dict[str, TargetResult]:
    """The expected passes, among ``results``, that did not pass."""
    return {
        name: r for name, r in sorted(results.items())
        if name in expected and r.outcome is not Outcome.PASS
    }
