"""Cluster soak: the whole cluster of tests/cluster.py (Redis with its append-only file, Swift's
S3 for the blobs, two `kiln serve --compile remote` replicas, two `kiln worker`s with the kernel
cache on) under mixed traffic for minutes, with nothing lost.

    nice .venv/bin/python bench/cluster_soak.py --minutes 10 --clients 32 --record

``--clients`` threads (httpx, one connection each, the replicas alternating per request) run
until the deadline; each loop is bounded (``--minutes`` and at most ``MAX_REQUESTS`` requests)
and stops by itself. Each request is, by a seeded draw (``MIX``):

* **hit**: ``POST /v1/compile`` of one of ``HOT`` CPU graphs compiled at the start, then GET of
  its artifact, checked against its digest;
* **sibling**: a Vulkan MLP whose first layers are the warm model's and whose head is new: a
  compile on a worker that finds the shared layers' kernels (the kernel hit share below);
* **new**: a CPU graph never seen before, compiled now;
* **job**: ``POST /v1/jobs`` of a chain graph (one in four new), polled with ``?wait`` on either
  replica until done;
* **params**: an ONNX MLP with weights of one of ``WEIGHTS`` seeds, ``params: "external"``: the
  code is cached, the archive (new or known) is fetched and checked against its digest.

At the end every artifact and archive handed out is fetched again through the SDK with the
cluster's keys (``GET /v1/keys``) trusted: its digest and its signed provenance must verify, or
it counts as lost. The resident memory of every process (``/proc/<pid>/status`` VmRSS, with its
children: a worker's compile processes, a replica's prepare workers) is sampled every 5 s.

Reported: requests by kind, errors by code (the error envelope's ``code``, else the HTTP status
or the exception), lost artifacts, the kernel hit share of the workers' compiles (their log
lines), p50/p99 of hits, and RSS per process at the start, its peak and at the end. Pass: 0
errors, 0 lost. Exit 1 otherwise.
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
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.cluster import Cluster, kiln_cluster
from tests.graphs import LINALG
from tests.test_cluster_jobs import chain
from tests.test_kernel_cache import mlp
from tests.test_params_external import mlp as onnx_mlp
from tests.test_service_shared_kernels import A_LAYERS

SECTION = "## Cluster soak (bench/cluster_soak.py)"
RESULTS = REPO / "bench" / "RESULTS.md"
HOT = 8  # CPU graphs compiled at the start and hit during the run
WEIGHTS = 16  # weight sets of the ONNX MLP
MAX_REQUESTS = 100_000  # per client: a bound on each loop besides the deadline
MIX = {"hit": 0.70, "sibling": 0.04, "new": 0.04, "job": 0.10, "params": 0.12}
TOKENS = ("t1", "t2")


def hot(i: int) -> str:
    return LINALG.replace("%zero = arith.constant 0.0", f"%zero = arith.constant {i}.25e-3")


@dataclass
class Tally:
    lock: threading.Lock = field(default_factory=threading.Lock)
    counts: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    samples: list[str] = field(default_factory=list)  # the first 30 errors
    hit_ms: list[float] = field(default_factory=list)
    #: (kind, digest, key, target, graph digest) of every artifact and archive handed out
    handed: set[tuple[str, str, str | None, str | None, str]] = field(default_factory=set)

    def error(self, code: str, msg: str) -> None:
        with self.lock:
            self.errors[code] += 1
            if len(self.samples) < 30:
                self.samples.append(f"{code}: {msg[:300]}")

    def note(self, answer: dict[str, Any]) -> None:
        with self.lock:
            for a in answer["artifacts"]:
                self.handed.add(("artifact", a["digest"], a["key"], a["target"],
                                 answer["graph_digest"]))
            if answer.get("params"):
                self.handed.add(("params", answer["params"]["digest"], None, None,
                                 answer["graph_digest"]))


class Refused(Exception):
    def __init__(self, code: str, msg: str) -> None:
        super().__init__(msg)
        self.code = code


def _ok(r: httpx.Response, *statuses: int) -> dict[str, Any]:
    if r.status_code not in (statuses or (200,)):
        try:
            code = str(r.json()["error"]["code"])
        except (ValueError, KeyError, TypeError):
            code = f"http_{r.status_code}"
        raise Refused(code, f"{r.request.method} {r.request.url.path}: {r.status_code} "
                            f"{r.text[:200]}")
    out: dict[str, Any] = r.json() if r.content else {}
    return out


def _fetch(c: httpx.Client, url: str, digest: str) -> None:
    r = c.get(url)
    if r.status_code != 200 or "sha256:" + hashlib.sha256(r.content).hexdigest() != digest:
        raise Refused("artifact_unverified", f"{url}: {r.status_code}")


def _compile_json(c: httpx.Client, text: str, target: str) -> dict[str, Any]:
    return _ok(c.post("/v1/compile", json={"graph": {"format": "mlir", "data": text},
                                           "targets": [target]}))


def client_loop(cl: Cluster, seed: int, stop: float, tally: Tally) -> None:
    rng = random.Random(seed)
    token = TOKENS[seed % 2]
    clients = [httpx.Client(base_url=s.url, timeout=600,
                            headers={"Authorization": f"Bearer {token}"}) for s in cl.apis]
    try:
        for n in range(MAX_REQUESTS):
            if time.monotonic() >= stop:
                break
            kind = rng.choices(list(MIX), weights=list(MIX.values()))[0]
            c = clients[n % 2]
            t0 = time.perf_counter()
            try:
                if kind == "hit":
                    ans = _compile_json(c, hot(rng.randrange(HOT)), "cpu")
                    _fetch(c, ans["artifacts"][0]["url"], ans["artifacts"][0]["digest"])
                    with tally.lock:
                        tally.hit_ms.append((time.perf_counter() - t0) * 1e3)
                elif kind == "sibling":
                    head = 8 + (seed * 1000 + n) % 4096  # a new head: one new kernel
                    ans = _compile_json(c, mlp([*A_LAYERS, (96, head, False)]).decode(),
                                        "vulkan")
                    _fetch(c, ans["artifacts"][0]["url"], ans["artifacts"][0]["digest"])
                elif kind == "new":
                    ans = _compile_json(c, hot(10_000 + seed * 100_000 + n), "cpu")
                    _fetch(c, ans["artifacts"][0]["url"], ans["artifacts"][0]["digest"])
                elif kind == "job":
                    s = (1000 + seed * 100_000 + n) if rng.random() < 0.25 else rng.randrange(4)
                    job = _ok(c.post("/v1/jobs", json={
                        "graph": {"format": "mlir", "data": chain(1, s / 8)},
                        "targets": ["cpu"]}), 202)
                    deadline = time.monotonic() + 600
                    while True:
                        doc = _ok(clients[rng.randrange(2)].get(
                            f"/v1/jobs/{job['id']}", params={"wait": 20}))
                        if doc["state"] in ("done", "failed") or time.monotonic() > deadline:
                            break
                    if doc["state"] != "done":
                        raise Refused(f"job_{doc['state']}", str(doc.get("error"))[:200])
                    ans = doc["result"]
                    _fetch(c, ans["artifacts"][0]["url"], ans["artifacts"][0]["digest"])
                else:  # params
                    model = onnx_mlp(rng.randrange(WEIGHTS))
                    ans = _ok(c.post(
                        "/v1/compile", content=model.SerializeToString(),
                        headers={"Content-Type": "application/octet-stream"},
                        params={"format": "onnx", "target": "cpu", "params": "external"}))
                    _fetch(c, ans["params"]["url"], ans["params"]["digest"])
                tally.note(ans)
                with tally.lock:
                    tally.counts[kind] += 1
            except Refused as exc:
                tally.error(exc.code, f"{kind}: {exc}")
            except (httpx.HTTPError, ValueError, KeyError) as exc:
                tally.error(type(exc).__name__, f"{kind}: {exc}")
    finally:
        for c in clients:
            c.close()


def lost_artifacts(cl: Cluster, tally: Tally) -> tuple[int, list[str]]:
    """Fetch everything handed out again, through the SDK trusting the cluster's keys."""
    from kiln import Client
    from kiln.provenance import verify_artifact

    srv = cl.apis[0]
    with httpx.Client(base_url=srv.url, headers={"Authorization": f"Bearer {TOKENS[0]}"}) as c:
        pems = [k["public_key_pem"] for k in c.get("/v1/keys").json()]
    bad: list[str] = []
    with Client(srv.url, token=TOKENS[0], trusted_keys=pems,
                cache_dir=cl.root / "sdk-check") as sdk:
        assert sdk.trusted is not None
        for kind, digest, key, target, graph_digest in sorted(tally.handed, key=str):
            try:
                if kind == "params":
                    sdk.fetch_params(digest)
                    continue
                blob = sdk.fetch(digest)
                verify_artifact(sdk.trusted, blob, sdk.provenance(digest, key=key),
                                target=target, graph_digest=graph_digest)
            except Exception as exc:
                bad.append(f"{kind} {digest[:24]}: {type(exc).__name__}: {exc}")
    return len(bad), bad


def soak(minutes: float, clients: int, tmp: Path) -> dict[str, Any]:
    tally = Tally()
    caps = {"max_queue": 64, "max_queue_per_client": 64,
            "max_connections_per_client": clients + 8}
    t_start = time.monotonic()
    with kiln_cluster(tmp, tokens=TOKENS, **caps) as cl:
        started_in = time.monotonic() - t_start
        with httpx.Client(base_url=cl.apis[0].url, timeout=600,
                          headers={"Authorization": f"Bearer {TOKENS[0]}"}) as c:
            for i in range(HOT):  # warm: the hot set, the sibling's base, the ONNX code
                tally.note(_compile_json(c, hot(i), "cpu"))
            tally.note(_compile_json(c, mlp(A_LAYERS).decode(), "vulkan"))
        warm_mark = cl.compile_mark()
        rss: dict[str, list[int]] = {}

        def sample() -> None:
            for name, b in cl.rss().items():
                rss.setdefault(name, []).append(b)

        sample()
        stop = time.monotonic() + minutes * 60
        threads = [threading.Thread(target=client_loop, args=(cl, s, stop, tally), daemon=True)
                   for s in range(clients)]
        for t in threads:
            t.start()
        while any(t.is_alive() for t in threads):
            sample()
            due = time.monotonic() + 5.0
            for t in threads:
                t.join(max(0.0, due - time.monotonic()))
        sample()
        ran = time.monotonic() - (stop - minutes * 60)
        lost, lost_samples = lost_artifacts(cl, tally)
        kernels = cl.kernel_results(since=warm_mark)
        frontends = cl.frontend_results(since=warm_mark)
        compiles = Counter(e["kind"] for e in cl.compile_lines(since=warm_mark))
        alive = all(s.healthy() for s in cl.apis) and all(
            w.proc.poll() is None for w in cl.workers)
    hit = sorted(tally.hit_ms)
    return {
        "counts": tally.counts, "errors": tally.errors, "samples": tally.samples + lost_samples,
        "lost": lost, "handed": len(tally.handed), "kernels": kernels, "frontends": frontends,
        "compiles": compiles, "alive": alive, "ran": ran, "started_in": started_in,
        "hit_p50": statistics.median(hit) if hit else float("nan"),
        "hit_p99": hit[int(0.99 * (len(hit) - 1))] if hit else float("nan"),
        "rss": {n: (v[0], max(v), v[-1]) for n, v in rss.items()},
    }


def _mib(b: int) -> str:
    return f"{b / 2**20:.0f}"


def main(argv: list[str] | None = None) -> int:
    import tempfile

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--record", action="store_true", help=f"write {SECTION!r} in RESULTS.md")
    args = ap.parse_args(argv)
    started = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="kiln-cluster-soak-") as tmp:
        r = soak(args.minutes, args.clients, Path(tmp))
    n_err = sum(r["errors"].values())
    ok = n_err == 0 and r["lost"] == 0 and r["alive"]
    k = r["kernels"]
    share = k.get("hit", 0) / max(1, k.get("hit", 0) + k.get("miss", 0))
    counts = r["counts"]
    rows = [
        "| figure | value | goal |", "|---|---|---|",
        f"| requests in {r['ran'] / 60:.1f} min ({' / '.join(MIX)}) | {sum(counts.values())} "
        f"({' / '.join(str(counts.get(m, 0)) for m in MIX)}) | |",
        f"| errors by code | **{n_err}**"
        + (f" ({', '.join(f'{c}: {n}' for c, n in r['errors'].most_common())})" if n_err else "")
        + " | 0 |",
        f"| artifacts and archives handed out, re-fetched and verified (digest + signature) "
        f"at the end | {r['handed']}, lost **{r['lost']}** | 0 lost |",
        f"| worker compiles during the run, by kind | "
        f"{', '.join(f'{kd}: {n}' for kd, n in sorted(r['compiles'].items())) or 'none'} | |",
        f"| kernel cache (Vulkan siblings): hit / miss / fallback | {k.get('hit', 0)} / "
        f"{k.get('miss', 0)} / {k.get('fallback', 0)}: hit share **{share:.0%}** | reported |",
        f"| front-end cache: hit / miss | {r['frontends'].get('hit', 0)} / "
        f"{r['frontends'].get('miss', 0)} | reported |",
        f"| hit POST /v1/compile + GET, p50 / p99 | {r['hit_p50']:.1f} / "
        f"**{r['hit_p99']:.1f} ms** | reported |",
        f"| every process healthy at the end | {'yes' if r['alive'] else 'NO'} | yes |",
    ]
    rss_rows = ["| process (with its children) | RSS start, MiB | peak | end |",
                "|---|---|---|---|"]
    rss_rows += [f"| {name} | {_mib(a)} | {_mib(p)} | {_mib(e)} |"
                 for name, (a, p, e) in sorted(r["rss"].items())]
    table = "\n".join(rows) + "\n\n" + "\n".join(rss_rows)
    print(table)
    for e in r["samples"][:20]:
        print("error:", e, file=sys.stderr)
    if args.record:
        from importlib.metadata import version

        load = os.getloadavg()[0]
        cpu = next((ln.split(":", 1)[1].strip() for ln in
                    Path("/proc/cpuinfo").read_text().splitlines()
                    if ln.startswith("model name")), platform.machine())
        text = (
            f"Measured {started} on \"{cpu}\", {os.cpu_count()} cores shared with other "
            f"engineers' test runs (load average {load0:.1f} at the start, {load:.1f} at the "
            f"end), run under `nice`; Python {platform.python_version()}, IREE "
            f"{version('iree-base-compiler')}. The cluster (started in {r['started_in']:.0f} s): "
            "redis-server (AOF), Swift s3api (blobs), two `kiln serve --compile remote`, two "
            "`kiln worker --concurrency 1` with `KILN_KERNEL_CACHE=1`. `nice .venv/bin/python "
            f"bench/cluster_soak.py --minutes {args.minutes:g} --clients {args.clients}`: "
            f"{args.clients} client threads, the replicas alternating; each request a hit "
            f"({MIX['hit']:.0%}), a Vulkan sibling of a warm MLP with a new head "
            f"({MIX['sibling']:.0%}), a new CPU graph ({MIX['new']:.0%}), a job "
            f"({MIX['job']:.0%}, one in four new) or an ONNX MLP with `params: \"external\"` "
            f"and one of {WEIGHTS} weight sets ({MIX['params']:.0%}). A sibling shares "
            f"{len(A_LAYERS)} of its {len(A_LAYERS) + 1} kernels with the warm MLP: the kernel "
            f"hit share cannot exceed {len(A_LAYERS) / (len(A_LAYERS) + 1):.0%}.\n\n{table}")
        old = RESULTS.read_text()
        pattern = re.compile(rf"^{re.escape(SECTION)}\n.*?(?=^## |\Z)", re.DOTALL | re.MULTILINE)
        body = f"{SECTION}\n\n{text.strip()}\n\n"
        new = (pattern.sub(lambda _: body, old) if pattern.search(old)
               else old.rstrip() + "\n\n" + body)
        RESULTS.write_text(new)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
