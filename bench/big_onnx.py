"""A 2.5 GB-class ONNX model (weights in a side file) through ``kiln serve``: does the daemon stay
small, and does the code-only executable run correctly with its parameter archive?

The model is a random-weight MLP, ``--layers`` f32 ``--width``×``--width`` MatMuls with a ReLU
between (default 4 × 12800² = 2.44 GiB of weights), saved with
``onnx.save_model(..., save_as_external_data=True)``. It is compiled twice against one
``kiln serve`` (1 worker, a fresh cache, upload limits raised to fit it):

* HTTP: the model and its side file as a tar body, ``POST /v1/compile?params=external``; the
  archive is fetched from ``/v1/params/{hex}`` (streamed to a file) and the executable run with
  it as a parameter provider;
* SDK: ``kiln.Client.load(folder / "mlp.onnx")`` (a second weight set, so it is not a cache hit), run.

For each: the wall time, the ``kiln serve`` process's VmRSS before and its peak (VmRSS sampled
every 50 ms; VmHWM at the end), the growth against the side file, and the largest difference of
the output on one input row to numpy's. The prepare worker's memory is bounded separately (its
RLIMIT_AS, ``worker_memory_bytes``, 8 GiB by default, is left as is).

    .venv/bin/python bench/big_onnx.py [--layers 4] [--width 12800] [--dir /tmp]

Needs about 6× the model on disk under ``--dir`` (model, tar, the upload, the worker's archive,
the cache's copy, the client's); everything is removed at the end. Figures: bench/RESULTS.md,
"A 2.5 GB ONNX model through the daemon".
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tarfile
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MIB = 1 << 20


def rss(pid: int) -> dict[str, int]:
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            out[name] = int(value.split()[0]) * 1024
    return out


@contextmanager
def sampled(pid: int) -> Iterator[dict[str, int]]:
    """``{"before", "peak"}`` VmRSS of ``pid``, sampled every 50 ms while the block runs."""
    got = {"before": rss(pid)["VmRSS"], "peak": 0}
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            got["peak"] = max(got["peak"], rss(pid)["VmRSS"])
            stop.wait(0.05)

    t = threading.Thread(target=loop, daemon=True)
    t.start()
    try:
        yield got
    finally:
        stop.set()
        t.join()
        got["hwm"] = rss(pid)["VmHWM"]


def save_mlp(folder: Path, *, layers: int, width: int, seed: int) -> Path:
    """The model in ``folder`` (``mlp.onnx`` + ``mlp.weights``), one layer's weights at a time."""
    import onnx
    from onnx import TensorProto, helper

    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    inits, nodes, h = [], [], "x"
    offset = 0
    with open(folder / "mlp.weights", "wb") as f:
        for i in range(layers):
            w = rng.standard_normal((width, width), dtype=np.float32)
            w *= np.float32(np.sqrt(2.0 / width))
            t = TensorProto(name=f"w{i}", data_type=TensorProto.FLOAT, dims=[width, width])
            t.data_location = TensorProto.EXTERNAL
            for k, v in (("location", "mlp.weights"), ("offset", str(offset)),
                         ("length", str(w.nbytes))):
                t.external_data.add(key=k, value=v)
            inits.append(t)
            f.write(w.tobytes())
            offset += w.nbytes
            del w
            out = "y" if i == layers - 1 else f"h{i}"
            nodes.append(helper.make_node("MatMul", [h, f"w{i}"], [out if i == layers - 1
                                                                   else f"m{i}"]))
            if i < layers - 1:
                nodes.append(helper.make_node("Relu", [f"m{i}"], [out]))
            h = out
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                      [1, width])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, width])],
                          inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save_model(model, folder / "mlp.onnx")  # the initializers already point at the file
    return folder


def reference(folder: Path, x: np.ndarray, *, layers: int, width: int) -> np.ndarray:
    w = np.memmap(folder / "mlp.weights", dtype=np.float32, mode="r")
    h = x.astype(np.float64)
    for i in range(layers):
        h = h @ w[i * width * width:(i + 1) * width * width].reshape(width, width)
        if i < layers - 1:
            h = np.maximum(h, 0)
    return h


def run_vmfb(vmfb: bytes, archive: Path, scope: str, x: np.ndarray) -> np.ndarray:
    import iree.runtime as rt

    config = rt.Config("local-task")
    index = rt.ParameterIndex()
    index.load(str(archive))
    params = rt.create_io_parameters_module(config.vm_instance,
                                            index.create_provider(scope=scope))
    ctx = rt.SystemContext(
        vm_modules=[params, rt.VmModule.copy_buffer(config.vm_instance, vmfb)], config=config)
    out: np.ndarray = ctx.modules.module["mlp"](x).to_host()
    return out


def via_http(srv: Any, folder: Path, tmp: Path, x: np.ndarray) -> tuple[dict[str, Any], float,
                                                                        np.ndarray]:
    tar = tmp / "mlp.tar"
    with tarfile.open(tar, "w") as t:
        t.add(folder / "mlp.onnx", "mlp.onnx")
        t.add(folder / "mlp.weights", "mlp.weights")
    t0 = time.perf_counter()
    with open(tar, "rb") as body:
        r = srv.client(timeout=3600).post(
            "/v1/compile", content=body, headers={"Content-Type": "application/x-tar"},
            params={"format": "onnx", "target": "cpu", "params": "external"})
    seconds = time.perf_counter() - t0
    tar.unlink()
    if r.status_code != 200:
        raise SystemExit(f"HTTP compile failed: {r.status_code} {r.text[:2000]}")
    res: dict[str, Any] = r.json()
    archive = tmp / "mlp.irpa"
    with srv.client(timeout=3600).stream("GET", res["params"]["url"]) as got, \
            open(archive, "wb") as f:
        for chunk in got.iter_bytes(8 * MIB):
            f.write(chunk)
    vmfb = srv.client().get(res["artifacts"][0]["url"]).content
    y = run_vmfb(vmfb, archive, res["params"]["scope"], x)
    archive.unlink()
    return res, seconds, y


def via_sdk(srv: Any, folder: Path, tmp: Path, x: np.ndarray) -> tuple[float, np.ndarray]:
    from kiln import Client

    t0 = time.perf_counter()
    with Client(srv.url, cache_dir=tmp / "client-cache", timeout=3600) as c:
        mod = c.load(folder / "mlp.onnx", device="cpu")
        seconds = time.perf_counter() - t0
        y: np.ndarray = mod.mlp(x)
    return seconds, np.asarray(y)


def measure(name: str, pid: int, fn: Callable[[], Any]) -> tuple[dict[str, int], Any]:
    print(f"[{name}] running...", flush=True)
    with sampled(pid) as mem:
        out = fn()
    return mem, out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--width", type=int, default=12800)
    ap.add_argument("--dir", default=tempfile.gettempdir())
    args = ap.parse_args(argv)
    from tests.server import kiln_server

    size = args.layers * args.width * args.width * 4
    tmp = Path(tempfile.mkdtemp(prefix="kiln-big-onnx-", dir=args.dir))
    rows = []
    try:
        print(f"model: {args.layers} x {args.width}^2 f32 = {size / MIB:.0f} MiB of weights; "
              f"free disk under {tmp}: {shutil.disk_usage(tmp).free / MIB / 1024:.1f} GiB",
              flush=True)
        x = np.random.default_rng(5).standard_normal((1, args.width), dtype=np.float32)
        limit = 2 * size + (256 * MIB)
        with kiln_server(tmp / "server", workers=1, access_log="false",
                         max_request_bytes=limit, max_upload_bytes_in_flight=limit,
                         max_upload_bytes_per_client=limit, compile_timeout=3600,
                         prepare_timeout=3600) as srv:
            pid = srv.proc.pid
            for name, seed in (("HTTP tar", 1), ("SDK Client.load", 2)):
                folder = save_mlp(tmp / f"model-{seed}", layers=args.layers, width=args.width,
                                  seed=seed)
                want = reference(folder, x, layers=args.layers, width=args.width)
                if name == "HTTP tar":
                    mem, (res, seconds, y) = measure(name, pid,
                                                     lambda f=folder: via_http(srv, f, tmp, x))
                    archive = res["params"]["size"]
                else:
                    mem, (seconds, y) = measure(name, pid, lambda f=folder: via_sdk(srv, f, tmp, x))
                    archive = size
                err = float(np.max(np.abs(y - want)) / max(1e-30, float(np.max(np.abs(want)))))
                rows.append((name, seconds, mem, archive, err))
                shutil.rmtree(folder)
                shutil.rmtree(tmp / "client-cache", ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print()
    print(f"{'path':<16} {'seconds':>8} {'RSS before':>11} {'RSS peak':>9} {'growth':>8} "
          f"{'growth/model':>12} {'VmHWM':>8} {'max rel err':>11}")
    for name, seconds, mem, _archive, err in rows:
        growth = mem["peak"] - mem["before"]
        print(f"{name:<16} {seconds:>8.1f} {mem['before'] / MIB:>8.0f} MiB "
              f"{mem['peak'] / MIB:>5.0f} MiB {growth / MIB:>4.0f} MiB {growth / size:>12.3f} "
              f"{mem['hwm'] / MIB:>4.0f} MiB {err:>11.2e}")
    return 0 if all(r[4] < 1e-3 for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
