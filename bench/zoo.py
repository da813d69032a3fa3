"""A model zoo built from code (no downloads): torchvision and Hugging Face ``transformers``
architectures with seeded random weights, exported to ONNX, with reference outputs.

| name | suite | architecture | input, batch 1 |
|---|---|---|---|
| resnet18 | torchvision | BasicBlock [2, 2, 2, 2] | 3×224×224 |
| resnet50 | torchvision | Bottleneck [3, 4, 6, 3], v1.5 | 3×224×224 |
| mobilenet_v2 | torchvision | inverted residuals, ReLU6 | 3×224×224 |
| mobilenet_v3_large | torchvision | the paper's table, SE + hardswish | 3×224×224 |
| mobilenet_v3_small | torchvision | the paper's table, SE + hardswish | 3×224×224 |
| efficientnet_b0 | torchvision | MBConv table, SE + SiLU | 3×224×224 |
| regnet_y_400mf | torchvision | w [48, 104, 208, 440], d [1, 3, 6, 6], g 8, SE | 3×224×224 |
| convnext_tiny | torchvision | dims [96, 192, 384, 768], depths [3, 3, 9, 3] | 3×160×160 |
| shufflenet_v2 | torchvision | x1.0, repeats [4, 8, 4] | 3×224×224 |
| squeezenet1_1 | torchvision | Fire modules, ceil-mode pooling | 3×224×224 |
| densenet121 | torchvision | growth 32, blocks [6, 12, 24, 16] | 3×160×160 |
| unet | torchvision | U-Net, 4 levels 32..256 + 512, transposed convs | 3×128×128 |
| retinanet_head | torchvision | ResNet-18 trunk, FPN P3-P6 (128 ch), class/box heads | 3×256×256 |
| vit_tiny | transformers | ``ViTForImageClassification``: 12 layers, d 192, 3 heads | 3×224×224 |
| swin_tiny | transformers | ``SwinForImageClassification``: d 48, depths [2, 2, 2, 2] | 3×224×224 |
| bert | transformers | ``BertModel``: 4 layers, d 256, 4 heads, vocab 8192 | 128 ids |
| gpt2 | transformers | ``GPT2LMHeadModel``: 4 layers, d 256, 4 heads, no KV cache | 64 ids |
| t5 | transformers | ``T5Model``: 4 + 4 layers, d 256, 8 heads, FFN 1024 | 64 + 16 ids |
| lstm | torch.nn | ``nn.LSTM``: 2 layers, 128 → 256, linear head | 32 × 128 |
| gru | torch.nn | ``nn.GRU``: 2 layers, 128 → 256, linear head | 32 × 128 |

The torchvision suite is written out here from torchvision's sources (its wheels do not import
against the pinned CPU torch); ``retinanet_head`` and ``unet`` are those designs at reduced width.
``convnext_tiny`` and ``densenet121`` use 160×160 instead of 224, chosen to keep their compiles
short on a 2-core machine (the largest activations of the zoo otherwise); the ``unet`` and ``retinanet_head`` inputs are sizes
those tasks use at small scale. Transformers are small configs (random init,
``attn_implementation="eager"``: the attention is exported as plain MatMul/Softmax).

Every model is built with ``torch.manual_seed`` from its name, put in eval mode (BatchNorm
running statistics and affine parameters randomized too, so folding them is exercised), and
exported with the TorchScript exporter (``dynamo=False``, opset 17: the dynamo exporter emits
opset 18 and fails to convert it down). Batches are 1 and ``BIG_BATCH``, each exported with static
shapes. Built on demand and cached in ``bench/.zoo/v{ZOO_VERSION}/{name}-b{batch}/``:

- ``model.onnx``
- ``ref.npz``: the inputs (``in_{i}``), torch eager outputs (``torch_{i}``) and onnxruntime
  (CPU, 1 thread) outputs (``ort_{i}``)
- ``meta.json``: suite, source, input shapes, parameter count, export seconds, and the max abs
  difference torch vs onnxruntime

Bump ``ZOO_VERSION`` whenever a model, an input or the export changes: old folders are then
ignored (delete them by hand).

    .venv/bin/python bench/zoo.py --list
    .venv/bin/python bench/zoo.py build [--models resnet18,bert] [--batch 1,4]

Needs the ``bench`` extra (``pip install -e .[bench]``: torch, transformers, onnxruntime).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
ZOO_VERSION = 1
ZOO_DIR = Path(os.environ.get("KILN_ZOO_DIR", ROOT / "bench" / ".zoo"))
BIG_BATCH = 4
OPSET = 17


@dataclass(frozen=True)
class Spec:
    """One zoo model: ``build()`` returns an eval-mode ``torch.nn.Module``; ``inputs(batch, rng)``
    returns its example inputs (numpy, the exported graph's input order)."""

    name: str
    suite: str  # "torchvision", "transformers" or "torch.nn"
    source: str
    build: Callable[[], Any]
    inputs: Callable[[int, np.random.Generator], list[np.ndarray]]
    note: str = ""


# -- torchvision architectures, written out --------------------------------------------------------
# torchvision's wheels do not import against the CPU torch pinned in the bench extra, so the
# topologies are restated here from torchvision's sources (same layers, same order, same shapes).


def _nn() -> Any:
    from torch import nn

    return nn


def _cbr(cin: int, cout: int, k: int, s: int = 1, *, groups: int = 1, act: Any = "relu") -> Any:
    """Conv (no bias) + BatchNorm + activation, padding ``(k-1)//2``: torchvision's
    ``Conv2dNormActivation``. ``act``: "relu", "relu6", "hswish", "silu" or None."""
    nn = _nn()
    layers = [nn.Conv2d(cin, cout, k, s, (k - 1) // 2, groups=groups, bias=False),
              nn.BatchNorm2d(cout)]
    acts = {"relu": nn.ReLU, "relu6": nn.ReLU6, "hswish": nn.Hardswish, "silu": nn.SiLU}
    if act is not None:
        layers.append(acts[act](inplace=True))
    return nn.Sequential(*layers)


def _make_divisible(v: float, divisor: int = 8) -> int:
    new = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new + divisor if new < 0.9 * v else new


def _se(cin: int, squeeze: int, *, act: str = "relu", gate: str = "sigmoid") -> Any:
    """torchvision's ``SqueezeExcitation``: avgpool, 1×1, act, 1×1, gate, scale."""
    nn = _nn()

    class SE(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc1 = nn.Conv2d(cin, squeeze, 1)
            self.fc2 = nn.Conv2d(squeeze, cin, 1)
            self.act = {"relu": nn.ReLU, "silu": nn.SiLU}[act]()
            self.gate = {"sigmoid": nn.Sigmoid, "hsigmoid": nn.Hardsigmoid}[gate]()

        def forward(self, x: Any) -> Any:
            s = x.mean((2, 3), keepdim=True)
            return x * self.gate(self.fc2(self.act(self.fc1(s))))

    return SE()


def resnet(block: str, layers: Sequence[int]) -> Any:
    """torchvision ResNet (v1.5): ``block`` "basic" (expansion 1) or "bottleneck" (4)."""
    nn = _nn()
    exp = 1 if block == "basic" else 4

    class Block(nn.Module):
        def __init__(self, cin: int, width: int, stride: int) -> None:
            super().__init__()
            cout = width * exp
            if block == "basic":
                self.body = nn.Sequential(_cbr(cin, width, 3, stride),
                                          _cbr(width, cout, 3, act=None))
            else:
                self.body = nn.Sequential(_cbr(cin, width, 1), _cbr(width, width, 3, stride),
                                          _cbr(width, cout, 1, act=None))
            self.down = (_cbr(cin, cout, 1, stride, act=None)
                         if stride != 1 or cin != cout else nn.Identity())
            self.relu = nn.ReLU(inplace=True)

        def forward(self, x: Any) -> Any:
            return self.relu(self.body(x) + self.down(x))

    class ResNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Sequential(_cbr(3, 64, 7, 2), nn.MaxPool2d(3, 2, 1))
            stages, cin = [], 64
            for i, n in enumerate(layers):
                width = 64 << i
                for j in range(n):
                    stages.append(Block(cin, width, 2 if (j == 0 and i > 0) else 1))
                    cin = width * exp
            self.stages = nn.Sequential(*stages)
            self.fc = nn.Linear(cin, 1000)
            self.channels = cin

        def features(self, x: Any) -> list[Any]:
            """C2..C5 feature maps (for the detection head)."""
            x = self.stem(x)
            outs, k = [], 0
            for n in layers:
                for _ in range(n):
                    x = self.stages[k](x)
                    k += 1
                outs.append(x)
            return outs

        def forward(self, x: Any) -> Any:
            return self.fc(self.stages(self.stem(x)).mean((2, 3)))

    return ResNet()


def mobilenet_v2() -> Any:
    nn = _nn()
    table = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
             (6, 160, 3, 2), (6, 320, 1, 1)]

    class IR(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int, t: int) -> None:
            super().__init__()
            hid = cin * t
            layers = [] if t == 1 else [_cbr(cin, hid, 1, act="relu6")]
            layers += [_cbr(hid, hid, 3, stride, groups=hid, act="relu6"),
                       _cbr(hid, cout, 1, act=None)]
            self.body = nn.Sequential(*layers)
            self.res = stride == 1 and cin == cout

        def forward(self, x: Any) -> Any:
            return x + self.body(x) if self.res else self.body(x)

    layers, cin = [_cbr(3, 32, 3, 2, act="relu6")], 32
    for t, c, n, s in table:
        for i in range(n):
            layers.append(IR(cin, c, s if i == 0 else 1, t))
            cin = c
    layers.append(_cbr(cin, 1280, 1, act="relu6"))
    return _classifier(nn.Sequential(*layers), nn.Linear(1280, 1000))


def _classifier(body: Any, head: Any) -> Any:
    """``body``, global average pooling, ``head``."""
    nn = _nn()

    class C(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.body, self.head = body, head

        def forward(self, x: Any) -> Any:
            return self.head(self.body(x).mean((2, 3)))

    return C()


# MobileNetV3 rows: (kernel, expanded, out, SE, activation, stride), from torchvision.
_V3_LARGE = [(3, 16, 16, 0, "relu", 1), (3, 64, 24, 0, "relu", 2), (3, 72, 24, 0, "relu", 1),
             (5, 72, 40, 1, "relu", 2), (5, 120, 40, 1, "relu", 1), (5, 120, 40, 1, "relu", 1),
             (3, 240, 80, 0, "hswish", 2), (3, 200, 80, 0, "hswish", 1),
             (3, 184, 80, 0, "hswish", 1), (3, 184, 80, 0, "hswish", 1),
             (3, 480, 112, 1, "hswish", 1), (3, 672, 112, 1, "hswish", 1),
             (5, 672, 160, 1, "hswish", 2), (5, 960, 160, 1, "hswish", 1),
             (5, 960, 160, 1, "hswish", 1)]
_V3_SMALL = [(3, 16, 16, 1, "relu", 2), (3, 72, 24, 0, "relu", 2), (3, 88, 24, 0, "relu", 1),
             (5, 96, 40, 1, "hswish", 2), (5, 240, 40, 1, "hswish", 1),
             (5, 240, 40, 1, "hswish", 1), (5, 120, 48, 1, "hswish", 1),
             (5, 144, 48, 1, "hswish", 1), (5, 288, 96, 1, "hswish", 2),
             (5, 576, 96, 1, "hswish", 1), (5, 576, 96, 1, "hswish", 1)]


def mobilenet_v3(table: list[tuple[int, int, int, int, str, int]], last: int) -> Any:
    nn = _nn()

    class IR(nn.Module):
        def __init__(self, cin: int, k: int, hid: int, cout: int, se: int, act: str,
                     stride: int) -> None:
            super().__init__()
            layers = [] if hid == cin else [_cbr(cin, hid, 1, act=act)]
            layers.append(_cbr(hid, hid, k, stride, groups=hid, act=act))
            if se:
                layers.append(_se(hid, _make_divisible(hid // 4), gate="hsigmoid"))
            layers.append(_cbr(hid, cout, 1, act=None))
            self.body = nn.Sequential(*layers)
            self.res = stride == 1 and cin == cout

        def forward(self, x: Any) -> Any:
            return x + self.body(x) if self.res else self.body(x)

    layers, cin = [_cbr(3, 16, 3, 2, act="hswish")], 16
    for k, hid, cout, se, act, s in table:
        layers.append(IR(cin, k, hid, cout, se, act, s))
        cin = cout
    layers.append(_cbr(cin, 6 * cin, 1, act="hswish"))
    head = nn.Sequential(nn.Linear(6 * cin, last), nn.Hardswish(), nn.Linear(last, 1000))
    return _classifier(nn.Sequential(*layers), head)


def efficientnet_b0() -> Any:
    nn = _nn()
    # (expand ratio, kernel, stride, in, out, layers), torchvision's B0 table
    table = [(1, 3, 1, 32, 16, 1), (6, 3, 2, 16, 24, 2), (6, 5, 2, 24, 40, 2),
             (6, 3, 2, 40, 80, 3), (6, 5, 1, 80, 112, 3), (6, 5, 2, 112, 192, 4),
             (6, 3, 1, 192, 320, 1)]

    class MB(nn.Module):
        def __init__(self, cin: int, cout: int, k: int, stride: int, e: int) -> None:
            super().__init__()
            hid = cin * e
            layers = [] if e == 1 else [_cbr(cin, hid, 1, act="silu")]
            layers += [_cbr(hid, hid, k, stride, groups=hid, act="silu"),
                       _se(hid, max(1, cin // 4), act="silu"), _cbr(hid, cout, 1, act=None)]
            self.body = nn.Sequential(*layers)
            self.res = stride == 1 and cin == cout

        def forward(self, x: Any) -> Any:
            return x + self.body(x) if self.res else self.body(x)

    layers = [_cbr(3, 32, 3, 2, act="silu")]
    for e, k, s, cin, cout, n in table:
        for i in range(n):
            layers.append(MB(cin if i == 0 else cout, cout, k, s if i == 0 else 1, e))
    layers.append(_cbr(320, 1280, 1, act="silu"))
    return _classifier(nn.Sequential(*layers), nn.Linear(1280, 1000))


def regnet_y_400mf() -> Any:
    nn = _nn()
    widths, depths, group_width, se_ratio = [48, 104, 208, 440], [1, 3, 6, 6], 8, 0.25

    class Block(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int) -> None:
            super().__init__()
            self.body = nn.Sequential(
                _cbr(cin, cout, 1), _cbr(cout, cout, 3, stride, groups=cout // group_width),
                _se(cout, round(se_ratio * cin)), _cbr(cout, cout, 1, act=None))
            self.down = (_cbr(cin, cout, 1, stride, act=None)
                         if stride != 1 or cin != cout else nn.Identity())
            self.relu = nn.ReLU(inplace=True)

        def forward(self, x: Any) -> Any:
            return self.relu(self.body(x) + self.down(x))

    layers, cin = [_cbr(3, 32, 3, 2)], 32
    for w, d in zip(widths, depths, strict=True):
        for i in range(d):
            layers.append(Block(cin, w, 2 if i == 0 else 1))
            cin = w
    return _classifier(nn.Sequential(*layers), nn.Linear(cin, 1000))


def convnext_tiny() -> Any:
    import torch

    nn = _nn()
    dims, depths = [96, 192, 384, 768], [3, 3, 9, 3]

    class LN2d(nn.LayerNorm):
        def forward(self, x: Any) -> Any:
            return super().forward(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)

    class CNBlock(nn.Module):
        def __init__(self, d: int) -> None:
            super().__init__()
            self.dw = nn.Conv2d(d, d, 7, padding=3, groups=d)
            self.norm = nn.LayerNorm(d, eps=1e-6)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
            # torchvision initializes the layer scale at 1e-6; a trained net's is O(0.1-1)
            self.gamma = nn.Parameter(torch.full((d,), 0.5))

        def forward(self, x: Any) -> Any:
            y = self.mlp(self.norm(self.dw(x).permute(0, 2, 3, 1))) * self.gamma
            return x + y.permute(0, 3, 1, 2)

    layers = [nn.Conv2d(3, dims[0], 4, 4), LN2d(dims[0], eps=1e-6)]
    for i, (d, n) in enumerate(zip(dims, depths, strict=True)):
        if i:
            layers += [LN2d(dims[i - 1], eps=1e-6), nn.Conv2d(dims[i - 1], d, 2, 2)]
        layers += [CNBlock(d) for _ in range(n)]
    head = nn.Sequential(nn.LayerNorm(dims[-1], eps=1e-6), nn.Linear(dims[-1], 1000))
    return _classifier(nn.Sequential(*layers), head)


def shufflenet_v2() -> Any:
    import torch

    nn = _nn()
    repeats, chans = [4, 8, 4], [24, 116, 232, 464, 1024]

    def shuffle(x: Any) -> Any:
        b, c, h, w = x.shape
        return x.view(b, 2, c // 2, h, w).transpose(1, 2).reshape(b, c, h, w)

    class IR(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int) -> None:
            super().__init__()
            self.stride, b = stride, cout // 2
            if stride > 1:
                self.branch1 = nn.Sequential(_cbr(cin, cin, 3, stride, groups=cin, act=None),
                                             _cbr(cin, b, 1))
            c2 = cin if stride > 1 else b
            self.branch2 = nn.Sequential(_cbr(c2, b, 1), _cbr(b, b, 3, stride, groups=b, act=None),
                                         _cbr(b, b, 1))

        def forward(self, x: Any) -> Any:
            if self.stride == 1:
                x1, x2 = x.chunk(2, dim=1)
                out = torch.cat((x1, self.branch2(x2)), dim=1)
            else:
                out = torch.cat((self.branch1(x), self.branch2(x)), dim=1)
            return shuffle(out)

    layers, cin = [_cbr(3, chans[0], 3, 2), nn.MaxPool2d(3, 2, 1)], chans[0]
    for n, cout in zip(repeats, chans[1:4], strict=True):
        layers += [IR(cin, cout, 2)] + [IR(cout, cout, 1) for _ in range(n - 1)]
        cin = cout
    layers.append(_cbr(cin, chans[-1], 1))
    return _classifier(nn.Sequential(*layers), nn.Linear(chans[-1], 1000))


def squeezenet1_1() -> Any:
    import torch

    nn = _nn()

    class Fire(nn.Module):
        def __init__(self, cin: int, sq: int, e1: int, e3: int) -> None:
            super().__init__()
            self.sq = nn.Sequential(nn.Conv2d(cin, sq, 1), nn.ReLU(inplace=True))
            self.e1 = nn.Sequential(nn.Conv2d(sq, e1, 1), nn.ReLU(inplace=True))
            self.e3 = nn.Sequential(nn.Conv2d(sq, e3, 3, padding=1), nn.ReLU(inplace=True))

        def forward(self, x: Any) -> Any:
            s = self.sq(x)
            return torch.cat([self.e1(s), self.e3(s)], 1)

    def pool() -> Any:
        return nn.MaxPool2d(3, 2, ceil_mode=True)

    body = nn.Sequential(
        nn.Conv2d(3, 64, 3, 2), nn.ReLU(inplace=True), pool(),
        Fire(64, 16, 64, 64), Fire(128, 16, 64, 64), pool(),
        Fire(128, 32, 128, 128), Fire(256, 32, 128, 128), pool(),
        Fire(256, 48, 192, 192), Fire(384, 48, 192, 192), Fire(384, 64, 256, 256),
        Fire(512, 64, 256, 256), nn.Conv2d(512, 1000, 1), nn.ReLU(inplace=True))
    return _classifier(body, nn.Identity())


def densenet121() -> Any:
    import torch

    nn = _nn()
    growth, blocks, bn_size = 32, [6, 12, 24, 16], 4

    def bnrc(cin: int, cout: int, k: int) -> Any:
        return nn.Sequential(nn.BatchNorm2d(cin), nn.ReLU(inplace=True),
                             nn.Conv2d(cin, cout, k, padding=k // 2, bias=False))

    class Dense(nn.Module):
        def __init__(self, cin: int, n: int) -> None:
            super().__init__()
            self.layers = nn.ModuleList(
                nn.Sequential(bnrc(cin + i * growth, bn_size * growth, 1),
                              bnrc(bn_size * growth, growth, 3)) for i in range(n))

        def forward(self, x: Any) -> Any:
            feats = [x]
            for layer in self.layers:
                feats.append(layer(torch.cat(feats, 1)))
            return torch.cat(feats, 1)

    layers, c = [_cbr(3, 64, 7, 2), nn.MaxPool2d(3, 2, 1)], 64
    for i, n in enumerate(blocks):
        layers.append(Dense(c, n))
        c += n * growth
        if i < len(blocks) - 1:
            layers += [bnrc(c, c // 2, 1), nn.AvgPool2d(2, 2)]
            c //= 2
    layers += [nn.BatchNorm2d(c), nn.ReLU(inplace=True)]
    return _classifier(nn.Sequential(*layers), nn.Linear(c, 1000))


def unet() -> Any:
    import torch

    nn = _nn()
    widths = [32, 64, 128, 256]

    def double(cin: int, cout: int) -> Any:
        return nn.Sequential(_cbr(cin, cout, 3), _cbr(cout, cout, 3))

    class UNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            cins = [3] + widths[:-1]
            self.down = nn.ModuleList(double(a, b) for a, b in zip(cins, widths, strict=True))
            self.pool = nn.MaxPool2d(2)
            self.mid = double(widths[-1], 2 * widths[-1])
            self.up = nn.ModuleList(nn.ConvTranspose2d(2 * w, w, 2, 2) for w in widths[::-1])
            self.dec = nn.ModuleList(double(2 * w, w) for w in widths[::-1])
            self.out = nn.Conv2d(widths[0], 2, 1)

        def forward(self, x: Any) -> Any:
            skips = []
            for d in self.down:
                x = d(x)
                skips.append(x)
                x = self.pool(x)
            x = self.mid(x)
            for up, dec, s in zip(self.up, self.dec, skips[::-1], strict=True):
                x = dec(torch.cat([s, up(x)], 1))
            return self.out(x)

    return UNet()


def retinanet_head() -> Any:
    """torchvision RetinaNet's FPN and heads (9 anchors, 80 classes) on a ResNet-18 trunk, with
    128 FPN channels and 2 head convolutions (torchvision: 256 and 4). Output: per anchor,
    80 class logits then 4 box deltas, concatenated over P3..P6 (no NMS: that is host code)."""
    import torch
    import torch.nn.functional as F

    nn = _nn()
    ch, anchors, classes = 128, 9, 80

    class Retina(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.trunk = resnet("basic", [2, 2, 2, 2])
            self.lat = nn.ModuleList(nn.Conv2d(c, ch, 1) for c in (128, 256, 512))
            self.smooth = nn.ModuleList(nn.Conv2d(ch, ch, 3, padding=1) for _ in range(3))
            self.p6 = nn.Conv2d(ch, ch, 3, 2, 1)

            def tower(out: int) -> Any:
                return nn.Sequential(nn.Conv2d(ch, ch, 3, padding=1), nn.ReLU(),
                                     nn.Conv2d(ch, ch, 3, padding=1), nn.ReLU(),
                                     nn.Conv2d(ch, anchors * out, 3, padding=1))

            self.cls, self.box = tower(classes), tower(4)

        def forward(self, x: Any) -> Any:
            c3, c4, c5 = self.trunk.features(x)[1:]
            p5 = self.lat[2](c5)
            p4 = self.lat[1](c4) + F.interpolate(p5, scale_factor=2.0, mode="nearest")
            p3 = self.lat[0](c3) + F.interpolate(p4, scale_factor=2.0, mode="nearest")
            ps = [self.smooth[0](p3), self.smooth[1](p4), self.smooth[2](p5)]
            ps.append(self.p6(ps[-1]))
            outs = []
            for p in ps:
                b = p.shape[0]
                c = self.cls(p).permute(0, 2, 3, 1).reshape(b, -1, classes)
                r = self.box(p).permute(0, 2, 3, 1).reshape(b, -1, 4)
                outs.append(torch.cat([c, r], 2))
            return torch.cat(outs, 1)

    return Retina()


# -- transformers and torch.nn -----------------------------------------------------------------


def _hf(cls_name: str, config_name: str, output: str = "last_hidden_state", *,
        names: Sequence[str] = ("input_ids",), mask: bool = False, **config: Any) -> Any:
    """A ``transformers`` model class from a small config (random init, eager attention), wrapped
    to return one tensor: the ``output`` field. The graph's inputs are passed as the keyword
    arguments ``names``; ``mask`` adds an all-ones ``attention_mask`` built in the graph (GPT-2
    otherwise probes the position ids for packed sequences with ``aten::diff``, which the ONNX
    exporter lacks)."""
    import torch
    import transformers

    nn = _nn()
    cfg = getattr(transformers, config_name)(**config)
    cfg._attn_implementation = "eager"
    model = getattr(transformers, cls_name)(cfg)

    class One(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *args: Any) -> Any:
            kw = dict(zip(names, args, strict=True))
            if mask:
                kw["attention_mask"] = torch.ones_like(args[0])
            return getattr(self.model(**kw), output)

    return One()


def rnn(kind: str) -> Any:
    """``nn.LSTM``/``nn.GRU`` (2 layers, 128 → 256, batch first) and a linear head on every
    step; the initial state is zero (the ONNX graph takes only the sequence)."""
    nn = _nn()

    class R(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.rnn = getattr(nn, kind)(128, 256, num_layers=2, batch_first=True)
            self.head = nn.Linear(256, 64)

        def forward(self, x: Any) -> Any:
            return self.head(self.rnn(x)[0])

    return R()


def _image(size: int) -> Callable[[int, np.random.Generator], list[np.ndarray]]:
    return lambda b, rng: [rng.standard_normal((b, 3, size, size)).astype(np.float32)]


def _ids(*lengths: int, vocab: int = 8192) -> Callable[[int, np.random.Generator],
                                                       list[np.ndarray]]:
    return lambda b, rng: [rng.integers(0, vocab, (b, n), dtype=np.int64) for n in lengths]


_SMALL_TX = {"hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4,
             "intermediate_size": 1024}

SPECS: dict[str, Spec] = {s.name: s for s in [
    Spec("resnet18", "torchvision", "written out (torchvision resnet18)",
         lambda: resnet("basic", [2, 2, 2, 2]), _image(224)),
    Spec("resnet50", "torchvision", "written out (torchvision resnet50)",
         lambda: resnet("bottleneck", [3, 4, 6, 3]), _image(224)),
    Spec("mobilenet_v2", "torchvision", "written out (torchvision mobilenet_v2)",
         mobilenet_v2, _image(224)),
    Spec("mobilenet_v3_large", "torchvision", "written out (torchvision mobilenet_v3_large)",
         lambda: mobilenet_v3(_V3_LARGE, 1280), _image(224)),
    Spec("mobilenet_v3_small", "torchvision", "written out (torchvision mobilenet_v3_small)",
         lambda: mobilenet_v3(_V3_SMALL, 1024), _image(224)),
    Spec("efficientnet_b0", "torchvision", "written out (torchvision efficientnet_b0)",
         efficientnet_b0, _image(224)),
    Spec("regnet_y_400mf", "torchvision", "written out (torchvision regnet_y_400mf)",
         regnet_y_400mf, _image(224)),
    Spec("convnext_tiny", "torchvision", "written out (torchvision convnext_tiny)",
         convnext_tiny, _image(160), "160×160"),
    Spec("shufflenet_v2", "torchvision", "written out (torchvision shufflenet_v2_x1_0)",
         shufflenet_v2, _image(224)),
    Spec("squeezenet1_1", "torchvision", "written out (torchvision squeezenet1_1)",
         squeezenet1_1, _image(224)),
    Spec("densenet121", "torchvision", "written out (torchvision densenet121)",
         densenet121, _image(160), "160×160"),
    Spec("unet", "torchvision", "written out (U-Net, Ronneberger et al., half width)",
         unet, _image(128)),
    Spec("retinanet_head", "torchvision", "written out (torchvision RetinaNet FPN + heads)",
         retinanet_head, _image(256)),
    Spec("vit_tiny", "transformers", "ViTForImageClassification (ViT-Ti config)",
         lambda: _hf("ViTForImageClassification", "ViTConfig", "logits", image_size=224,
                     patch_size=16, hidden_size=192, num_hidden_layers=12,
                     num_attention_heads=3, intermediate_size=768, num_labels=1000),
         _image(224)),
    Spec("swin_tiny", "transformers", "SwinForImageClassification (d 48, depths 2,2,2,2)",
         lambda: _hf("SwinForImageClassification", "SwinConfig", "logits", image_size=224,
                     patch_size=4, embed_dim=48, depths=[2, 2, 2, 2], num_heads=[2, 4, 8, 16],
                     window_size=7, num_labels=1000, names=("pixel_values",)),
         _image(224)),
    Spec("bert", "transformers", "BertModel (4 layers, d 256)",
         lambda: _hf("BertModel", "BertConfig", vocab_size=8192, **_SMALL_TX), _ids(128)),
    Spec("gpt2", "transformers", "GPT2LMHeadModel (4 layers, d 256)",
         lambda: _hf("GPT2LMHeadModel", "GPT2Config", "logits", vocab_size=8192,
                     n_positions=256, n_embd=256, n_layer=4, n_head=4, use_cache=False,
                     mask=True),
         _ids(64)),
    Spec("t5", "transformers", "T5Model (4+4 layers, d 256)",
         lambda: _hf("T5Model", "T5Config", vocab_size=8192, d_model=256, d_kv=32, d_ff=1024,
                     num_layers=4, num_decoder_layers=4, num_heads=8, use_cache=False,
                     names=("input_ids", "decoder_input_ids")),
         _ids(64, 16)),
    Spec("lstm", "torch.nn", "nn.LSTM (2 layers, 256)", lambda: rnn("LSTM"),
         lambda b, rng: [rng.standard_normal((b, 32, 128)).astype(np.float32)]),
    Spec("gru", "torch.nn", "nn.GRU (2 layers, 256)", lambda: rnn("GRU"),
         lambda b, rng: [rng.standard_normal((b, 32, 128)).astype(np.float32)]),
]}


# -- build, export, cache -----------------------------------------------------------------------


def _seed(name: str) -> int:
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:4], "little")


def _randomize_norms(model: Any, seed: int) -> None:
    """Give every BatchNorm non-trivial running statistics and affine parameters (a fresh one
    is an identity in eval mode, which would hide a wrong fold)."""
    import torch

    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                n = m.num_features
                m.running_mean.copy_(torch.randn(n, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(n, generator=g) * 0.5 + 0.75)
                m.weight.copy_(torch.rand(n, generator=g) * 0.5 + 0.75)
                m.bias.copy_(torch.randn(n, generator=g) * 0.1)


def folder(name: str, batch: int) -> Path:
    return ZOO_DIR / f"v{ZOO_VERSION}" / f"{name}-b{batch}"


@dataclass(frozen=True)
class ZooModel:
    """A built zoo model: its ONNX bytes, inputs and reference outputs (lists in graph order)."""

    name: str
    batch: int
    path: Path
    inputs: list[np.ndarray]
    ref_ort: list[np.ndarray]
    ref_torch: list[np.ndarray]
    meta: dict[str, Any]

    @property
    def onnx_bytes(self) -> bytes:
        return (self.path / "model.onnx").read_bytes()


def _read(path: Path, name: str, batch: int) -> ZooModel:
    with np.load(path / "ref.npz") as z:
        def group(p: str) -> list[np.ndarray]:
            return [z[k] for k in sorted((k for k in z.files if k.startswith(p + "_")),
                                         key=lambda k: int(k.split("_")[1]))]

        ins, ref_o, ref_t = group("in"), group("ort"), group("torch")
    meta = json.loads((path / "meta.json").read_text())
    return ZooModel(name, batch, path, ins, ref_o, ref_t, meta)


def build(name: str, batch: int = 1, *, force: bool = False) -> ZooModel:
    """The model ``name`` at ``batch``, built and exported unless its folder is complete.

    The folder is written under a temporary name and renamed, so an interrupted build leaves no
    half model behind. Raises ``KeyError`` for an unknown name and whatever the exporter or
    onnxruntime raises for a model they cannot handle.
    """
    path = folder(name, batch)
    if not force and (path / "meta.json").exists():
        return _read(path, name, batch)
    import onnxruntime as ort
    import torch

    spec = SPECS[name]
    seed = _seed(name)
    torch.manual_seed(seed)
    t0 = time.perf_counter()
    model = spec.build().eval()
    _randomize_norms(model, seed)
    inputs = spec.inputs(batch, np.random.default_rng(seed))
    targs = tuple(torch.from_numpy(x) for x in inputs)
    with torch.no_grad():
        out = model(*targs)
    outs = [o.numpy() for o in (out if isinstance(out, tuple) else (out,))]
    buf = io.BytesIO()
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, targs, buf, opset_version=OPSET, dynamo=False,
                          input_names=[f"in_{i}" for i in range(len(inputs))],
                          output_names=[f"out_{i}" for i in range(len(outs))],
                          do_constant_folding=True)
    data = buf.getvalue()
    export_s = time.perf_counter() - t0
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(data, so, providers=["CPUExecutionProvider"])
    ref = sess.run(None, {f"in_{i}": x for i, x in enumerate(inputs)})
    meta = {
        "name": name, "batch": batch, "suite": spec.suite, "source": spec.source,
        "zoo_version": ZOO_VERSION, "opset": OPSET, "seed": seed,
        "inputs": [[list(x.shape), str(x.dtype)] for x in inputs],
        "outputs": [[list(y.shape), str(y.dtype)] for y in outs],
        "params": int(sum(p.numel() for p in model.parameters())),
        "onnx_bytes": len(data), "export_s": round(export_s, 2),
        "torch_vs_ort_max_abs": max(float(np.abs(a - b).max()) for a, b in zip(outs, ref,
                                                                               strict=True)),
        "ref_max_abs": max(float(np.abs(b).max()) for b in ref),
        "torch": torch.__version__, "onnxruntime": ort.__version__,
    }
    tmp = path.with_name(path.name + ".tmp")
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "model.onnx").write_bytes(data)
    arrays = {f"in_{i}": x for i, x in enumerate(inputs)}
    arrays.update({f"torch_{i}": y for i, y in enumerate(outs)})
    arrays.update({f"ort_{i}": np.asarray(y) for i, y in enumerate(ref)})
    np.savez(tmp / "ref.npz", **arrays)
    (tmp / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    if path.exists():
        import shutil

        shutil.rmtree(path)
    tmp.rename(path)
    return _read(path, name, batch)


def main(argv: list[str] | None = None, *, stdout: Any = None) -> int:
    out = stdout or sys.stdout
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("--list", action="store_true", help="list the models and exit")
    ap.add_argument("command", nargs="?", choices=["build"])
    ap.add_argument("--models", default=",".join(SPECS), help="comma-separated names")
    ap.add_argument("--batch", default=f"1,{BIG_BATCH}", help="comma-separated batch sizes")
    ap.add_argument("--force", action="store_true", help="rebuild even when cached")
    args = ap.parse_args(argv)
    if args.list or args.command is None:
        print(f"{'name':20} {'suite':13} source", file=out)
        for s in SPECS.values():
            print(f"{s.name:20} {s.suite:13} {s.source}", file=out)
        return 0
    names = [n for n in args.models.split(",") if n]
    unknown = [n for n in names if n not in SPECS]
    if unknown:
        ap.error(f"unknown models {unknown}; known: {', '.join(SPECS)}")
    failed = 0
    print(f"{'model':20} {'batch':>5} {'params':>10} {'export s':>8} {'torch~ort':>10}  folder",
          file=out)
    for name in names:
        for b in (int(x) for x in args.batch.split(",")):
            try:
                m = build(name, b, force=args.force)
            except Exception as exc:  # noqa: BLE001 (the exporter or onnxruntime refused it)
                failed += 1
                print(f"{name:20} {b:>5} FAILED: {type(exc).__name__}: {exc}"[:300], file=out)
                continue
            where = m.path.relative_to(ROOT) if m.path.is_relative_to(ROOT) else m.path
            print(f"{name:20} {b:>5} {m.meta['params']:>10,} {m.meta['export_s']:>8.1f} "
                  f"{m.meta['torch_vs_ort_max_abs']:>10.1e}  {where}", file=out, flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
