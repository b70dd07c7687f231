"""``argreduce.max`` / ``argreduce.min``: a reduce of a values operand and its integer indices
(JAX's ``argmax`` / ``argmin``, a two-operand HLO reduce); one declaration, see
:mod:`pyprecision.ir.opdef`.

The HLO reduce has two results (the extreme values and their indices); an IR instruction has
one, so the lowering emits the op twice on the same operands, once for the indices and once
with ``values`` for the values (decision L21). The step is JAX's comparator, element by element
in index order from the init pair ``(a, ia)``, with ``(b, ib)`` the next element:

* the value: ``a`` if ``a > b`` (``<`` for min) or ``a`` is NaN, else ``b``;
* the index: ``ia`` if the value picked ``a``, or ``a == b`` and ``ia < ib``, else ``ib``.

So a NaN wins over every number (the first NaN's index), equal values keep the lower index. The
values are compared as they are in their own dtype (exact in any dtype); the index result is
an integer that no pass casts. The fold itself is the HLO evaluator's reduce (``ev.num.
arg_reduce``, :mod:`pyprecision.emulate.ir.reduce`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyprecision.ir.dtypes import FLOAT_DTYPES, INTEGER_DTYPES, DType
from pyprecision.ir.instructions import Instruction, Operand
from pyprecision.ir.opdef import Flag, Ints, Opnd, Punct, Val, register
from pyprecision.ir.rules import RuleViolation, need, same_class, shape_text
from pyprecision.ir.values import ScalarValue, Value

if TYPE_CHECKING:  # pragma: no cover
    from pyprecision.ir.core import Function

__all__ = ["ARG_REDUCE_KINDS", "ArgReduceOp"]

#: max: argmax (the greatest value wins); min: argmin
ARG_REDUCE_KINDS = ("max", "min")


def _is_scalar(v: Operand) -> bool:
    return isinstance(v, ScalarValue) or v.shape == (1,)


@register
class ArgReduceOp(Instruction):
    """``%r = argreduce.KIND %x, %idx, INIT, INDEX_INIT dims=[...] [values] : T`` — folds ``dims``
    of the pairs (``x``, ``idx``) away with JAX's argmax (KIND max) or argmin (min) comparator,
    from the pair (INIT, INDEX_INIT), in index order; the result is the indices of the winners
    (an integer value shaped like ``x`` without ``dims``), or with ``values`` the winning values."""

    opname = "argreduce"
    WORDS = {f"argreduce.{k}": {"kind": k} for k in ARG_REDUCE_KINDS}
    WORD_PREFIX = "argreduce."
    SYNTAX = (Val("data"), Punct(","), Val("indices"), Punct(","), Opnd("init"), Punct(","),
              Opnd("index_init"), Ints("dims", "dims"), Flag("values", "values"))

    def __init__(self, kind: str, data: Value, indices: Value, init: Operand, index_init: Operand,
                 dims: Any, result: Value, values: bool = False):
        if kind not in ARG_REDUCE_KINDS:
            raise ValueError(f"unknown argreduce kind {kind!r}")
        self.kind, self.dims, self.values = kind, tuple(int(d) for d in dims), bool(values)
        super().__init__([data, indices, init, index_init], result)

    def word(self) -> str:
        """``argreduce.KIND``."""
        return f"argreduce.{self.kind}"

    @property
    def data(self) -> Operand:
        """The values compared."""
        return self._operands[0]

    @property
    def indices(self) -> Operand:
        """The index of each value (an integer value shaped like ``data``)."""
        return self._operands[1]

    @property
    def init(self) -> Operand:
        """The initial value (a [1] value or an immediate)."""
        return self._operands[2]

    @property
    def index_init(self) -> Operand:
        """The initial index (a [1] integer value or an immediate)."""
        return self._operands[3]

    @property
    def allowed_dtypes(self) -> tuple[DType, ...]:
        """The values result may take any dtype of its class; the indices stay integers."""
        r = self.result
        return FLOAT_DTYPES if r is not None and r.dtype.is_float else INTEGER_DTYPES

    @property
    def can_mutate_dst_ty(self) -> bool:
        """Only a float values result may be retyped (spec 002 gate 8); indices never."""
        return self.values and self.result is not None and self.result.dtype.is_float

    def check(self, f: Function) -> None:
        """Values and indices are values of one shape, the indices and their init integers, the
        inits scalars; dims increasing operand dimensions; the result is the operand without them
        ([1] when nothing is left), of the values' class (``values``) or the indices' dtype."""
        d, idx, init, iinit, r = self.data, self.indices, self.init, self.index_init, self.result
        assert r is not None
        need(isinstance(d, Value) and isinstance(idx, Value), "the values and indices must be values")
        need(idx.dtype.is_integer and iinit.dtype.is_integer, "the indices must be integers")
        if idx.shape != d.shape:
            raise RuleViolation(f"indices {shape_text(idx)} are not shaped like the values "
                                f"{shape_text(d)}")
        need(_is_scalar(init) and _is_scalar(iinit), "the init values must be scalars")
        need(same_class(init.dtype, d.dtype), "the init value must be of the values' class")
        if self.values:
            need(same_class(d.dtype, r.dtype), "the values result keeps the values' class")
            need(d.dtype.is_float or d.dtype is r.dtype, "integer values keep their dtype")
        else:
            need(r.dtype is idx.dtype, "the indices result has the indices' dtype")
        if list(self.dims) != sorted(set(self.dims)) or any(
            not 0 <= k < len(d.shape) for k in self.dims
        ):
            raise RuleViolation(f"dims {list(self.dims)} must be increasing operand dimensions")
        kept = [s for i, s in enumerate(d.shape) if i not in self.dims] or [1]
        if list(r.shape) != kept:
            raise RuleViolation(f"result shape {shape_text(r)} != reduced shape {kept}")

    def evaluate(self, ev: Any) -> Any:
        """The HLO evaluator's sequential reduce with the comparator (``ev.num.arg_reduce``),
        then the result dtype."""
        r = self.result
        assert r is not None
        values, indices = ev.num.arg_reduce(
            self.kind, self.dims, ev.operand(self.data), ev.operand(self.indices),
            ev.operand(self.init).reshape(()), ev.operand(self.index_init).reshape(()))
        if self.values:  # the init may be of another dtype: then round what won
            src = self.data.dtype if self.init.dtype is self.data.dtype else None
            return ev.num.convert(values.reshape(r.shape), src, r.dtype)
        return ev.num.convert(indices.reshape(r.shape), self.indices.dtype, r.dtype)
