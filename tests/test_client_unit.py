"""Client SDK against an injected httpx transport: request shapes, errors, retries, integrity."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import httpx
import pytest

from kiln.client import Client, ConnectionFailed, RetryPolicy
from kiln.errors import IntegrityError, InvalidRequest, Overloaded, UnsupportedTarget
from tests.graphs import LINALG, onnx_mlp

BLOB = b"\x00vmfb-bytes" * 10
DIGEST = "sha256:" + hashlib.sha256(BLOB).hexdigest()


def _ok(targets: list[str]) -> dict:
    return {
        "graph_digest": "sha256:" + "0" * 64, "input_dialect": "linalg",
        "compiler": {"name": "iree", "version": "3.13"},
        "artifacts": [{"target": t, "key": "k" * 8, "digest": DIGEST, "size": len(BLOB),
                       "cached": False, "compile_seconds": 0.5, "url": "/v1/artifacts/x",
                       "flags": ["--f"], "warnings": []} for t in targets],
        "errors": [],
    }


class Recorder:
    def __init__(self, handler):
        self.requests: list[httpx.Request] = []
        self.handler = handler

    def __call__(self, req: httpx.Request) -> httpx.Response:
        self.requests.append(req)
        return self.handler(req, len(self.requests))


def _client(tmp_path: Path, handler, **kw) -> tuple[Client, Recorder, list[float]]:
    rec = Recorder(handler)
    sleeps: list[float] = []
    c = Client("http://kiln.test", transport=httpx.MockTransport(rec), cache_dir=tmp_path / "cc",
               sleep=sleeps.append, **kw)
    return c, rec, sleeps


def test_compile_sends_mlir_text_and_onnx_base64_and_returns_typed_results(tmp_path: Path) -> None:
    ok = _ok(["cpu:x86_64:generic"])
    c, rec, _ = _client(tmp_path, lambda r, n: httpx.Response(200, json=ok))
    res = c.compile(LINALG, targets=["cpu"])
    body = json.loads(rec.requests[0].content)
    assert body["graph"] == {"format": "mlir", "encoding": "utf-8", "data": LINALG}
    assert body["targets"] == ["cpu"]
    assert res.artifacts[0].target == "cpu:x86_64:generic" and res.artifacts[0].flags == ("--f",)
    assert res.artifacts[0].cached is False and res.to_json()["artifacts"][0]["digest"] == DIGEST

    model = onnx_mlp()
    path = tmp_path / "m.onnx"
    path.write_bytes(model)
    import onnx

    for graph in (path, str(path), model, onnx.load_from_string(model)):
        c.compile(graph, targets=["cpu"], options={"opt_level": "O2"})
        body = json.loads(rec.requests[-1].content)
        assert body["graph"]["format"] == "onnx" and body["graph"]["encoding"] == "base64"
        assert base64.b64decode(body["graph"]["data"]) == model
        assert body["options"] == {"opt_level": "O2"}


def test_large_graph_goes_as_raw_body(tmp_path: Path) -> None:
    c, rec, _ = _client(tmp_path, lambda r, n: httpx.Response(200, json=_ok(["cpu", "vulkan"])),
                        raw_threshold=100)
    c.compile(onnx_mlp(), targets=["cpu", "vulkan"])
    req = rec.requests[0]
    assert req.headers["content-type"] == "application/octet-stream"
    assert req.url.params.get_list("target") == ["cpu", "vulkan"]
    assert req.url.params["format"] == "onnx" and req.content == onnx_mlp()


def test_error_envelope_becomes_the_kiln_class(tmp_path: Path) -> None:
    env = {"error": {"code": "unsupported_target", "message": "unknown kind 'tpu'",
                     "detail": {"valid": {"cpu": ["x86_64"]}}}}
    c, _, _ = _client(tmp_path, lambda r, n: httpx.Response(400, json=env))
    with pytest.raises(UnsupportedTarget, match="tpu") as info:
        c.compile(LINALG, targets=["tpu"])
    assert info.value.detail == {"valid": {"cpu": ["x86_64"]}}
    with pytest.raises(InvalidRequest):
        c.compile("no/such/file.onnx", targets=["cpu"])


def test_503_with_retry_after_is_retried_then_succeeds(tmp_path: Path) -> None:
    def handler(req: httpx.Request, n: int) -> httpx.Response:
        if n == 1:
            return httpx.Response(503, headers={"Retry-After": "2"},
                                  json={"error": {"code": "overloaded", "message": "busy"}})
        return httpx.Response(200, json=_ok(["cpu"]))

    c, rec, sleeps = _client(tmp_path, handler)
    assert c.compile(LINALG, targets=["cpu"]).artifacts[0].target == "cpu"
    assert len(rec.requests) == 2 and len(sleeps) == 1 and 2.0 <= sleeps[0] <= 2.3


def test_retries_run_out_into_overloaded_and_connection_failed(tmp_path: Path) -> None:
    busy = {"error": {"code": "overloaded", "message": "queue full"}}
    c, rec, sleeps = _client(tmp_path, lambda r, n: httpx.Response(429, json=busy),
                             retry=RetryPolicy(attempts=3, base=0.1))
    with pytest.raises(Overloaded):
        c.compile(LINALG, targets=["cpu"])
    assert len(rec.requests) == 3 and len(sleeps) == 2
    assert all(0 <= s <= 0.4 for s in sleeps)  # exponential with full jitter, capped

    def refuse(req: httpx.Request, n: int) -> httpx.Response:
        if n < 3:
            raise httpx.ConnectError("connection refused", request=req)
        return httpx.Response(200, json=_ok(["cpu"]))

    c, rec, _ = _client(tmp_path, refuse)
    assert c.compile(LINALG, targets=["cpu"]).artifacts  # recovered on the third try
    c, _, _ = _client(tmp_path, lambda r, n: refuse(r, 0), retry=RetryPolicy(attempts=2))
    with pytest.raises(ConnectionFailed) as info:
        c.compile(LINALG, targets=["cpu"])
    assert isinstance(info.value.__cause__, httpx.ConnectError)


def test_fetch_verifies_and_caches(tmp_path: Path) -> None:
    c, rec, _ = _client(tmp_path, lambda r, n: httpx.Response(200, content=BLOB))
    assert c.fetch(DIGEST) == BLOB and c.fetch(DIGEST.split(":")[1]) == BLOB
    assert len(rec.requests) == 1  # the second came from the local cache

    bad = BLOB[:-1] + b"X"
    c, rec, _ = _client(tmp_path / "b", lambda r, n: httpx.Response(200, content=bad))
    with pytest.raises(IntegrityError) as info:
        c.fetch(DIGEST)
    assert info.value.detail["expected"] == DIGEST
    with pytest.raises(IntegrityError):
        c.fetch(DIGEST)  # nothing bad was cached: it asks again and refuses again
    assert len(rec.requests) == 2
