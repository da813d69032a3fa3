"""The kinds of blob the cache holds, each recognised by one guard on the blob's first bytes.

* ``executable``: ``iree-compile``'s ``.vmfb``, a zip whose first entry is ``module.fb`` or a
  bare (optionally size-prefixed) FlatBuffer, with the ``IREE`` file identifier. Served by
  ``/v1/artifacts``.
* ``parameter-archive``: a model's weights apart from its code (``.irpa``), starting ``IRPA``.
  Served by ``/v1/params``.
* ``kernel``: one dispatch of the kernel cache (``kiln.compiler.kernels.pack_kernel``): a JSON
  line holding exactly ``ext``, ``format`` and ``stub``, then the stub's text (it starts
  ``hal.executable private @``), then the binary.
* ``front-end-phase``: a graph's ``input`` phase (``kiln.compiler.frontend``), MLIR bytecode:
  the magic ``ML\\xefR``, a one-byte version, a printable producer name ended by NUL.

A guard reads at most ``HEAD_BYTES`` bytes and parses nothing further: a cheap format check, not
a validation (a kernel the compiler cannot use is still a kernel here). Every kind is declared
once, here (``register_kind``), and the kinds are disjoint: a blob is of one kind at most.

Who asks: a tiered cache opened with ``open_cache(accept_blob=is_known)`` (``kiln serve``,
``kiln worker``) copies between the local and the shared tier (Redis, S3) only blobs of a known
kind (a read from the shared tier, the copy to it after an outage): a blob of any other kind
found there is a miss; the service serves executables and parameter archives only,
each from its own route. Adding a kind: write its guard, ``register_kind`` it under a new name, and
check that no blob of another kind passes it (tests/test_cache_kinds.py tests every pair).
"""

from __future__ import annotations

import json
import re
import struct
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "EXECUTABLE",
    "FRONT_END_PHASE",
    "HEAD_BYTES",
    "KERNEL",
    "KERNEL_STUB_START",
    "MLIR_BYTECODE_MAGIC",
    "PARAMETER_ARCHIVE",
    "BlobKind",
    "is_known",
    "kind_of",
    "kinds",
    "register_kind",
]

#: How many leading bytes a guard needs at most (a blob's whole bytes also do).
HEAD_BYTES = 512


@dataclass(frozen=True)
class BlobKind:
    """One kind of blob: a stable ``name`` (logs, docs), what it is, and its guard (the blob's
    first ``HEAD_BYTES`` bytes or all of it -> whether it is of this kind)."""

    name: str
    description: str
    guard: Callable[[bytes], bool]

    def __call__(self, head: bytes) -> bool:
        return self.guard(head)


_KINDS: dict[str, BlobKind] = {}


def register_kind(name: str, *, description: str) -> Callable[[Callable[[bytes], bool]], BlobKind]:
    """Declare a kind whose guard is the decorated function. ValueError on a name taken."""

    def register(guard: Callable[[bytes], bool]) -> BlobKind:
        if name in _KINDS:
            raise ValueError(f"blob kind {name!r} is declared twice")
        kind = _KINDS[name] = BlobKind(name, description, guard)
        return kind

    return register


def kinds() -> tuple[BlobKind, ...]:
    """Every declared kind, in declaration order."""
    return tuple(_KINDS.values())


def kind_of(head: bytes) -> BlobKind | None:
    """The kind of the blob starting with ``head``, or None when it is of no known kind."""
    head = head[:HEAD_BYTES]
    for kind in _KINDS.values():
        if kind.guard(head):
            return kind
    return None


def is_known(head: bytes) -> bool:
    """Whether the blob starting with ``head`` is of a known kind (``open_cache(accept_blob=)``)."""
    return kind_of(head) is not None


# -- the kinds ----------------------------------------------------------------------------------


@register_kind("executable", description="an IREE executable (.vmfb)")
def EXECUTABLE(head: bytes) -> bool:
    if head[:4] == b"PK\x03\x04" and len(head) >= 30:
        name_len, extra_len = struct.unpack("<HH", head[26:30])
        data = 30 + name_len + extra_len
        return head[30 : 30 + name_len] == b"module.fb" and b"IREE" in head[data + 4 : data + 12]
    return head[4:8] == b"IREE" or head[8:12] == b"IREE"


@register_kind("parameter-archive", description="an IREE parameter archive (.irpa)")
def PARAMETER_ARCHIVE(head: bytes) -> bool:
    return head[:4] == b"IRPA"


#: The first bytes of a kernel's stub text (``kiln.compiler.kernels.pack_kernel``).
KERNEL_STUB_START = b"hal.executable private @"
_KERNEL_HEAD_MAX = 256  # the JSON line (about 40 bytes) and the stub's first bytes
_KERNEL_EXT = re.compile(r"\.[A-Za-z0-9]{1,8}")


@register_kind("kernel", description="a kernel-cache dispatch (header line, stub, binary)")
def KERNEL(head: bytes) -> bool:
    if not head.startswith(b'{"ext":'):
        return False
    line, sep, rest = head[:_KERNEL_HEAD_MAX].partition(b"\n")
    if not sep or not rest.startswith(KERNEL_STUB_START):
        return False
    try:
        meta = json.loads(line)
    except ValueError:
        return False
    if not isinstance(meta, dict) or set(meta) != {"ext", "format", "stub"}:
        return False
    ext, fmt, stub = meta["ext"], meta["format"], meta["stub"]
    return (isinstance(ext, str) and _KERNEL_EXT.fullmatch(ext) is not None
            and type(fmt) is int and fmt > 0 and type(stub) is int and stub > 0)


#: MLIR bytecode's magic number.
MLIR_BYTECODE_MAGIC = b"ML\xefR"
_PRODUCER_MAX = 64


@register_kind("front-end-phase", description="a graph's input phase (MLIR bytecode)")
def FRONT_END_PHASE(head: bytes) -> bool:
    if head[:4] != MLIR_BYTECODE_MAGIC or len(head) < 6:
        return False
    # The version is a varint; a one-byte one has its low bit set (versions below 128).
    if not head[4] & 1:
        return False
    producer, nul, _ = head[5 : 5 + _PRODUCER_MAX].partition(b"\0")
    return bool(nul) and all(0x20 <= c < 0x7F for c in producer)
