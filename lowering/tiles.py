"""Kiln's rewrites of IREE's executable configurations (tile sizes), for CPU.

They run after IREE's ``executable-configurations`` phase
(``--compile-to=executable-configurations``), where each dispatch's root op carries the
``lowering_config`` that IREE's CPU backend chose (its distribution tile per workgroup and its
vector tile), and before code generation.

``conv-narrow-tiles``: a data-tiled convolution (``--iree-dispatch-creation-experimental-set-data-
tiling-ops=convolution``) is a 9-loop generic over ``(n, oc/16, oh, ow, ic/16, kh, kw, oc%16,
ic%16)``, compiled with ``Mmt4dTilingExpert``. IREE 3.13 gives it the vector tile
``[1, 1, 1, 16, ..., 16, ...]`` (16 output columns × 16 output channels, 16 accumulator registers
on AVX-512) whatever the image width, and a distribution of one output row per workgroup. On a
ResNet's last stage (7×7 images, 512 channels) that is wrong twice over, measured with
``iree-benchmark-module`` per-dispatch profiles (docs/performance.md, "One layer shape at a time"):

- 7 of 16 columns are live, and the other 9 run a masked, branchy path;
- each workgroup takes one row, so the 9.4 MB of packed weights (3×3×512×512, beyond the 2 MB L2)
  are streamed from memory once per row, 7 times a call.

This rewrite sets, for a data-tiled convolution whose output width fills at most half the
vector tile, a vector tile of exactly the width and a distribution tile of all the rows (each
workgroup streams its slice of the weights once): the 7×7×512 3×3 convolution took 1.37-1.45 ms
before and 1.04-1.09 ms after. The ops fused into the same dispatch (fill, bias and activation,
the store into the unpacked output) get the same column tile. The arithmetic and the summation
order are unchanged (results are bit-identical); only the loop tiling moves.

Anything that does not match exactly (another pipeline, another config format, dynamic shapes)
is left as IREE configured it.
"""

from __future__ import annotations

import re
from typing import Any

from kiln.lowering.linalg import (
    PARALLEL as _P,
)
from kiln.lowering.linalg import (
    REDUCTION as _R,
)
from kiln.lowering.linalg import (
    indexing_maps,
    iterator_types,
    ops_named,
    ops_where,
    static_shape,
)

__all__ = ["conv_narrow_tiles"]

_TILED_CONV_ITERS = [_P, _P, _P, _P, _R, _R, _R, _P, _R]
_LIST = re.compile(r"(\w+) = \[([0-9, ]*)\]")


def _config(attr: Any) -> dict[str, list[int]] | None:
    """``#iree_cpu.lowering_config<key = [ints], ...>`` as ``{key: ints}``; None for any other
    form (a config this module does not understand is left alone)."""
    text = str(attr)
    if not (text.startswith("#iree_cpu.lowering_config<") and text.endswith(">")):
        return None
    cfg = {k: [int(v) for v in vals.split(",") if v.strip()] for k, vals in _LIST.findall(text)}
    return cfg if _format(cfg) == text else None


def _format(cfg: dict[str, list[int]]) -> str:
    body = ", ".join(f"{k} = [{', '.join(str(v) for v in vals)}]" for k, vals in cfg.items())
    return f"#iree_cpu.lowering_config<{body}>"


def _is_tiled_conv(op: Any) -> bool:
    """A data-tiled 2-D convolution as IREE materializes it: 9 loops in the order above, the
    input read at ``(n, ic/16, oh*s + kh, ow*s + kw, ic%16)``."""
    if iterator_types(op) != _TILED_CONV_ITERS or len(op.operands) != 3:
        return False
    x = [str(e) for e in indexing_maps(op)[0].results]
    return len(x) == 5 and "d2" in x[2] and "d5" in x[2] and "d3" in x[3] and "d6" in x[3]


def conv_narrow_tiles(module: Any) -> int:
    """Retile every data-tiled convolution whose output width fills at most half its vector
    tile (see the module docstring); return how many dispatches changed."""
    from iree.compiler import ir

    done = 0
    for func in ops_named(module, "func.func"):
        attrs = func.attributes
        info = str(attrs["translation_info"]) if "translation_info" in attrs else ""
        if "Mmt4dTilingExpert" not in info:
            continue
        roots = [g for g in ops_named(func, "linalg.generic")
                 if "lowering_config" in g.attributes and _is_tiled_conv(g)]
        if len(roots) != 1:
            continue
        root = roots[0]
        cfg = _config(root.attributes["lowering_config"])
        out = static_shape(root.operands[2])
        if (cfg is None or out is None or len(out) != 5
                or sorted(cfg) != ["distribution", "vector_common_parallel", "vector_reduction"]
                or any(len(v) != 9 for v in cfg.values())):
            continue
        width, height, cols = out[3], out[2], cfg["vector_common_parallel"][3]
        if cols <= 0 or width * 2 > cols or cfg["vector_common_parallel"][2] != 1:
            continue
        cfg["vector_common_parallel"][3] = width
        cfg["distribution"][2] = height
        cfg["distribution"][3] = 0
        with root.context:
            root.attributes["lowering_config"] = ir.Attribute.parse(_format(cfg))
            # The fill, the fused epilogue and the store into the unpacked output are tiled
            # by the root; their own vector tile follows its columns.
            for op in ops_where(func, lambda op: "lowering_config" in op.attributes):
                other = _config(op.attributes["lowering_config"])
                if other is None or list(other) != ["vector_common_parallel"]:
                    continue
                vec = other["vector_common_parallel"]
                if len(vec) == 5 and vec[3] == cols:
                    vec[3] = width
                    op.attributes["lowering_config"] = ir.Attribute.parse(_format(other))
        done += 1
    return done

