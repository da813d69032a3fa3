"""Cluster mode: what the queue costs, what a second worker buys, how fast a dead worker's job
comes back.

    .venv/bin/python bench/cluster.py [--rounds 8] [--blocks 3] [--batch 6] [--kills 3]
    .venv/bin/python bench/cluster.py --rounds 16 --blocks 0 --kills 0     # the overhead alone

Starts a real redis-server, a `kiln serve --compile local` replica, a `kiln serve --compile
remote` replica and `kiln worker`s (each pinned to its own core with taskset), all on loopback.
Prints a table; the figures go in bench/RESULTS.md under "## Cluster mode (bench/cluster.py)".

* queue overhead: a fresh graph per request (never cached), POST /v1/compile on the local
  replica and on the remote one (one worker), alternating which goes first; overhead = the
  median of (wall time - the compiler's own time) remote minus the same local. The job form
  (POST /v1/jobs, then GET ?wait= until done) is timed the same way. Goal: <= 50 ms per job.
* scaling: a batch of distinct graphs submitted at once as jobs; wall time until every one is
  done with one worker (core 0) and with two (cores 0 and 1), in alternated blocks; speed-up =
  median(1 worker) / median(2 workers). Goal: >= 1.8x on two free cores.
* redelivery: a long compile is sent, the worker that received it is SIGKILLed, and the time
  until the other worker receives the message again (and until the job is done) is measured.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import platform
import shutil
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.conftest_redis import RedisServer, free_port
from tests.server import kiln_server
from tests.test_cluster_jobs import Worker, job_request

_SEED = [1000.0]


def fresh(layers: int) -> dict[str, Any]:
    """A graph no cache has seen."""
    _SEED[0] += 0.125
    return job_request(layers, _SEED[0])


def compile_once(c: httpx.Client, layers: int = 1) -> tuple[float, float]:
    """(wall seconds, compiler seconds) of one cold POST /v1/compile."""
    t0 = time.perf_counter()
    r = c.post("/v1/compile", json=fresh(layers))
    wall = time.perf_counter() - t0
    r.raise_for_status()
    return wall, float(r.json()["artifacts"][0]["compile_seconds"])


def job_once(c: httpx.Client, layers: int = 1) -> tuple[float, float]:
    """(wall seconds, compiler seconds) of one cold job: POST /v1/jobs, GET ?wait= to done."""
    t0 = time.perf_counter()
    doc = c.post("/v1/jobs", json=fresh(layers)).json()
    while doc["state"] not in ("done", "failed"):
        doc = c.get(f"/v1/jobs/{doc['id']}", params={"wait": 30}).json()
    wall = time.perf_counter() - t0
    assert doc["state"] == "done", doc
    return wall, float(doc["result"]["artifacts"][0]["compile_seconds"])


def batch(c: httpx.Client, n: int, layers: int) -> float:
    """Seconds until ``n`` distinct jobs submitted at once are all done."""
    reqs = [fresh(layers) for _ in range(n)]
    t0 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(n) as ex:
        ids = list(ex.map(lambda r: c.post("/v1/jobs", json=r).json()["id"], reqs))

        def done(jid: str) -> None:
            while True:
                doc = c.get(f"/v1/jobs/{jid}", params={"wait": 30}).json()
                if doc["state"] in ("done", "failed"):
                    assert doc["state"] == "done", doc
                    return

        list(ex.map(done, ids))
    return time.perf_counter() - t0


def machine() -> str:
    try:
        model = next(line.split(":", 1)[1].strip()
                     for line in open("/proc/cpuinfo") if line.startswith("model name"))
    except (OSError, StopIteration):
        model = platform.processor()
    load = os.getloadavg()
    return (f"{model}, {os.cpu_count()} cores, Python {platform.python_version()}, "
            f"load average at start {load[0]:.1f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=8, help="overhead rounds")
    ap.add_argument("--blocks", type=int, default=3, help="scaling blocks per worker count")
    ap.add_argument("--batch", type=int, default=6, help="jobs per scaling block")
    ap.add_argument("--layers", type=int, default=4, help="layers of each batch graph")
    ap.add_argument("--kills", type=int, default=3, help="redelivery measurements")
    args = ap.parse_args()
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {machine()}")

    root = Path(tempfile.mkdtemp(prefix="kiln-bench-cluster-"))
    binary = shutil.which("redis-server")
    assert binary, "redis-server is needed"
    rs = RedisServer(binary, root / "redis", free_port())
    rs.start()
    key = root / "signing-key.pem"
    workers: list[Worker] = []
    try:
        common = {"workers": 1, "access_log": "false", "signing_key_file": key}
        with kiln_server(root / "local", **common) as local, \
                kiln_server(root / "remote", redis_url=rs.url, compile="remote",
                            visibility_timeout=120, **common) as remote:
            lc, rc = local.client(), remote.client()
            workers.append(Worker.start(root / "w0", "w0", rs.url, key, cpu=0))
            compile_once(lc), compile_once(rc)  # warm both paths

            # -- queue overhead ----------------------------------------------------------
            loc, rem, job = [], [], []
            for i in range(args.rounds):
                order = [("l", lc), ("r", rc)] if i % 2 == 0 else [("r", rc), ("l", lc)]
                for which, c in order:
                    wall, comp = compile_once(c)
                    (loc if which == "l" else rem).append((wall, comp))
                job.append(job_once(rc))
            extra = [w - c for w, c in loc]
            extra_r = [w - c for w, c in rem]
            extra_j = [w - c for w, c in job]
            over = statistics.median(extra_r) - statistics.median(extra)
            over_j = statistics.median(extra_j) - statistics.median(extra)
            print("\n## Queue overhead (fresh 1-layer graph, cpu; medians of "
                  f"{args.rounds} alternated rounds)\n")
            print("| path | wall, ms | compiler, ms | wall - compiler, ms |")
            print("|---|---|---|---|")
            for name, xs in (("local /v1/compile", loc), ("remote /v1/compile", rem),
                             ("remote /v1/jobs + GET ?wait", job)):
                print(f"| {name} | {statistics.median(w for w, _ in xs) * 1e3:.0f} | "
                      f"{statistics.median(c for _, c in xs) * 1e3:.0f} | "
                      f"{statistics.median(w - c for w, c in xs) * 1e3:.0f} |")
            print(f"\nqueue overhead per compile: {over * 1e3:.0f} ms (/v1/compile), "
                  f"{over_j * 1e3:.0f} ms (job); goal <= 50 ms")

            # -- scaling -----------------------------------------------------------------
            one, two = [], []
            for _b in range(args.blocks):
                one.append(batch(rc, args.batch, args.layers))
                workers.append(Worker.start(root / f"w1-{_b}", f"w1-{_b}", rs.url, key, cpu=1))
                batch(rc, 2, 1)  # warm the new worker's compiler
                two.append(batch(rc, args.batch, args.layers))
                workers.pop().stop()
            if one:
                _scaling(args, one, two)
            if args.kills:
                _redelivery(args, rc, workers, root, rs, key)
    finally:
        for w in workers:
            w.stop()
        rs.kill()
        shutil.rmtree(root, ignore_errors=True)


def _scaling(args: argparse.Namespace, one: list[float], two: list[float]) -> None:
    speedup = statistics.median(one) / statistics.median(two)
    print(f"\n## Scaling ({args.batch} distinct {args.layers}-layer jobs at once; "
          f"{args.blocks} alternated blocks)\n")
    print("| workers (pinned) | seconds per batch, median | blocks |")
    print("|---|---|---|")
    print(f"| 1 (core 0) | {statistics.median(one):.2f} | "
          f"{', '.join(f'{x:.2f}' for x in one)} |")
    print(f"| 2 (cores 0, 1) | {statistics.median(two):.2f} | "
          f"{', '.join(f'{x:.2f}' for x in two)} |")
    print(f"\nspeed-up: {speedup:.2f}x; goal >= 1.8x")


def _redelivery(args: argparse.Namespace, rc: httpx.Client, workers: list[Worker], root: Path,
                rs: RedisServer, key: Path) -> None:
    """SIGKILL the worker that received a long job; time until the other one has it."""
    redeliver, finish = [], []
    pins = {workers[0].name: 0}
    for k in range(args.kills):
        free = 1 - pins[workers[0].name]  # the core the survivor is not on
        workers.append(Worker.start(root / f"wk-{k}", f"wk-{k}", rs.url, key, cpu=free))
        pins[workers[-1].name] = free
        time.sleep(9)  # the survivor's reaper judges others after 8 s of its own beats
        seen = [w.received() for w in workers]
        doc = rc.post("/v1/jobs", json=fresh(12)).json()
        victim = None
        while victim is None:
            for w, n in zip(workers, seen, strict=True):
                if w.received() > n:
                    victim = w
            time.sleep(0.01)
        time.sleep(0.3)
        survivor = next(w for w in workers if w is not victim)
        before = survivor.received()
        t_kill = time.perf_counter()
        victim.proc.send_signal(signal.SIGKILL)
        victim.proc.wait()
        while survivor.received() == before:
            time.sleep(0.01)
        redeliver.append(time.perf_counter() - t_kill)
        while doc["state"] not in ("done", "failed"):
            doc = rc.get(f"/v1/jobs/{doc['id']}", params={"wait": 30}).json()
        finish.append(time.perf_counter() - t_kill)
        workers.remove(victim)
    print(f"\n## Redelivery after SIGKILL ({args.kills} kills, 12-layer job)\n")
    print("| measure | median, s | each, s |")
    print("|---|---|---|")
    print(f"| kill -> other worker receives it | {statistics.median(redeliver):.2f} | "
          f"{', '.join(f'{x:.2f}' for x in redeliver)} |")
    print(f"| kill -> job done | {statistics.median(finish):.2f} | "
          f"{', '.join(f'{x:.2f}' for x in finish)} |")


if __name__ == "__main__":
    main()
