"""dot / dot_general and convolution → TensorContractOps on the PE (decision L4).

The PE computes r[m, n] = Σ_k stationary[k, m] · moving[k, n]: both operands carry the contraction
on their leading (partition) axis. An HLO operand is first put in (batch, ·, ·) order by a lossless
``transpose`` (a DMA relayout); when its contracting dimensions come *after* its free dimensions
(``x[M, K]`` as a stationary, ``k[N, K]`` as a moving), the tensorizer turns it on the PE — a
matmult-based transpose ``matmul(x, I)`` — which is where mode ``matmult``'s fp16 transpose dtype and
the fast-relayout tokens apply. Batch dimensions become one TensorContractOp per batch element.
Convolution is lowered by im2col: the shifted input windows are concatenated along the contraction
and multiplied by the reshaped kernel in one contraction; a grouped convolution (feature or batch
groups) is one contraction per group, the group a batch dimension (decision L18).
"""

from __future__ import annotations

import math
import re

from pyprecision import ir
from pyprecision.hlo import HloInstruction
from pyprecision.lower.context import LV, LoweringContext, ir_shape
from pyprecision.lower.elementwise import Handler, dims_of, result_dtype
from pyprecision.lower.windows import positions, window_of

__all__ = ["DOTS"]


def _dims(inst: HloInstruction, key: str) -> list[int]:
    return inst.attr_ints(key) or []


def _relayout(ctx: LoweringContext, x: ir.Value, perm: list[int], base: str) -> ir.Value:
    """A lossless transpose (skipped when ``perm`` is the identity)."""
    if perm == sorted(perm):
        return x
    out = ctx.value(base, x.dtype, tuple(x.shape[p] for p in perm))
    ctx.emit(ir.TransposeOp(x, perm, out), role="aux")
    return out


def _reshape(ctx: LoweringContext, x: ir.Value, shape: tuple[int, ...], base: str) -> ir.Value:
    if x.shape == shape:
        return x
    out = ctx.value(base, x.dtype, shape)
    ctx.emit(ir.ReshapeOp(x, out), role="aux")
    return out


def _pe_transpose(ctx: LoweringContext, x: ir.Value, base: str) -> ir.Value:
    """x [A, B] → x^T [B, A] on the PE: ``matmul(x, I_A)``."""
    ident = ctx.identity(x.shape[0], x.dtype)
    out = ctx.value(base, x.dtype, (x.shape[1], x.shape[0]))
    ctx.emit(ir.TensorContractOp(x, ident, out), role="pe-transpose")
    return out


def _operand(
    ctx: LoweringContext, x: ir.Value, batch: list[int], contract: list[int], base: str
) -> tuple[ir.Value, bool]:
    """``x`` as [B, K, F] when its contraction already leads its free dims (no PE transpose needed),
    else as [B, F, K]; returns the 3-D value and whether the 2-D slices need a PE transpose."""
    rank = len(x.shape)
    free = [d for d in range(rank) if d not in batch and d not in contract]
    k_first = not free or not contract or max(contract) < min(free)
    order = batch + (contract + free if k_first else free + contract)
    y = _relayout(ctx, x, order, f"{base}.relayout")
    size = lambda ds: math.prod(x.shape[d] for d in ds)  # noqa: E731
    b, k, f = size(batch), size(contract), size(free)
    two = (k, f) if k_first else (f, k)
    y = _reshape(ctx, y, (b, *two) if batch else two, f"{base}.{'3d' if batch else '2d'}")
    return y, not k_first


def _batch_slice(ctx: LoweringContext, y: ir.Value, i: int, base: str) -> ir.Value:
    if len(y.shape) == 2:
        return y
    b, p, q = y.shape
    if b == 1:
        return _reshape(ctx, y, (p, q), f"{base}.2d")
    s = ctx.value(f"{base}.b{i}", y.dtype, (1, p, q))
    ctx.emit(ir.SliceOp(y, (i, 0, 0), (i + 1, p, q), (1, 1, 1), s), role="aux")
    return _reshape(ctx, s, (p, q), f"{base}.b{i}.2d")


def contract(
    ctx: LoweringContext,
    lhs: ir.Value,
    rhs: ir.Value,
    dims: tuple[list[int], list[int], list[int], list[int]],
    out_dims: tuple[int, ...],
    out_dtype: ir.DType,
    base: str,
) -> ir.Value:
    """The general dot on the PE; returns the value shaped ``out_dims`` (HLO order: batch, lhs
    free, rhs free)."""
    lb, rb, lc, rc = dims
    ls, l_t = _operand(ctx, lhs, lb, lc, f"{base}.lhs")
    rs, r_t = _operand(ctx, rhs, rb, rc, f"{base}.rhs")
    nb = ls.shape[0] if len(ls.shape) == 3 else 1
    results = []
    for i in range(nb):
        a = _batch_slice(ctx, ls, i, f"{base}.lhs")
        c = _batch_slice(ctx, rs, i, f"{base}.rhs")
        stationary = _pe_transpose(ctx, a, f"{base}.lhsT{i if nb > 1 else ''}") if l_t else a
        moving = _pe_transpose(ctx, c, f"{base}.rhsT{i if nb > 1 else ''}") if r_t else c
        m, n = stationary.shape[1], moving.shape[1]
        r = ctx.value(f"{base}.mm{i}" if nb > 1 else f"{base}.mm", out_dtype, (m, n))
        ctx.emit(ir.TensorContractOp(stationary, moving, r), role="pe-matmul")
        results.append(r)
    if nb == 1:
        return _reshape_value(ctx, results[0], out_dims, base)
    parts = [_reshape(ctx, r, (1,) + r.shape, f"{r.name}.3d") for r in results]
    joined = ctx.value(f"{base}.joined", out_dtype, (nb,) + results[0].shape)
    ctx.emit(ir.ConcatenateOp(parts, 0, joined), role="aux")
    return _reshape_value(ctx, joined, out_dims, base)


def _reshape_value(ctx: LoweringContext, x: ir.Value, dims: tuple[int, ...], base: str) -> ir.Value:
    """The result in the HLO shape (the last instruction of the op's lowering; the matmul itself
    when the shapes agree)."""
    shape = ir_shape(dims)
    if x.shape == shape:
        return x
    out = ctx.value(base, x.dtype, shape)
    ctx.emit(ir.ReshapeOp(x, out))
    return out


def _dot(ctx: LoweringContext, inst: HloInstruction, ops: list[LV]) -> LV:
    lhs, rhs = ops
    rdt = result_dtype(ctx, inst)
    if not (lhs.dtype.is_float and rhs.dtype.is_float and rdt.is_float):
        raise ctx.refuse(inst, "dot:integer", "an integer dot")
    dims = (_dims(inst, "lhs_batch_dims"), _dims(inst, "rhs_batch_dims"),
            _dims(inst, "lhs_contracting_dims"), _dims(inst, "rhs_contracting_dims"))  # fmt: skip
    if not any(dims) and len(lhs.shape) == len(rhs.shape) == 2:
        dims = ([], [], [1], [0])  # a dot printed without dimension numbers
    return contract(ctx, lhs, rhs, dims, dims_of(inst), rdt, inst.name)


_LABELS = re.compile(r"^([0-9a-z]+)_([0-9a-z]+)->([0-9a-z]+)$")


def _groups(inst: HloInstruction) -> tuple[int, int]:
    """(feature_group_count, batch_group_count); the HLO verifier has checked that they divide
    the features and the batch and that at most one exceeds 1 (decision L18)."""
    return (int(inst.attr("feature_group_count") or 1), int(inst.attr("batch_group_count") or 1))


def _im2col(ctx: LoweringContext, inst: HloInstruction, xin: ir.Value, size: list[int],
            stride: list[int], rhs_dil: list[int], out_sp: list[int], fgc: int,
            bgc: int) -> ir.Value:  # fmt: skip
    """The window columns: one strided slice of ``xin`` [b, spatial..., i] per kernel position,
    concatenated along the contraction (position-major, feature-minor: the evaluator's order).
    Ungrouped: [M, P·Ci]; grouped: [G, M_g, P·Ci_g], one contraction per group (decision L18)."""
    nsp, nb, ci = len(size), xin.shape[0], xin.shape[-1]
    m = nb * math.prod(out_sp)
    per = ((m, ci) if fgc == bgc == 1 else (m, fgc, ci // fgc) if fgc > 1
           else (bgc, m // bgc, ci))  # fmt: skip
    windows = []
    for w in positions(size):
        start = [0] + [w[i] * rhs_dil[i] for i in range(nsp)] + [0]
        limit = [nb] + [start[1 + i] + (out_sp[i] - 1) * stride[i] + 1 for i in range(nsp)] + [ci]
        s = ctx.value(f"{inst.name}.win", xin.dtype, tuple([nb] + out_sp + [ci]))
        ctx.emit(ir.SliceOp(xin, start, limit, [1] + stride + [1], s), role="aux")
        windows.append(_reshape(ctx, s, per, f"{s.name}.{len(per)}d"))
    cols = windows[0]
    if len(windows) > 1:
        shape = per[:-1] + (per[-1] * len(windows),)
        cols = ctx.value(f"{inst.name}.im2col", xin.dtype, shape)
        ctx.emit(ir.ConcatenateOp(windows, len(per) - 1, cols), role="aux")
    return _relayout(ctx, cols, [1, 0, 2], f"{inst.name}.groups") if fgc > 1 else cols


def _convolution(ctx: LoweringContext, inst: HloInstruction, ops: list[LV]) -> LV:
    """im2col: out[b, o..., f] = Σ_{w..., i} x[b, o·s + w·d - p, i] · k[w..., i, f]; a grouped
    convolution is one such contraction per group, a batched TensorContractOp (decision L18)."""
    x, k = ops
    labels = _LABELS.match(inst.attr("dim_labels") or "")
    if labels is None:
        raise ctx.error(inst, f"cannot read dim_labels={inst.attr('dim_labels')}")
    lab_in, lab_k, lab_out = labels.groups()
    nsp = len(lab_in) - 2
    size, stride, rhs_dil, lhs_dil, pads = window_of(ctx, inst, nsp)
    sp_in = [lab_in.index(str(i)) for i in range(nsp)]
    sp_k = [lab_k.index(str(i)) for i in range(nsp)]
    # input as [b, spatial..., i] (lossless), padded/dilated
    xin = _relayout(ctx, x, [lab_in.index("b")] + sp_in + [lab_in.index("f")], f"{inst.name}.in")
    nb = xin.shape[0]
    if any(p != (0, 0, 0) for p in pads) or any(d != 1 for d in lhs_dil):
        lo = [0] + [p[0] for p in pads] + [0]
        hi = [0] + [p[1] for p in pads] + [0]
        interior = [0] + [d - 1 for d in lhs_dil] + [0]
        shape = [s + a + b + g * max(s - 1, 0) for s, a, b, g in
                 zip(xin.shape, lo, hi, interior, strict=True)]  # fmt: skip
        padded = ctx.value(f"{inst.name}.pad", xin.dtype, tuple(shape))
        ctx.emit(ir.PadOp(xin, ir.ScalarValue(0.0, xin.dtype), lo, hi, interior, padded), role="aux")
        xin = padded
    out_sp = [(xin.shape[1 + i] - (size[i] - 1) * rhs_dil[i] - 1) // stride[i] + 1 for i in range(nsp)]
    cik, co = k.shape[lab_k.index("i")], k.shape[lab_k.index("o")]
    fgc, bgc = _groups(inst)
    cols = _im2col(ctx, inst, xin, size, stride, rhs_dil, out_sp, fgc, bgc)
    kk = _relayout(ctx, k, sp_k + [lab_k.index("i"), lab_k.index("o")], f"{inst.name}.kernel")
    rdt, npos = result_dtype(ctx, inst), math.prod(size)
    if fgc == bgc == 1:
        kk = _reshape(ctx, kk, (npos * cik, co), f"{inst.name}.kernel.2d")
        flat = contract(ctx, cols, kk, ([], [], [1], [0]), (cols.shape[0], co), rdt,
                        f"{inst.name}.mm")  # fmt: skip
    else:  # kernel [P, Ci_g, G, Co_g] → [G, P·Ci_g, Co_g]; output feature g·Co_g + j
        g = fgc * bgc
        kk = _reshape(ctx, kk, (npos, cik, g, co // g), f"{inst.name}.kernel.4d")
        kk = _relayout(ctx, kk, [2, 0, 1, 3], f"{inst.name}.kernel.groups")
        kk = _reshape(ctx, kk, (g, npos * cik, co // g), f"{inst.name}.kernel.3d")
        per = contract(ctx, cols, kk, ([0], [0], [2], [1]), (g, cols.shape[1], co // g), rdt,
                       f"{inst.name}.mm")  # fmt: skip
        flat = _relayout(ctx, per, [1, 0, 2], f"{inst.name}.ungroup")
    y = _reshape(ctx, flat, tuple([nb // bgc] + out_sp + [co]), f"{inst.name}.nhwc")
    order = ["b"] + [str(i) for i in range(nsp)] + ["f"]
    perm = [order.index(c) for c in lab_out]
    out = ctx.value(inst.name, y.dtype, dims_of(inst))
    ctx.emit(ir.TransposeOp(y, perm, out))
    return out


DOTS: dict[str, Handler] = {"dot": _dot, "convolution": _convolution}
