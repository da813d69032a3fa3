"""Every allow-listed arch compiles with the installed compiler, and the artifact is what it says.

This keeps the allow-list from drifting from the compiler: an arch the compiler no longer knows
fails here, not in production (unknown names crash iree-compile).
"""

from __future__ import annotations

import pytest

from kiln.compiler.pipeline import Pipeline
from kiln.targets import kinds
from tests import artifacts

ADD = b"""
func.func @main(%a: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<16xf32> {
  %0 = arith.addf %a, %b : tensor<16xf32>
  return %0 : tensor<16xf32>
}
"""

EXPECTED_FORMAT = {
    "cpu": "embedded-elf",
    "cuda": "cuda-nvptx-fb",
    "rocm": "rocm-hsaco-fb",
    "vulkan": "vulkan-spirv-fb",
    "metal": "metal-msl-fb",
}


def _all_targets() -> list[str]:
    out = []
    for kind, k in sorted(kinds().items()):
        for arch in k.info().archs:
            out.append(f"{kind}:{arch}")
    return out


@pytest.fixture(scope="module")
def matrix(pipeline: Pipeline) -> dict[str, bytes]:
    # One request per kind: the pipeline compiles its targets in parallel on the worker pool.
    result: dict[str, bytes] = {}
    by_kind: dict[str, list[str]] = {}
    for t in _all_targets():
        by_kind.setdefault(t.split(":")[0], []).append(t)
    chunks = [ts[i : i + 8] for ts in by_kind.values() for i in range(0, len(ts), 8)]
    for targets in chunks:
        res = pipeline.compile(ADD, targets=targets)
        assert not res.errors, [(e.target, e.error.message) for e in res.errors]
        for a in res.artifacts:
            assert a.data is not None
            result[a.target] = a.data
    return result


@pytest.mark.parametrize("target", _all_targets())
def test_every_allow_listed_arch_compiles_to_the_right_format(
    matrix: dict[str, bytes], target: str
) -> None:
    from kiln.targets import parse_target

    spec = parse_target(target)
    data = matrix[spec.target]
    assert artifacts.has_format(data, EXPECTED_FORMAT[spec.kind])
    if spec.kind == "cpu":
        assert artifacts.elf_machines(data) == [spec.arch]
    elif spec.kind == "cuda":
        assert artifacts.ptx_targets(data) == [spec.arch]
    elif spec.kind == "rocm":
        assert artifacts.hsaco_archs(data) == [spec.arch]
    elif spec.kind == "vulkan":
        assert artifacts.has_spirv(data)
