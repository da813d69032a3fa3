"""Kiln's rewrites of IREE's global-optimization output, for channels-last CNNs on CPU.

They run after IREE's ``global-optimization`` phase (``--compile-to=global-optimization``), where
IREE has already converted the convolutions to channels-last, propagated and cancelled the
transposes and generalized every linalg op, and before dispatch creation (where data tiling
sets encodings). At that point a ResNet-style graph still has two costly shapes, measured with
``iree-benchmark-module`` profiles (docs/performance.md, "Per layer against onnxruntime"):

``pool-nhwc``: a max (or sum) pooling stays channels-first between two transposes, and with
convolution data tiling on it is treated as a convolution: its input is packed by a separate
single-threaded encode dispatch (0.5-0.8 ms on ResNet-18's 112x112x64 pool, more than the pool).
This rewrite folds the surrounding transposes into the pooling (so it reads and writes the
channels-last tensors directly) and unrolls its small window into one elementwise op over
``KH*KW`` strided slices of the input, combined in the window's own order (bit-identical
results). The elementwise form is neither packed nor left unvectorized (a window reduction
written with ``d0 * 2 + d3`` maps is not vectorized by IREE's CPU codegen).

``conv1x1-matmul``: after IREE's channels-last conversion a 1x1 convolution is a contraction
over ``(h, w, c) x (f, c) -> (h, w, f)``: two M dimensions, which IREE's data tiling skips, and
for a strided 1x1 convolution (a ResNet projection) the input map reads ``(2 * h, 2 * w, c)``,
which IREE's CPU codegen does not vectorize at all (36 ms for one 56x56x256 -> 28x28x512
projection of a ResNet-50-style network, a third of its time). This rewrite takes the strided
input as a strided slice, collapses ``h, w`` into one dimension and writes the convolution as a
2-D matmul (``(m, c) x (f, c) -> (m, f)``), which IREE data-tiles onto its mmt4d kernels.

``stem-s2d``: a stride-2 convolution over few channels with a large kernel (ResNet's 7x7 stem over
RGB) runs as a data-tiled convolution with a reduction of 3 per window position, 49 times: ~30
GFLOP/s, a fifth of the network's time. Space-to-depth turns it into a stride-1 convolution
with a 4x4 kernel over 16 channels, the same arithmetic with the kernel zero-padded to 8x8 and
the channels zero-padded to a power of two (3 -> 4), so that the channels after space to depth
fill whole vector blocks (with 12, the data-tiled input is packed to 16 anyway, by a dispatch
that ran one workgroup per pixel: 0.25 ms against 0.09 ms on ResNet-18)::

    x[Hp, Wp, C] -> pad to [Hp, Wp, C']           (C' = the power of two >= C)
                 -> x'[Hp/2, Wp/2, 2*2*C']       (x'[i, j, (p, q, c)] = x[2i+p, 2j+q, c])
    w[KH, KW, C, F] -> pad to [2*ceil(KH/2), 2*ceil(KW/2), C', F]
                    -> w'[ceil(KH/2), ceil(KW/2), 4C', F]

Only static shapes are rewritten; anything that does not match is left as it is. Both rewrites
keep every operand's element type. ``stem-s2d`` adds the products of the zero padding (exact for
finite inputs; an infinite input value in a padded position gives NaN where the original gives
an infinity).
"""

from __future__ import annotations

import itertools
from typing import Any

from kiln.lowering.linalg import (
    PARALLEL,
    REDUCTION,
    _body,
    _dim,
    _linear,
    _mul_adds,
    _op,
    _reassoc,
    _transpose_perm,
    indexing_maps,
    iterator_types,
    ops_named,
    static_shape,
)

__all__ = ["conv1x1_to_matmul", "pool_nhwc", "stem_space_to_depth"]

_COMBINERS = {"arith.maximumf", "arith.minimumf", "arith.maxnumf", "arith.minnumf", "arith.addf",
              "arith.maxsi", "arith.minsi", "arith.maxui", "arith.minui", "arith.addi"}
_MAX_WINDOW = 16  # 3x3 and 2x2 pools; a global pool is a reduction, not unrolled


def _window_op(g: Any) -> tuple[int, Any] | None:
    """A pooling-like generic: ``(input, window) -> out``, output map the identity over its leading
    parallel dims, trailing reduction dims only indexed by the window operand, body
    ``yield f(out, in)`` for a combiner ``f``. Returns (number of parallel dims, combiner op)."""
    if len(g.operands) != 3 or len(g.results) != 1:
        return None
    it = iterator_types(g)
    npar = it.count(PARALLEL)
    if npar == 0 or it[:npar] != [PARALLEL] * npar or not it[npar:]:
        return None
    if any(i != REDUCTION for i in it[npar:]):
        return None
    block = g.regions[0].blocks[0]
    body = _body(g)
    if len(body) != 2 or body[0].name not in _COMBINERS or list(block.arguments[1].uses):
        return None
    comb = body[0]
    args = {block.arguments[0], block.arguments[2]}
    if len(comb.operands) != 2 or set(comb.operands) != args:
        return None
    if body[1].operands[0] != comb.results[0]:
        return None
    maps = indexing_maps(g)
    if [_dim(e) for e in maps[2].results] != list(range(npar)):
        return None
    wdims = [_dim(e) for e in maps[1].results]
    if None in wdims or sorted(wdims) != list(range(npar, len(it))):  # type: ignore[type-var]
        return None
    if any(static_shape(v) is None for v in g.operands):
        return None
    return npar, comb


def _fold_transposes(g: Any, npar: int) -> Any:
    """Make a window op that reads ``transpose(src)`` read ``src`` directly (loops renamed so its
    output is in ``src``'s layout), and give its transposing users the new result. Returns the
    op to continue with (``g`` itself when there is nothing to fold)."""
    from iree.compiler import ir
    from iree.compiler.dialects import linalg, tensor

    t_op = _op(g.operands[0].owner)
    perm = _transpose_perm(t_op)
    init = _op(g.operands[2].owner)
    if perm is None or len(perm) != npar or perm == list(range(npar)):
        return g
    if init is None or init.name != "linalg.fill":
        return g
    src = t_op.operands[0]
    nloops = len(iterator_types(g))
    maps = indexing_maps(g)
    inv = [0] * npar
    for j, d in enumerate(perm):
        inv[d] = j
    # Source dim j is result dim perm[j]; loops are renamed so the output is the identity in
    # the source's layout: old loop i -> new loop inv[i] (reductions keep their positions).
    rename = ir.AffineMap.get(
        nloops, 0, [ir.AffineDimExpr.get(inv[i] if i < npar else i) for i in range(nloops)]
    )
    a_map = ir.AffineMap.get(
        nloops, 0, [maps[0].results[perm[j]].compose(rename) for j in range(npar)]
    )
    w_map = ir.AffineMap.get(nloops, 0, [e.compose(rename) for e in maps[1].results])
    o_map = ir.AffineMap.get(nloops, 0, [ir.AffineDimExpr.get(i) for i in range(npar)])
    out_t = ir.RankedTensorType(g.results[0].type)
    old_shape = list(out_t.shape)
    new_shape = [old_shape[perm[j]] for j in range(npar)]
    new_t = ir.RankedTensorType.get(new_shape, out_t.element_type)
    with ir.InsertionPoint(g), g.location:
        empty = tensor.EmptyOp(new_shape, out_t.element_type).result
        fill = linalg.fill(init.operands[0], outs=[empty])
    new = g.clone(ir.InsertionPoint(g))
    new.operands[0] = src
    new.operands[2] = fill if isinstance(fill, ir.Value) else fill.results[0]
    new.attributes["indexing_maps"] = ir.ArrayAttr.get(
        [ir.AffineMapAttr.get(m) for m in (a_map, w_map, o_map)]
    )
    new.results[0].set_type(new_t)
    back = None
    for use in list(g.results[0].uses):
        user = _op(use.owner)
        q = _transpose_perm(user)
        if (q is not None and len(q) == npar and all(perm[q[j]] == j for j in range(npar))
                and ir.RankedTensorType(user.results[0].type) == new_t):
            user.results[0].replace_all_uses_with(new.results[0])
            user.erase()
            continue
        if back is None:  # another user wants the channels-first result: transpose it back
            with ir.InsertionPoint(g), g.location:
                e2 = tensor.EmptyOp(old_shape, out_t.element_type).result
                t = linalg.transpose(new.results[0], outs=[e2], permutation=inv)
                back = t if isinstance(t, ir.Value) else t.results[0]
        user.replace_uses_of_with(g.results[0], back)
    g.erase()
    return new


def _unroll_window(g: Any, npar: int, comb: Any) -> bool:
    """Replace a window op by one elementwise generic over its ``KH*KW`` strided input slices."""
    from iree.compiler import ir
    from iree.compiler.dialects import linalg, tensor

    it = iterator_types(g)
    nloops = len(it)
    maps = indexing_maps(g)
    x, window, init = g.operands
    sizes = dict(zip([_dim(e) for e in maps[1].results], static_shape(window) or [], strict=False))
    offsets_list = list(itertools.product(*[range(sizes[d]) for d in range(npar, nloops)]))
    if not offsets_list or len(offsets_list) > _MAX_WINDOW:
        return False
    out_shape = static_shape(init) or []
    # Each input index must be  stride * (one parallel dim) + dilation * (at most one window dim)
    # + constant: then window position (kh, kw, ...) is a strided slice of the input.
    specs = []
    for e in maps[0].results:
        lin = _linear(e, nloops)
        if lin is None:
            return False
        coeffs, const = lin
        par = [i for i in range(npar) if coeffs[i]]
        red = [i for i in range(npar, nloops) if coeffs[i]]
        if len(par) != 1 or len(red) > 1 or coeffs[par[0]] < 1 or const < 0:
            return False
        specs.append((par[0], coeffs[par[0]], red[0] if red else None,
                      coeffs[red[0]] if red else 0, const))
    if sorted(s[0] for s in specs) != list(range(npar)):
        return False
    et = ir.RankedTensorType(x.type).element_type
    ot = ir.RankedTensorType(init.type).element_type
    slices = []
    with ir.InsertionPoint(g), g.location:
        for offs in offsets_list:
            at = {npar + i: o for i, o in enumerate(offs)}
            start = [s[4] + (s[3] * at[s[2]] if s[2] is not None else 0) for s in specs]
            size = [out_shape[s[0]] for s in specs]
            stride = [s[1] for s in specs]
            sl = tensor.ExtractSliceOp(
                ir.RankedTensorType.get(size, et), x, [], [], [],
                ir.DenseI64ArrayAttr.get(start), ir.DenseI64ArrayAttr.get(size),
                ir.DenseI64ArrayAttr.get(stride),
            ).result
            dims = [ir.AffineDimExpr.get(s[0]) for s in specs]
            slices.append((sl, ir.AffineMap.get(npar, 0, dims)))
        new = linalg.GenericOp(
            [g.results[0].type], [s for s, _ in slices], [init],
            ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for _, m in slices]
                             + [ir.AffineMapAttr.get(ir.AffineMap.get_identity(npar))]),
            ir.ArrayAttr.get([ir.Attribute.parse(PARALLEL)] * npar),
        )
        block = new.regions[0].blocks.append(*([et] * len(slices)), ot)
    with ir.InsertionPoint(block), g.location:
        # out = f(...f(f(out, x[window 0]), x[window 1])..., x[window n-1]): the original order.
        acc = block.arguments[len(slices)]
        out_first = comb.operands[0] == g.regions[0].blocks[0].arguments[2]
        for i in range(len(slices)):
            pair = [acc, block.arguments[i]] if out_first else [block.arguments[i], acc]
            acc = ir.Operation.create(comb.name, results=[ot], operands=pair,
                                      attributes={k: comb.attributes[k] for k in comb.attributes},
                                      ).result
        linalg.YieldOp([acc])
    g.results[0].replace_all_uses_with(new.result)
    g.erase()
    return True


def pool_nhwc(module: Any) -> int:
    """Rewrite every static pooling-like window op (see the module docstring); return the count."""
    from iree.compiler import ir

    ctx = module.context
    done = 0
    with ctx, ir.Location.unknown(ctx):
        for g in ops_named(module, "linalg.generic"):
            found = _window_op(g)
            if found is None:
                continue
            npar, _ = found
            g = _fold_transposes(g, npar)
            found = _window_op(g)
            if found is not None and _unroll_window(g, *found):
                done += 1
    return done


def stem_space_to_depth(module: Any, *, max_channels: int = 8, min_kernel: int = 5) -> int:
    """Rewrite each static stride-2 channels-last convolution over at most ``max_channels`` input
    channels with a kernel of at least ``min_kernel`` (both sides) by space-to-depth; return the
    count."""
    from iree.compiler import ir
    from iree.compiler.dialects import arith, linalg, tensor

    ctx = module.context
    done = 0
    with ctx, ir.Location.unknown(ctx):
        for g, (mx, mw, mo) in _mul_adds(module, reductions=3):
            if [_dim(e) for e in mw.results] != [3, 4, 5, 2]:
                continue
            if [_dim(e) for e in mo.results] != [0, 1, 2]:
                continue
            if len(mx.results) != 3 or _dim(mx.results[2]) != 5:
                continue
            lh, lw = _linear(mx.results[0], 6), _linear(mx.results[1], 6)
            # input (2 * oh + kh, 2 * ow + kw, c): stride 2, dilation 1, no offset
            if lh != ([2, 0, 0, 1, 0, 0], 0) or lw != ([0, 2, 0, 0, 1, 0], 0):
                continue
            x, w, init = g.operands
            xs, ws, os_ = static_shape(x), static_shape(w), static_shape(init)
            if xs is None or ws is None or os_ is None:
                continue
            kh, kw, c, f = ws
            oh, ow, _ = os_
            hp, wp, _ = xs
            if c > max_channels or kh < min_kernel or kw < min_kernel or hp % 2 or wp % 2:
                continue
            kh2, kw2 = (kh + 1) // 2, (kw + 1) // 2
            h2, w2 = hp // 2, wp // 2
            if oh + kh2 - 1 > h2 or ow + kw2 - 1 > w2:
                continue
            et = ir.RankedTensorType(x.type).element_type
            wt = ir.RankedTensorType(w.type).element_type

            def transpose(v: Any, shape: list[int], perm: list[int], ety: Any) -> Any:
                empty = tensor.EmptyOp([shape[p] for p in perm], ety).result
                r = linalg.transpose(v, outs=[empty], permutation=perm)
                return r if isinstance(r, ir.Value) else r.results[0]

            def expand(v: Any, shape: list[int], groups: list[list[int]], ety: Any) -> Any:
                return tensor.ExpandShapeOp(ir.RankedTensorType.get(shape, ety), v,
                                            _reassoc(groups), [],
                                            ir.DenseI64ArrayAttr.get(shape)).result

            def collapse(v: Any, shape: list[int], groups: list[list[int]], ety: Any) -> Any:
                return tensor.CollapseShapeOp(ir.RankedTensorType.get(shape, ety), v,
                                              _reassoc(groups)).result

            def pad_high(v: Any, shape: list[int], high: list[int], ety: Any) -> Any:
                if not any(high):
                    return v
                zero = arith.ConstantOp(ety, ir.FloatAttr.get(ety, 0.0)).result
                op = tensor.PadOp(
                    ir.RankedTensorType.get([n + h for n, h in zip(shape, high, strict=True)], ety), v, [],
                    [], ir.DenseI64ArrayAttr.get([0] * len(shape)),
                    ir.DenseI64ArrayAttr.get(high),
                )
                block = op.regions[0].blocks.append(*([ir.IndexType.get()] * len(shape)))
                with ir.InsertionPoint(block):
                    tensor.YieldOp(zero)
                return op.result

            # Channels padded with zeros to a power of two, so that the 4*cp channels after space
            # to depth fill whole vector blocks (3 -> 4: 16 channels). With 12, the data-tiled
            # input was packed to 16 anyway, and the dispatch that zero-filled those 4 channels
            # ran one workgroup per pixel (13225 for ResNet's 230x230 input: 0.27 ms).
            cp = 1 << (c - 1).bit_length()
            with ir.InsertionPoint(g), g.location:
                xc = pad_high(x, [hp, wp, c], [0, 0, cp - c], et)
                x5 = expand(xc, [h2, 2, w2, 2, cp], [[0, 1], [2, 3], [4]], et)
                x5 = transpose(x5, [h2, 2, w2, 2, cp], [0, 2, 1, 3, 4], et)
                xs2d = collapse(x5, [h2, w2, 4 * cp], [[0], [1], [2, 3, 4]], et)
                padded = pad_high(w, [kh, kw, c, f], [2 * kh2 - kh, 2 * kw2 - kw, cp - c, 0], wt)
                w6 = expand(padded, [kh2, 2, kw2, 2, cp, f], [[0, 1], [2, 3], [4], [5]], wt)
                w6 = transpose(w6, [kh2, 2, kw2, 2, cp, f], [0, 2, 1, 3, 4, 5], wt)
                w4 = collapse(w6, [kh2, kw2, 4 * cp, f], [[0], [1], [2, 3, 4], [5]], wt)
                d = [ir.AffineDimExpr.get(i) for i in range(6)]
                new = g.clone(ir.InsertionPoint(g))
                new.operands[0] = xs2d
                new.operands[1] = w4
                new.attributes["indexing_maps"] = ir.ArrayAttr.get([
                    ir.AffineMapAttr.get(ir.AffineMap.get(6, 0, r)) for r in (
                        [d[0] + d[3], d[1] + d[4], d[5]], [d[3], d[4], d[5], d[2]],
                        [d[0], d[1], d[2]],
                    )
                ])
            g.results[0].replace_all_uses_with(new.results[0])
            g.erase()
            done += 1
    return done


def conv1x1_to_matmul(module: Any) -> int:
    """Rewrite every static channels-last 1x1 convolution (any stride) as a strided slice and a
    2-D matmul (see the module docstring); return the count."""
    from iree.compiler import ir
    from iree.compiler.dialects import arith, linalg, tensor

    ctx = module.context
    done = 0
    with ctx, ir.Location.unknown(ctx):
        for g, (mx, mw, mo) in _mul_adds(module, reductions=1):
            if [_dim(e) for e in mo.results] != [0, 1, 2]:
                continue
            wdims = [_dim(e) for e in mw.results]
            if wdims not in ([2, 3], [3, 2]) or len(mx.results) != 3 or _dim(mx.results[2]) != 3:
                continue
            lh, lw = _linear(mx.results[0], 4), _linear(mx.results[1], 4)
            if lh is None or lw is None:
                continue
            (ch, h0), (cw, w0) = lh, lw
            if h0 or w0 or ch[1:] != [0, 0, 0] or cw[0] != 0 or cw[2:] != [0, 0]:
                continue
            sh, sw = ch[0], cw[1]
            x, w, init = g.operands
            xs, os_ = static_shape(x), static_shape(init)
            if xs is None or os_ is None or static_shape(w) is None or sh < 1 or sw < 1:
                continue
            oh, ow, f = os_
            c = xs[2]
            et = ir.RankedTensorType(x.type).element_type
            wt = ir.RankedTensorType(w.type).element_type
            ot = ir.RankedTensorType(init.type).element_type
            with ir.InsertionPoint(g), g.location:
                if (sh, sw) != (1, 1) or xs[:2] != [oh, ow]:
                    x = tensor.ExtractSliceOp(
                        ir.RankedTensorType.get([oh, ow, c], et), x, [], [], [],
                        ir.DenseI64ArrayAttr.get([0, 0, 0]), ir.DenseI64ArrayAttr.get([oh, ow, c]),
                        ir.DenseI64ArrayAttr.get([sh, sw, 1]),
                    ).result
                lhs = tensor.CollapseShapeOp(ir.RankedTensorType.get([oh * ow, c], et), x,
                                             _reassoc([[0, 1], [2]])).result
                acc = tensor.CollapseShapeOp(ir.RankedTensorType.get([oh * ow, f], ot), init,
                                             _reassoc([[0, 1], [2]])).result
                d = [ir.AffineDimExpr.get(i) for i in range(3)]
                w_map = [d[1], d[2]] if wdims == [2, 3] else [d[2], d[1]]
                mm = linalg.GenericOp(
                    [ir.RankedTensorType.get([oh * ow, f], ot)], [lhs, w], [acc],
                    ir.ArrayAttr.get([ir.AffineMapAttr.get(ir.AffineMap.get(3, 0, r))
                                      for r in ([d[0], d[2]], w_map, [d[0], d[1]])]),
                    ir.ArrayAttr.get([ir.Attribute.parse(a)
                                      for a in (PARALLEL, PARALLEL, REDUCTION)]),
                )
                block = mm.regions[0].blocks.append(et, wt, ot)
                with ir.InsertionPoint(block):
                    prod = arith.MulFOp(block.arguments[0], block.arguments[1]).result
                    linalg.YieldOp([arith.AddFOp(block.arguments[2], prod).result])
                y = tensor.ExpandShapeOp(ir.RankedTensorType(init.type), mm.result,
                                         _reassoc([[0, 1], [2]]), [],
                                         ir.DenseI64ArrayAttr.get(os_)).result
            g.results[0].replace_all_uses_with(y)
            g.erase()
            done += 1
    return done
