"""``kiln cache stats | verify | gc`` as a user runs it."""

from __future__ import annotations

import argparse
import hashlib
import io
import json
from pathlib import Path

import pytest

from kiln.cache import Built, CompileKey, open_cache
from kiln.cli import cache as cache_cli


def run(*argv: str) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="kiln")
    cache_cli.add_parser(parser.add_subparsers(dest="command", required=True))
    out, err = io.StringIO(), io.StringIO()
    rc = cache_cli.run(parser.parse_args(list(argv)), stdout=out, stderr=err)
    return rc, out.getvalue(), err.getvalue()


def fill(cache_dir: Path, n: int, size: int = 10_000) -> list[str]:
    digests = []
    with open_cache(cache_dir=cache_dir) as cache:
        for i in range(n):
            k = CompileKey(
                graph_digest=hashlib.sha256(bytes([i])).hexdigest(), target="cpu", options={},
                flags=(), compiler_version="3.13.0", compiler_hash="e" * 64,
            )  # fmt: skip
            data = hashlib.sha256(bytes([i])).digest() * (size // 32)
            digests.append(cache.get_or_build(k, lambda d=data: Built(d, 0.1)).digest)
    return digests


@pytest.mark.parametrize(
    ("text", "value"),
    [("500M", 500 << 20), ("1.5G", 3 << 29), ("64K", 65536), ("10kb", 10240), ("2GiB", 2 << 30),
     ("4096", 4096)],
)  # fmt: skip
def test_parse_size(text: str, value: int) -> None:
    assert cache_cli.parse_size(text) == value


def test_bad_size_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as info:
        run("cache", "--cache-dir", str(tmp_path), "gc", "--max-size", "lots")
    assert info.value.code == 2


def test_stats_shows_entries_and_bytes(tmp_path: Path) -> None:
    fill(tmp_path, 3)
    rc, out, _ = run("cache", "--cache-dir", str(tmp_path), "stats")
    assert rc == 0 and "disk" in out and str(tmp_path) in out
    rc, out, _ = run("cache", "stats", "--json", "--cache-dir", str(tmp_path))
    disk = json.loads(out)["backends"][0]
    assert (disk["records"], disk["blobs"]) == (3, 3) and disk["bytes"] > 30_000


def test_verify_exits_1_on_corruption_and_repairs(tmp_path: Path) -> None:
    digests = fill(tmp_path, 2)
    h = digests[0].removeprefix("sha256:")
    (tmp_path / "v1" / "cas" / h[:2] / h).write_bytes(b"bit rot")
    rc, out, _ = run("cache", "--cache-dir", str(tmp_path), "verify")
    assert rc == 1 and "corrupt: 1" in out and "removed" in out
    rc, out, _ = run("cache", "--cache-dir", str(tmp_path), "verify")
    assert rc == 0 and "corrupt: 0" in out


def test_gc_trims_to_max_size(tmp_path: Path) -> None:
    fill(tmp_path, 6)
    rc, out, _ = run("cache", "--cache-dir", str(tmp_path), "gc", "--max-size", "25K")
    assert rc == 0 and "removed" in out
    rc, out, _ = run("cache", "--cache-dir", str(tmp_path), "--json", "stats")
    assert json.loads(out)["backends"][0]["bytes"] <= 25 * 1024


def test_wired_into_the_kiln_cli(tmp_path: Path) -> None:
    from kiln.cli import main

    fill(tmp_path, 1)
    out, err = io.StringIO(), io.StringIO()
    assert main(["cache", "--cache-dir", str(tmp_path), "stats"], stdout=out, stderr=err) == 0
    assert "disk" in out.getvalue()
