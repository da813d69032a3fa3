"""The worker pool: timeouts and memory caps end the job cleanly and the worker is replaced."""

from __future__ import annotations

import pytest

from kiln.compiler.tasks import CompileJob
from kiln.compiler.workers import WorkerPool
from kiln.errors import CompileError, CompileTimeout

# A module big enough that compiling it takes well over the tiny timeouts below.
BIG = "\n".join(
    ["func.func @main(%a: tensor<64x64xf32>) -> tensor<64x64xf32> {"]
    + [f"  %v{i} = arith.addf {'%a' if i == 0 else f'%v{i-1}'}, %a : tensor<64x64xf32>" for i in range(400)]
    + ["  return %v399 : tensor<64x64xf32>", "}"]
)
CPU = [
    "--iree-hal-target-device=local",
    "--iree-hal-local-target-device-backends=llvm-cpu",
    "--iree-llvmcpu-target-triple=x86_64-unknown-linux-gnu",
    "--iree-llvmcpu-target-cpu=generic",
]


@pytest.fixture
def pool() -> WorkerPool:
    with WorkerPool(1, memory_limit=4 << 30) as p:
        yield p


def test_timeout_kills_and_replaces_the_worker(pool: WorkerPool) -> None:
    with pytest.raises(CompileTimeout) as info:
        pool.run(CompileJob(mlir=BIG, flags=tuple(CPU), engine="session"), timeout=0.3)
    assert info.value.code == "compile_timeout"
    started = pool.workers_started
    out = pool.run(
        CompileJob(mlir="func.func @f() { return }", flags=tuple(CPU), engine="session"),
        timeout=120,
    )
    assert out.data[:8] and pool.workers_started == started


def test_memory_cap_is_a_clean_error() -> None:
    # 400 MiB of address space is too little for this compile: the job fails, nothing hangs.
    # (It needs about 550-600 MiB here; 500 MiB was once enough in a full CI run, where the
    # worker's malloc arenas and threads differ.)
    with WorkerPool(1, memory_limit=400 << 20) as small:
        with pytest.raises(CompileError) as info:
            small.run(CompileJob(mlir=BIG, flags=tuple(CPU), engine="session"), timeout=120)
        assert info.value.code == "compile_failed"
        assert "out of memory" in info.value.message


def test_keep_temps_keeps_the_input_command_and_intermediates(
    tmp_path: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pathlib import Path

    keep = Path(str(tmp_path)) / "temps"
    monkeypatch.setenv("KILN_KEEP_TEMPS", str(keep))
    bad = 'func.func @main() {\n  "foo.bar"() : () -> ()\n  return\n}'
    with WorkerPool(1) as p:  # started after the variable is set: workers inherit it
        with pytest.raises(CompileError) as info:
            p.run(CompileJob(mlir=bad, flags=tuple(CPU), engine="cli"), timeout=120)
    temps = Path(info.value.detail["temps"])
    assert temps.parent == keep
    assert (temps / "input.mlir").read_text() == bad
    assert "--iree-llvmcpu-target-cpu=generic" in (temps / "command.txt").read_text()


def test_a_worker_killed_from_outside_is_not_the_graphs_fault(pool: WorkerPool) -> None:
    """SIGKILL from outside (the kernel's OOM killer for another process, an operator) while
    a compile runs: a CompileError that ``graph_fault`` clears, so nobody remembers it; the
    same compile then succeeds. A full disk reported by the compiler is a 507, not a 422."""
    import errno
    import os
    import signal
    import threading
    import time

    from kiln.compiler.workers import graph_fault, storage_error
    from kiln.errors import CompileFailure, InsufficientStorage

    def kill_soon() -> None:
        while not pool._slots or not pool._slots[0].busy:  # slots start with the first job
            time.sleep(0.01)
        slot = pool._slots[0]
        time.sleep(0.2)
        proc = slot.proc
        if proc is not None:
            os.kill(proc.pid, signal.SIGKILL)

    threading.Thread(target=kill_soon, daemon=True).start()
    with pytest.raises(CompileError) as info:
        pool.run(CompileJob(mlir=BIG, flags=tuple(CPU), engine="session"), timeout=120)
    assert not isinstance(info.value, CompileTimeout)
    assert info.value.failure.signal == "SIGKILL" and not graph_fault(info.value)
    assert "not remembered" in info.value.message
    out = pool.run(CompileJob(mlir="func.func @f() { return }", flags=tuple(CPU),
                              engine="session"), timeout=120)
    assert out.data[:8]

    full = CompileError("iree-compile failed", failure=CompileFailure(
        stderr="error: could not write output: No space left on device"))
    assert not graph_fault(full) and isinstance(storage_error(full), InsufficientStorage)
    assert isinstance(storage_error(OSError(errno.ENOSPC, "No space left on device")),
                      InsufficientStorage)
    assert graph_fault(CompileError("error: 'foo.bar' op unknown"))
