"""Soak: a real ``kiln serve`` under mixed load for minutes, with nothing lost.

    .venv/bin/python bench/soak.py --minutes 10 --clients 32          # issue 21's run
    .venv/bin/python bench/soak.py --minutes 2 --record                # write bench/RESULTS.md

``--clients`` threads (httpx, one connection each) run for ``--minutes``. Each request is, by a
seeded draw: a **hit** (POST /v1/compile of one of a small set of graphs compiled at the start,
then GET of its artifact, checked against its digest), a **miss** (a graph never seen before:
a fresh constant in the linalg MLP, compiled now, fetched and checked), or a **bad input** (one
of the bad-input corpus of tests/test_service_bad_input.py, which must get its 4xx envelope).
At the end every artifact handed out during the run is fetched again and verified (nothing
lost). The daemon's and its workers' resident memory (``/proc/<pid>/status`` VmRSS, summed over
the process tree) is sampled every 5 s; growth is the last minute's median over the first
minute's (after warm-up).

Reported: requests by kind, errors (a 5xx, a wrong status for a bad input, a digest mismatch,
a connection failure), lost artifacts, p50/p99 latency of hits, RSS first/last and growth.
Pass: 0 errors, 0 lost, RSS growth < 10 %. Exit 1 otherwise.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import random
import re
import statistics
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.cluster import rss_tree
from tests.graphs import LINALG
from tests.server import kiln_server

SECTION = "## Soak (bench/soak.py)"
RESULTS = REPO / "bench" / "RESULTS.md"
HOT = 8  # graphs compiled at the start and hit during the run
MIX = {"hit": 0.85, "miss": 0.05, "bad": 0.10}


def graph(i: int) -> str:
    return LINALG.replace("%zero = arith.constant 0.0", f"%zero = arith.constant {i}.25e-3")


def _bad_corpus() -> list[tuple[dict[str, Any], set[int]]]:
    """The bad-input cases that answer in milliseconds (no compile): (request kwargs, statuses)."""
    from tests.test_service_bad_input import CASES

    slow = ("64k", "nested-regions", "gfx", "onnx-external")
    return [(kw, st) for name, (kw, st, _codes) in CASES.items()
            if 200 not in st and not any(s in name for s in slow)]


@dataclass
class Tally:
    lock: threading.Lock = field(default_factory=threading.Lock)
    counts: dict[str, int] = field(default_factory=lambda: {"hit": 0, "miss": 0, "bad": 0})
    errors: list[str] = field(default_factory=list)  # the first 50, as samples
    n_errors: int = 0
    hit_ms: list[float] = field(default_factory=list)
    handed_out: dict[str, str] = field(default_factory=dict)  # url -> digest

    def error(self, msg: str) -> None:
        with self.lock:
            self.n_errors += 1
            if len(self.errors) < 50:
                self.errors.append(msg)


def _compile(c: httpx.Client, text: str, tally: Tally) -> tuple[str, str] | None:
    r = c.post("/v1/compile", json={"graph": {"format": "mlir", "data": text},
                                    "targets": ["cpu"]})
    if r.status_code != 200:
        tally.error(f"compile {r.status_code}: {r.text[:200]}")
        return None
    art = r.json()["artifacts"][0]
    return art["url"], art["digest"]


def _fetch_ok(c: httpx.Client, url: str, digest: str) -> bool:
    r = c.get(url)
    return r.status_code == 200 and "sha256:" + hashlib.sha256(r.content).hexdigest() == digest


def client_loop(url: str, seed: int, stop: float, tally: Tally, bad: list[Any]) -> None:
    rng = random.Random(seed)
    with httpx.Client(base_url=url, timeout=300) as c:
        n = 0
        while time.monotonic() < stop:
            kind = rng.choices(list(MIX), weights=list(MIX.values()))[0]
            try:
                if kind == "bad":
                    kw, statuses = rng.choice(bad)
                    r = c.post("/v1/compile", **kw)
                    if r.status_code not in statuses or "error" not in r.json():
                        tally.error(f"bad input answered {r.status_code}")
                else:
                    text = graph(rng.randrange(HOT) if kind == "hit"
                                 else 10_000 + seed * 100_000 + n)
                    t0 = time.perf_counter()
                    got = _compile(c, text, tally)
                    if kind == "hit":
                        with tally.lock:
                            tally.hit_ms.append((time.perf_counter() - t0) * 1e3)
                    if got is not None:
                        if not _fetch_ok(c, *got):
                            tally.error(f"artifact {got[0]} did not verify")
                        with tally.lock:
                            tally.handed_out[got[0]] = got[1]
                with tally.lock:
                    tally.counts[kind] += 1
            except (httpx.HTTPError, ValueError) as exc:
                tally.error(f"{kind}: {type(exc).__name__}: {exc}")
            n += 1


def soak(minutes: float, clients: int, workers: int, tmp: Path) -> dict[str, Any]:
    tally = Tally()
    bad = _bad_corpus()
    # Every client here is 127.0.0.1: one "client" to the per-client caps, so lift them.
    with kiln_server(tmp, workers=workers, max_queue=64, access_log=False,
                     max_connections_per_client=clients + 8,
                     max_queue_per_client=clients + 8) as srv:
        with httpx.Client(base_url=srv.url, timeout=300) as c:
            for i in range(HOT):  # warm: the hot set is compiled once
                _compile(c, graph(i), tally)
        stop = time.monotonic() + minutes * 60
        threads = [threading.Thread(target=client_loop,
                                    args=(srv.url, s, stop, tally, bad), daemon=True)
                   for s in range(clients)]
        for t in threads:
            t.start()
        rss: list[tuple[float, int]] = []
        t0 = time.monotonic()
        while any(t.is_alive() for t in threads):
            rss.append((time.monotonic() - t0, rss_tree(srv.proc.pid)))
            time.sleep(5)
        for t in threads:
            t.join()
        lost = 0
        with httpx.Client(base_url=srv.url, timeout=300) as c:
            for url, digest in tally.handed_out.items():
                lost += not _fetch_ok(c, url, digest)
        alive = srv.healthy()
    span = max(60.0, minutes * 60 / 5)
    first = [b for s, b in rss if 20 <= s <= 20 + span] or [rss[0][1]]
    last = [b for s, b in rss if s >= rss[-1][0] - span] or [rss[-1][1]]
    hit = sorted(tally.hit_ms)
    return {
        "counts": tally.counts, "errors": tally.errors, "n_errors": tally.n_errors, "lost": lost,
        "artifacts": len(tally.handed_out), "alive": alive,
        "hit_p50": statistics.median(hit) if hit else float("nan"),
        "hit_p99": hit[int(0.99 * (len(hit) - 1))] if hit else float("nan"),
        "rss_first": statistics.median(first), "rss_last": statistics.median(last),
    }


def main(argv: list[str] | None = None) -> int:
    import tempfile

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--workers", type=int, default=2, help="compile workers of the daemon")
    ap.add_argument("--record", action="store_true", help=f"write {SECTION!r} in RESULTS.md")
    args = ap.parse_args(argv)
    started = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    with tempfile.TemporaryDirectory() as tmp:
        r = soak(args.minutes, args.clients, args.workers, Path(tmp))
    growth = r["rss_last"] / r["rss_first"] - 1
    ok = r["n_errors"] == 0 and r["lost"] == 0 and growth < 0.10 and r["alive"]
    n = sum(r["counts"].values())
    table = "\n".join([
        "| figure | value | goal |", "|---|---|---|",
        f"| requests (hit / miss / bad input) | {n} ({r['counts']['hit']} / "
        f"{r['counts']['miss']} / {r['counts']['bad']}) | |",
        f"| errors | **{r['n_errors']}** | 0 |",
        f"| artifacts handed out, re-fetched and verified at the end | {r['artifacts']}, "
        f"lost **{r['lost']}** | 0 lost |",
        f"| hit POST /v1/compile + GET, p50 / p99 | {r['hit_p50']:.1f} / "
        f"**{r['hit_p99']:.1f} ms** | reported |",
        f"| RSS daemon + workers, first minute / last minute | {r['rss_first'] / 2**20:.0f} / "
        f"{r['rss_last'] / 2**20:.0f} MiB (**{growth * 100:+.1f} %**) | < +10 % |",
        f"| healthy at the end | {'yes' if r['alive'] else 'NO'} | yes |",
    ])
    print(table)
    for e in r["errors"][:20]:
        print("error:", e, file=sys.stderr)
    if args.record:
        load = os.getloadavg()[0]
        text = (f"Measured {started} on {platform.processor() or platform.machine()}, "
                f"{os.cpu_count()} cores; load average at the end {load:.1f}. "
                f"`bench/soak.py --minutes {args.minutes:g} --clients {args.clients} --workers "
                f"{args.workers}`: {args.clients} clients, each request a hit "
                f"({MIX['hit']:.0%}), a never-seen graph ({MIX['miss']:.0%}) or a bad input "
                f"({MIX['bad']:.0%}).\n\n{table}")
        old = RESULTS.read_text()
        pattern = re.compile(rf"^{re.escape(SECTION)}\n.*?(?=^## |\Z)", re.DOTALL | re.MULTILINE)
        body = f"{SECTION}\n\n{text.strip()}\n\n"
        new = (pattern.sub(lambda _: body, old) if pattern.search(old)
               else old.rstrip() + "\n\n" + body)
        RESULTS.write_text(new)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
