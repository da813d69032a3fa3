"""The client SDK against a real `kiln serve` on a free loopback port: compile, fetch, load and
call on CPU and Vulkan (lavapipe), integrity, local cache, retries and resolver fallback."""

from __future__ import annotations

import asyncio
import hashlib
import io
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest

from kiln.client import AsyncClient, Client, resolver
from kiln.client.resolver import Candidate
from kiln.errors import IntegrityError
from tests.graphs import LINALG, onnx_mlp, onnx_mlp_reference
from tests.server import kiln_server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with kiln_server(tmp_path_factory, workers=2) as srv:
        yield srv.url


class Forward(httpx.BaseTransport):
    """A transport that forwards to the real server and can tamper with what comes back."""

    def __init__(self, *, flip_artifacts: bool = False, busy_once: bool = False) -> None:
        self.inner = httpx.HTTPTransport()
        self.flip = flip_artifacts
        self.busy_once = busy_once
        self.paths: list[str] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.paths.append(request.url.path)
        if self.busy_once:
            self.busy_once = False
            return httpx.Response(503, headers={"Retry-After": "1"},
                                  json={"error": {"code": "overloaded", "message": "busy"}})
        resp = self.inner.handle_request(request)
        if self.flip and request.url.path.startswith("/v1/artifacts/"):
            body = bytearray(resp.read())
            body[len(body) // 2] ^= 0x01  # one flipped bit in one byte
            return httpx.Response(resp.status_code, headers=resp.headers, content=bytes(body))
        return resp

    def close(self) -> None:
        self.inner.close()


X = np.random.default_rng(7).standard_normal((4, 8)).astype(np.float32)


def _linalg_inputs() -> tuple[list[np.ndarray], np.ndarray]:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 8)).astype(np.float32)
    w = rng.standard_normal((8, 3)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    return [x, w, b], np.maximum(x @ w + b, 0)


def test_compile_fetch_load_call_on_cpu(server: str, tmp_path: Path) -> None:
    cpu = resolver.detect_cpu().target
    with Client(server, cache_dir=tmp_path) as c:
        res = c.compile(onnx_mlp(), targets=[cpu, "cpu"])
        assert [a.target for a in res.artifacts] == [cpu, "cpu:x86_64:generic"]
        assert res.input_dialect == "onnx" and not res.errors
        data = c.fetch(res.artifacts[0].digest)
        assert "sha256:" + hashlib.sha256(data).hexdigest() == res.artifacts[0].digest
        mod = c.load(onnx_mlp(), device="cpu")
        assert mod.target == cpu and mod.digest == res.artifacts[0].digest
        np.testing.assert_allclose(mod.mlp(X), onnx_mlp_reference(X), rtol=1e-4, atol=1e-4)
        auto = c.load(onnx_mlp(), device="auto")  # on a machine without a GPU: the CPU
        assert auto.target == resolver.candidates("auto")[0].target

    counting = Forward()  # a fresh client, same local cache: the repeat load makes no request
    with Client(server, cache_dir=tmp_path, transport=counting) as c:
        mod = c.load(onnx_mlp(), device="cpu")
        np.testing.assert_allclose(mod.mlp(X), onnx_mlp_reference(X), rtol=1e-4, atol=1e-4)
    assert counting.paths == []


@pytest.mark.vulkan
def test_forced_vulkan_on_lavapipe(server: str, tmp_path: Path) -> None:
    # scripts/bootstrap.sh installs Mesa lavapipe: no Vulkan device here is a failure, not a skip.
    assert resolver.candidates("vulkan"), "no Vulkan device (apt-get install mesa-vulkan-drivers)"
    args, want = _linalg_inputs()
    with Client(server, cache_dir=tmp_path) as c:
        mod = c.load(LINALG, device="vulkan")
        assert mod.target.startswith("vulkan") and mod.driver == "vulkan"
        np.testing.assert_allclose(mod.main(*args), want, rtol=1e-4, atol=1e-4)


def test_flipped_byte_is_refused(server: str, tmp_path: Path) -> None:
    with Client(server, cache_dir=tmp_path / "honest") as c:
        digest = c.compile(LINALG, targets=["cpu"]).artifacts[0].digest
    proxy = Forward(flip_artifacts=True)
    with Client(server, cache_dir=tmp_path / "victim", transport=proxy) as c:
        with pytest.raises(IntegrityError, match="refusing"):
            c.fetch(digest)
        with pytest.raises(IntegrityError):  # load refuses too: no fallback past tampering
            c.load(LINALG, device="cpu")
    assert not list((tmp_path / "victim").rglob("blobs/*/*"))  # nothing tampered was kept


def test_load_falls_back_when_the_preferred_target_fails(server: str, tmp_path: Path) -> None:
    cpu = resolver.detect_cpu().target
    cands = [Candidate("tpu:v5", "tpu"),  # refused by the server (unsupported_target)
             Candidate("cuda:sm_80", "cuda"),  # compiles, but no CUDA driver here: fails to load
             Candidate(cpu, "local-task")]
    with Client(server, cache_dir=tmp_path) as c:
        mod = c.load(onnx_mlp(), candidates=cands)
    assert mod.target == cpu
    assert [t for t, _ in mod.fallbacks] == ["tpu:v5", "cuda:sm_80"]
    assert mod.fallbacks[0][1].code == "unsupported_target"
    np.testing.assert_allclose(mod.mlp(X), onnx_mlp_reference(X), rtol=1e-4, atol=1e-4)


def test_503_retry_after_once_then_success(server: str, tmp_path: Path) -> None:
    proxy = Forward(busy_once=True)
    sleeps: list[float] = []
    with Client(server, cache_dir=tmp_path, transport=proxy, sleep=sleeps.append) as c:
        res = c.compile(LINALG, targets=["cpu"])
    assert res.artifacts and proxy.paths == ["/v1/compile", "/v1/compile"]
    assert len(sleeps) == 1 and sleeps[0] >= 1.0


def test_async_client_and_cli_server_mode(server: str, tmp_path: Path) -> None:
    async def go() -> bytes:
        async with AsyncClient(server, cache_dir=tmp_path) as c:
            res = await c.compile(LINALG, targets=["cpu"])
            return await c.fetch(res.artifacts[0].digest)

    data = asyncio.run(go())
    from kiln.cli import main

    graph = tmp_path / "g.mlir"
    graph.write_text(LINALG)
    out, err = io.StringIO(), io.StringIO()
    rc = main(["compile", str(graph), "--target", "cpu", "-o", str(tmp_path / "g.vmfb"),
               "--server", server], stdout=out, stderr=err)
    assert rc == 0, err.getvalue()
    assert (tmp_path / "g.vmfb").read_bytes() == data and "cache hit" in out.getvalue()


def test_load_with_autotune_tunes_once_then_reuses_the_choice(server: str, tmp_path: Path) -> None:
    first = Forward()
    with Client(server, cache_dir=tmp_path, transport=first) as c:
        mod = c.load(onnx_mlp(), device="cpu", autotune=True)
        np.testing.assert_allclose(mod.mlp(X), onnx_mlp_reference(X), rtol=1e-4, atol=1e-4)
    compiles = [p for p in first.paths if p == "/v1/compile"]
    assert len(compiles) >= 2, "autotune compiles the default and at least one other variant"
    tuning = list((tmp_path / "tuning").glob("*.json"))
    assert len(tuning) == 1

    again = Forward()  # same hardware, same local cache: the stored choice, no request at all
    with Client(server, cache_dir=tmp_path, transport=again) as c:
        mod = c.load(onnx_mlp(), device="cpu", autotune=True)
        np.testing.assert_allclose(mod.mlp(X), onnx_mlp_reference(X), rtol=1e-4, atol=1e-4)
    assert again.paths == []
