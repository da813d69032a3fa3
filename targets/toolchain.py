"""The installed compiler: where the native ``iree-compile`` is, what it is, and what it accepts.

Only subprocesses of the native binary run here (cheap queries such as ``--version`` and the LLVM
CPU/feature lists); nothing loads the compiler library into the calling process.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CompilerIdentity", "compiler_identity", "iree_compile_path", "llvm_cpu_catalog"]


@functools.cache
def iree_compile_path() -> Path:
    """The native binary in ``iree/compiler/_mlir_libs`` (the ``bin/`` shim costs ~250 ms a call)."""
    import importlib.util

    spec = importlib.util.find_spec("iree.compiler")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("iree-base-compiler is not installed")
    root = Path(next(iter(spec.submodule_search_locations)))
    path = root / "_mlir_libs" / "iree-compile"
    if not path.exists():
        raise RuntimeError(f"native iree-compile not found at {path}")
    return path


@dataclass(frozen=True)
class CompilerIdentity:
    name: str
    version: str
    hash: str  # sha256 of the native iree-compile binary
    path: str

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "version": self.version, "hash": self.hash}


@functools.cache
def compiler_identity() -> CompilerIdentity:
    path = iree_compile_path()
    out = subprocess.run(
        [str(path), "--version"], capture_output=True, text=True, timeout=60, check=False
    ).stdout
    m = re.search(r"IREE compiler version (\S+)", out)
    version = m.group(1) if m else "unknown"
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return CompilerIdentity("iree", version, h.hexdigest(), str(path))


@dataclass(frozen=True)
class CpuCatalog:
    cpus: frozenset[str]
    features: frozenset[str]


_TINY = "func.func @f() { return }\n"


@functools.cache
def llvm_cpu_catalog(triple: str) -> CpuCatalog:
    """The CPU names and features LLVM accepts for ``triple``, read from the compiler itself.

    ``--iree-llvmcpu-target-cpu=help`` makes LLVM print both lists (then it may exit non-zero).
    """
    path = iree_compile_path()
    proc = subprocess.run(
        [
            str(path),
            "--iree-hal-target-device=local",
            "--iree-hal-local-target-device-backends=llvm-cpu",
            f"--iree-llvmcpu-target-triple={triple}",
            "--iree-llvmcpu-target-cpu=help",
            "-",
            "-o",
            os.devnull,
        ],
        input=_TINY,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    text = proc.stdout + proc.stderr
    cpus: set[str] = set()
    feats: set[str] = set()
    section = None
    for line in text.splitlines():
        if line.startswith("Available CPUs"):
            section = cpus
            continue
        if line.startswith("Available features"):
            section = feats
            continue
        if line.startswith("Use +feature"):
            section = None
            continue
        m = re.match(r"^\s{2}(\S+)\s+- ", line)
        if m and section is not None:
            section.add(m.group(1))
    if not cpus:
        raise RuntimeError(f"could not read the CPU list for {triple} from {path}:\n{text[-2000:]}")
    return CpuCatalog(frozenset(cpus), frozenset(feats))
