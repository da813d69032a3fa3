"""The front-end cache: a graph's ``input`` phase, imported once and shared by every target.

IREE's ``input`` phase (the torch, ONNX, StableHLO or TOSA input conversion to linalg: for
torch-dialect graphs, torch-mlir's shape library inlined and simplified op by op) does not depend
on the target: for ViT-Tiny its output is the same text for ``vulkan``, ``cuda``, ``rocm`` and
``llvm-cpu`` (tests/test_frontend_cache.py checks it for a CPU and a Vulkan flag set), and it is
1.3-1.7 s of ViT-Tiny's 4 s compile for Vulkan. A whole-executable miss therefore starts from the
graph's cached ``input`` phase (MLIR bytecode, with its source locations) when there is one, and
stores it when there is not: a fleet compiling one model for many targets, a preset or option
change, and the kernel cache's warm compiles (``kiln.compiler.kernels``) import the graph once.

The executable's bytes do not depend on whether the phase came from the cache (the compiler resumes
``--compile-from=input`` on the same module, locations included); the compile key is the whole
compile's as before.

The front-end key is a ``CompileKey`` whose ``graph_digest`` is the graph's, with target
``"front-end"``, ``options`` naming ``FRONTEND_FORMAT`` and the module attribute Kiln adds for some
targets (``TargetSpec.module_attr``: it is part of the module the phase starts from), the flags
that can act on the ``input`` phase (``front_flags``: every flag but those of later phases and
of target backends) and the compiler's identity. Stored like an executable (an action record
naming a CAS blob, signed when the cache signs) in the same disk, Redis and S3 stores.

Used with the in-process compiler (``engine="session"``) for graphs of at most
``MAX_MLIR_BYTES`` of canonical MLIR (weights inline would make each stored phase as large as
the model); ``KILN_FRONTEND_CACHE=0`` turns it off. A stored phase the compiler cannot read is
ignored: the job compiles from the graph's text instead.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kiln.cache import ArtifactCache
    from kiln.cache.key import CompileKey
    from kiln.targets.toolchain import CompilerIdentity

__all__ = ["FRONTEND_FORMAT", "MAX_MLIR_BYTES", "PHASE", "enabled", "front_flags", "frontend_key",
           "lookup", "store"]

#: Version of the stored phase (its framing and how it is made); part of every front-end key.
FRONTEND_FORMAT = 1
#: The phase cached.
PHASE = "input"
#: Graphs with more canonical MLIR than this (weights inline) are not cached: the stored phase
#: would hold the weights, for an import that takes well under a second of a CNN's compile.
MAX_MLIR_BYTES = 4 << 20
#: Flags of the phases after ``input`` and of the target backends: they cannot act on the input
#: conversion, so they stay out of the front-end key (one key for every target of a graph).
#: Anything else (``--iree-input-*``, a flag not known here) stays in.
_LATER_PHASE_PREFIXES = (
    "--iree-hal-", "--iree-llvmcpu-", "--iree-vulkan-", "--iree-cuda-", "--iree-rocm-",
    "--iree-hip-", "--iree-rocdl-", "--iree-metal-", "--iree-codegen-", "--iree-scheduling-",
    "--iree-dispatch-creation-", "--iree-global-opt-", "--iree-preprocessing-", "--iree-stream-",
    "--iree-flow-", "--iree-vm-",
    # global optimization's (``--iree-opt-level``, ``-const-eval``, ``-data-tiling``, ...): the
    # input phase of ViT-Tiny, BERT and a small CNN is the same text at O0-O3 with each of them
    "--iree-opt-",
)


def enabled(mlir_bytes: int, *, engine: str = "session") -> bool:
    """Whether a compile of a graph whose canonical MLIR is ``mlir_bytes`` long goes through the
    front-end cache: the in-process engine, at most ``MAX_MLIR_BYTES``, and
    ``KILN_FRONTEND_CACHE`` not set to 0."""
    if engine != "session" or mlir_bytes > MAX_MLIR_BYTES:
        return False
    return os.environ.get("KILN_FRONTEND_CACHE", "1").strip().lower() not in ("0", "false", "no",
                                                                               "off")


def front_flags(flags: Sequence[str]) -> tuple[str, ...]:
    """The flags that can act on the ``input`` phase, in order."""
    return tuple(f for f in flags if not f.startswith(_LATER_PHASE_PREFIXES))


def frontend_key(graph_digest: str, *, flags: Sequence[str], module_attr: str | None,
                 compiler: CompilerIdentity) -> CompileKey:
    """The cache key of a graph's ``input`` phase (module docstring)."""
    from kiln.cache.key import CompileKey

    return CompileKey(
        graph_digest=graph_digest, target="front-end",
        options={"front_end": FRONTEND_FORMAT, "phase": PHASE, "module_attr": module_attr or ""},
        flags=front_flags(flags), compiler_version=compiler.version,
        compiler_hash=compiler.hash,
    )


def lookup(cache: ArtifactCache, key: CompileKey) -> bytes | None:
    """The stored phase (verified against its digest), or None: absent, corrupt, or the store
    unreachable (a miss, as for executables)."""
    from kiln.compiler.kernels import _lookup

    return _lookup(cache, key.digest())


def store(cache: ArtifactCache, key: CompileKey, data: bytes, *, seconds: float = 0.0) -> None:
    """Store a graph's phase like an executable; a failure is logged and it stays a miss."""
    from kiln.compiler.kernels import _store

    _store(cache, key, data, seconds=seconds, what="front end")
