"""The light client: ``pip install kiln`` without extras compiles on a server, fetches, verifies
and runs an executable, with no compiler, FastAPI or Redis installed.

A fresh virtual environment gets the repository installed with no extras and nothing locked: pip
resolves the newest versions pyproject.toml's ranges allow (the suite itself runs on the locked
ones, requirements/). A real ``kiln serve`` compiles; the script below runs in the light
environment and checks both the answer and what is importable there; mypy --strict checks the
client's code against those newest versions' type information.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.server import REPO, kiln_server

pytestmark = pytest.mark.slow

SCRIPT = textwrap.dedent(
    """
    import importlib.util, json, sys
    import numpy as np
    import kiln
    from kiln import Client

    url, key = sys.argv[1], sys.argv[2]
    mlir = '''
    func.func @scale(%a: tensor<4xf32>) -> tensor<4xf32> {
      %0 = arith.addf %a, %a : tensor<4xf32>
      return %0 : tensor<4xf32>
    }'''
    with Client(url, trusted_keys=[open(key, "rb").read()]) as c:
        mod = c.load(mlir, device="cpu")
        out = np.asarray(mod.scale(np.arange(4, dtype=np.float32)))
    missing = {m: importlib.util.find_spec(m) is None
               for m in ("iree.compiler", "fastapi", "redis", "uvicorn", "onnx")}
    print(json.dumps({"out": out.tolist(), "missing": missing}))
    """
)


@pytest.fixture(scope="module")
def light_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("light")
    # The checkout's files (tracked and new, not ignored) copied out: building in place would
    # leave build/ and *.egg-info in the repository.
    src = root / "src"
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO,
                           capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, files):
        if (REPO / name).is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, src / name)
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    # A non-editable install with no extras: the client's dependencies only.
    r = subprocess.run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                        str(src)], capture_output=True, text=True, timeout=900,
                       env={**os.environ, "PIP_NO_INPUT": "1"})
    assert r.returncode == 0, r.stderr[-3000:]
    return py


def test_a_client_only_install_compiles_remotely_verifies_and_runs(
    light_python: Path, tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    with kiln_server(tmp_path_factory, workers=1) as srv:
        keys = srv.client().get("/v1/keys").json()
        key = tmp_path / "server.pem"
        key.write_text(keys[0]["public_key_pem"])
        r = subprocess.run([str(light_python), "-c", SCRIPT, srv.url, str(key)],
                           capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["out"] == [0.0, 2.0, 4.0, 6.0]
    assert all(got["missing"].values()), got["missing"]  # nothing of the server came along


def test_the_light_cli_says_what_to_install_for_the_server(light_python: Path) -> None:
    kiln = light_python.parent / "kiln"
    r = subprocess.run([str(kiln), "serve", "--port", "1"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2
    assert 'pip install "kiln[server]"' in r.stderr


def test_the_client_type_checks_against_the_newest_versions_it_allows(
    light_python: Path, tmp_path: Path
) -> None:
    # The mypy of the lock: what changes between runs is the client's dependencies, not the checker.
    lock = (REPO / "requirements" / "server-test-bench.txt").read_text()
    m = re.search(r"^mypy==(\S+)", lock, re.MULTILINE)
    assert m, "mypy is not in the lock"
    r = subprocess.run([str(light_python), "-m", "pip", "install", "-q",
                        "--disable-pip-version-check", f"mypy=={m.group(1)}"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    # The installed package (py.typed), as a library user's mypy sees it.
    r = subprocess.run([str(light_python), "-m", "mypy", "--strict", "--ignore-missing-imports",
                        "--follow-imports=silent", "--python-version", "3.11",
                        "--cache-dir", str(tmp_path / "cache"), "-p", "kiln.client",
                        "-p", "kiln.provenance", "-p", "kiln.errors", "-p", "kiln.files"],
                       capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "Success" in r.stdout
