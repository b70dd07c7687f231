"""Window ops the HLO lowering builds besides the strided slices of reduce-window:
``select_and_scatter.SEL`` (the gradient of a max / min pool); declared once, see
:mod:`pyprecision.ir.opdef`.

``ir`` cannot import ``hlo`` or ``emulate`` (docs/architecture.md), so the window shape rule is
written here; the selection and scatter themselves are the HLO evaluator's, reached through
``ev.num.select_and_scatter`` (decision L19)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from pyprecision.ir.dtypes import float32
from pyprecision.ir.instructions import Instruction, Operand
from pyprecision.ir.opdef import Flag, Ints, Opnd, Punct, Val, register
from pyprecision.ir.rules import RuleViolation, need, same_class, shape_text
from pyprecision.ir.shape_ops import _Movement
from pyprecision.ir.values import ScalarValue, Value

if TYPE_CHECKING:  # pragma: no cover
    from pyprecision.ir.core import Function

__all__ = ["SELECT_KINDS", "SelectAndScatterOp", "window_output_shape"]

#: the select comparators: ``select(selected, candidate)`` keeps the selected element when true
#: (``ge``: the first maximum of each window, JAX's max-pool gradient; ``gt``: the last one;
#: ``le`` / ``lt``: the first / last minimum)
SELECT_KINDS = {"ge": np.greater_equal, "gt": np.greater, "le": np.less_equal, "lt": np.less}


def window_output_shape(base: tuple[int, ...], size: tuple[int, ...], stride: tuple[int, ...],
                        pad_lo: tuple[int, ...], pad_hi: tuple[int, ...]) -> tuple[int, ...]:
    """The number of window positions per dimension (XLA's window output shape, no dilation)."""
    out = []
    for b, k, s, lo, hi in zip(base, size, stride, pad_lo, pad_hi, strict=True):
        padded = b + lo + hi
        out.append(0 if padded < k else (padded - k) // s + 1)
    return tuple(out)


@register
class SelectAndScatterOp(Instruction):
    """``%r = select_and_scatter.SEL %x, %src, INIT size=[..] stride=[..] pad_lo=[..]
    pad_hi=[..] [narrow_acc] : T`` — XLA's select-and-scatter with an ``add`` scatter: in each
    window of ``x`` (row-major; padding never selected) the first element is selected and a later
    one replaces it unless ``SEL(selected, candidate)``; every ``src`` element (one per window)
    is added, in row-major order, into a result that starts as INIT everywhere and is shaped
    like ``x``. ``x`` is compared in the dtype it arrives in; the sums accumulate in fp32
    (``narrow_acc``: in the result dtype), like ``scatter.add``."""

    opname = "select_and_scatter"
    WORDS = {f"select_and_scatter.{k}": {"select": k} for k in SELECT_KINDS}
    WORD_PREFIX = "select_and_scatter."
    SYNTAX = (Val("data"), Punct(","), Val("source"), Punct(","), Opnd("init"),
              Ints("size", "size"), Ints("stride", "stride"), Ints("pad_lo", "pad_lo"),
              Ints("pad_hi", "pad_hi"), Flag("narrow_acc", "narrow_acc"))

    def __init__(self, select: str, data: Value, source: Value, init: Operand, size: Any,
                 stride: Any, pad_lo: Any, pad_hi: Any, result: Value, narrow_acc: bool = False):
        if select not in SELECT_KINDS:
            raise ValueError(f"unknown select_and_scatter kind {select!r}")
        self.select, self.narrow_acc = select, bool(narrow_acc)
        self.size = tuple(int(v) for v in size)
        self.stride = tuple(int(v) for v in stride)
        self.pad_lo = tuple(int(v) for v in pad_lo)
        self.pad_hi = tuple(int(v) for v in pad_hi)
        super().__init__([data, source, init], result)

    def word(self) -> str:
        """``select_and_scatter.SEL``."""
        return f"select_and_scatter.{self.select}"

    @property
    def data(self) -> Operand:
        """The value whose windows are searched (the pooled input)."""
        return self._operands[0]

    @property
    def source(self) -> Operand:
        """The values scattered, one per window (the pool's output gradient)."""
        return self._operands[1]

    @property
    def init(self) -> Operand:
        """The value every result element starts from (a [1] value or an immediate)."""
        return self._operands[2]

    allowed_dtypes = _Movement.allowed_dtypes
    can_mutate_dst_ty = _Movement.can_mutate_dst_ty

    def check(self, f: Function) -> None:
        """Values of one class for source, init and result; one window entry per dimension of x;
        the source has the window output shape; the result is shaped like x."""
        d, src, init, r = self.data, self.source, self.init, self.result
        assert r is not None
        need(isinstance(d, Value) and isinstance(src, Value), "the operand and source must be values")
        need(isinstance(init, ScalarValue) or init.shape == (1,), "the init value must be a scalar")
        need(same_class(src.dtype, r.dtype) and same_class(init.dtype, r.dtype),
             "select_and_scatter keeps the dtype class of its source")
        rank = len(d.shape)
        if not len(self.size) == len(self.stride) == len(self.pad_lo) == len(self.pad_hi) == rank:
            raise RuleViolation(f"size, stride, pad_lo and pad_hi need {rank} entries (the rank of "
                                f"{shape_text(d)})")
        need(all(k >= 1 for k in self.size) and all(s >= 1 for s in self.stride),
             "window sizes and strides must be >= 1")
        want = window_output_shape(d.shape, self.size, self.stride, self.pad_lo, self.pad_hi)
        if src.shape != want:
            raise RuleViolation(f"source {shape_text(src)} != window output shape {list(want)}")
        if r.shape != d.shape:
            raise RuleViolation(f"result shape {shape_text(r)} != operand shape {shape_text(d)}")

    def evaluate(self, ev: Any) -> Any:
        """The HLO evaluator's select-and-scatter: selection on x's values, the adds in the
        accumulation dtype (fp32 for floats unless ``narrow_acc``, else the result dtype)."""
        num, rdt = ev.num, self.result.dtype  # type: ignore[union-attr]
        acc_dt = float32 if rdt.is_float and not self.narrow_acc else rdt
        src = num.convert(ev.operand(self.source), self.source.dtype, acc_dt)
        init = num.convert(ev.operand(self.init).reshape(()), self.init.dtype, acc_dt)
        keep = SELECT_KINDS[self.select]

        def select(accs: list[np.ndarray], vals: list[np.ndarray]) -> list[np.ndarray]:
            return [keep(accs[0], vals[0])]

        def scatter(accs: list[np.ndarray], vals: list[np.ndarray]) -> list[np.ndarray]:
            out = num.binary_values("add", accs[0], vals[0], rdt.is_float)
            return [num.round_to(out, acc_dt).astype(accs[0].dtype)]

        out = num.select_and_scatter(self, ev.operand(self.data), src, init, select, scatter)
        return num.convert(np.asarray(out), acc_dt, rdt)
