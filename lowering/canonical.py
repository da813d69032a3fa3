"""The canonical form of a graph and its digest.

Canonical form = the module after ``strip-debuginfo`` (every ``loc(...)`` becomes ``loc(unknown)``),
printed by MLIR's own printer without debug info: SSA values are renumbered (%0, %arg0, ...),
comments and whitespace are gone, attribute aliases are regenerated. Two serializations of the same
graph therefore print identically, and ``digest = sha256(canonical text)``.

What the digest covers and what it does not is written down in docs/caching.md.

The canonical text prints every use of a constant in full: an attribute alias
(``#big = dense<[10000 floats]>``) used 2,500 times is a 300 KB request and a 200 MB canonical
form (+1.3 GB of daemon memory). ``check_expansion`` refuses such a graph *before* it is
printed, from the sizes of the inline constants (``inline_constant_bytes``), and again after, from
the text's length: the canonical form may be at most ``CANONICAL_RATIO`` times the request plus
``CANONICAL_FLOOR`` bytes, and never more than ``MAX_CANONICAL_BYTES`` (environment
``KILN_CANONICAL_RATIO``, ``KILN_MAX_CANONICAL_BYTES``). Constants held as resources
(``dense_resource``, as the ONNX importer writes initializers) print once and are not counted.
"""

from __future__ import annotations

import hashlib
import math
import os
from typing import TYPE_CHECKING

from kiln.errors import TooLarge

if TYPE_CHECKING:
    from iree.compiler import ir

CANONICAL_PIPELINE = "builtin.module(strip-debuginfo)"
CANONICAL_RATIO = 8
CANONICAL_FLOOR = 32 << 20
MAX_CANONICAL_BYTES = 1 << 30


def canonical_limit(request_bytes: int) -> int:
    """The largest canonical text allowed for a request of ``request_bytes`` bytes."""
    ratio = float(os.environ.get("KILN_CANONICAL_RATIO", CANONICAL_RATIO))
    cap = int(os.environ.get("KILN_MAX_CANONICAL_BYTES", MAX_CANONICAL_BYTES))
    return min(cap, int(ratio * request_bytes) + CANONICAL_FLOOR)


def inline_constant_bytes(module: ir.Module) -> int:
    """Bytes of the non-splat dense constants written inline, counted once per use (as the
    printer writes them; each prints as about twice its bytes, in hex)."""
    from iree.compiler import ir

    total = 0

    def complex_typed(v: ir.Value) -> bool:
        t = v.type
        return isinstance(t, ir.ShapedType) and isinstance(t.element_type, ir.ComplexType)

    def visit(op: ir.Operation) -> ir.WalkResult:
        nonlocal total
        attrs = op.attributes
        if any(complex_typed(v) for v in [*op.operands, *op.results]):
            # Reading a dense complex attribute aborts the process (the bindings have no
            # Python class for it: "Can't cast unknown element type"): a constant's value
            # has its result's shape, so count that instead of reading it.
            if any(attrs[i].name in ("value", "values") for i in range(len(attrs))):
                for r in op.results:
                    t = ir.ShapedType(r.type)
                    if t.has_static_shape and isinstance(t.element_type, ir.ComplexType):
                        part = ir.ComplexType(t.element_type).element_type
                        total += math.prod(t.shape) * 2 * getattr(part, "width", 32) // 8
            return ir.WalkResult.ADVANCE
        for i in range(len(attrs)):
            a = attrs[i].attr
            if isinstance(a, ir.DenseElementsAttr) and not a.is_splat:
                width = getattr(ir.ShapedType(a.type).element_type, "width", 32)
                total += len(a) * max(1, width // 8)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return total


def check_expansion(module: ir.Module | None, *, request_bytes: int,
                    text: str | None = None) -> None:
    """``TooLarge`` if the graph's canonical form would be (``module``: estimated from its inline
    constants, before printing) or is (``text``) past ``canonical_limit``."""
    limit = canonical_limit(request_bytes)
    size = len(text) if text is not None else 2 * inline_constant_bytes(module) if module else 0
    if size > limit:
        raise TooLarge(
            f"the graph's canonical form would take {size} bytes, more than the {limit} bytes "
            f"allowed for a {request_bytes}-byte request (constants repeated inline?)",
            detail={"canonical_bytes": size, "limit": limit, "request_bytes": request_bytes},
        )


def canonicalize(module: ir.Module) -> str:
    """Strip locations in place and return the canonical text."""
    from iree.compiler import passmanager

    pm = passmanager.PassManager.parse(CANONICAL_PIPELINE, context=module.context)
    pm.run(module.operation)
    return module.operation.get_asm(enable_debug_info=False, large_elements_limit=None)


def digest_text(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
