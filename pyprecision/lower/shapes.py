"""Data-movement, constant and tuple HLO ops → IR instructions (reductions: :mod:`.reduce`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from pyprecision import ir
from pyprecision.hlo import HloInstruction, typed_attrs
from pyprecision.lower.context import LV, LoweringContext, ir_shape
from pyprecision.lower.elementwise import Handler, dims_of, result_dtype

__all__ = ["SHAPES", "constant_tensor", "parse_padding", "parse_slice"]



def _ints(ctx: LoweringContext, inst: HloInstruction, key: str) -> list[int]:
    v = inst.attr_ints(key)
    if v is None:
        raise ctx.error(inst, f"missing {key}=")
    return v


def parse_slice(raw: str) -> list[tuple[int, int, int]] | None:
    """``{[0:2], [1:5:2]}`` → [(0, 2, 1), (1, 5, 2)]; None when malformed (``typed_attrs``)."""
    try:
        return list(typed_attrs.slices(raw))
    except ValueError:
        return None


def parse_padding(raw: str, rank: int) -> list[tuple[int, int, int]] | None:
    """``0_0x1_1_0`` → [(0, 0, 0), (1, 1, 0)] (low, high, interior); None when malformed."""
    try:
        out = list(typed_attrs.padding(raw))
    except ValueError:
        return None
    return out if len(out) == rank else None


def _emit1(ctx: LoweringContext, inst: HloInstruction, make: Any) -> ir.Value:
    out = ctx.value(inst.name, result_dtype(ctx, inst), dims_of(inst))
    ctx.emit(make(out))
    return out


def _broadcast(ctx: LoweringContext, inst: HloInstruction, ops: list[LV]) -> LV:
    (x,) = ops
    dims = inst.attr_ints("dimensions") or []
    return _emit1(ctx, inst, lambda out: ir.BroadcastOp(x, dims, out))


def _reshape(ctx: LoweringContext, inst: HloInstruction, ops: list[LV]) -> LV:
    (x,) = ops
    return _emit1(ctx, inst, lambda out: ir.ReshapeOp(x, out))


def _transpose(ctx: LoweringContext, inst: HloInstruction, ops: list[LV]) -> LV:
    (x,) = ops
    perm = _ints(ctx, inst, "dimensions")
    return _emit1(ctx, inst, lambda out: ir.TransposeOp(x, perm, out))


def _slice(ctx: LoweringContext, inst: HloInstruction, ops: list[LV]) -> LV:
    (x,) = ops
    spec = parse_slice(inst.attr("slice") or "")
    if spec is None:
        raise ctx.error(inst, f"cannot read slice={inst.attr('slice')}")
    start, limit, strides = zip(*spec, strict=True) if spec else ((), (), ())
    return _emit1(ctx, inst, lambda out: ir.SliceOp(x, start, limit, strides, out))


def _concatenate(ctx: LoweringContext, inst: HloInstruction, ops: list[LV]) -> LV:
    (dim,) = _ints(ctx, inst, "dimensions")
    return _emit1(ctx, inst, lambda out: ir.ConcatenateOp(ops, dim, out))


def _pad(ctx: LoweringContext, inst: HloInstruction, ops: list[LV]) -> LV:
    x, v = ops
    spec = parse_padding(inst.attr("padding") or "", len(dims_of(inst)))
    if spec is None:
        raise ctx.error(inst, f"cannot read padding={inst.attr('padding')}")
    lo, hi, interior = zip(*spec, strict=True)
    return _emit1(ctx, inst, lambda out: ir.PadOp(x, v, lo, hi, interior, out))


def _iota(ctx: LoweringContext, inst: HloInstruction, ops: list[LV]) -> LV:
    (dim,) = _ints(ctx, inst, "iota_dimension")
    return _emit1(ctx, inst, lambda out: ir.IotaOp(dim, out))


def constant_tensor(ctx: LoweringContext, name: str, inst: HloInstruction) -> ir.Tensor:
    """A const tensor holding the constant's literal (a splat when every element is equal)."""
    if inst.elided:
        raise ctx.refuse(inst, "elided-constant", "constant values")
    try:
        arr = inst.literal()
    except ValueError as e:
        raise ctx.error(inst, str(e)) from None
    dt = result_dtype(ctx, inst)
    shape = ir_shape(tuple(arr.shape))
    store = np.asarray(arr).astype(dt.np_dtype).reshape(shape)
    tname = ctx.tensor_name(inst.name)
    flat = store.reshape(-1)
    if flat.size > 1 and _all_equal(flat):
        return ir.SingleValueTensor(tname, shape, dt, _scalar(flat[0], dt))
    if flat.size == 1:
        return ir.SingleValueTensor(tname, shape, dt, _scalar(flat[0], dt))
    return ir.Tensor(tname, shape, dt, "const", store)


def _all_equal(flat: np.ndarray) -> bool:
    bits = flat.view(f"u{flat.dtype.itemsize}") if flat.dtype.kind not in "iub" else flat
    return bool(np.all(bits == bits[0]))


def _scalar(v: Any, dt: ir.DType) -> float | int:
    return float(np.asarray(v).astype(np.float64)) if dt.is_float else int(v)


def _constant(ctx: LoweringContext, inst: HloInstruction, ops: list[LV]) -> LV:
    if inst.shape.is_tuple:
        raise ctx.refuse(inst, "constant:tuple", "tuple constants")
    t = constant_tensor(ctx, inst.name, inst)
    ctx.function.add_tensor(t)
    out = ir.Value(ctx.name(inst.name), t.dtype, t.shape)
    ctx.emit(ir.SBAtomLoad(t, out))
    return out


def _tuple(ctx: LoweringContext, inst: HloInstruction, ops: list[LV]) -> LV:
    return tuple(ops)


def _get_tuple_element(ctx: LoweringContext, inst: HloInstruction, ops: list[LV]) -> LV:
    (t,) = ops
    (i,) = _ints(ctx, inst, "index")
    if not isinstance(t, tuple) or not 0 <= i < len(t):
        raise ctx.error(inst, f"index {i} is not an element of its tuple operand")
    return t[i]


def _passthrough(ctx: LoweringContext, inst: HloInstruction, ops: list[LV]) -> LV:
    return ops[0] if len(ops) == 1 else tuple(ops)


def _token(ctx: LoweringContext, inst: HloInstruction, ops: list[LV]) -> LV:
    return ()


def _zero_id(ctx: LoweringContext, inst: HloInstruction, ops: list[LV]) -> LV:
    """partition-id / replica-id: the lowering emulates one device (0)."""
    t = ir.SingleValueTensor(ctx.tensor_name(inst.name), (1,), ctx.ir_dtype(inst, inst.shape.element_type), 0)
    ctx.function.add_tensor(t)
    out = ir.Value(ctx.name(inst.name), t.dtype, (1,))
    ctx.emit(ir.SBAtomLoad(t, out))
    return out


SHAPES: dict[str, Handler] = {
    "broadcast": _broadcast,
    "reshape": _reshape,
    "bitcast": _reshape,
    "transpose": _transpose,
    "slice": _slice,
    "concatenate": _concatenate,
    "pad": _pad,
    "iota": _iota,
    "constant": _constant,
    "tuple": _tuple,
    "get-tuple-element": _get_tuple_element,
    "opt-barrier": _passthrough,
    "after-all": _token,
    "add-dependency": lambda ctx, inst, ops: ops[0],
    "partition-id": _zero_id,
    "replica-id": _zero_id,
}
