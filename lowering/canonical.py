"""The canonical form of a graph and its digest.

Canonical form = the module after ``strip-debuginfo`` (every ``loc(...)`` becomes ``loc(unknown)``),
printed by MLIR's own printer without debug info: SSA values are renumbered (%0, %arg0, ...),
comments and whitespace are gone, attribute aliases are regenerated. Two serializations of the same
graph therefore print identically, and ``digest = sha256(canonical text)``.

What the digest covers and what it does not is written down in docs/caching.md.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from iree.compiler import ir

CANONICAL_PIPELINE = "builtin.module(strip-debuginfo)"


def canonicalize(module: ir.Module) -> str:
    """Strip locations in place and return the canonical text."""
    from iree.compiler import passmanager

    pm = passmanager.PassManager.parse(CANONICAL_PIPELINE, context=module.context)
    pm.run(module.operation)
    return module.operation.get_asm(enable_debug_info=False, large_elements_limit=None)


def digest_text(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
