"""A graph cannot make the server read, link or probe its own files: attributes that name host
files (``#hal.executable.object<{path = ...}>`` and every other attribute outside the allow-list)
are refused with ``invalid_graph`` wherever they sit, the same answer for a file that exists and
one that does not, and no artifact ever holds a server file's bytes."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kiln.errors import InvalidGraph
from tests.server import KilnServer, kiln_server

MARKER = b"KILN_MARKER_7f3c1e9a5b"
TARGETS = ["cpu", "vulkan", "cuda:sm_80"]


def _graph(*, on_mulf: str = "", on_func: str = "", on_module: str = "") -> str:
    return f"""module {on_module} {{
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {on_func} {{
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {{indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                        iterator_types = ["parallel"]}}
      ins(%a : tensor<4xf32>) outs(%e : tensor<4xf32>) {{
  ^bb0(%x: f32, %o: f32):
    %y = arith.mulf %x, %x {on_mulf} : f32
    linalg.yield %y : f32
  }} -> tensor<4xf32>
  return %r : tensor<4xf32>
}}
}}"""


def _placements(path: str) -> dict[str, str]:
    obj = f'#hal.executable.object<{{path = "{path}"}}>'
    return {
        "inner op attribute": _graph(on_mulf=f"{{hal.executable.objects = [{obj}]}}"),
        "nested in a dictionary": _graph(on_mulf=f"{{notes = {{deeper = {{o = {obj}}}}}}}"),
        "module attribute": _graph(on_module=f"attributes {{hal.executable.objects = [{obj}]}}"),
        "function attribute": _graph(on_func=f"attributes {{hal.executable.objects = [{obj}]}}"),
        "object inside an array": _graph(on_mulf=f"{{list = [1 : i32, [\"a\", {obj}]]}}"),
        "quoted attribute name": _graph(on_mulf=f'{{"hal.executable.objects" = [{obj}]}}'),
        "tensor encoding": _graph().replace(
            "%e = tensor.empty() : tensor<4xf32>",
            f"%u = tensor.empty() : tensor<4xf32, {obj}>\n  %e = tensor.empty() : tensor<4xf32>",
        ),
    }


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KilnServer]:
    with kiln_server(tmp_path_factory, workers=1, compile_timeout=120) as s:
        yield s


@pytest.fixture(scope="module")
def server_files(srv: KilnServer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Server-side files: an object file holding MARKER (absolute and relative to the server's
    working directory) and a ``.bc`` path that exists, each with a twin path that does not."""
    if shutil.which("gcc") is None:
        pytest.skip("needs gcc to build an object file")
    src_dir = tmp_path_factory.mktemp("objects")
    src = src_dir / "marker.c"
    src.write_text(f'const char marker[] = "{MARKER.decode()}";\n')
    obj = src_dir / "marker.o"
    subprocess.run(["gcc", "-c", "-o", str(obj), str(src)], check=True)
    assert MARKER in obj.read_bytes()
    work = srv.root / "work"
    (work / "obj").mkdir(exist_ok=True)
    shutil.copy(obj, work / "obj" / "marker.o")
    bc = src_dir / "kernels.bc"
    bc.write_bytes(b"BC\xc0\xde" + b"\0" * 60)  # the bitcode magic: enough for an open() to succeed
    return {
        "object": str(obj), "object-missing": str(src_dir / "absent.o"),
        "relative": "obj/marker.o", "relative-missing": "obj/absent.o",
        "bitcode": str(bc), "bitcode-missing": str(src_dir / "absent.bc"),
    }


def _post(c: httpx.Client, text: str) -> httpx.Response:
    return c.post("/v1/compile", json={"graph": {"format": "mlir", "data": text},
                                       "targets": TARGETS})


def _no_marker_anywhere(srv: KilnServer) -> None:
    for dirpath, _dirs, files in os.walk(srv.cache_dir):
        for f in files:
            p = Path(dirpath) / f
            if p.is_file():
                assert MARKER not in p.read_bytes(), p


def test_a_graph_naming_server_files_is_refused_wherever_it_names_them(
    srv: KilnServer, server_files: dict[str, str]
) -> None:
    c = srv.client()
    for kind in ("object", "relative", "bitcode"):
        for where, text in _placements(server_files[kind]).items():
            r = _post(c, text)
            assert r.status_code == 400, (kind, where, r.text)
            err = r.json()["error"]
            assert err["code"] == "invalid_graph", (kind, where, err)
            # The answer says what is not allowed, never the path it carried.
            assert server_files[kind] not in r.text
            # The same answer whether the file exists or not: no existence oracle.
            missing = _post(c, _placements(server_files[f"{kind}-missing"])[where])
            assert (missing.status_code, missing.json()) == (r.status_code, r.json()), where
    _no_marker_anywhere(srv)
    assert srv.healthy()


def test_strings_that_look_like_objects_stay_data_and_the_graph_compiles(
    srv: KilnServer, server_files: dict[str, str]
) -> None:
    path = server_files["object"]
    text = _graph(on_mulf=f'{{note = "#hal.executable.object<{{path = \\"{path}\\"}}>"}}')
    r = srv.client().post("/v1/compile", json={"graph": {"format": "mlir", "data": text},
                                               "targets": ["cpu"]})
    assert r.status_code == 200, r.text
    art = r.json()["artifacts"][0]
    assert MARKER not in srv.client().get(art["url"]).content


def test_onnx_strings_never_become_paths(srv: KilnServer, server_files: dict[str, str]) -> None:
    import onnx

    from tests.graphs import onnx_mlp

    model = onnx.load_model_from_string(onnx_mlp())
    obj = f'#hal.executable.object<{{path = "{server_files["object"]}"}}>'
    model.producer_name = obj
    model.doc_string = obj
    model.graph.node[0].doc_string = obj
    model.graph.node[0].attribute.append(onnx.helper.make_attribute("hal.executable.objects", obj))
    entry = model.metadata_props.add()
    entry.key, entry.value = "hal.executable.objects", obj
    r = srv.client().post("/v1/compile", json={
        "graph": {"format": "onnx", "encoding": "base64", "data": _b64(model)},
        "targets": ["cpu"]})
    # Strings stay strings: the graph compiles or is refused, and nothing is linked from a path.
    assert r.status_code in (200, 400, 422), r.text
    for art in r.json().get("artifacts", []):
        assert MARKER not in srv.client().get(art["url"]).content
    _no_marker_anywhere(srv)


def _b64(model: Any) -> str:
    import base64

    return base64.b64encode(model.SerializeToString()).decode()


def test_onnx_operator_set_domains_are_data_not_attributes() -> None:
    """The importer records the model's operator sets (``ai.onnx.ml``, ``ai.onnx.preview.training``,
    a custom domain) as dictionary keys; they pass, and nothing else hides in that dictionary."""
    from kiln.dialects.allowlist import check_generic_text

    head = '"builtin.module"() ({}) {torch.onnx_meta.opset_versions = '
    check_generic_text(head + '{ai.onnx.preview.training = 1 : si64, my.ops = 3 : si64}} : () -> ()')
    for smuggled in ('{hal.executable.objects = [#hal.executable.object<{path = "/x.o"}>]}}',
                     '{ai.onnx.ml = 3 : si64}, hal.executable.objects = []}'):
        with pytest.raises(InvalidGraph):
            check_generic_text(head + smuggled + " : () -> ()")
