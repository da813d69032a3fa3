"""The API's description against a real ``kiln serve``: ``/openapi.json`` is a valid OpenAPI 3.1
document whose every ``$ref`` resolves and which describes every route, its inputs and its error
envelopes; a fuzzer driven only by that document (schemathesis, all checks but
``positive_data_acceptance``: a random string is schema-valid but no graph) finds nothing;
``/docs`` works without a network; ``/metrics`` names every route and error code."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openapi_spec_validator import validate

from kiln.service.types import TARGET_PATTERN
from kiln.targets.registry import _TARGET_RE, kinds
from tests.graphs import LINALG
from tests.server import KilnServer, kiln_server
from tests.test_determinism import REFORMATTED

TOKEN = "openapi-token"
ROUTES = {
    "/v1/compile": {"post"},
    "/v1/jobs": {"post"},
    "/v1/jobs/{job_id}": {"get", "delete"},
    "/v1/artifacts/{hex}": {"get", "head"},
    "/v1/artifacts/{hex}/provenance": {"get"},
    "/v1/params/{hex}": {"get", "head"},
    "/v1/params/{hex}/provenance": {"get"},
    "/v1/keys": {"get"},
    "/v1/tuning": {"post"},
    "/v1/tuning/{graph_hex}": {"get"},
    "/v1/targets": {"get", "head"},
    "/healthz": {"get", "head"},
    "/readyz": {"get", "head"},
    "/metrics": {"get", "head"},
    "/": {"get"},
    "/login": {"post"},
    "/logout": {"post"},
}
#: The status page (HTML for a browser; it signs in with a form, not the bearer header).
PAGE = {"/", "/login", "/logout"}
ENVELOPE = {"$ref": "#/components/schemas/ErrorEnvelope"}


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KilnServer]:
    with kiln_server(tmp_path_factory, workers=1, tokens=TOKEN, compile_timeout=120) as s:
        yield s


@pytest.fixture(scope="module")
def spec(srv: KilnServer) -> dict[str, Any]:
    r = srv.client().get("/openapi.json")
    assert r.status_code == 200
    doc: dict[str, Any] = r.json()
    return doc


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str):
                yield v
            else:
                yield from _refs(v)
    elif isinstance(node, list):
        for v in node:
            yield from _refs(v)


def _resolve(doc: dict[str, Any], ref: str) -> Any:
    assert ref.startswith("#/"), ref
    node: Any = doc
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        assert isinstance(node, dict) and part in node, f"{ref} does not resolve"
        node = node[part]
    return node


def test_the_document_is_valid_and_every_ref_resolves(spec: dict[str, Any]) -> None:
    validate(spec)
    refs = set(_refs(spec))
    assert "#/components/schemas/CompileRequest" in refs
    for ref in refs:
        _resolve(spec, ref)


def test_every_route_is_described_with_its_errors(spec: dict[str, Any]) -> None:
    paths = spec["paths"]
    assert {p: set(ops) for p, ops in paths.items()} == ROUTES
    for path, ops in paths.items():
        for method, op in ops.items():
            assert op.get("summary"), (method, path)
            assert {"200", "202", "204", "303"} & set(op["responses"]), (method, path)
            for status, resp in op["responses"].items():
                if path in PAGE and status in ("200", "303", "400", "403", "429"):
                    assert set(resp["content"]) == {"text/html"}, (method, path, status)
                elif int(status) >= 400:
                    schema = resp["content"]["application/json"]["schema"]
                    assert schema == ENVELOPE, (method, path, status)
            # Validation errors are 400 in the envelope: FastAPI's 422 body is nowhere.
            assert "HTTPValidationError" not in json.dumps(op)
            # With tokens configured, every route but the probes and the page asks for one.
            wants_token = path not in ("/healthz", "/readyz", *PAGE)
            assert ("security" in op) is wants_token, (method, path)
            assert ("401" in op["responses"]) is wants_token, (method, path)
    assert spec["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    codes = spec["components"]["schemas"]["ErrorInfo"]["properties"]["code"]["description"]
    assert "unsupported_target" in codes and "incompatible_runtime" in codes
    compile_ = paths["/v1/compile"]["post"]
    assert set(compile_["responses"]) >= {"200", "400", "409", "413", "422", "503", "507"}
    # The three body forms: JSON, raw bytes and a tar of ONNX with its side files (the raw ones
    # with their query parameters).
    assert set(compile_["requestBody"]["content"]) == {
        "application/json", "application/octet-stream", "application/x-tar"}
    params = {p["name"]: p for p in compile_["parameters"]}
    assert set(params) == {"format", "target", "option", "params", "X-Kiln-Runtime"}
    assert "opt_level=O3" in json.dumps(params["option"]["schema"])
    # A job takes the compile request in both forms, answers 202 with a Location.
    submit = paths["/v1/jobs"]["post"]
    assert set(submit["requestBody"]["content"]) == set(compile_["requestBody"]["content"])
    assert "Location" in submit["responses"]["202"]["headers"]
    assert {p["name"] for p in paths["/v1/jobs/{job_id}"]["get"]["parameters"]} == {
        "job_id", "wait"}
    artifact = paths["/v1/artifacts/{hex}"]["get"]
    assert set(artifact["responses"]) >= {"200", "206", "304", "404", "416"}
    assert "application/x-iree-vmfb" in artifact["responses"]["200"]["content"]
    params_route = paths["/v1/params/{hex}"]["get"]
    assert set(params_route["responses"]) >= {"200", "206", "304", "404", "416"}
    assert "application/x-iree-irpa" in params_route["responses"]["200"]["content"]
    targets = paths["/v1/targets"]["get"]["responses"]["200"]["content"]["application/json"]
    assert targets["schema"] == {"$ref": "#/components/schemas/TargetsResponse"}


def test_a_target_string_is_schema_valid_only_if_the_server_parses_it(
    spec: dict[str, Any],
) -> None:
    req = spec["components"]["schemas"]["CompileRequest"]
    targets = req["properties"]["targets"]
    assert targets["minItems"] == 1
    item = targets["items"]
    assert item["minLength"] == 1 and item["pattern"] == TARGET_PATTERN
    pattern = re.compile(item["pattern"])  # fullmatch: ECMA's $ is the end, not before a \n
    # Every example of API.md's target table is schema-valid.
    for t in ["cpu", "cpu:x86_64", "cpu:x86_64:znver3", "cpu:aarch64:neoverse-v1", "cpu:riscv64",
              "cuda:sm_80", "cuda:sm_100", "cuda:a100", "rocm:gfx942", "rocm:mi300x", "vulkan",
              "vulkan:rdna3", "vulkan:valhall4", "metal", "metal:ios"]:
        assert pattern.fullmatch(t), t
    for kind in kinds():
        assert pattern.fullmatch(kind), kind
    # What the schema allows, the server's target parser takes as well-formed (then it resolves
    # the arch, or answers 400 unsupported_target listing the valid ones).
    for t in ["", " ", "cpu cuda", "gpu", "cpu;rm", "cpu\n", "cuda:sm_80/x"]:
        assert not pattern.fullmatch(t), repr(t)
    for t in ["cpu:", "cuda::x", "vulkan:+a,-b", "rocm:gfx942:x.y_z"]:
        assert pattern.fullmatch(t) and _TARGET_RE.match(t), t
    options = req["properties"]["options"]["anyOf"][0]
    assert options["additionalProperties"] is False
    assert "O2" in options["properties"]["opt_level"]["enum"]


def _compile(srv: KilnServer, graph: str) -> dict[str, Any]:
    r = srv.client().post(
        "/v1/compile", json={"graph": {"format": "mlir", "data": graph}, "targets": ["cpu"]}
    )
    assert r.status_code == 200, r.text
    art: dict[str, Any] = r.json()["artifacts"][0]
    return art


def _schemathesis(args: list[str], cwd: Path) -> None:
    exe = shutil.which("schemathesis", path=str(Path(sys.executable).parent)) or "schemathesis"
    cmd = [exe, "--config-file", "schemathesis.toml", "run", *args,
           "--checks", "all", "--exclude-checks", "positive_data_acceptance",
           "--max-examples", "40", "--seed", "17", "--workers", "1", "--no-color",
           "--header", f"Authorization: Bearer {TOKEN}", "--request-timeout", "60"]
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=240,
                          check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-8000:]
    assert "Operations:" in out and " passed" in out, out[-4000:]


# A bench suite (`scripts/test.sh -m bench`): the default run had grown past its 15 minutes.
@pytest.mark.bench
def test_a_fuzzer_driven_by_the_document_finds_nothing(
    srv: KilnServer, spec: dict[str, Any], tmp_path: Path
) -> None:
    # A real executable and compile key, so the artifact routes answer more than 404.
    art = _compile(srv, LINALG)
    hexd = art["digest"].split(":", 1)[1]
    (tmp_path / "schemathesis.toml").write_text(
        "[warnings]\n"
        'fail-on = ["unresolvable_reference", "unsupported_regex", "missing_deserializer",'
        ' "unused_openapi_auth"]\n'
        "[parameters]\n"
        f'"path.hex" = "{hexd}"\n'
        f'"query.key" = "{art["key"]}"\n'
    )
    # Every operation, as the server describes itself (tokens on: ignored_auth is checked too).
    _schemathesis([srv.url + "/openapi.json"], tmp_path)
    # /v1/compile's JSON form alone: OpenAPI cannot tie the raw form's query parameters to its
    # content type, so in the run above most JSON bodies carry them (and are refused, 400);
    # without them the generated graphs and targets reach the graph parser and target resolver.
    json_only = json.loads(json.dumps(spec))
    op = json_only["paths"]["/v1/compile"]["post"]
    op["parameters"] = [p for p in op["parameters"] if p["in"] != "query"]
    del op["requestBody"]["content"]["application/octet-stream"]
    (tmp_path / "compile-json.json").write_text(json.dumps(json_only))
    before = srv.metric("kiln_requests_total", route="/v1/compile", code="invalid_graph")
    _schemathesis(["compile-json.json", "--url", srv.url, "--include-operation-id", "compile"],
                  tmp_path)
    assert srv.metric("kiln_requests_total", route="/v1/compile", code="invalid_graph") > before


def test_docs_load_without_a_network(srv: KilnServer) -> None:
    c = srv.client()
    page = c.get("/docs")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    urls = re.findall(r"""(?:src|href)=["']([^"']+)["']""", page.text)
    urls += re.findall(r"""url:\s*["']([^"']+)["']""", page.text)
    assert urls and all(u.startswith("/") for u in urls), urls
    assert "http://" not in page.text and "https://" not in page.text
    assert '"validatorUrl": null' in page.text
    assert "/openapi.json" in urls
    for u in urls:
        r = c.get(u)
        assert r.status_code == 200 and r.content, u
    js = c.get("/docs/swagger-ui-bundle.js")
    assert "javascript" in js.headers["content-type"] and b"SwaggerUIBundle" in js.content
    assert "text/css" in c.get("/docs/swagger-ui.css").headers["content-type"]
    assert c.get("/docs/../pyproject.toml").status_code == 404
    assert c.get("/docs/LICENSE").status_code == 404


def test_metrics_name_every_route_and_error_code(srv: KilnServer) -> None:
    c = srv.client()
    for path in ("/docs", "/openapi.json", "/metrics", "/docs/swagger-ui.css"):
        assert c.get(path).status_code == 200
    assert c.get("/v1/keys", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert c.get("/no/such/route").status_code == 404
    assert c.get("/v1/artifacts/" + "0" * 64).status_code == 404
    samples = {lbl: v for (name, lbl), v in srv.metrics().items()
               if name == "kiln_requests_total"}
    labels = [dict(lbl) for lbl in samples]
    routes = {lbl["route"] for lbl in labels}
    assert {"/docs", "/openapi.json", "/metrics", "/docs/{asset}"} <= routes
    assert "-" not in routes
    assert {"route": "/v1/keys", "status": "401", "code": "unauthorized"} in labels
    assert {"route": "unmatched", "status": "404", "code": "not_found"} in labels
    assert {"route": "/v1/artifacts/{hex}", "status": "404", "code": "not_found"} in labels
    assert all(lbl["code"] == "" for lbl in labels if int(lbl["status"]) < 400)


def test_a_cache_hit_reports_no_compile_time(srv: KilnServer) -> None:
    first = _compile(srv, LINALG.replace("arith.maximumf", "arith.minimumf"))
    assert first["cached"] is False and first["compile_seconds"] > 0
    # The same graph reformatted: other bytes (no memo), the same compile key (a cache hit).
    second = _compile(srv, REFORMATTED.replace("arith.maximumf", "arith.minimumf"))
    assert second["key"] == first["key"]
    assert second["cached"] is True and second["compile_seconds"] == 0
    # The same bytes again: answered from the identical-request memo.
    third = _compile(srv, REFORMATTED.replace("arith.maximumf", "arith.minimumf"))
    assert third["cached"] is True and third["compile_seconds"] == 0
