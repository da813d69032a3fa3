"""Write ``examples/mlp.onnx``: the same small MLP as ``mlp.mlir`` (y = relu(x @ w + b)), as an
ONNX model with its weights inside (w = 0.5, b = -1) and a dynamic batch dimension.

    .venv/bin/python examples/make_mlp_onnx.py      # rewrites examples/mlp.onnx, byte for byte

The output is deterministic (fixed IR version, opset and weights), so the committed file is
exactly what this script writes; ``tests/test_inspect.py`` checks that.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = Path(__file__).with_name("mlp.onnx")


def build() -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])
    w = numpy_helper.from_array(np.full((8, 3), 0.5, np.float32), "w")
    b = numpy_helper.from_array(np.full((3,), -1.0, np.float32), "b")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["xw"]),
         helper.make_node("Add", ["xw", "b"], ["xwb"]),
         helper.make_node("Relu", ["xwb"], ["y"])],
        "mlp", [x], [y], [w, b],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="kiln examples/make_mlp_onnx.py", ir_version=8)
    onnx.checker.check_model(model)
    return model


def main() -> int:
    data = build().SerializeToString(deterministic=True)
    OUT.write_bytes(data)
    print(f"wrote {OUT} ({len(data)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
