"""What an error tells a client: the compiler's first ``error:`` line leads the message (its
notes after it), a call to a function declared without a body is the graph's compile failure
(422, not 500 ``internal``), and no answer names a path of the server (its install, source tree,
cache or temporary directories)."""

from __future__ import annotations

import base64
import re
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from kiln.compiler.tasks import _failure_message, parse_diagnostics
from tests.graphs import onnx_external_data
from tests.server import REPO, KilnServer, kiln_server

EXTERNAL_CALL = """func.func private @ext(tensor<4xf32>) -> tensor<4xf32>
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = call @ext(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""
# The CPU backend cannot lower a custom call: an error, then "note: see current operation".
CUSTOM_CALL = """func.func @main(%a: tensor<8xi32>) -> tensor<8xi32> {
  %0 = stablehlo.custom_call @foo(%a) : (tensor<8xi32>) -> tensor<8xi32>
  return %0 : tensor<8xi32>
}
"""
NOT_PARSING = "func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n  %x = foo.bar %a\n}\n"


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KilnServer]:
    with kiln_server(tmp_path_factory, workers=1) as s:
        yield s


def _mlir(text: str) -> dict[str, Any]:
    return {"graph": {"format": "mlir", "data": text}, "targets": ["cpu"]}


def _target_error(body: dict[str, Any]) -> dict[str, Any]:
    errors = body["error"]["detail"]["errors"]
    assert len(errors) == 1
    err: dict[str, Any] = errors[0]["error"]
    return err


def test_the_first_error_line_leads_the_message_and_its_notes_follow(srv: KilnServer) -> None:
    r = srv.client().post("/v1/compile", json=_mlir(CUSTOM_CALL))
    assert r.status_code == 422, r.text
    err = _target_error(r.json())
    assert err["code"] == "compile_failed"
    lines = err["message"].splitlines()
    # Locations are the graph's canonical form's (input.mlir), which the detail's command compiles.
    assert re.match(r"input\.mlir:\d+:\d+: error: failed to legalize operation "
                    r"'stablehlo.custom_call'", lines[0]), lines
    assert re.match(r"input\.mlir:\d+:\d+: note: see current operation", lines[1]), lines
    assert all(len(line) <= 400 for line in lines)


def test_a_call_to_a_function_without_a_body_is_a_compile_failure(srv: KilnServer) -> None:
    r = srv.client().post("/v1/compile", json=_mlir(EXTERNAL_CALL))
    assert r.status_code == 422, r.text
    assert r.json()["error"]["code"] == "compile_failed"
    err = _target_error(r.json())
    assert err["code"] == "compile_failed"
    assert re.match(r"input\.mlir:\d+:\d+: error: ", err["message"]), err["message"]
    assert "declares without a body" in err["message"]
    assert any("@ext" in d for d in err["detail"]["diagnostics"])


def test_no_answer_names_a_server_path(srv: KilnServer) -> None:
    c = srv.client()
    answers = [
        c.post("/v1/compile", json=_mlir(CUSTOM_CALL)),
        c.post("/v1/compile", json=_mlir(EXTERNAL_CALL)),
        c.post("/v1/compile", json=_mlir(NOT_PARSING)),
        c.post("/v1/compile", params={"format": "onnx", "target": "cpu"},
               content=onnx_external_data("../../etc/passwd"),
               headers={"Content-Type": "application/octet-stream"}),
        c.post("/v1/compile", json={
            "graph": {"format": "onnx", "encoding": "base64",
                      "data": base64.b64encode(onnx_external_data("w.bin")).decode()},
            "targets": ["cpu"]}),
    ]
    assert [a.status_code for a in answers] == [422, 422, 400, 400, 400], [
        a.text[:300] for a in answers]
    # A compile failure kept in a job, and one among the targets of a 200.
    job = c.post("/v1/jobs", json={**_mlir(CUSTOM_CALL), "targets": ["cpu", "cpu:aarch64"]})
    assert job.status_code == 202, job.text
    deadline = time.monotonic() + 120
    while (doc := c.get(job.headers["Location"], params={"wait": 5})).json()["state"] in (
            "queued", "running"):
        assert time.monotonic() < deadline
    answers.append(doc)
    assert doc.json()["state"] == "failed", doc.text
    private = [sys.prefix, str(REPO), str(srv.cache_dir), str(srv.root), "site-packages"]
    for a in answers:
        for p in private:
            assert p not in a.text, (p, a.text[:2000])
    compile_failed = answers[0].json()["error"]["detail"]["errors"][0]["error"]["detail"]
    assert compile_failed["command"][0] == "iree-compile"  # still a command one can run


def test_diagnostics_are_read_whatever_their_location_looks_like() -> None:
    stderr = (
        "<unknown>:0: error: failed to legalize 'x.y'\n"
        "<unknown>:0: note: see current operation: %0 = x.y\n"
        "error: loc(\"conv1\"): exceeded stack allocation limit\n"
    )
    diags = parse_diagnostics(stderr)
    assert [d.severity for d in diags] == ["error", "note", "error"]
    assert str(diags[0]) == "<unknown>:0: error: failed to legalize 'x.y'"
    message = _failure_message(stderr, diags)
    assert message.splitlines() == [
        "<unknown>:0: error: failed to legalize 'x.y'",
        "<unknown>:0: note: see current operation: %0 = x.y",
    ]


def test_an_op_dump_under_a_note_is_not_a_diagnostic() -> None:
    stderr = (
        "input.mlir:3:5: error: 'func.func' op exceeded stack allocation limit\n"
        "input.mlir:3:5: note: see current operation:\n"
        "\"func.func\"() ({\n"
        "  %0 = \"foo\"() {msg = \"a.mlir:1:1: note: x\"} : () -> ()\n"
        "}) : () -> ()\n"
    )
    diags = parse_diagnostics(stderr)
    assert [d.severity for d in diags] == ["error", "note"]
    assert _failure_message(stderr, diags) == (
        "input.mlir:3:5: error: 'func.func' op exceeded stack allocation limit")
