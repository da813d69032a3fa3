"""Whatever a client sends, the daemon answers a clean envelope with a stable code, stays healthy,
and writes nothing outside its cache directory."""

from __future__ import annotations

import base64
import json
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cluster import rss_tree
from tests.graphs import onnx_external_data, onnx_mlp
from tests.server import KilnServer, kiln_server

NOTES = Path(__file__).resolve().parents[2] / "shared" / "iree-notes"
ADD = "func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> { return %a : tensor<4xf32> }"


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KilnServer]:
    # A 4 GiB address-space cap per worker: the 64k x 64k constant cannot take the machine down.
    with kiln_server(
        tmp_path_factory, workers=2, compile_timeout=120, worker_memory_bytes=4 << 30
    ) as s:
        yield s


def _files(root: Path, cache: Path) -> set[str]:
    out = set()
    for dirpath, _dirs, files in os.walk(root):
        d = Path(dirpath)
        if d == cache or cache in d.parents:
            continue
        for f in files:
            p = d / f
            if p.suffix == ".log" or (p.name.startswith("worker-") and p.suffix == ".stderr"):
                continue  # the server's own log and the worker pool's stderr captures
            out.add(str(p.relative_to(root)))
    return out


def _amplified(uses: int = 2500, n: int = 10000) -> str:
    """A stranger's probe: a 10,000-float attribute alias used ``uses`` times (~0.2 MB of request,
    ~200 MB printed in full)."""
    vals = ",".join(f"{i % 97}.5" for i in range(n))
    body = "".join(f"  %c{i} = arith.constant #big\n" for i in range(uses))
    return (f"#big = dense<[{vals}]> : tensor<{n}xf32>\n"
            f"func.func @main(%x: tensor<{n}xf32>) -> tensor<{n}xf32> {{\n{body}"
            f"  return %x : tensor<{n}xf32>\n}}\n")


AMPLIFIED = _amplified()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _onnx_external_outside() -> bytes:
    return onnx_external_data("../../etc/passwd")


def _mlir(text: str, targets: list[str] | None = None, **graph: Any) -> dict[str, Any]:
    return {"graph": {"format": "mlir", "data": text, **graph}, "targets": targets or ["cpu"]}


def _nested_regions(depth: int) -> str:
    return (
        "func.func @main() {\n" + "scf.execute_region {\n" * depth
        + "scf.yield\n}\n" * depth + "return\n}\n"
    )


BIG_CONST = (
    "func.func @main() -> tensor<65536x65536xf32> {\n"
    "  %c = arith.constant dense<1.0> : tensor<65536x65536xf32>\n"
    "  return %c : tensor<65536x65536xf32>\n}\n"
)
MLP = onnx_mlp()

# name -> (request kwargs for httpx, accepted statuses, accepted codes)
JSON = "application/json"
RAW = "application/octet-stream"
CASES: dict[str, tuple[dict[str, Any], set[int], set[str]]] = {
    "unregistered-op": (
        {"json": _mlir('func.func @main() {\n  "foo.bar"() : () -> ()\n  return\n}\n')},
        {400}, {"invalid_graph"}),
    "conv-crasher-gfx942": ({"json": _mlir((NOTES / "conv4_crashes_gfx9.mlir").read_text(),
                                           ["rocm:gfx942"])}, {200, 422}, {"compile_failed"}),
    "cuda-unknown": ({"json": _mlir(ADD, ["cuda:sm_999"])}, {400}, {"unsupported_target"}),
    "vulkan-unknown": ({"json": _mlir(ADD, ["vulkan:geforce9"])}, {400}, {"unsupported_target"}),
    "cpu-unknown": ({"json": _mlir(ADD, ["cpu:x86_64:pentium9"])}, {400}, {"unsupported_target"}),
    "garbage-onnx": (
        {"json": {"graph": {"format": "onnx", "encoding": "base64",
                            "data": _b64(b"\x08\x07garbage\xff\xff\xff")}, "targets": ["cpu"]}},
        {400}, {"invalid_graph"}),
    "truncated-onnx-raw": (
        {"content": MLP[: len(MLP) // 2], "params": {"format": "onnx", "target": "cpu"},
         "headers": {"content-type": RAW}}, {400}, {"invalid_graph"}),
    "zeros-raw": ({"content": b"\0" * 64, "params": {"target": "cpu"},
                   "headers": {"content-type": RAW}}, {400}, {"invalid_graph"}),
    "onnx-external-data-outside": (
        {"content": _onnx_external_outside(), "params": {"target": "cpu"},
         "headers": {"content-type": RAW}}, {400}, {"invalid_graph"}),
    "flag-as-target": ({"json": _mlir(ADD, ["--iree-hal-target-device=cuda"])},
                       {400}, {"unsupported_target"}),
    "flag-in-arch": ({"json": _mlir(ADD, ["cpu:--iree-llvmcpu-target-cpu=host"])},
                     {400}, {"unsupported_target"}),
    "flag-as-raw-target": ({"content": ADD.encode(), "params": {"target": "--iree-foo"},
                            "headers": {"content-type": RAW}}, {400}, {"unsupported_target"}),
    "flag-in-format": ({"json": _mlir(ADD) | {"graph": {"format": "mlir --x", "data": ADD}}},
                       {400}, {"invalid_request"}),
    "flag-in-raw-format": ({"content": ADD.encode(), "params": {"format": "mlir --x",
                            "target": "cpu"}, "headers": {"content-type": RAW}},
                           {400}, {"invalid_request"}),
    "flag-in-encoding": ({"json": _mlir(ADD, encoding="utf-8 --iree-x")},
                         {400}, {"invalid_request"}),
    "flag-in-option-value": ({"json": _mlir(ADD) | {"options": {"opt_level": "O3 --iree-x"}}},
                             {400}, {"invalid_request"}),
    "raw-flags-in-options": ({"json": _mlir(ADD) | {"options": {"flags": ["--iree-x"]}}},
                             {400}, {"invalid_request"}),
    "flag-as-option-key": ({"json": _mlir(ADD) | {"options": {"--iree-hal-target-device": "x"}}},
                           {400}, {"invalid_request"}),
    "raw-option-flag": ({"content": ADD.encode(), "params": {"target": "cpu",
                         "option": "--iree-opt-level=O3"}, "headers": {"content-type": RAW}},
                        {400}, {"invalid_request"}),
    "flag-in-graph-text": ({"json": _mlir("--iree-hal-target-device=cuda")},
                           {400}, {"invalid_graph"}),
    "64k-by-64k-constant": ({"json": _mlir(BIG_CONST)}, {200, 400, 422},
                            {"invalid_graph", "compile_failed", "compile_timeout"}),
    "nested-regions": ({"json": _mlir(_nested_regions(20000))}, {200, 400, 422},
                       {"invalid_graph", "compile_failed"}),
    "nested-json": ({"content": b'{"graph":' + b"[" * 100_000 + b"]" * 100_000 + b"}",
                     "headers": {"content-type": JSON}}, {400}, {"invalid_request"}),
    "malformed-json": ({"content": b'{"graph": {"data": ', "headers": {"content-type": JSON}},
                       {400}, {"invalid_request"}),
    "json-not-an-object": ({"content": b"[1, 2]", "headers": {"content-type": JSON}},
                           {400}, {"invalid_request"}),
    "empty-body": ({"content": b"", "headers": {"content-type": JSON}}, {400},
                   {"invalid_request"}),
    "bad-base64": ({"json": _mlir("!!!not base64!!!", encoding="base64")},
                   {400}, {"invalid_request"}),
    "lone-surrogate": ({"content": b'{"graph": {"data": "\\ud800"}, "targets": ["cpu"]}',
                        "headers": {"content-type": JSON}}, {400}, {"invalid_request"}),
    "nul-in-mlir": ({"json": _mlir(ADD + "\0")}, {400}, {"invalid_graph"}),
    "empty-module": ({"json": _mlir("module {}")}, {400}, {"invalid_graph"}),
    "amplified-alias": ({"json": _mlir(AMPLIFIED)}, {413}, {"too_large"}),
    "only-private-functions": ({"json": _mlir(ADD.replace("@main", "private @main"))},
                               {400}, {"invalid_graph"}),
    "unknown-key": ({"json": _mlir(ADD) | {"flags": ["--iree-x"]}}, {400}, {"invalid_request"}),
    "targets-a-string": ({"json": _mlir(ADD) | {"targets": "cpu"}}, {400}, {"invalid_request"}),
    "no-targets": ({"json": _mlir(ADD) | {"targets": []}}, {400}, {"invalid_request"}),
    "too-many-targets": ({"json": _mlir(ADD, ["cpu"] * 17 + [f"cpu:x86_64:znver{i}"
                                                           for i in range(1, 5)])},
                         {400}, {"invalid_request", "unsupported_target"}),
    "wrong-content-type": ({"content": ADD.encode(), "headers": {"content-type": "text/plain"}},
                           {400}, {"invalid_request"}),
}


@pytest.fixture(scope="module")
def before(srv: KilnServer) -> set[str]:
    assert srv.client().post("/v1/compile", json=_mlir(ADD)).status_code == 200  # warm
    return _files(srv.root, srv.cache_dir)


@pytest.mark.parametrize("name", list(CASES))
def test_bad_input_answers_a_clean_envelope(srv: KilnServer, before: set[str], name: str) -> None:
    kwargs, statuses, codes = CASES[name]
    r = srv.client().post("/v1/compile", **kwargs)
    assert r.status_code in statuses, r.text[:2000]
    if r.status_code != 200:
        err = r.json()["error"]
        assert set(err) == {"code", "message", "detail"}
        assert err["code"] in codes, err
        assert "Traceback" not in r.text
    assert srv.healthy(), srv.log_tail()
    assert _files(srv.root, srv.cache_dir) == before


def test_an_amplified_graph_is_refused_fast_and_small(srv: KilnServer) -> None:
    before = rss_tree(srv.proc.pid)
    t0 = time.monotonic()
    r = srv.client().post("/v1/compile", json=_mlir(_amplified(uses=5000)))
    took = time.monotonic() - t0
    assert r.status_code == 413 and r.json()["error"]["code"] == "too_large", r.text[:500]
    assert r.json()["error"]["detail"]["canonical_bytes"] > r.json()["error"]["detail"]["limit"]
    assert took < 60
    assert rss_tree(srv.proc.pid) - before < 512 << 20  # +1.0-1.3 GB when it was expanded
    assert srv.healthy()


@pytest.mark.parametrize(
    "path",
    [
        "/v1/artifacts/..%2f..%2fetc%2fpasswd",
        "/v1/artifacts/%2e%2e",
        "/v1/artifacts/" + "A" * 64,
        "/v1/artifacts/sha256:" + "a" * 64,
        "/v1/artifacts/" + "a" * 63,
        "/v1/artifacts/" + "0" * 64,  # well-formed, absent
    ],
)
def test_artifact_urls_never_escape_the_cache(srv: KilnServer, path: str) -> None:
    r = srv.client().get(path)
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"


def test_dot_dot_path_sent_raw_is_not_found(srv: KilnServer) -> None:
    # httpx normalizes dot segments; send the request line as an attacker would.
    with socket.create_connection(("127.0.0.1", srv.port), timeout=30) as s:
        s.sendall(b"GET /v1/artifacts/../../../../etc/passwd HTTP/1.1\r\nHost: x\r\n"
                  b"Connection: close\r\n\r\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.split()[1] == b"404"
    assert json.loads(body)["error"]["code"] == "not_found"
    assert b"root:" not in body
