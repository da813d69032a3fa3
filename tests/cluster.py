"""A whole Kiln cluster of real processes, for the system test and the cluster soak: a
redis-server (append-only file on), a Swift with s3api holding the blobs, two `kiln serve
--compile remote` replicas and two `kiln worker`s (each process with its own disk tier, all
signing with one key, the kernel cache on where compiles run).

    with kiln_cluster(tmp_path, tokens=("t1", "t2"), trusted=("t3",)) as cl:
        cl.apis[0].client().post("/v1/compile", json=...)
        cl.compile_lines()          # every worker's compile log lines, parsed
        cl.rss()                    # resident bytes of every process (and its children)

The replicas inherit the ``AWS_*`` variables of Swift through the environment, set for the
duration of the context and restored after it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

from tests.conftest_redis import RedisServer, free_port
from tests.server import REPO, KilnServer, kiln_server
from tests.swift import SwiftServer, swift_missing

__all__ = ["AOF", "BUCKET", "Cluster", "ClusterWorker", "kiln_cluster", "rss_tree"]

AOF = ("--appendonly", "yes", "--appendfsync", "always")
BUCKET = "kiln-system"
# s: the backstop after which an unacknowledged message is handed out again; a dead worker's
# messages come back long before, through the workers' heartbeats.
VISIBILITY = 60.0


@dataclass
class ClusterWorker:
    """A `kiln worker` process (it leads its own process group)."""

    name: str
    proc: subprocess.Popen[bytes]
    log_path: Path

    @classmethod
    def start(cls, root: Path, name: str, *, redis_url: str, key_file: Path,
              s3: tuple[str, dict[str, str]] | None = None, kernel_cache: bool | None = True,
              cpu: int | None = None, timeout: float = 120.0) -> ClusterWorker:
        """Start and return once it consumes (``timeout`` s at most). ``s3``: (url, environment)
        of the object store for the blobs; ``kernel_cache``: on for every kind, off, or None for
        the default; ``cpu``: pinned to that core (taskset)."""
        root.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("KILN_")}
        s3_args: list[str] = []
        if s3 is not None:
            s3_args = ["--s3-url", s3[0]]
            env.update(s3[1])
        if kernel_cache is not None:
            env["KILN_KERNEL_CACHE"] = "1" if kernel_cache else "0"
        env.update(KILN_SIGNING_KEY_FILE=str(key_file), TMPDIR=str(root),
                   PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")])))
        log_path = root / f"{name}.log"
        pin = ["taskset", "-c", str(cpu)] if cpu is not None else []
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                [*pin, sys.executable, "-m", "kiln.cli", "worker", "--redis-url", redis_url,
                 "--cache-dir", str(root / "cache"), "--concurrency", "1", "--name", name,
                 "--visibility-timeout", str(VISIBILITY), "--lease-seconds", "3",
                 "--compile-timeout", "120", *s3_args],
                env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        w = cls(name, proc, log_path)
        deadline = time.monotonic() + timeout
        while " ready." not in w.log():
            if proc.poll() is not None or time.monotonic() > deadline:
                w.stop()
                raise RuntimeError(f"kiln worker {name} did not start:\n{w.log()[-3000:]}")
            time.sleep(0.1)
        return w

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def events(self, event: str) -> list[dict[str, Any]]:
        """This worker's JSON log lines of ``event`` (``compile``, ``task``, ``requeued``)."""
        out = []
        for line in self.log().splitlines():
            if line.startswith("{") and f'"event": "{event}"' in line:
                with contextlib.suppress(ValueError):
                    out.append(json.loads(line))
        return out

    def received(self) -> int:
        return self.log().count("] received")

    def finished(self, key: str) -> bool:
        return f'"event": "task", "key": "{key}"' in self.log()

    def group_alive(self) -> bool:
        try:
            os.killpg(self.proc.pid, 0)
        except ProcessLookupError:
            return False
        return True

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


@dataclass
class Cluster:
    redis: RedisServer
    swift: SwiftServer
    apis: list[KilnServer]
    workers: list[ClusterWorker]
    key_file: Path
    root: Path
    s3: tuple[str, dict[str, str]]
    retired: list[ClusterWorker] = field(default_factory=list)

    def rclient(self) -> redis.Redis:
        return redis.Redis.from_url(self.redis.url)

    def add_worker(self, name: str) -> ClusterWorker:
        w = ClusterWorker.start(self.root / name, name, redis_url=self.redis.url,
                                key_file=self.key_file, s3=self.s3)
        self.workers.append(w)
        return w

    def compile_mark(self) -> dict[str, int]:
        """How many compiles each worker has logged: ``compile_lines(since=)``."""
        return {w.name: len(w.events("compile")) for w in (*self.retired, *self.workers)}

    def compile_lines(self, *, since: dict[str, int] | None = None) -> list[dict[str, Any]]:
        """Every compile any worker ran (its log line: kind, outcome, kernels, frontend), or
        those after the mark ``since``."""
        since = since or {}
        return [e for w in (*self.retired, *self.workers)
                for e in w.events("compile")[since.get(w.name, 0):]]

    def kernel_results(self, *, since: dict[str, int] | None = None) -> dict[str, int]:
        """Kernel-cache results (hit, miss, fallback) summed over the compile lines."""
        out: dict[str, int] = {}
        for e in self.compile_lines(since=since):
            for k, n in e.get("kernels", {}).items():
                out[k] = out.get(k, 0) + n
        return out

    def frontend_results(self, *, since: dict[str, int] | None = None) -> dict[str, int]:
        """Front-end cache results (hit, miss) summed over the compile lines."""
        out: dict[str, int] = {}
        for e in self.compile_lines(since=since):
            fr = e.get("frontend")
            for k, n in ({fr: 1} if isinstance(fr, str) else (fr or {})).items():
                out[k] = out.get(k, 0) + n
        return out

    def processes(self) -> dict[str, int]:
        """Name -> pid of every live process of the cluster."""
        procs = {"redis": self.redis.proc.pid if self.redis.proc else 0}
        procs.update({f"swift-{n}": p.pid for n, p in self.swift.procs.items()})
        procs.update({f"api-{i}": a.proc.pid for i, a in enumerate(self.apis)})
        procs.update({w.name: w.proc.pid for w in self.workers})
        return {n: p for n, p in procs.items() if p and _alive(p)}

    def rss(self) -> dict[str, int]:
        """Resident bytes of every live process with its children (compile workers)."""
        return {name: rss_tree(pid) for name, pid in self.processes().items()}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def rss_tree(pid: int) -> int:
    """Resident bytes of ``pid`` and every descendant (``/proc/<pid>/status`` VmRSS)."""
    kids: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                ppid = int(Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            kids.setdefault(ppid, []).append(int(d))
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            m = re.search(r"VmRSS:\s+(\d+) kB", Path(f"/proc/{p}/status").read_text())
        except OSError:
            m = None
        total += int(m.group(1)) * 1024 if m else 0
        todo += kids.get(p, [])
    return total


@contextlib.contextmanager
def kiln_cluster(root: Path, *, tokens: tuple[str, ...] = (), trusted: tuple[str, ...] = (),
                 **api_settings: Any) -> Iterator[Cluster]:
    """Start the cluster under ``root`` (replicas and workers at once: each takes seconds on a
    busy machine); stop everything on exit. ``tokens`` + ``trusted``: the replicas' bearer
    tokens, ``trusted`` also ``KILN_TUNING_TRUSTED_TOKENS``. ``api_settings``: more settings of
    the replicas (``tests.server.kiln_server``)."""
    binary = shutil.which("redis-server")
    missing = swift_missing()
    if binary is None or missing:
        raise RuntimeError(f"{', '.join([*missing, *(['redis-server'] * (binary is None))])} "
                           "not on PATH (scripts/bootstrap.sh installs them)")
    root.mkdir(parents=True, exist_ok=True)
    rs = RedisServer(binary, root / "redis", free_port())
    key_file = root / "signing-key.pem"
    with contextlib.ExitStack() as stack:
        rs.start(*AOF)
        stack.callback(rs.kill)
        swift = SwiftServer(root / "swift")
        swift.start()
        stack.callback(swift.close)
        swift.create_bucket(BUCKET)
        s3 = (f"s3://{BUCKET}/cluster", swift.env())
        saved = {k: os.environ.get(k) for k in s3[1] if k.startswith("AWS_")}
        os.environ.update({k: v for k, v in s3[1].items() if k.startswith("AWS_")})
        stack.callback(lambda: [os.environ.pop(k, None) if v is None else
                                os.environ.__setitem__(k, v) for k, v in saved.items()])
        settings: dict[str, Any] = {
            "redis_url": rs.url, "compile": "remote", "workers": 1, "access_log": "false",
            "visibility_timeout": VISIBILITY, "signing_key_file": key_file,
            "kernel_cache": "1", "s3_url": s3[0], "s3_endpoint_url": swift.endpoint_url,
            **api_settings}
        if tokens or trusted:
            settings.update(tokens=",".join((*tokens, *trusted)),
                            tuning_trusted_tokens=",".join(trusted))
        cms = [kiln_server(root / f"api-{n}", **settings) for n in "ab"]
        workers: list[ClusterWorker] = []
        cluster = Cluster(rs, swift, [], workers, key_file, root, s3)
        stack.callback(lambda: [w.stop() for w in cluster.workers])
        with ThreadPoolExecutor(4) as ex:
            api_futs = [ex.submit(cm.__enter__) for cm in cms]
            worker_futs = [ex.submit(ClusterWorker.start, root / f"worker-{n}", f"w{n}",
                                     redis_url=rs.url, key_file=key_file, s3=s3)
                           for n in (1, 2)]
            errors: list[BaseException] = []
            for cm, fut in zip(cms, api_futs, strict=True):
                try:
                    cluster.apis.append(fut.result())
                    stack.push(cm.__exit__)
                except Exception as exc:  # the others are stopped by the stack
                    errors.append(exc)
            for wf in worker_futs:
                try:
                    workers.append(wf.result())
                except Exception as exc:
                    errors.append(exc)
        if errors:
            raise errors[0]
        yield cluster
