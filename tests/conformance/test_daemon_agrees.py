"""The daemon and the embedded pipeline agree on node tests: same graph digest, same executable
bytes (the conformance figures, measured embedded, hold for what `kiln serve` hands out)."""

from __future__ import annotations

import base64

import pytest

from kiln.compiler.pipeline import Pipeline
from tests.conformance.suite import load_node_test
from tests.server import kiln_server

# One per family the fix-ups touch, plus plain ops.
NAMES = ["test_add", "test_maxpool_2d_same_upper", "test_rms_normalization_2d_axis0", "test_relu"]


def test_daemon_and_embedded_produce_identical_executables(
    tmp_path_factory: pytest.TempPathFactory, pipeline: Pipeline
) -> None:
    with kiln_server(tmp_path_factory, workers=1) as srv:
        client = srv.client()
        for name in NAMES:
            model = load_node_test(name).model_bytes
            body = {"graph": {"format": "onnx", "encoding": "base64",
                              "data": base64.b64encode(model).decode()},
                    "targets": ["cpu", "vulkan"]}
            remote = client.post("/v1/compile", json=body)
            assert remote.status_code == 200, remote.text
            local = pipeline.compile(model, targets=["cpu", "vulkan"])
            r = remote.json()
            assert r["graph_digest"] == local.graph_digest, name
            assert [a["digest"] for a in r["artifacts"]] == [a.digest for a in local.artifacts], name
