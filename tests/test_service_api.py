"""The daemon's routes, end to end: a real ``kiln serve`` on a loopback port, the real compiler,
executables run on CPU and on lavapipe (Vulkan)."""

from __future__ import annotations

import base64
import threading
from collections.abc import Iterator

import httpx
import numpy as np
import pytest

from kiln.client.runtime import load_vmfb
from tests.graphs import LINALG, STABLEHLO, TOSA
from tests.server import KilnServer, kiln_server
from tests.test_determinism import REFORMATTED


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KilnServer]:
    with kiln_server(tmp_path_factory, workers=2, compile_timeout=240) as s:
        yield s


def _mlir(text: str, targets: list[str], **extra: object) -> dict[str, object]:
    return {"graph": {"format": "mlir", "data": text}, "targets": targets, **extra}


def test_compile_fetch_run_on_cpu_and_lavapipe(srv: KilnServer) -> None:
    c = srv.client()
    r = c.post("/v1/compile", json=_mlir(LINALG, ["cpu", "vulkan"]))
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["graph_digest"].startswith("sha256:") and body["input_dialect"] == "linalg"
    assert body["compiler"]["name"] == "iree" and body["errors"] == []
    assert [a["target"] for a in body["artifacts"]] == ["cpu:x86_64:generic", "vulkan:generic"]
    rng = np.random.default_rng(1)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((4, 8), (8, 3), (3,)))
    for art, driver in zip(body["artifacts"], ["local-task", "vulkan"], strict=True):
        assert art["flags"] and all(f.startswith("--iree-") for f in art["flags"])
        hexd = art["digest"].split(":", 1)[1]
        assert art["url"] == f"/v1/artifacts/{hexd}"
        got = c.get(art["url"])
        assert got.status_code == 200
        assert got.headers["content-type"] == "application/x-iree-vmfb"
        assert got.headers["etag"] == f'"{hexd}"'
        assert got.headers["cache-control"] == "public, max-age=31536000, immutable"
        assert len(got.content) == art["size"]
        out = load_vmfb(got.content, driver=driver).main(x, w, b)
        np.testing.assert_allclose(out, np.maximum(x @ w + b, 0), rtol=1e-5, atol=1e-5)
        # Conditional and HEAD requests.
        assert c.get(art["url"], headers={"If-None-Match": f'"{hexd}"'}).status_code == 304
        head = c.head(art["url"])
        assert head.status_code == 200 and head.content == b""
        assert int(head.headers["content-length"]) == art["size"]


def test_a_small_artifact_answers_byte_ranges(srv: KilnServer) -> None:
    c = srv.client()
    art = c.post("/v1/compile", json=_mlir(LINALG, ["cpu"])).json()["artifacts"][0]
    whole = c.get(art["url"]).content  # now in the memory tier: the fast path must defer
    n = len(whole)
    assert n == art["size"] < 4 << 20
    for spec, first, last in [("bytes=0-99", 0, 99), ("bytes=100-", 100, n - 1),
                              ("bytes=-16", n - 16, n - 1), (f"bytes=10-{10 * n}", 10, n - 1)]:
        r = c.get(art["url"], headers={"Range": spec})
        assert r.status_code == 206, spec
        assert r.headers["content-range"] == f"bytes {first}-{last}/{n}"
        assert r.content == whole[first : last + 1]
    r = c.get(art["url"], headers={"Range": f"bytes={n}-"})
    assert r.status_code == 416 and r.headers["content-range"] == f"bytes */{n}"
    # several ranges, or an If-Range for other bytes: the whole executable
    for headers in ({"Range": "bytes=0-1,5-6"}, {"Range": "bytes=0-1", "If-Range": '"other"'}):
        r = c.get(art["url"], headers=headers)
        assert r.status_code == 200 and r.content == whole


def test_reformatted_graph_is_a_cache_hit_without_compiling(srv: KilnServer) -> None:
    c = srv.client()
    first = c.post("/v1/compile", json=_mlir(LINALG, ["cpu"])).json()
    compiles = srv.metric("kiln_compiles_total")
    hits = srv.metric("kiln_cache_requests_total", result="hit")
    again = c.post("/v1/compile", json=_mlir(REFORMATTED, ["cpu"]))
    assert again.status_code == 200, again.text
    body = again.json()
    assert body["graph_digest"] == first["graph_digest"]
    assert body["artifacts"][0]["cached"] is True
    assert body["artifacts"][0]["digest"] == first["artifacts"][0]["digest"]
    assert srv.metric("kiln_compiles_total") == compiles
    assert srv.metric("kiln_cache_requests_total", result="hit") > hits


def test_sixteen_identical_cold_requests_compile_once(srv: KilnServer) -> None:
    payload = _mlir(TOSA.replace("tosa.exp", "tosa.tanh"), ["cpu"])
    before = srv.metric("kiln_compiles_total", kind="cpu")
    start = threading.Barrier(16)
    answers: list[httpx.Response] = []
    lock = threading.Lock()

    def one() -> None:
        with httpx.Client(base_url=srv.url, timeout=300) as c:
            start.wait()
            r = c.post("/v1/compile", json=payload)
        with lock:
            answers.append(r)

    threads = [threading.Thread(target=one) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [r.status_code for r in answers] == [200] * 16, answers[0].text
    assert len({r.content for r in answers}) == 1  # 16 identical answers
    assert srv.metric("kiln_compiles_total", kind="cpu") == before + 1


def test_multi_megabyte_onnx_as_raw_body_compiles_and_runs(srv: KilnServer) -> None:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(7)
    w = (rng.standard_normal((1024, 1024)) / 32).astype(np.float32)  # 4 MiB of weights
    w2 = (rng.standard_normal((1024, 3)) / 32).astype(np.float32)
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Relu", ["h"], ["r"]),
         helper.make_node("MatMul", ["r", "w2"], ["y"])],
        "big",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 1024])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        initializer=[numpy_helper.from_array(w, "w"), numpy_helper.from_array(w2, "w2")],
    )
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    data = model.SerializeToString()
    assert len(data) > 4 << 20
    c = srv.client()
    r = c.post(
        "/v1/compile?format=onnx&target=cpu&option=opt_level=O2",
        content=data,
        headers={"Content-Type": "application/octet-stream"},
    )
    assert r.status_code == 200, r.text
    art = r.json()["artifacts"][0]
    assert r.json()["input_dialect"] == "onnx" and "--iree-opt-level=O2" in art["flags"]
    x = rng.standard_normal((2, 1024)).astype(np.float32)
    fn = r.json()["functions"][0]
    out = load_vmfb(c.get(art["url"]).content, driver="local-task")[fn](x)
    np.testing.assert_allclose(out, np.maximum(x @ w, 0) @ w2, rtol=1e-4, atol=1e-4)
    assert onnx


def test_base64_graph_and_partial_failure(srv: KilnServer) -> None:
    c = srv.client()
    payload = {
        "graph": {"format": "mlir", "encoding": "base64",
                  "data": base64.b64encode(STABLEHLO.encode()).decode()},
        "targets": ["cpu", "metal"],
    }
    r = c.post("/v1/compile", json=payload)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["input_dialect"] == "stablehlo"
    done = {a["target"] for a in body["artifacts"]} | {e["target"] for e in body["errors"]}
    assert "cpu:x86_64:generic" in done and len(done) == 2
    for e in body["errors"]:
        assert set(e["error"]) == {"code", "message", "detail"}


def test_targets_probes_metrics_docs(srv: KilnServer) -> None:
    c = srv.client()
    t = c.get("/v1/targets").json()
    assert t["compiler"]["version"]
    kinds = {k["kind"]: k for k in t["kinds"]}
    assert {"cpu", "cuda", "rocm", "vulkan", "metal"} <= set(kinds)
    assert "sm_80" in kinds["cuda"]["archs"] and kinds["cuda"]["aliases"]["a100"] == "sm_80"
    assert c.get("/healthz").json() == {"status": "ok"}
    ready = c.get("/readyz")
    assert ready.status_code == 200 and ready.json()["checks"]["cache"] == "ok"
    text = c.get("/metrics").text
    for name in ("kiln_compiles_total", "kiln_cache_requests_total", "kiln_compile_seconds",
                 "kiln_compile_queue_depth", "kiln_compiles_in_flight",
                 "kiln_artifact_bytes_served_total"):
        assert name in text
    spec = c.get("/openapi.json").json()
    assert "ErrorEnvelope" in spec["components"]["schemas"]
    assert "413" in spec["paths"]["/v1/compile"]["post"]["responses"]
    assert c.get("/docs").status_code == 200


def test_envelopes_for_routing_errors_and_request_ids(srv: KilnServer) -> None:
    c = srv.client()
    r = c.get("/no/such/route", headers={"X-Request-ID": "abc-123"})
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"
    assert r.headers["x-request-id"] == "abc-123"
    assert c.get("/healthz").headers["x-request-id"]  # one is made up when none is sent
    r = c.delete("/v1/compile")
    assert r.status_code == 405 and r.json()["error"]["code"] == "invalid_request"
    assert "abc-123" in srv.log_path.read_text()  # the JSON access log carries it


@pytest.mark.parametrize("path", ["/healthz", "/readyz", "/metrics", "/v1/targets"])
def test_read_only_routes_answer_head_like_get(srv: KilnServer, path: str) -> None:
    c = srv.client()
    get, head = c.get(path), c.head(path)
    assert get.status_code == head.status_code == 200
    assert head.content == b"" and head.headers["content-type"] == get.headers["content-type"]


@pytest.mark.parametrize("path", ["/healthz/", "/v1/targets/", "/v1/compile/"])
def test_a_trailing_slash_is_not_found_not_a_redirect(srv: KilnServer, path: str) -> None:
    r = srv.client().request("GET", path, headers={"Host": "evil.example"})
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"
    assert "location" not in r.headers
