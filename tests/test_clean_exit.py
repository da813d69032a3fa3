"""A process that ran Kiln executables exits cleanly: status 0, and no ``nanobind: leaked ...``
report or fatal error on stderr after its output.

Each scenario runs in a child interpreter (the teardown under test is the process's own) that
computes and prints a result this test checks, so a scenario that silently did nothing fails.
Every child imports torch: with torch loaded, Python's teardown leaves cycles uncollected that it
frees without it, which is where runtime objects used to survive the runtime's own types."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tests.server import REPO, kiln_server

pytest.importorskip("torch")

DICT_WITH_GRAPH_BREAK = """
import json, torch
from torch import nn

class M(nn.Module):
    def forward(self, x):
        y = x * 2
        if y.sum() > 0:  # data-dependent: a graph break
            return {"a": y + 1, "b": y}
        return {"a": y - 1, "b": y}

opt = torch.compile(M(), backend="kiln", options={"device": "cpu"})
with torch.no_grad():
    out = [opt(torch.full((2, 3), s)) for s in (1.0, -1.0, 1.0)]
print(json.dumps([{k: v.tolist() for k, v in o.items()} for o in out]))
"""

KILN_TORCH_COMPILE = """
import json, torch, kiln.torch
from torch import nn

class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)
        with torch.no_grad():
            self.fc.weight.fill_(1.0)
            self.fc.bias.fill_(0.5)

    def forward(self, x):
        y = self.fc(x)
        return {"y": y, "z": y * 3}

m = M().eval()
x = torch.ones(4, 3)
fast = kiln.torch.compile(m, (x,), server=None, device="cpu")
with torch.no_grad():
    out = fast(x)
print(json.dumps({k: v.tolist() for k, v in out.items()}))
"""

SDK_LOAD = """
import json, sys, numpy as np, torch
from kiln import Client

mod = Client(sys.argv[1]).load("examples/mlp.mlir", device="cpu")
y = mod.main(np.ones((4, 8), np.float32), np.ones((8, 3), np.float32), np.zeros(3, np.float32))
print(json.dumps(y.tolist()))
"""


def _run(script: str, *args: str) -> object:
    """Run ``script`` in a fresh interpreter from the repository root; its printed JSON after
    checking that it exited cleanly."""
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), *args],
        cwd=REPO, env=dict(os.environ), capture_output=True, text=True, timeout=600,
        check=False,
    )
    err = proc.stderr
    assert proc.returncode == 0, f"exit status {proc.returncode}:\n{err[-4000:]}"
    assert "leaked" not in err, err[-4000:]
    assert "Fatal Python error" not in err, err[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_torch_compile_with_a_graph_break_and_a_dict_output_exits_cleanly() -> None:
    pos = {"a": [[3.0] * 3] * 2, "b": [[2.0] * 3] * 2}
    neg = {"a": [[-3.0] * 3] * 2, "b": [[-2.0] * 3] * 2}
    assert _run(DICT_WITH_GRAPH_BREAK) == [pos, neg, pos]


def test_kiln_torch_compile_exits_cleanly() -> None:
    y = [[3.5, 3.5]] * 4
    assert _run(KILN_TORCH_COMPILE) == {"y": y, "z": [[10.5, 10.5]] * 4}


def test_sdk_load_and_call_exits_cleanly(tmp_path_factory: pytest.TempPathFactory) -> None:
    with kiln_server(tmp_path_factory, workers=1) as srv:
        assert _run(SDK_LOAD, srv.url) == [[8.0, 8.0, 8.0]] * 4
