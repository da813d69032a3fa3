"""What a stranger sends that used to surface as a server error: an ONNX initializer with dims and
no data under ``params: "external"`` (400 ``invalid_graph``, not 500), and a client that leaves
in the middle of its body (logged as a client disconnect, not as an unhandled error)."""

from __future__ import annotations

import base64
import socket
import time
from collections.abc import Iterator

import pytest

from tests.server import KilnServer, kiln_server


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KilnServer]:
    with kiln_server(tmp_path_factory, workers=1) as s:
        yield s


def _dims_without_data() -> bytes:
    from onnx import TensorProto, helper

    w = TensorProto(name="W", data_type=TensorProto.FLOAT, dims=[64, 64])  # no data at all
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["X", "W"], ["Y"])], "g",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 64])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 64])], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return bytes(model.SerializeToString())


@pytest.mark.parametrize("params", ["external", "embedded"])
def test_an_initializer_with_dims_and_no_data_is_an_invalid_graph(
    srv: KilnServer, params: str
) -> None:
    r = srv.client().post("/v1/compile", json={
        "graph": {"format": "onnx", "encoding": "base64",
                  "data": base64.b64encode(_dims_without_data()).decode()},
        "targets": ["cpu"], "options": {"params": params}})
    assert r.status_code == 400, r.text
    assert r.json()["error"]["code"] == "invalid_graph"


def test_a_client_leaving_mid_body_is_logged_as_such(srv: KilnServer) -> None:
    sock = socket.create_connection(("127.0.0.1", srv.port))
    sock.sendall(b"POST /v1/compile HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: 5000\r\n\r\n" + b'{"graph": ')
    time.sleep(0.5)  # the server is reading the body
    sock.close()
    deadline = time.monotonic() + 30
    while "client disconnected mid-body" not in srv.log_tail(20000):
        assert time.monotonic() < deadline, srv.log_tail()
        time.sleep(0.1)
    assert "unhandled error" not in srv.log_tail(20000)
    assert srv.healthy()
