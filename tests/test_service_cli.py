"""``kiln serve`` settings (flags win over KILN_* variables) and the Dockerfile's install path."""

from __future__ import annotations

import io
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

import kiln.cli as cli
from kiln.cli import serve as serve_cli
from kiln.service.settings import Settings

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _restore_environ() -> Any:
    # ``kiln serve`` exports its flags into os.environ (for its HTTP workers): undo that here.
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)


def _run(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> tuple[int, Any, str]:
    seen: dict[str, Any] = {}
    monkeypatch.setattr(serve_cli, "serve", lambda s: seen.setdefault("s", s) and 0)
    err = io.StringIO()
    saved = dict(os.environ)
    try:
        rc = cli.main(argv, stdout=io.StringIO(), stderr=err)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return rc, seen.get("s"), err.getvalue()


def test_every_flag_has_a_variable_and_flags_win(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for var in serve_cli._FLAGS.values():
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("KILN_PORT", "9001")
    monkeypatch.setenv("KILN_MAX_QUEUE", "7")
    monkeypatch.setenv("KILN_WORKERS", "3")
    rc, s, err = _run(["serve", "--port", "9002", "--cache-dir", str(tmp_path),
                       "--compile-timeout", "12.5", "--http-workers", "2"], monkeypatch)
    assert rc == 0, err
    assert isinstance(s, Settings)
    assert (s.port, s.max_queue, s.workers, s.compile_timeout) == (9002, 7, 3, 12.5)
    assert (s.cache_dir, s.http_workers, s.host) == (tmp_path, 2, "127.0.0.1")
    fields = set(Settings.model_fields)
    assert {dest for dest in serve_cli._FLAGS} <= fields
    for dest, var in serve_cli._FLAGS.items():
        assert var == "KILN_" + dest.upper()


def test_bad_settings_and_missing_token_file_exit_2(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    rc, _, err = _run(["serve", "--port", "70000"], monkeypatch)
    assert rc == 2 and "invalid settings" in err
    rc, _, err = _run(["serve", "--tokens-file", str(tmp_path / "absent")], monkeypatch)
    assert rc == 2 and "tokens file" in err


def test_tokens_from_variable_and_file(tmp_path: Path) -> None:
    f = tmp_path / "tokens"
    f.write_text("# comment\n file-token \n\n")
    s = Settings(tokens=" a, b ,,a", tokens_file=f)
    assert s.token_set() == ("a", "b", "file-token")
    assert Settings(tokens="").token_set() == ()


def test_dockerfile_installs_with_the_bootstrap_script_as_non_root() -> None:
    docker = (REPO / "Dockerfile").read_text()
    boot = (REPO / "scripts" / "bootstrap.sh").read_text()
    runs = re.findall(r"^RUN (.+)$", docker, flags=re.M)
    assert any("scripts/bootstrap.sh" in r for r in runs)
    assert "KILN_BOOTSTRAP_APT=0" in docker and "KILN_VENV=" in docker
    # The image's apt packages are exactly the ones bootstrap would install.
    (pkgs,) = re.findall(r"for pkg in ([^;]+); do", boot)
    for pkg in pkgs.split():
        assert pkg in docker
    users = re.findall(r"^USER (\S+)", docker, flags=re.M)
    assert users and users[-1] not in ("root", "0")
    # The bootstrap runs as that user (after USER), and the script is valid bash.
    assert docker.index("\nUSER ") < docker.index("RUN scripts/bootstrap.sh")
    assert 'KILN_BOOTSTRAP_APT:-1' in boot and "KILN_VENV" in boot
    subprocess.run(["bash", "-n", str(REPO / "scripts" / "bootstrap.sh")], check=True)
    assert re.search(r'^CMD \["kiln", "serve"\]', docker, flags=re.M)
