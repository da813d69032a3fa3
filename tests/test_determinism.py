"""Same input → same bytes; reformatted graph → same digest; real changes → another digest."""

from __future__ import annotations

import pytest

from kiln.compiler.pipeline import Pipeline
from kiln.compiler.tasks import CompileJob
from tests.graphs import LINALG

REFORMATTED = """
// the same graph: other SSA names, comments, whitespace and locations
#mb = affine_map<(d0, d1) -> (d1)>
#mi = affine_map<(d0, d1) -> (d0, d1)>
module {
func.func @main(%input: tensor<4x8xf32> loc("model.py":1:1), %weights: tensor<8x3xf32>, %bias: tensor<3xf32>) -> tensor<4x3xf32> {
  %c0 = arith.constant 0.0 : f32 loc("x.py":10:2)
  %e = tensor.empty() : tensor<4x3xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x3xf32>) -> tensor<4x3xf32>
  // matmul
  %prod = linalg.matmul ins(%input, %weights : tensor<4x8xf32>, tensor<8x3xf32>)
                        outs(%z : tensor<4x3xf32>) -> tensor<4x3xf32>
  %out = linalg.generic {indexing_maps = [#mi, #mb, #mi], iterator_types = ["parallel", "parallel"]} ins(%prod, %bias : tensor<4x3xf32>, tensor<3xf32>) outs(%e : tensor<4x3xf32>) {
  ^bb0(%p: f32, %q: f32, %r: f32):
    %sum = arith.addf %p, %q : f32
    %relu = arith.maximumf %sum, %c0 : f32
    linalg.yield %relu : f32
  } -> tensor<4x3xf32>
  return %out : tensor<4x3xf32> loc(fused["a", "b"])
}
}
"""


def test_same_input_twice_gives_identical_bytes(pipeline: Pipeline) -> None:
    a = pipeline.compile(LINALG.encode(), targets=["cpu", "vulkan"])
    b = pipeline.compile(LINALG.encode(), targets=["cpu", "vulkan"])
    assert [x.digest for x in a.artifacts] == [x.digest for x in b.artifacts]
    assert [x.data for x in a.artifacts] == [x.data for x in b.artifacts]


def test_reformatted_graph_has_the_same_digest_and_bytes(pipeline: Pipeline) -> None:
    a = pipeline.compile(LINALG.encode(), targets=["cpu"])
    b = pipeline.compile(REFORMATTED.encode(), targets=["cpu"])
    assert a.graph_digest == b.graph_digest
    assert a.artifacts[0].digest == b.artifacts[0].digest


def test_a_real_change_changes_the_digest(pipeline: Pipeline) -> None:
    a = pipeline.prepare(LINALG.encode())
    b = pipeline.prepare(LINALG.replace("arith.maximumf", "arith.minimumf").encode())
    assert a.digest != b.digest


def test_engines_agree_byte_for_byte(pipeline: Pipeline) -> None:
    from kiln.targets import parse_target

    g = pipeline.prepare(LINALG.encode())
    spec = parse_target("cpu")
    outs = [
        pipeline.pool.run(
            CompileJob(mlir=g.mlir, flags=tuple(spec.flags), engine=engine),
            timeout=120,
        ).data
        for engine in ("session", "cli")
    ]
    assert outs[0] == outs[1]


def test_the_same_onnx_model_twice_has_one_digest(pipeline: Pipeline) -> None:
    # Imported twice by the same warm worker: weight (resource) names must not be uniqued apart.
    from tests.graphs import onnx_mlp

    digests = {pipeline.prepare(onnx_mlp()).digest for _ in range(3)}
    assert len(digests) == 1


def test_the_canonical_form_does_not_depend_on_the_dialects_loaded_up_front(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A worker's context loads only the dialects the parser meets (kiln.compiler.tasks._context);
    # the canonical text, and so the digest and the cache key, must be the one a context with
    # every registered dialect loaded prints.
    from iree.compiler import ir

    from kiln.compiler import tasks as worker_tasks
    from tests.graphs import STABLEHLO, TORCH, TOSA, onnx_mlp

    inputs = [g.encode() for g in (LINALG, STABLEHLO, TOSA, TORCH, REFORMATTED)] + [onnx_mlp()]
    lean = [worker_tasks.prepare(data=d) for d in inputs]
    monkeypatch.setattr(worker_tasks, "_context", lambda *load: ir.Context())
    full = [worker_tasks.prepare(data=d) for d in inputs]
    assert [p.mlir for p in lean] == [p.mlir for p in full]
    assert [p.digest for p in lean] == [p.digest for p in full]
