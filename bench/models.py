"""Reference models built in code (onnx.helper, seeded random weights, no downloads).

- ``resnet18``: the ResNet-18 topology (BasicBlocks [2, 2, 2, 2], 224×224), BatchNorm folded into
  the convolutions as PyTorch's exporter does in eval mode.
- ``mobilenet``: a MobileNetV2-style network (inverted residuals, depthwise 3×3, ReLU6), 224×224.
- ``encoder``: a BERT-base-like transformer encoder layer (seq 128, d 256, 4 heads, FFN 1024, ×2).
- ``resnet50s``: a ResNet-50-style bottleneck network (three stages of two 1×1-3×3-1×1 blocks,
  strided 1×1 projections), 224×224: where 1×1 convolutions carry the arithmetic.

Each builder returns an ``onnx.ModelProto`` (opset 17) with one input ``x``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class _G:
    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.n = 0

    def name(self, p: str) -> str:
        self.n += 1
        return f"{p}{self.n}"

    def const(self, arr: np.ndarray, p: str = "w") -> str:
        n = self.name(p)
        self.inits.append(numpy_helper.from_array(arr, n))
        return n

    def node(self, op: str, ins: list[str], **attrs: object) -> str:
        out = self.name(op.lower())
        self.nodes.append(helper.make_node(op, ins, [out], **attrs))
        return out

    def conv(self, x: str, cin: int, cout: int, k: int, *, stride: int = 1, group: int = 1) -> str:
        fan_in = cin // group * k * k
        w = (self.rng.standard_normal((cout, cin // group, k, k)) * np.sqrt(2.0 / fan_in)).astype(
            np.float32
        )
        b = (self.rng.standard_normal(cout) * 0.01).astype(np.float32)
        pad = k // 2
        return self.node(
            "Conv",
            [x, self.const(w), self.const(b, "b")],
            kernel_shape=[k, k],
            strides=[stride, stride],
            pads=[pad] * 4,
            group=group,
        )

    def relu(self, x: str) -> str:
        return self.node("Relu", [x])

    def relu6(self, x: str) -> str:
        lo = self.const(np.array(0.0, np.float32), "lo")
        hi = self.const(np.array(6.0, np.float32), "hi")
        return self.node("Clip", [x, lo, hi])

    def linear(self, x: str, din: int, dout: int) -> str:
        w = (self.rng.standard_normal((din, dout)) / np.sqrt(din)).astype(np.float32)
        b = (self.rng.standard_normal(dout) * 0.01).astype(np.float32)
        return self.node("Add", [self.node("MatMul", [x, self.const(w)]), self.const(b, "b")])

    def model(self, name: str, x_shape: list[int], out: str, out_shape: list[int]) -> onnx.ModelProto:
        graph = helper.make_graph(
            self.nodes,
            name,
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
            [helper.make_tensor_value_info(out, TensorProto.FLOAT, out_shape)],
            initializer=self.inits,
        )
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        m.ir_version = 8
        onnx.checker.check_model(m)
        return m


def _head(g: _G, x: str, c: int, classes: int = 1000) -> str:
    gap = g.node("GlobalAveragePool", [x])
    flat = g.node("Flatten", [gap], axis=1)
    return g.linear(flat, c, classes)


def resnet18(*, size: int = 224, seed: int = 0) -> onnx.ModelProto:
    g = _G(seed)
    x = g.relu(g.conv("x", 3, 64, 7, stride=2))
    x = g.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        for block in range(2):
            s = stride if block == 0 else 1
            y = g.relu(g.conv(x, cin, cout, 3, stride=s))
            y = g.conv(y, cout, cout, 3)
            short = g.conv(x, cin, cout, 1, stride=s) if (s != 1 or cin != cout) else x
            x = g.relu(g.node("Add", [y, short]))
            cin = cout
    return g.model("resnet18", [1, 3, size, size], _head(g, x, 512), [1, 1000])


def mobilenet(*, size: int = 224, seed: int = 0) -> onnx.ModelProto:
    g = _G(seed)
    x = g.relu6(g.conv("x", 3, 32, 3, stride=2))
    cin = 32
    for t, c, n, s in ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                       (6, 160, 3, 2), (6, 320, 1, 1)):
        for i in range(n):
            stride = s if i == 0 else 1
            hidden = cin * t
            y = g.relu6(g.conv(x, cin, hidden, 1)) if t != 1 else x
            y = g.relu6(g.conv(y, hidden, hidden, 3, stride=stride, group=hidden))
            y = g.conv(y, hidden, c, 1)
            x = g.node("Add", [x, y]) if (stride == 1 and cin == c) else y
            cin = c
    x = g.relu6(g.conv(x, cin, 1280, 1))
    return g.model("mobilenet", [1, 3, size, size], _head(g, x, 1280), [1, 1000])


def resnet50s(*, size: int = 224, seed: int = 0) -> onnx.ModelProto:
    """ResNet-50-style bottleneck network, three stages of two blocks (1x1 -> 3x3 -> 1x1, with
    strided 1x1 projections): the 1x1 convolutions carry most of the arithmetic."""
    g = _G(seed)
    x = g.relu(g.conv("x", 3, 64, 7, stride=2))
    x = g.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for mid, cout, n, stride in ((64, 256, 2, 1), (128, 512, 2, 2), (256, 1024, 2, 2)):
        for i in range(n):
            s = stride if i == 0 else 1
            y = g.relu(g.conv(x, cin, mid, 1))
            y = g.relu(g.conv(y, mid, mid, 3, stride=s))
            y = g.conv(y, mid, cout, 1)
            short = g.conv(x, cin, cout, 1, stride=s) if (s != 1 or cin != cout) else x
            x = g.relu(g.node("Add", [y, short]))
            cin = cout
    return g.model("resnet50s", [1, 3, size, size], _head(g, x, cin), [1, 1000])


def encoder(*, seq: int = 128, d: int = 256, heads: int = 4, ffn: int = 1024, layers: int = 2,
            seed: int = 0) -> onnx.ModelProto:
    g = _G(seed)
    hd = d // heads

    def layer_norm(x: str) -> str:
        scale = g.const(np.ones(d, np.float32), "ln_s")
        bias = g.const(np.zeros(d, np.float32), "ln_b")
        return g.node("LayerNormalization", [x, scale, bias], axis=-1, epsilon=1e-5)

    def split_heads(x: str) -> str:
        shape = g.const(np.array([1, seq, heads, hd], np.int64), "shape")
        return g.node("Transpose", [g.node("Reshape", [x, shape])], perm=[0, 2, 1, 3])

    x = "x"
    for _ in range(layers):
        q, k, v = (split_heads(g.linear(x, d, d)) for _ in range(3))
        kt = g.node("Transpose", [k], perm=[0, 1, 3, 2])
        scale = g.const(np.array(1.0 / np.sqrt(hd), np.float32), "scale")
        att = g.node("Softmax", [g.node("Mul", [g.node("MatMul", [q, kt]), scale])], axis=-1)
        ctx = g.node("Transpose", [g.node("MatMul", [att, v])], perm=[0, 2, 1, 3])
        ctx = g.node("Reshape", [ctx, g.const(np.array([1, seq, d], np.int64), "shape")])
        x = layer_norm(g.node("Add", [x, g.linear(ctx, d, d)]))
        h = g.linear(x, d, ffn)
        # GELU (tanh form would be more ops; Erf form as PyTorch exports it)
        inv_sqrt2 = g.const(np.array(1 / np.sqrt(2), np.float32), "c")
        half = g.const(np.array(0.5, np.float32), "c")
        one = g.const(np.array(1.0, np.float32), "c")
        erf = g.node("Erf", [g.node("Mul", [h, inv_sqrt2])])
        h = g.node("Mul", [g.node("Mul", [h, half]), g.node("Add", [erf, one])])
        x = layer_norm(g.node("Add", [x, g.linear(h, ffn, d)]))
    return g.model("encoder", [1, seq, d], x, [1, seq, d])


MODELS: dict[str, Callable[[], onnx.ModelProto]] = {
    "resnet18": resnet18,
    "mobilenet": mobilenet,
    "encoder": encoder,
    "resnet50s": resnet50s,
}


def sample_input(model: onnx.ModelProto, seed: int = 0) -> np.ndarray:
    dims = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    return np.random.default_rng(seed).standard_normal(dims).astype(np.float32)
