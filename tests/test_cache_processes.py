"""Several processes sharing one cache: disk directory, Redis, crashes of writers and holders."""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from kiln.cache import Built, CompileKey, open_cache
from kiln.cache.disk import DiskStorage

# A Kiln "process": opens the cache, waits at the barrier, get_or_build with a counting build.
WORKER = r"""
import json, os, sys, time
from pathlib import Path
from kiln.cache import Built, CompileKey, open_cache

cfg = json.loads(sys.argv[1])
key = CompileKey.from_json(cfg["key"])

def build():
    with open(cfg["count_file"], "a") as f:
        f.write(f"{os.getpid()}\n")
    if cfg.get("hang_marker"):
        Path(cfg["hang_marker"]).write_text("building")
        time.sleep(3600)
    time.sleep(cfg.get("build_sleep", 0.0))
    seed = key.digest().encode()
    return Built(seed * 512, compile_seconds=0.1)

cache = open_cache(cache_dir=cfg["cache_dir"], redis_url=cfg.get("redis_url"),
                   lease_seconds=cfg.get("lease_seconds", 30.0), lease_poll_max=0.05)
print("ready", flush=True)
go = cfg.get("go_file")
while go and not os.path.exists(go):
    time.sleep(0.005)
r = cache.get_or_build(key, build)
print(json.dumps({"digest": r.digest, "cached": r.cached, "source": r.source,
                  "ok": r.data == key.digest().encode() * 512}), flush=True)
cache.close()
"""

# Writes entries forever through the disk backend (blob, then record), as fast as it can.
WRITER = r"""
import hashlib, os, sys, time
from kiln.cache.disk import DiskStorage
from kiln.cache.types import ActionRecord, CompilerInfo
disk = DiskStorage(sys.argv[1])
print("ready", flush=True)
i = 0
while True:
    data = os.urandom(64) * 4096
    rec = ActionRecord(key=hashlib.sha256(f"{os.getpid()}-{i}".encode()).hexdigest(),
                       digest="sha256:" + hashlib.sha256(data).hexdigest(), size=len(data),
                       target="cpu", flags=(), compiler=CompilerInfo("iree", "3.13.0", "sha256:" + "c" * 64),
                       compile_seconds=0.0, created=time.time())
    disk.put(rec, data)
    i += 1
"""


def make_key(i: int) -> CompileKey:
    return CompileKey(
        graph_digest=hashlib.sha256(f"graph-{i}".encode()).hexdigest(),
        target="vulkan",
        options={},
        flags=("--iree-hal-target-device=vulkan",),
        compiler_version="3.13.0",
        compiler_hash="c" * 64,
    )


def spawn(script: str, *args: str) -> subprocess.Popen[str]:
    p = subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parent,
    )
    assert p.stdout is not None
    line = p.stdout.readline()
    if line.strip() != "ready":
        p.kill()
        _, err = p.communicate()
        raise AssertionError(f"child failed to start: {line!r} {err}")
    return p


def finish(p: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def workers(tmp_path: Path, n: int, **cfg: Any) -> list[dict[str, Any]]:
    """Start n workers, release them together at the barrier, return their results."""
    go = tmp_path / f"go-{random.random()}"
    procs = [spawn(WORKER, json.dumps({"go_file": str(go), **cfg})) for _ in range(n)]
    go.touch()
    return [finish(p) for p in procs]


def builds(count_file: Path) -> int:
    return len(count_file.read_text().splitlines()) if count_file.exists() else 0


def test_two_processes_sharing_a_disk_cache_build_once(tmp_path: Path) -> None:
    count = tmp_path / "builds"
    cfg = {"key": make_key(1).to_json(), "cache_dir": str(tmp_path / "c"), "count_file": str(count),
               "build_sleep": 0.5}  # fmt: skip
    results = workers(tmp_path, 2, **cfg)
    assert builds(count) == 1
    assert all(r["ok"] for r in results) and len({r["digest"] for r in results}) == 1
    assert sorted(r["cached"] for r in results) == [False, True]


def test_kill_9_writer_never_leaves_a_partial_hit(tmp_path: Path) -> None:
    root = tmp_path / "c"
    rng = random.Random(7)
    for _ in range(6):
        p = spawn(WRITER, str(root))
        time.sleep(rng.uniform(0.02, 0.3))
        p.send_signal(signal.SIGKILL)
        p.communicate()
        disk = DiskStorage(root)
        blobs = [q for q in (root / "v1" / "cas").rglob("*") if q.is_file()]
        for q in blobs:  # every blob under its final name is complete
            if not q.name.startswith("."):
                assert hashlib.sha256(q.read_bytes()).hexdigest() == q.name
        for rec in disk.iter_records():  # the blob was durable before its record
            hit = disk.find(rec.key, load=True)
            assert hit is not None and hit.data is not None and len(hit.data) == rec.size
    assert disk.stats().records > 0
    disk.gc(10**12)
    assert not [q for q in root.rglob(".tmp-*")]


@pytest.mark.redis
def test_processes_sharing_redis_get_what_the_other_built(
    tmp_path: Path, redis_server: Any
) -> None:
    count = tmp_path / "builds"
    base = {"key": make_key(2).to_json(), "redis_url": redis_server.url, "count_file": str(count)}
    (first,) = workers(tmp_path, 1, cache_dir=str(tmp_path / "a"), **base)
    (second,) = workers(tmp_path, 1, cache_dir=str(tmp_path / "b"), **base)
    assert builds(count) == 1
    assert (first["cached"], second["cached"], second["source"]) == (False, True, "redis")
    assert first["digest"] == second["digest"] and second["ok"]


@pytest.mark.redis
def test_cold_stampede_across_replicas_builds_once(tmp_path: Path, redis_server: Any) -> None:
    count = tmp_path / "builds"
    procs = []
    go = tmp_path / "go"
    for i in range(3):  # three replicas, each with its own disk tier
        cfg = {"key": make_key(3).to_json(), "redis_url": redis_server.url, "count_file": str(count),
                   "cache_dir": str(tmp_path / f"r{i}"), "go_file": str(go), "build_sleep": 0.5}  # fmt: skip
        procs.append(spawn(WORKER, json.dumps(cfg)))
    go.touch()
    results = [finish(p) for p in procs]
    assert builds(count) == 1
    assert all(r["ok"] for r in results) and len({r["digest"] for r in results}) == 1


@pytest.mark.redis
def test_a_dead_lease_holder_is_taken_over_after_expiry(tmp_path: Path, redis_server: Any) -> None:
    k = make_key(4)
    count, marker = tmp_path / "builds", tmp_path / "holder-building"
    cfg = {"key": k.to_json(), "redis_url": redis_server.url, "count_file": str(count),
               "cache_dir": str(tmp_path / "holder"), "hang_marker": str(marker), "lease_seconds": 1.0}  # fmt: skip
    holder = spawn(WORKER, json.dumps(cfg))
    while not marker.exists():
        assert holder.poll() is None
        time.sleep(0.01)
    assert redis_server.command("EXISTS", f"kiln:v1:lease:{k.digest()}").startswith(b":1")

    built = []
    result: list[Any] = []
    with open_cache(cache_dir=tmp_path / "waiter", redis_url=redis_server.url, lease_seconds=1.0,
                    lease_poll_max=0.05) as cache:  # fmt: skip

        def waiter() -> None:
            result.append(cache.get_or_build(k, lambda: built.append(1) or Built(b"x" * 10, 0.1)))

        t = threading.Thread(target=waiter)
        t.start()
        holder.send_signal(signal.SIGKILL)  # dies holding the lease, mid-build
        holder.communicate()
        t.join(timeout=60)
        assert not t.is_alive()
    assert built == [1] and result[0].cached is False
    assert builds(count) == 1  # the holder's build started but never finished


def test_pid_is_not_in_the_key(tmp_path: Path) -> None:
    # Same key in two processes: the second is a hit (the client's identity is no key input).
    count = tmp_path / "builds"
    cfg = {"key": make_key(5).to_json(), "cache_dir": str(tmp_path / "c"), "count_file": str(count)}
    workers(tmp_path, 1, **cfg)
    (again,) = workers(tmp_path, 1, **cfg)
    assert again["cached"] and builds(count) == 1
    assert os.getpid() > 0
