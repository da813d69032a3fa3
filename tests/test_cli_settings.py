"""A bad ``KILN_*`` setting is one line on stderr and exit status 2, for every command that reads
it, and never breaks a command that does not; sizes (``20G``) read the same everywhere."""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import kiln.cli as cli
from kiln.cli import serve as serve_cli
from kiln.service.settings import Settings


@pytest.fixture(autouse=True)
def _restore_environ() -> Iterator[None]:
    # ``kiln serve`` exports its flags into os.environ (for its HTTP workers): undo that here.
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    rc = cli.main(list(argv), stdout=out, stderr=err)
    return rc, out.getvalue(), err.getvalue()


def _one_clear_line(err: str, var: str) -> None:
    assert err.count("\n") == 1 and var in err and "Traceback" not in err, err


def test_a_size_with_units_is_accepted_by_every_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("KILN_CACHE_MAX_BYTES", "20G")
    monkeypatch.setenv("KILN_CACHE_DIR", str(tmp_path))
    rc, out, err = _run("targets")
    assert rc == 0 and "cpu" in out, err
    rc, _, err = _run("cache", "gc")
    assert rc == 0, err
    seen: dict[str, Any] = {}
    monkeypatch.setattr(serve_cli, "serve", lambda s: seen.setdefault("s", s) and 0)
    rc, _, err = _run("serve", "--max-request-bytes", "64M")
    assert rc == 0, err
    s = seen["s"]
    assert (s.cache_max_bytes, s.max_request_bytes) == (20 << 30, 64 << 20)
    assert Settings(worker_memory_bytes="1.5G").worker_memory_bytes == 3 << 29


@pytest.mark.parametrize(
    ("argv", "var", "value"),
    [
        (("cache", "gc"), "KILN_CACHE_MAX_BYTES", "20X"),
        (("serve",), "KILN_CACHE_MAX_BYTES", "lots"),
        (("serve",), "KILN_MAX_UPLOAD_BYTES_PER_CLIENT", "1Q"),
        (("worker", "--redis-url", "redis://127.0.0.1:1"), "KILN_CACHE_MAX_BYTES", "20X"),
        (("worker", "--redis-url", "redis://127.0.0.1:1"), "KILN_CONCURRENCY", "two"),
        (("worker", "--redis-url", "redis://127.0.0.1:1"), "KILN_COMPILE_TIMEOUT", "soon"),
    ],
    ids=["cache-gc", "serve-size", "serve-upload-share", "worker-size", "worker-int",
         "worker-float"],
)
def test_a_bad_setting_is_one_line_and_exit_2(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, argv: tuple[str, ...], var: str,
    value: str,
) -> None:
    monkeypatch.setenv("KILN_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv(var, value)
    monkeypatch.setattr(serve_cli, "serve", lambda s: 0)
    rc, _, err = _run(*argv)
    assert rc == 2
    _one_clear_line(err, var)
    assert repr(value) in err


def test_a_bad_worker_setting_does_not_break_other_commands(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KILN_CONCURRENCY", "two")
    monkeypatch.setenv("KILN_LEASE_SECONDS", "a while")
    rc, out, err = _run("targets")
    assert rc == 0 and "cpu" in out, err
