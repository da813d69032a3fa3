"""Byte sizes as people write them, read the same way by every command and the daemon's settings:
``4096``, ``64K``, ``500M``, ``1.5G``, ``2GiB``, ``10kb`` (binary units: K = 1024)."""

from __future__ import annotations

import re

__all__ = ["parse_size"]

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([kmgtKMGT]?)(?:i?[bB])?\s*")


def parse_size(text: str) -> int:
    """Bytes; ``ValueError`` naming the accepted forms for anything else."""
    m = _SIZE.fullmatch(text)
    if not m:
        raise ValueError(f"not a size: {text[:64]!r} (use bytes or e.g. 500M, 2G, 64K)")
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()])
