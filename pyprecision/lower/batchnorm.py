"""batch-norm-training / -inference / -grad → reductions and elementwise IR ops, in the op's element
type (f32 after BatchNormTrainingUpcast), the way XLA's BatchNormExpander spells them out: the mean
as a sum divided by the count, a two-pass variance, ``rsqrt(var + epsilon)`` (decision L9)."""

from __future__ import annotations

import math

import numpy as np

from pyprecision import ir
from pyprecision.hlo import HloInstruction
from pyprecision.lower.context import LV, LoweringContext
from pyprecision.lower.elementwise import Handler, result_dtype

__all__ = ["BATCH_NORM"]


class _Emit:
    """Small builder for one batch-norm expansion (every step in ``dt``, shaped like ``x``)."""

    def __init__(self, ctx: LoweringContext, inst: HloInstruction, x: ir.Value, dt: ir.DType):
        eps, fi = inst.attr("epsilon"), inst.attr_ints("feature_index")
        if eps is None or not fi or not 0 <= fi[0] < len(x.shape):
            raise ctx.error(inst, "needs epsilon= and an in-range feature_index=")
        self.ctx, self.inst, self.dt, self.shape = ctx, inst, dt, x.shape
        self.fi = fi[0]
        self.eps = float(np.float32(float(eps)))
        self.axes = [d for d in range(len(x.shape)) if d != self.fi]
        self.count = math.prod(x.shape[d] for d in self.axes)

    def _v(self, tag: str, shape: tuple[int, ...]) -> ir.Value:
        return self.ctx.value(f"{self.inst.name}.{tag}", self.dt, shape)

    def op(self, kind: str, a: ir.Value, b: ir.Value | ir.ScalarValue, tag: str) -> ir.Value:
        shape = a.shape
        out = self._v(tag, shape)
        self.ctx.emit(ir.BinaryOp(kind, a, b, out), role="aux")
        return out

    def scalar(self, v: float) -> ir.ScalarValue:
        return ir.ScalarValue(v, self.dt)

    def per_feature(self, v: ir.Value, tag: str) -> ir.Value:
        out = self._v(tag, self.shape)
        self.ctx.emit(ir.BroadcastOp(v, (self.fi,), out), role="aux")
        return out

    def mean(self, x: ir.Value, tag: str) -> ir.Value:
        s = self._v(f"{tag}.sum", (self.shape[self.fi],))
        self.ctx.emit(ir.ReduceOp("add", x, self.scalar(0.0), self.axes, s), role="aux")
        return self.op("div", s, self.scalar(float(self.count)), tag)

    def inv_std(self, var_b: ir.Value) -> ir.Value:
        ve = self.op("add", var_b, self.scalar(self.eps), "var_eps")
        out = self._v("rsqrt", self.shape)
        self.ctx.emit(ir.UnaryOp("rsqrt", ve, out), role="aux")
        return out


def _training(ctx: LoweringContext, inst: HloInstruction, ops: list[LV]) -> LV:
    x, scale, offset = ops
    e = _Emit(ctx, inst, x, x.dtype)
    mean = e.mean(x, "mean")
    d = e.op("sub", x, e.per_feature(mean, "mean.b"), "centered")
    var = e.mean(e.op("mul", d, d, "sq"), "var")
    y = e.op("mul", e.op("mul", d, e.inv_std(e.per_feature(var, "var.b")), "xhat"),
             e.per_feature(scale, "scale.b"), "scaled")  # fmt: skip
    return (e.op("add", y, e.per_feature(offset, "offset.b"), "y"), mean, var)


def _inference(ctx: LoweringContext, inst: HloInstruction, ops: list[LV]) -> LV:
    x, scale, offset, mean, var = ops
    e = _Emit(ctx, inst, x, result_dtype(ctx, inst))
    d = e.op("sub", x, e.per_feature(mean, "mean.b"), "centered")
    y = e.op("mul", e.op("mul", d, e.inv_std(e.per_feature(var, "var.b")), "xhat"),
             e.per_feature(scale, "scale.b"), "scaled")  # fmt: skip
    return e.op("add", y, e.per_feature(offset, "offset.b"), "y")


def _grad(ctx: LoweringContext, inst: HloInstruction, ops: list[LV]) -> LV:
    x, scale, mean, var, dy = ops
    e = _Emit(ctx, inst, x, x.dtype)
    inv = e.inv_std(e.per_feature(var, "var.b"))
    xhat = e.op("mul", e.op("sub", x, e.per_feature(mean, "mean.b"), "centered"), inv, "xhat")
    n = e.scalar(float(e.count))
    d_off = e._v("d_offset", (e.shape[e.fi],))
    ctx.emit(ir.ReduceOp("add", dy, e.scalar(0.0), e.axes, d_off), role="aux")
    d_scale = e._v("d_scale", (e.shape[e.fi],))
    ctx.emit(ir.ReduceOp("add", e.op("mul", dy, xhat, "dy_xhat"), e.scalar(0.0), e.axes, d_scale),
             role="aux")  # fmt: skip
    t = e.op("sub", dy, e.op("div", e.per_feature(d_off, "d_offset.b"), n, "d_offset.n"), "t1")
    t = e.op("sub", t, e.op("div", e.op("mul", xhat, e.per_feature(d_scale, "d_scale.b"), "t2"),
                            n, "t2.n"), "t3")  # fmt: skip
    dx = e.op("mul", e.op("mul", e.per_feature(scale, "scale.b"), inv, "scale_inv"), t, "dx")
    return (dx, d_scale, d_off)


BATCH_NORM: dict[str, Handler] = {
    "batch-norm-training": _training,
    "batch-norm-inference": _inference,
    "batch-norm-grad": _grad,
}
