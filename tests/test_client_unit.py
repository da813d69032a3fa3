"""Client SDK against an injected httpx transport: request shapes, errors, retries, integrity; and
the sync and async clients over one core, with the real compile engine behind the transport."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from kiln.client import AsyncClient, Client, ConnectionFailed, RemoteCompileResult, RetryPolicy
from kiln.compiler.pipeline import Pipeline
from kiln.errors import IntegrityError, InvalidRequest, KilnError, Overloaded, UnsupportedTarget
from tests.graphs import LINALG, onnx_mlp, onnx_mlp_reference, onnx_model

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


# -- one core under both clients, with a real engine behind the transport ---------------------


class Engine:
    """``/v1/compile`` and ``/v1/artifacts/{hex}`` answered by the real compile engine (the shape
    kiln serve answers in), for the sync and the async client alike."""

    def __init__(self, pipeline: Pipeline, *, busy_first: bool = False) -> None:
        self.pipeline = pipeline
        self.blobs: dict[str, bytes] = {}
        self.seen: list[tuple[str, str, bytes]] = []
        self.busy = busy_first

    def __call__(self, req: httpx.Request) -> httpx.Response:
        self.seen.append((req.method, str(req.url), req.content))
        if self.busy:
            self.busy = False
            return httpx.Response(503, headers={"Retry-After": "1"},
                                  json={"error": {"code": "overloaded", "message": "busy"}})
        if req.url.path == "/v1/compile":
            body = json.loads(req.content)
            g = body["graph"]
            data = g["data"].encode() if g["encoding"] == "utf-8" else base64.b64decode(g["data"])
            try:
                res = self.pipeline.compile(data, targets=body["targets"],
                                            options=body.get("options"), format=g["format"])
            except KilnError as exc:
                return httpx.Response(400, json={"error": exc.to_json()})
            out = res.to_json()
            for a, j in zip(res.artifacts, out["artifacts"], strict=True):
                self.blobs[a.hex] = a.data
                j["url"] = f"/v1/artifacts/{a.hex}"
            return httpx.Response(200, json=out)
        return httpx.Response(200, content=self.blobs[req.url.path.rsplit("/", 1)[1]])

    async def handle_async(self, req: httpx.Request) -> httpx.Response:
        await req.aread()
        return self(req)


def test_sync_and_async_clients_send_the_same_requests_and_retry_alike(
    pipeline: Pipeline, tmp_path: Path
) -> None:
    sync_engine, async_engine = Engine(pipeline, busy_first=True), Engine(pipeline, busy_first=True)
    sync_sleeps: list[float] = []
    async_sleeps: list[float] = []

    with Client("http://kiln.test", transport=httpx.MockTransport(sync_engine),
                cache_dir=tmp_path / "s", sleep=sync_sleeps.append) as c:
        sync_res = c.compile(LINALG, targets=["cpu"])
        sync_blob = c.fetch(sync_res.artifacts[0].digest)

    async def record(s: float) -> None:
        async_sleeps.append(s)

    async def go() -> tuple[RemoteCompileResult, bytes]:
        async with AsyncClient("http://kiln.test", cache_dir=tmp_path / "a", sleep=record,
                               transport=httpx.MockTransport(async_engine.handle_async)) as c:
            res = await c.compile(LINALG, targets=["cpu"])
            return res, await c.fetch(res.artifacts[0].digest)

    async_res, async_blob = asyncio.run(go())
    assert sync_engine.seen == async_engine.seen  # same requests, in the same order
    assert [m for m, _, _ in sync_engine.seen] == ["POST", "POST", "GET"]  # 503, retry, fetch
    assert len(sync_sleeps) == len(async_sleeps) == 1 and min(sync_sleeps + async_sleeps) >= 1.0
    assert sync_blob == async_blob
    assert sync_res.artifacts[0].digest == async_res.artifacts[0].digest


def test_compile_answers_carry_the_signatures_and_load_uses_them(
    pipeline: Pipeline, tmp_path: Path
) -> None:
    engine = Engine(pipeline)
    with Client("http://kiln.test", transport=httpx.MockTransport(engine),
                cache_dir=tmp_path) as c:
        res = c.compile(onnx_mlp(), targets=["cpu"])
        assert [str(s) for s in res.signatures] == ["mlp(tensor<4x8xf32>) -> tensor<4x3xf32>"]
        assert res.to_json()["signatures"][0]["inputs"][0]["shape"] == [4, 8]
        mod = c.load(onnx_mlp(), device="cpu")
    # The ONNX executable records no types of its own: they come from the compile answer, and
    # from the local cache's record on a repeat load that makes no request.
    assert str(mod.signatures["mlp"]) == "mlp(tensor<4x8xf32>) -> tensor<4x3xf32>"
    before = len(engine.seen)
    with Client("http://kiln.test", transport=httpx.MockTransport(engine),
                cache_dir=tmp_path) as c:
        again = c.load(onnx_mlp(), device="cpu")
    assert len(engine.seen) == before and again.signatures == mod.signatures
    assert RemoteCompileResult.from_json(_ok(["cpu"])).signatures == ()  # an older server


def test_load_takes_a_full_target_string_as_the_device(pipeline: Pipeline, tmp_path: Path) -> None:
    engine = Engine(pipeline)
    with Client("http://kiln.test", transport=httpx.MockTransport(engine),
                cache_dir=tmp_path) as c:
        mod = c.load(LINALG, device="vulkan:llvmpipe")  # lavapipe: Vulkan on this CPU
        args = [np.ones((4, 8), np.float32), np.ones((8, 3), np.float32), np.zeros(3, np.float32)]
        np.testing.assert_allclose(mod.main(*args), np.full((4, 3), 8.0))
        with pytest.raises(InvalidRequest, match="vulkan:llvmpipe or cpu"):
            c.load(LINALG, device="tpu:v5")
    assert json.loads(engine.seen[0][2])["targets"] == ["vulkan:llvmpipe"]
    assert (mod.target, mod.driver) == ("vulkan:llvmpipe", "vulkan")


def test_async_load_autotunes_like_the_sync_one(pipeline: Pipeline, tmp_path: Path) -> None:
    engine = Engine(pipeline)

    async def go() -> Any:
        async with AsyncClient("http://kiln.test", cache_dir=tmp_path,
                               transport=httpx.MockTransport(engine.handle_async)) as c:
            return await c.load(onnx_mlp(), device="cpu", autotune=True)

    mod = asyncio.run(go())
    x = np.random.default_rng(7).standard_normal((4, 8)).astype(np.float32)
    np.testing.assert_allclose(mod.mlp(x), onnx_mlp_reference(x), rtol=1e-4, atol=1e-4)
    compiles = [u for m, u, _ in engine.seen if u.endswith("/v1/compile")]
    assert len(compiles) >= 2, "autotune compiled the default and at least one other preset"
    assert len(list((tmp_path / "tuning").glob("*.json"))) == 1
    before = len(engine.seen)  # the sync client reads the async one's choice: no request at all
    with Client("http://kiln.test", transport=httpx.MockTransport(engine), cache_dir=tmp_path) as c:
        c.load(onnx_mlp(), device="cpu", autotune=True)
    assert len(engine.seen) == before


def _onnx_attention() -> bytes:
    """MatMul -> Softmax -> MatMul: the attention pattern."""
    from onnx import TensorProto, helper

    f32 = TensorProto.FLOAT
    data, _ = onnx_model(
        "attn",
        [helper.make_node("MatMul", ["q", "k"], ["s"]),
         helper.make_node("Softmax", ["s"], ["p"], axis=-1),
         helper.make_node("MatMul", ["p", "v"], ["y"])],
        [helper.make_tensor_value_info(n, f32, [4, 4]) for n in ("q", "k", "v")],
        [helper.make_tensor_value_info("y", f32, [4, 4])],
        {},
    )
    return data


@pytest.mark.parametrize("name", ["LINALG", "STABLEHLO", "TOSA", "TORCH", "onnx_mlp",
                                  "onnx_attention", "onnx_cnn"])
def test_the_client_counts_ops_as_the_server_does(pipeline: Pipeline, name: str) -> None:
    # One table (kiln.dialects.traits) for the client's compiler-free count and the engine's.
    from kiln.client.autotune import cheap_traits
    from tests import graphs
    from tests.test_presets import onnx_cnn

    data = {"onnx_mlp": onnx_mlp, "onnx_attention": _onnx_attention,
            "onnx_cnn": lambda: onnx_cnn(depthwise=True)}.get(name)
    graph = data() if data else getattr(graphs, name).encode()
    assert cheap_traits(graph) == pipeline.prepare(graph).traits.to_json()


def test_the_ops_the_two_counts_once_disagreed_on_are_counted_alike() -> None:
    from kiln.client.autotune import cheap_traits
    from kiln.dialects.traits import op_kind

    assert [op_kind(n) for n in ("onnx.MultiHeadAttention", "tosa.fully_connected",
                                 "torch.aten.addmm", "linalg.depthwise_conv_2d_nhwc_hwc")] == [
        "attention", "matmul", "matmul", "depthwise_conv"]
    text = (b'func.func @f(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {\n'
            b'  %0 = "tosa.fully_connected"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32>\n'
            b'  %1 = torch.aten.addmm %a, %a : tensor<2x3xf32>\n'
            b'  // linalg.matmul in a comment is no op\n  return %0 : tensor<2x3xf32>\n}\n')
    assert cheap_traits(text) == {"conv": 0, "depthwise_conv": 0, "matmul": 2, "attention": 0}


def test_every_cache_folder_comes_from_one_resolver(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kiln.cache.disk import default_cache_dir
    from kiln.client.autotune import default_tuning_dir
    from kiln.client.cache import default_client_cache_dir
    from kiln.files import cache_home

    monkeypatch.delenv("KILN_CACHE_DIR", raising=False)
    monkeypatch.delenv("KILN_CLIENT_CACHE_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for xdg, base in ((str(tmp_path / "xdg"), tmp_path / "xdg"),
                      ("relative/xdg", tmp_path / "home" / ".cache"),  # XDG: absolute only
                      (None, tmp_path / "home" / ".cache")):
        if xdg is None:
            monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
        else:
            monkeypatch.setenv("XDG_CACHE_HOME", xdg)
        assert cache_home() == default_cache_dir() == base / "kiln"
        assert cache_home("client") == default_client_cache_dir() == base / "kiln" / "client"
        # autotune keeps its choices where Client.load(autotune=True) does
        assert default_tuning_dir() == base / "kiln" / "client" / "tuning"
        assert Client("http://kiln.test").cache.root == base / "kiln" / "client"
    monkeypatch.setenv("KILN_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.setenv("KILN_CLIENT_CACHE_DIR", str(tmp_path / "cc"))
    assert cache_home() == default_cache_dir() == tmp_path / "c"
    assert default_tuning_dir() == tmp_path / "cc" / "tuning"
