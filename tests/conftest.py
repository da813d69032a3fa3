"""Shared fixtures: one warm compile pipeline per session (real compiler, real workers)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from kiln.compiler.pipeline import Pipeline

pytest_plugins = ["tests.conftest_redis"]

os.environ.setdefault("KILN_CACHE_DIR", "/nonexistent-kiln-cache-set-by-tests")


@pytest.fixture(scope="session")
def pipeline() -> Iterator[Pipeline]:
    """An uncached pipeline: every call runs the real compiler in worker processes."""
    with Pipeline(workers=2, compile_timeout=240) as p:
        yield p


@pytest.fixture(autouse=True)
def _isolated_cache_dir(tmp_path: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    # No test may touch the user's ~/.cache/kiln.
    monkeypatch.setenv("KILN_CACHE_DIR", str(tmp_path / "kiln-cache"))  # type: ignore[operator]
    # Nor the user's signing key (~/.config/kiln/signing-key.pem).
    monkeypatch.setenv("KILN_SIGNING_KEY_FILE",
                       str(tmp_path / "kiln-signing-key.pem"))  # type: ignore[operator]
