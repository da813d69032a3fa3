"""The nginx front (`kiln serve --print-nginx-config`): artifacts straight from the cache, the rest
proxied to a real daemon; the API behaves the same through it."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from kiln.service.front import nginx_config
from tests.graphs import LINALG
from tests.server import KilnServer, free_port, kiln_server

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KilnServer]:
    with kiln_server(tmp_path_factory, workers=1, tokens="front-token") as srv:
        yield srv


@pytest.fixture(scope="module")
def front(server: KilnServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("front")
    port = free_port()
    conf = root / "nginx.conf"
    conf.write_text(
        nginx_config(
            cache_dir=server.cache_dir,
            upstream=f"127.0.0.1:{server.port}",
            listen=f"127.0.0.1:{port}",
            tokens=("front-token",),
            pid_file=str(root / "nginx.pid"),
            log_dir=str(root),
        )
    )
    errlog = root / "stderr.log"
    with open(errlog, "wb") as err:
        proc = subprocess.Popen([NGINX, "-p", str(root), "-c", str(conf), "-g", "daemon off;"],
                                stderr=err)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.1)
    else:
        proc.kill()
        raise RuntimeError(errlog.read_text() or "nginx did not start")
    yield url
    proc.terminate()
    proc.wait(10)


def test_front_serves_artifacts_from_the_cache_and_proxies_the_rest(front: str) -> None:
    auth = {"Authorization": "Bearer front-token"}
    r = httpx.post(front + "/v1/compile", headers=auth, timeout=300, json={
        "graph": {"format": "mlir", "encoding": "utf-8", "data": LINALG}, "targets": ["cpu"]})
    assert r.status_code == 200, r.text
    art = r.json()["artifacts"][0]
    got = httpx.get(front + art["url"], headers=auth)
    assert got.status_code == 200
    assert "sha256:" + hashlib.sha256(got.content).hexdigest() == art["digest"]
    hexd = art["digest"].split(":")[1]
    assert got.headers["etag"] == f'"{hexd}"'
    assert got.headers["content-type"] == "application/x-iree-vmfb"
    assert "immutable" in got.headers["cache-control"]
    again = httpx.get(front + art["url"], headers={**auth, "If-None-Match": f'"{hexd}"'})
    assert again.status_code == 304


def test_front_keeps_auth_and_the_error_envelope(front: str) -> None:
    hexd = "0" * 64
    no_token = httpx.get(front + f"/v1/artifacts/{hexd}")
    assert no_token.status_code == 401
    assert no_token.json()["error"]["code"] == "unauthorized"
    missing = httpx.get(front + f"/v1/artifacts/{hexd}",
                        headers={"Authorization": "Bearer front-token"})
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    traversal = httpx.get(front + "/v1/artifacts/..%2f..%2fetc%2fpasswd",
                          headers={"Authorization": "Bearer front-token"})
    assert traversal.status_code in (400, 404) and b"root:" not in traversal.content


def test_config_refuses_tokens_that_would_inject_directives(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        nginx_config(cache_dir=tmp_path, upstream="127.0.0.1:1", listen="127.0.0.1:2",
                     tokens=('x"; include /etc/passwd; "',))
