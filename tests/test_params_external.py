"""Weights apart from code (option ``params: "external"``) against a real ``kiln serve``.

Two weight sets of one ONNX architecture (an MLP and a small conv net): the second compiles
nothing (same code-only graph digest, every executable a cache hit) and gets its own archive;
each runs through ``kiln.Client.load`` with its own archive and matches onnxruntime; a second
weight set for an architecture the client already holds downloads only the archive;
``/v1/params/{hex}`` serves archives like ``/v1/artifacts`` serves executables; ``kiln build``
writes the archive and lists it; bytes that do not hash to the archive's digest are refused.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from kiln import Client
from kiln.errors import IntegrityError
from tests.server import KilnServer, kiln_server

EXTERNAL = {"params": "external"}


def _model(nodes: list[Any], inits: dict[str, np.ndarray], x: list[Any], y: list[Any],
           name: str) -> onnx.ModelProto:
    g = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, y)],
        [numpy_helper.from_array(a, k) for k, a in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def mlp(seed: int) -> onnx.ModelProto:
    r = np.random.default_rng(seed)
    inits = {"w1": r.standard_normal((64, 256)), "b1": r.standard_normal(256),
             "w2": r.standard_normal((256, 10)) / 16, "b2": r.standard_normal(10)}
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]),
             helper.make_node("Add", ["h", "b1"], ["h1"]),
             helper.make_node("Relu", ["h1"], ["h2"]),
             helper.make_node("MatMul", ["h2", "w2"], ["o"]),
             helper.make_node("Add", ["o", "b2"], ["y"])]
    return _model(nodes, {k: v.astype(np.float32) for k, v in inits.items()},
                  ["N", 64], ["N", 10], "mlp")


def convnet(seed: int) -> onnx.ModelProto:
    r = np.random.default_rng(seed)
    inits = {"c1": r.standard_normal((8, 3, 3, 3)) / 4, "cb1": r.standard_normal(8),
             "c2": r.standard_normal((16, 8, 3, 3)) / 8, "cb2": r.standard_normal(16),
             "fc": r.standard_normal((16, 4)), "fb": r.standard_normal(4),
             "shape": np.array([1, 16], np.int64)}
    nodes = [helper.make_node("Conv", ["x", "c1", "cb1"], ["a"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["a"], ["a1"]),
             helper.make_node("Conv", ["a1", "c2", "cb2"], ["b"], pads=[1, 1, 1, 1],
                              strides=[2, 2]),
             helper.make_node("Relu", ["b"], ["b1"]),
             helper.make_node("GlobalAveragePool", ["b1"], ["p"]),
             helper.make_node("Reshape", ["p", "shape"], ["f"]),  # an i64 shape stays inline
             helper.make_node("Gemm", ["f", "fc", "fb"], ["y"])]
    inits = {k: v if v.dtype == np.int64 else v.astype(np.float32) for k, v in inits.items()}
    return _model(nodes, inits, [1, 3, 16, 16], [1, 4], "convnet")


NETS = {"mlp": (mlp, (5, 64)), "convnet": (convnet, (1, 3, 16, 16))}


def reference(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    import onnxruntime as ort

    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    out: np.ndarray = sess.run(None, {"x": x})[0]
    return out


def inputs(shape: tuple[int, ...]) -> np.ndarray:
    return np.random.default_rng(7).standard_normal(shape).astype(np.float32)


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KilnServer]:
    with kiln_server(tmp_path_factory, workers=1, access_log="false") as s:
        yield s


def compile_json(srv: KilnServer, model: onnx.ModelProto, targets: list[str],
                 options: dict[str, Any] | None = EXTERNAL) -> dict[str, Any]:
    r = srv.client().post("/v1/compile", content=model.SerializeToString(),
                          headers={"Content-Type": "application/octet-stream"},
                          params={"format": "onnx", "target": targets,
                                  **({"params": options["params"]} if options else {})})
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


@pytest.fixture(scope="module")
def compiled(srv: KilnServer) -> dict[str, dict[int, dict[str, Any]]]:
    """Each net's two weight sets compiled for cpu and vulkan, and the compiles each one ran."""
    out: dict[str, dict[int, dict[str, Any]]] = {}
    for name, (make, _) in NETS.items():
        out[name] = {}
        for seed in (1, 2):
            before = srv.metric("kiln_compiles_total")
            body = compile_json(srv, make(seed), ["cpu", "vulkan"])
            body["compiles"] = srv.metric("kiln_compiles_total") - before
            out[name][seed] = body
    return out


@pytest.mark.parametrize("name", NETS)
def test_a_second_weight_set_compiles_nothing_and_gets_its_own_archive(
    compiled: dict[str, dict[int, dict[str, Any]]], name: str
) -> None:
    a, b = compiled[name][1], compiled[name][2]
    assert a["compiles"] == 2 and b["compiles"] == 0
    assert a["graph_digest"] == b["graph_digest"]
    assert [x["digest"] for x in a["artifacts"]] == [x["digest"] for x in b["artifacts"]]
    assert all(x["cached"] for x in b["artifacts"])
    pa, pb = a["params"], b["params"]
    assert pa["digest"] != pb["digest"] and pa["size"] == pb["size"]
    assert pa["url"] == "/v1/params/" + pa["digest"].removeprefix("sha256:")
    assert (pa["scope"], pa["format"]) == ("model", "irpa")


def test_the_code_only_executable_is_much_smaller_than_the_embedded_one(
    srv: KilnServer, compiled: dict[str, dict[int, dict[str, Any]]]
) -> None:
    embedded = compile_json(srv, mlp(1), ["cpu"], options=None)
    assert "params" not in embedded
    assert embedded["graph_digest"] != compiled["mlp"][1]["graph_digest"]
    external = compiled["mlp"][1]["artifacts"][0]
    weights = (64 * 256 + 256 + 256 * 10 + 10) * 4
    assert external["size"] < embedded["artifacts"][0]["size"] - weights * 0.9
    assert compiled["mlp"][1]["params"]["size"] >= weights


def test_params_are_served_like_artifacts(
    srv: KilnServer, compiled: dict[str, dict[int, dict[str, Any]]]
) -> None:
    p, art = compiled["convnet"][1]["params"], compiled["convnet"][1]["artifacts"][0]
    hexd = p["digest"].removeprefix("sha256:")
    c = srv.client()
    r = c.get(p["url"])
    assert r.status_code == 200 and hashlib.sha256(r.content).hexdigest() == hexd
    assert r.content[:4] == b"IRPA" and len(r.content) == p["size"]
    assert r.headers["etag"] == f'"{hexd}"' and "immutable" in r.headers["cache-control"]
    assert r.headers["content-type"] == "application/x-iree-irpa"
    assert c.get(p["url"], headers={"If-None-Match": f'"{hexd}"'}).status_code == 304
    part = c.get(p["url"], headers={"Range": "bytes=0-3"})
    assert part.status_code == 206 and part.content == b"IRPA"
    assert part.headers["content-range"] == f"bytes 0-3/{p['size']}"
    assert c.get(p["url"], headers={"Range": f"bytes={p['size']}-"}).status_code == 416
    head = c.head(p["url"])
    assert head.status_code == 200 and head.headers["content-length"] == str(p["size"])
    # Each route serves its own kind only; anything but lowercase hex is 404.
    assert c.get(f"/v1/params/{art['digest'].removeprefix('sha256:')}").status_code == 404
    assert c.get(f"/v1/artifacts/{hexd}").status_code == 404
    assert c.get(f"/v1/params/{hexd.upper()}").status_code == 404
    # Signed: a statement about these bytes and the code-only graph.
    env = c.get(f"{p['url']}/provenance").json()
    from kiln.provenance import KeyRing, check_statement

    stmt = KeyRing.from_pems([k["public_key_pem"] for k in c.get("/v1/keys").json()]).open(env)
    check_statement(stmt, sha256=hexd)
    ext = stmt["predicate"]["buildDefinition"]["externalParameters"]
    assert ext == {"graph_digest": compiled["convnet"][1]["graph_digest"], "scope": "model",
                   "format": "irpa"}


def test_mlir_holding_its_weights_inline_is_refused_with_params_external(
    srv: KilnServer,
) -> None:
    w = ", ".join(str(i / 128) for i in range(128))
    mlir = (f"func.func @main(%x: tensor<128xf32>) -> tensor<128xf32> {{\n"
            f"  %w = arith.constant dense<[{w}]> : tensor<128xf32>\n"
            f"  %0 = arith.addf %x, %w : tensor<128xf32>\n  return %0 : tensor<128xf32>\n}}\n")
    r = srv.client().post("/v1/compile", json={"graph": {"format": "mlir", "data": mlir},
                                                "targets": ["cpu"], "options": EXTERNAL})
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_request"
    assert "inline" in r.json()["error"]["message"]


def test_mlir_reading_named_parameters_compiles_as_it_is(
    srv: KilnServer, compiled: dict[str, dict[int, dict[str, Any]]], pipeline: Any
) -> None:
    # The torch-dialect text the ONNX import wrote, weights as named parameters (what
    # kiln.torch.export sends too): same code-only graph, so the same (cached) executables.
    graph = pipeline.prepare(mlp(1).SerializeToString(), params="external")
    r = srv.client().post("/v1/compile", json={"graph": {"format": "mlir", "data": graph.mlir},
                                                "targets": ["cpu"], "options": EXTERNAL})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["input_dialect"] == "torch" and "params" not in body  # the weights stay client-side
    assert body["graph_digest"] == compiled["mlp"][1]["graph_digest"]
    assert body["artifacts"][0]["digest"] == compiled["mlp"][1]["artifacts"][0]["digest"]


class Recorder(httpx.HTTPTransport):
    """Records each request's method and path; optionally corrupts archive downloads."""

    def __init__(self, *, corrupt: bool = False) -> None:
        super().__init__()
        self.corrupt = corrupt
        self.seen: list[str] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(f"{request.method} {request.url.path}")
        resp = super().handle_request(request)
        path = request.url.path
        if self.corrupt and path.startswith("/v1/params/") and not path.endswith("provenance"):
            data = bytearray(resp.read())
            data[-1] ^= 0xFF
            return httpx.Response(resp.status_code, headers=resp.headers, content=bytes(data))
        return resp


def _run_both_weight_sets(srv: KilnServer, tmp_path: Path, device: str, name: str) -> None:
    make, shape = NETS[name]
    x = inputs(shape)
    rec = Recorder()
    with Client(srv.url, cache_dir=tmp_path / "client", transport=rec) as c:
        for seed in (1, 2):
            rec.seen.clear()
            mod = c.load(make(seed), device=device, options=EXTERNAL)
            assert mod.params is not None
            y = mod.function(name)(x)
            np.testing.assert_allclose(y, reference(make(seed), x), rtol=1e-5, atol=1e-5)
            fetched = [s for s in rec.seen if s.startswith("GET")]
            if seed == 2:  # the architecture is cached here: only the new archive comes
                assert len(fetched) == 1 and fetched[0].startswith("GET /v1/params/"), fetched


@pytest.mark.parametrize("name", NETS)
def test_each_weight_set_runs_with_its_own_archive_on_cpu(
    srv: KilnServer, compiled: dict[str, Any], tmp_path: Path, name: str
) -> None:
    _run_both_weight_sets(srv, tmp_path, "cpu:x86_64:generic", name)


@pytest.mark.vulkan
@pytest.mark.parametrize("name", NETS)
def test_each_weight_set_runs_with_its_own_archive_on_vulkan(
    srv: KilnServer, compiled: dict[str, Any], tmp_path: Path, name: str
) -> None:
    _run_both_weight_sets(srv, tmp_path, "vulkan:generic", name)


def test_an_archive_that_does_not_hash_to_its_digest_is_refused(
    srv: KilnServer, compiled: dict[str, Any], tmp_path: Path
) -> None:
    cache = tmp_path / "client"
    with Client(srv.url, cache_dir=cache, transport=Recorder(corrupt=True)) as c:
        with pytest.raises(IntegrityError, match="arrived with"):
            c.load(mlp(1), device="cpu:x86_64:generic", options=EXTERNAL)
    assert not list((cache / "params").glob("*.irpa"))  # nothing kept
    # A copy that changed in the client's cache is fetched again, not loaded.
    with Client(srv.url, cache_dir=cache) as c:
        c.load(mlp(1), device="cpu:x86_64:generic", options=EXTERNAL)
        (path,) = (cache / "params").glob("*.irpa")
        data = bytearray(path.read_bytes())
        data[-1] ^= 0xFF
        path.write_bytes(bytes(data))
        mod = c.load(mlp(1), device="cpu:x86_64:generic", options=EXTERNAL)
        assert mod.params is not None
        assert "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest() == mod.params.digest


def test_build_writes_the_archive_beside_the_executables_and_lists_it(
    srv: KilnServer, compiled: dict[str, Any], tmp_path: Path
) -> None:
    from kiln.cli import main

    (tmp_path / "convnet.onnx").write_bytes(convnet(2).SerializeToString())
    (tmp_path / "kiln.toml").write_text(
        '[[models]]\nname = "net"\npath = "convnet.onnx"\ntargets = ["cpu", "vulkan"]\n'
        'options = {params = "external"}\n')
    out = tmp_path / "out"
    code = main(["build", str(tmp_path / "kiln.toml"), "-o", str(out), "--server", srv.url])
    assert code == 0
    doc = json.loads((out / "manifest.json").read_text())
    want = compiled["convnet"][2]["params"]["digest"]
    assert [a["params"] for a in doc["artifacts"]] == [{"path": "net.irpa", "digest": want}] * 2
    assert "sha256:" + hashlib.sha256((out / "net.irpa").read_bytes()).hexdigest() == want
    assert sorted(p.name for p in out.glob("*.irpa")) == ["net.irpa"]


def test_the_archive_is_the_same_bytes_for_the_same_weights(pipeline: Any) -> None:
    data = convnet(3).SerializeToString()
    a = pipeline.prepare(data, params="external")
    b = pipeline.prepare(data, params="external")
    assert a.params is not None and b.params is not None and a.params.path != b.params.path
    data_a, data_b = Path(a.params.path).read_bytes(), Path(b.params.path).read_bytes()
    assert data_a[:4] == b"IRPA" and data_a == data_b
    assert (a.params.digest, a.params.size) == (b.params.digest, b.params.size)
    assert a.params.digest == "sha256:" + hashlib.sha256(data_a).hexdigest()
    assert "#stream.parameter.named" in a.mlir and a.digest == b.digest
    path = a.params.path
    del a  # the archive file lives as long as its graph
    assert not Path(path).exists()
    assert pipeline.prepare(data).params is None


def test_gc_and_verify_keep_an_archive_no_record_names(tmp_path: Path) -> None:
    from kiln.cache import open_cache
    from kiln.provenance import Authority, Signer

    data = b"IRPA" + bytes(range(256)) * 64
    with open_cache(cache_dir=tmp_path / "c", authority=Authority(Signer.generate())) as cache:
        digest = cache.put_params(data, graph_digest="sha256:" + "0" * 64)
        assert cache.gc().removed_blobs == 0 and cache.verify().corrupt == 0
        assert cache.read_blob(digest) == data
        assert cache.provenance(digest) is not None  # signed, and the envelope verifies


@pytest.mark.redis
def test_an_archive_reaches_the_shared_tier_and_one_made_while_it_was_down_follows(
    redis_server: Any, tmp_path: Path
) -> None:
    from kiln.cache import open_cache
    from kiln.cache.kinds import is_known
    from kiln.provenance import Authority, Signer

    auth = Authority(Signer.generate())
    up, later = b"IRPA" + b"\x01" * 4096, b"IRPA" + b"\x02" * 4096

    def replica(name: str) -> Any:
        return open_cache(cache_dir=tmp_path / name, redis_url=redis_server.url, authority=auth,
                          accept_blob=is_known, redis_retry_interval=0.05)

    with replica("a") as a, replica("b") as b:
        d_up = a.put_params(up, graph_digest="sha256:" + "1" * 64)
        assert b.read_blob(d_up) == up and b.provenance(d_up) is not None  # via Redis
        redis_server.kill()
        d_later = a.put_params(later, graph_digest="sha256:" + "1" * 64)  # kept on a's disk
        redis_server.start()  # back, empty
        # Copied once Redis answers again: by catch_up, or by the background catch-up a failed
        # write starts; the client waits out its retry interval before it tries Redis again.
        deadline = time.monotonic() + 10
        while list(a.storage.pending_dir.iterdir()) and time.monotonic() < deadline:
            a.storage.catch_up()
            time.sleep(0.05)
        assert not list(a.storage.pending_dir.iterdir())
        assert b.read_blob(d_later) == later and b.provenance(d_later) is not None


def test_a_constant_nodes_weights_are_named_after_their_value(
    pipeline: Any, tmp_path: Path
) -> None:
    """A Constant node's tensor has no name of its own (BERT's position ids, exported by torch):
    IREE's importer named its parameter at random, so one model gave another graph digest on each
    import (never a cache hit) and its archive did not hold the parameter the code read. It is
    named after the value the node defines: the same digest twice, and it runs with its archive."""
    from kiln.client.params import ParamsArchive
    from kiln.client.runtime import load_vmfb
    from kiln.targets import normalize_options, parse_target

    r = np.random.default_rng(5)
    bias = numpy_helper.from_array(r.standard_normal((4, 32)).astype(np.float32))  # no name
    assert not bias.name
    nodes = [helper.make_node("Constant", [], ["/embeddings/Constant_output_0"], value=bias),
             helper.make_node("MatMul", ["x", "w"], ["h"]),
             helper.make_node("Add", ["h", "/embeddings/Constant_output_0"], ["y"])]
    model = _model(nodes, {"w": r.standard_normal((16, 32)).astype(np.float32)}, [4, 16],
                   [4, 32], "const")
    data = model.SerializeToString()
    a = pipeline.prepare(data, params="external")
    b = pipeline.prepare(data, params="external")
    assert a.params is not None and b.params is not None
    assert a.digest == b.digest and a.params.digest == b.params.digest
    assert '"model"::"/embeddings/Constant_output_0"' in a.mlir
    art = pipeline.compile_prepared(a, parse_target("cpu"), normalize_options(EXTERNAL))
    archive = Path(a.params.path)
    fn = load_vmfb(art.data, driver="local-task", params=ParamsArchive.open(archive))["const"]
    x = inputs((4, 16))
    np.testing.assert_allclose(np.asarray(fn(x)), reference(model, x), rtol=1e-5, atol=1e-5)
