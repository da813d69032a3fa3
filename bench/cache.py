"""Cache hit latency and throughput: disk, Redis and tiered, against a raw file read (the limit).

    .venv/bin/python bench/cache.py [--redis-url URL] [--no-record]

Starts a throwaway ``redis-server`` on a free loopback port unless ``--redis-url`` is given.
Prints a table and appends it, with the machine and date, to ``bench/RESULTS.md`` under
"## Cache (bench/cache.py)". Single-threaded; every row is a verified hit (sha256 checked, or
memoized after the racy window — see cache/disk.py).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import hashlib
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from kiln.cache import Built, CompileKey, open_cache
from kiln.cache import disk as disk_mod

HEADING = "## Cache (bench/cache.py)"
RESULTS = Path(__file__).with_name("RESULTS.md")
SIZES = {"10 KB": 10_000, "1 MB": 1_000_000}
ITERS = {"10 KB": 2000, "1 MB": 300}


def make_key(size: int) -> CompileKey:
    return CompileKey(
        graph_digest=hashlib.sha256(str(size).encode()).hexdigest(),
        target="cpu:x86_64",
        options={},
        flags=("--iree-hal-target-device=local",),
        compiler_version="3.13.0",
        compiler_hash="0" * 64,
    )


def measure(fn: Callable[[], object], iters: int, size: int) -> tuple[float, float, float, float]:
    """(p50 µs, p99 µs, ops/s, MB/s) over ``iters`` calls after a short warm-up."""
    for _ in range(min(50, iters)):
        fn()
    times = []
    t_all = time.perf_counter()
    for _ in range(iters):
        t0 = time.perf_counter_ns()
        fn()
        times.append(time.perf_counter_ns() - t0)
    total = time.perf_counter() - t_all
    times.sort()
    p50 = statistics.median(times) / 1000
    p99 = times[min(len(times) - 1, int(len(times) * 0.99))] / 1000
    return p50, p99, iters / total, iters * size / total / 1e6


@contextlib.contextmanager
def redis_server(url: str | None) -> Iterator[str]:
    if url:
        yield url
        return
    binary = shutil.which("redis-server")
    if binary is None:
        sys.exit("redis-server not found: install it or pass --redis-url")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with tempfile.TemporaryDirectory() as d:
        args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--dir", d]
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(500):
                with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port)):
                    break
                time.sleep(0.01)
            yield f"redis://127.0.0.1:{port}/0"
        finally:
            proc.kill()
            proc.wait()


def run(redis_url: str) -> list[tuple[str, str, float, float, float, float]]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        disk = open_cache(cache_dir=root / "disk")
        remote = open_cache(redis_url=redis_url, disk=False)
        tiered = open_cache(cache_dir=root / "tiered", redis_url=redis_url)
        try:
            keys = {}
            for label, size in SIZES.items():
                k = keys[label] = make_key(size)
                data = os.urandom(size)
                for c in (disk, remote, tiered):
                    c.get_or_build(k, lambda d=data: Built(d, 0.0))
            time.sleep(disk_mod.RACY_SECONDS + 0.1)  # let the memo apply (steady state)
            for label, size in SIZES.items():
                k, n = keys[label], ITERS[label]
                path = disk.blob_path(disk.lookup(k).digest)  # type: ignore[union-attr]
                assert path is not None

                def raw(p: Path = path) -> bytes:
                    with open(p, "rb") as f:
                        return f.read()

                def rehash(k: CompileKey = k) -> object:
                    disk.disk._memo.clear()  # type: ignore[union-attr]  # force a full sha256
                    return disk.lookup(k, load=True)

                def disk_hit(k: CompileKey = k) -> object:
                    return disk.lookup(k, load=True)

                def disk_path(k: CompileKey = k) -> object:
                    hit = disk.lookup(k)
                    return None if hit is None else disk.blob_path(hit.digest)

                def redis_hit(k: CompileKey = k) -> object:
                    return remote.lookup(k, load=True)

                def tiered_hit(k: CompileKey = k) -> object:
                    return tiered.lookup(k, load=True)

                cases: list[tuple[str, Callable[[], object]]] = [
                    ("raw file read (limit)", raw),
                    ("disk hit, sha256 each read", rehash),
                    ("disk hit (memoized verify)", disk_hit),
                    ("disk hit -> blob_path", disk_path),
                    ("redis hit", redis_hit),
                    ("tiered hit (disk tier)", tiered_hit),
                ]
                for name, fn in cases:
                    rows.append((label, name, *measure(fn, n, size)))
        finally:
            for c in (disk, remote, tiered):
                c.close()
    return rows


def machine() -> str:
    model = platform.processor() or platform.machine()
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    return f"{model}, {os.cpu_count()} cores, Python {platform.python_version()}"


def table(rows: list[tuple[str, str, float, float, float, float]]) -> str:
    head = "| blob | path | p50 µs | p99 µs | ops/s | MB/s |\n|---|---|---:|---:|---:|---:|"
    body = [
        f"| {b} | {n} | {p50:.0f} | {p99:.0f} | {ops:,.0f} | {mbs:,.0f} |"
        for b, n, p50, p99, ops, mbs in rows
    ]
    return "\n".join([head, *body])


def record(text: str) -> None:
    """Append a run under our heading, leaving other sections of RESULTS.md untouched."""
    doc = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n"
    if HEADING not in doc:
        doc = doc.rstrip("\n") + f"\n\n{HEADING}\n"
    start = doc.index(HEADING) + len(HEADING)
    nxt = doc.find("\n## ", start)
    end = len(doc) if nxt == -1 else nxt + 1
    before, section, after = doc[:start], doc[start:end], doc[end:]
    section = section.rstrip("\n") + "\n\n" + text.rstrip("\n") + "\n" + ("\n" if after else "")
    RESULTS.write_text(before + section + after)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--redis-url", help="use this Redis instead of a throwaway local one")
    ap.add_argument("--no-record", action="store_true", help="do not append to bench/RESULTS.md")
    args = ap.parse_args()
    with redis_server(args.redis_url) as url:
        rows = run(url)
    out = table(rows)
    print(out)
    if not args.no_record:
        when = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
        record(f"{when} — {machine()}; Redis on loopback; single thread.\n\n{out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
