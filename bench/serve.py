"""Daemon benchmark: cold compiles over HTTP vs the raw CLI, cache hits and artifact GETs vs nginx.

    .venv/bin/python bench/serve.py [--http-workers N] [--runs 5] [--seconds 5]

Needs ``wrk`` and ``nginx`` (Debian: ``apt-get install -y wrk nginx-light``). Prints a table;
copy it into bench/RESULTS.md under "## Daemon (bench/serve.py)" with the machine and date.

* cold compile: a fresh graph (never cached) per run, POST /v1/compile, against the native
  ``iree-compile`` with the artifact's ``flags`` on the same source; runs alternate; the ratio is
  median(HTTP) / median(CLI) (goal <= 0.9: warm workers beat a fresh process).
* cache hit: the same POST /v1/compile again (a verified hit), wrk at 1, 32 and 256 connections
  (``--conns``; goal: p50 <= 0.5 ms and p99 <= 2 ms sequential, p99 <= 2 ms at 256).
* artifact GET: GET /v1/artifacts/<hex>, wrk at the same connection counts, beside nginx serving
  the same bytes as a static file (goal: hit p50 <= 2 ms, throughput >= 0.5x nginx).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kiln.targets.toolchain import iree_compile_path  # noqa: E402
from tests.graphs import LINALG  # noqa: E402
from tests.server import free_port, kiln_server  # noqa: E402


def graph(i: int) -> str:
    return LINALG.replace("%zero = arith.constant 0.0", f"%zero = arith.constant {i}.5e-3")


def wrk(url: str, *, conns: int, seconds: int, body: bytes | None = None) -> dict[str, float]:
    """Requests/s and latency percentiles (ms) from wrk --latency."""
    cmd = ["wrk", f"-t{min(conns, 2)}", f"-c{conns}", f"-d{seconds}s", "--latency"]
    tmp = None
    if body is not None:
        tmp = tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False)
        tmp.write(
            'wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\n'
            f"wrk.body = {json.dumps(body.decode())}\n"
        )
        tmp.close()
        cmd += ["-s", tmp.name]
    out = subprocess.run([*cmd, url], capture_output=True, text=True, check=True).stdout
    if tmp:
        os.unlink(tmp.name)

    def ms(tok: str) -> float:
        v, unit = re.match(r"([\d.]+)(us|ms|s)", tok).groups()  # type: ignore[union-attr]
        return float(v) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[unit]

    p = {int(m.group(1)): ms(m.group(2)) for m in re.finditer(r"^\s+(\d+)%\s+(\S+)", out, re.M)}
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {"rps": rps, "p50": p[50], "p99": p[99], "errors": float(non2xx.group(1)) if non2xx else 0}


def nginx(root: Path, name: str, data: bytes) -> tuple[subprocess.Popen[bytes], str]:
    (root / "www").mkdir(parents=True, exist_ok=True)
    for d in (root.parent, root, root / "www"):  # nginx's workers run as nobody
        d.chmod(0o755)
    (root / "www" / name).write_bytes(data)
    (root / "www" / name).chmod(0o644)
    port = free_port()
    conf = root / "nginx.conf"
    conf.write_text(f"""
worker_processes 1; daemon off; pid {root}/nginx.pid; error_log {root}/error.log;
events {{ worker_connections 1024; }}
http {{ access_log off; sendfile on; tcp_nopush on; keepalive_requests 100000;
  client_body_temp_path {root}/tmp; proxy_temp_path {root}/tmp; fastcgi_temp_path {root}/tmp;
  uwsgi_temp_path {root}/tmp; scgi_temp_path {root}/tmp;
  server {{ listen 127.0.0.1:{port}; root {root}/www;
    location / {{ default_type application/x-iree-vmfb; etag on; }} }} }}
""")
    (root / "tmp").mkdir(exist_ok=True)
    return _start_nginx(["-c", str(conf)], f"http://127.0.0.1:{port}/{name}")


def front(root: Path, srv: object, url_path: str) -> tuple[subprocess.Popen[bytes], str]:
    """The generated nginx front (kiln serve --print-nginx-config), one worker like the static
    nginx above, in front of the running daemon."""
    from kiln.service.front import nginx_config

    root.mkdir(parents=True, exist_ok=True)
    for d in (root.parent, root):
        d.chmod(0o755)
    port = free_port()
    conf = root / "nginx.conf"
    conf.write_text(nginx_config(
        cache_dir=srv.cache_dir, upstream=f"127.0.0.1:{srv.port}",  # type: ignore[attr-defined]
        listen=f"127.0.0.1:{port}", pid_file=str(root / "nginx.pid"), worker_processes="1"))
    return _start_nginx(["-p", str(root), "-c", str(conf), "-g", "daemon off;"],
                        f"http://127.0.0.1:{port}{url_path}")


def _start_nginx(args: list[str], url: str) -> tuple[subprocess.Popen[bytes], str]:
    """Start nginx with ``args`` and wait (5 s at most) until ``url`` answers 200."""
    proc = subprocess.Popen([shutil.which("nginx") or "/usr/sbin/nginx", *args])
    for _ in range(100):
        try:
            if httpx.get(url).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.05)
    return proc, url


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--http-workers", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--conns", default="1,32,256",
                    help="comma-separated connection counts for wrk (1: sequential requests)")
    a = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="kiln-bench-"))
    rows: list[tuple[str, str]] = []
    with kiln_server(root / "srv", workers=a.workers, http_workers=a.http_workers,
                     access_log="false", log_level="warning") as srv:
        c = srv.client()
        c.post("/v1/compile", json={"graph": {"data": graph(999)}, "targets": ["cpu"]})  # warm
        http_s, cli_s = [], []
        compiler = iree_compile_path()
        for i in range(a.runs):
            src = graph(i)
            t0 = time.perf_counter()
            r = c.post("/v1/compile", json={"graph": {"data": src}, "targets": ["cpu"]})
            http_s.append(time.perf_counter() - t0)
            flags = r.json()["artifacts"][0]["flags"]
            (root / "g.mlir").write_text(graph(1000 + i))
            t0 = time.perf_counter()
            subprocess.run([str(compiler), *flags, str(root / "g.mlir"), "-o",
                            str(root / "g.vmfb")], check=True)
            cli_s.append(time.perf_counter() - t0)
        hm, cm = statistics.median(http_s), statistics.median(cli_s)
        rows.append(("cold compile, HTTP (median)", f"{hm * 1e3:.0f} ms"))
        rows.append(("cold compile, raw CLI with the same flags (median)", f"{cm * 1e3:.0f} ms"))
        rows.append(("ratio HTTP / CLI (goal <= 0.9)", f"{hm / cm:.2f}"))

        body = json.dumps({"graph": {"data": graph(0)}, "targets": ["cpu"]}).encode()
        art = c.post("/v1/compile", content=body,
                     headers={"content-type": "application/json"}).json()["artifacts"][0]
        data = c.get(art["url"]).content
        ng, ng_url = nginx(root / "nginx", art["digest"].split(":")[1], data)
        fr, fr_url = front(root / "front", srv, art["url"])
        try:
            for conns in (int(n) for n in a.conns.split(",")):
                hit = wrk(srv.url + "/v1/compile", conns=conns, seconds=a.seconds, body=body)
                get = wrk(srv.url + art["url"], conns=conns, seconds=a.seconds)
                ngx = wrk(ng_url, conns=conns, seconds=a.seconds)
                fro = wrk(fr_url, conns=conns, seconds=a.seconds)
                for what, m in (("cache hit POST /v1/compile", hit),
                                (f"artifact GET ({len(data)} B)", get), ("nginx static file", ngx),
                                ("artifact GET via the nginx front", fro)):
                    rows.append((f"{what}, {conns} conn",
                                 f"p50 {m['p50']:.2f} ms  p99 {m['p99']:.2f} ms  "
                                 f"{m['rps']:.0f} req/s" + (f"  non-2xx {m['errors']:.0f}"
                                                            if m["errors"] else "")))
                rows.append((f"artifact GET / nginx throughput, {conns} conn",
                             f"{get['rps'] / ngx['rps']:.2f}x"))
                rows.append((f"artifact GET via front / nginx throughput, {conns} conn",
                             f"{fro['rps'] / ngx['rps']:.2f}x"))
                rows.append((f"cache hit / nginx throughput, {conns} conn",
                             f"{hit['rps'] / ngx['rps']:.2f}x"))
        finally:
            for proc in (ng, fr):
                proc.terminate()
                proc.wait(10)
    print(f"# {platform.node()} {os.cpu_count()} CPUs, {platform.processor() or platform.machine()}"
          f", {time.strftime('%Y-%m-%d')}, http_workers={a.http_workers}, workers={a.workers}")
    w = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{w}}  {v}")
    shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
