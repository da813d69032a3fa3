"""Small graphs in every input kind, with the numpy function each computes (test fixtures)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

LINALG = """
// y = relu(x @ w + b) written in linalg on tensors
#map_b = affine_map<(i, j) -> (j)>
#map_id = affine_map<(i, j) -> (i, j)>
func.func @main(%x: tensor<4x8xf32>, %w: tensor<8x3xf32>, %b: tensor<3xf32>) -> tensor<4x3xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<4x3xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%empty : tensor<4x3xf32>) -> tensor<4x3xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x3xf32>) outs(%fill : tensor<4x3xf32>) -> tensor<4x3xf32>
  %r = linalg.generic {indexing_maps = [#map_id, #map_b, #map_id], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %b : tensor<4x3xf32>, tensor<3xf32>) outs(%empty : tensor<4x3xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    %m = arith.maximumf %s, %zero : f32
    linalg.yield %m : f32
  } -> tensor<4x3xf32>
  return %r : tensor<4x3xf32>
}
"""

STABLEHLO = """
func.func @main(%x: tensor<4x8xf32>, %w: tensor<8x3xf32>, %b: tensor<3xf32>) -> tensor<4x3xf32> {
  %mm = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  %bb = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<3xf32>) -> tensor<4x3xf32>
  %s = stablehlo.add %mm, %bb : tensor<4x3xf32>
  %t = stablehlo.tanh %s : tensor<4x3xf32>
  return %t : tensor<4x3xf32>
}
"""

TOSA = """
func.func @main(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %s = tosa.add %x, %y : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %e = tosa.exp %s : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %m = tosa.maximum %e, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %m : tensor<4x8xf32>
}
"""

TORCH = """
func.func @main(%x: !torch.vtensor<[4,8],f32>, %w: !torch.vtensor<[8,3],f32>, %b: !torch.vtensor<[3],f32>) -> !torch.vtensor<[4,3],f32> {
  %int1 = torch.constant.int 1
  %mm = torch.aten.mm %x, %w : !torch.vtensor<[4,8],f32>, !torch.vtensor<[8,3],f32> -> !torch.vtensor<[4,3],f32>
  %s = torch.aten.add.Tensor %mm, %b, %int1 : !torch.vtensor<[4,3],f32>, !torch.vtensor<[3],f32>, !torch.int -> !torch.vtensor<[4,3],f32>
  %r = torch.aten.sigmoid %s : !torch.vtensor<[4,3],f32> -> !torch.vtensor<[4,3],f32>
  return %r : !torch.vtensor<[4,3],f32>
}
"""


def onnx_mlp(graph_name: str = "mlp") -> bytes:
    """relu(x @ W + b) @ W2 with constant weights, as an ONNX model (opset 17)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w = rng.standard_normal((8, 16)).astype(np.float32)
    b = rng.standard_normal(16).astype(np.float32)
    w2 = rng.standard_normal((16, 3)).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"]),
        helper.make_node("Add", ["h", "b"], ["hb"]),
        helper.make_node("Relu", ["hb"], ["r"]),
        helper.make_node("MatMul", ["r", "w2"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        graph_name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 3])],
        initializer=[
            numpy_helper.from_array(w, "w"),
            numpy_helper.from_array(b, "b"),
            numpy_helper.from_array(w2, "w2"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString()


def onnx_external_data(location: str = "../../etc/passwd") -> bytes:
    """An ONNX model whose initializer ``w`` claims its data lives in the file ``location``."""
    from onnx import TensorProto, helper

    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4])
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", "0"), ("length", "16")):
        e = t.external_data.add()
        e.key, e.value = k, v
    g = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
        initializer=[t],
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def onnx_mlp_reference(x: np.ndarray) -> np.ndarray:
    rng = np.random.default_rng(0)
    w = rng.standard_normal((8, 16)).astype(np.float32)
    b = rng.standard_normal(16).astype(np.float32)
    w2 = rng.standard_normal((16, 3)).astype(np.float32)
    return np.maximum(x @ w + b, 0) @ w2


def _inputs3(rng: np.random.Generator) -> list[np.ndarray]:
    return [
        rng.standard_normal((4, 8)).astype(np.float32),
        rng.standard_normal((8, 3)).astype(np.float32),
        rng.standard_normal(3).astype(np.float32),
    ]


# name -> (source bytes, entry function, inputs factory, numpy reference)
CASES: dict[str, tuple[bytes, str, Callable[[np.random.Generator], list[np.ndarray]], Callable[..., np.ndarray]]] = {
    "linalg": (LINALG.encode(), "main", _inputs3, lambda x, w, b: np.maximum(x @ w + b, 0)),
    "stablehlo": (STABLEHLO.encode(), "main", _inputs3, lambda x, w, b: np.tanh(x @ w + b)),
    "tosa": (
        TOSA.encode(),
        "main",
        lambda r: [r.standard_normal((4, 8)).astype(np.float32) for _ in range(2)],
        lambda x, y: np.maximum(np.exp(x + y), x),
    ),
    "torch": (TORCH.encode(), "main", _inputs3, lambda x, w, b: 1 / (1 + np.exp(-(x @ w + b)))),
}


def onnx_model(
    name: str,
    nodes: Sequence[Any],
    inputs: Sequence[Any],
    outputs: Sequence[Any],
    inits: Mapping[str, np.ndarray],
) -> tuple[bytes, Any]:
    """An opset-17 ONNX model of ``nodes`` with ``inits`` as initializers, checked by onnx's
    full checker: (serialized bytes, ModelProto)."""
    import onnx
    from onnx import helper, numpy_helper

    graph = helper.make_graph(
        list(nodes), name, list(inputs), list(outputs),
        initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model.SerializeToString(), model
