"""IRBuilder: creates instructions with fresh unique names and inserts them at an insertion point."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pyprecision.ir.compute import BinaryOp, SelectOp, TensorContractOp, UnaryOp
from pyprecision.ir.core import Block, Function
from pyprecision.ir.dtypes import DType, as_dtype
from pyprecision.ir.instructions import Instruction, Operand
from pyprecision.ir.memory import AffineLoad, AffineStore
from pyprecision.ir.tensors import NeuronAP, Tensor
from pyprecision.ir.values import Value

__all__ = ["IRBuilder", "cast_name", "make_cast"]


def cast_name(value: Value, dtype: DType) -> str:
    """The readable base name of a cast result: ``<dtype>.<source name>`` (spec 000 §2:
    ``dtype2str(self.dtype) + tensor.name_str``)."""
    return f"{dtype.name}.{value.name}"


def make_cast(
    value: Value, dtype: Any, name: str | None = None, function: Function | None = None
) -> UnaryOp:
    """A detached ``cast`` of ``value`` to ``dtype`` (same shape). Its use of ``value`` is registered at
    once. The result name is made unique in ``function`` (default: the function defining ``value``)."""
    dt = as_dtype(dtype)
    f = function or (value.owner.function if value.owner is not None else None)
    base = name or cast_name(value, dt)
    res_name = f.unique_name(base) if f is not None else base
    return UnaryOp("cast", value, Value(res_name, dt, value.shape))


class IRBuilder:
    """Builds instructions at an insertion point.

    ``IRBuilder(function=f)`` has no insertion point yet: ``cast_to`` then inserts right after the
    value's definition; the other ``create_*`` methods need a point set with ``set_insertion_point_*``,
    ``front_under_bb`` or ``at_end``.
    """

    def __init__(
        self,
        function: Function | None = None,
        *,
        before: Instruction | None = None,
        after: Instruction | None = None,
        block: Block | None = None,
    ):
        self.function = function
        self._block: Block | None = None
        self._anchor: Instruction | None = None
        self._mode = "none"  # "before" | "after" | "end" | "front"
        if before is not None:
            self.set_insertion_point_before(before)
        elif after is not None:
            self.set_insertion_point_after(after)
        elif block is not None:
            self.set_insertion_point_to_end(block)

    # -- insertion point -------------------------------------------------------------------------
    def set_insertion_point_before(self, inst: Instruction) -> None:
        """New instructions go just before ``inst`` (in creation order)."""
        self._block, self._anchor, self._mode = inst.parent, inst, "before"
        self.function = self.function or inst.function

    def set_insertion_point_after(self, inst: Instruction) -> None:
        """New instructions go after ``inst`` (each one after the previous insertion)."""
        self._block, self._anchor, self._mode = inst.parent, inst, "after"
        self.function = self.function or inst.function

    def set_insertion_point_to_end(self, block: Block) -> None:
        """New instructions are appended to ``block``."""
        self._block, self._anchor, self._mode = block, None, "end"
        self.function = self.function or block.parent

    def set_insertion_point_to_front(self, block: Block) -> None:
        """New instructions go at the front of ``block`` (in creation order)."""
        self._block, self._anchor, self._mode = block, None, "front"
        self.function = self.function or block.parent

    @contextmanager
    def front_under_bb(self, block: Block | None = None) -> Iterator[IRBuilder]:
        """Context manager: insert at the front of ``block`` (default: the function's entry block),
        restoring the previous insertion point afterwards."""
        saved = (self._block, self._anchor, self._mode)
        if block is None:
            assert self.function is not None, "front_under_bb needs a block or a function"
            block = self.function.entry
        self.set_insertion_point_to_front(block)
        try:
            yield self
        finally:
            self._block, self._anchor, self._mode = saved

    def insert(self, inst: Instruction) -> Instruction:
        """Insert a detached instruction at the insertion point and advance the point past it."""
        if self._mode == "before":
            inst.insert_before(self._anchor)  # type: ignore[arg-type]
        elif self._mode == "after":
            inst.insert_after(self._anchor)  # type: ignore[arg-type]
            self._anchor = inst
        elif self._mode == "end":
            self._block.append(inst)  # type: ignore[union-attr]
        elif self._mode == "front":
            if self._anchor is None:
                self._block.push_front(inst)  # type: ignore[union-attr]
            else:
                inst.insert_after(self._anchor)
            self._anchor = inst
        else:
            raise ValueError("IRBuilder has no insertion point")
        return inst

    # -- naming ------------------------------------------------------------------------------------
    def _name(self, base: str | None) -> str:
        if self.function is None:
            return base or "v"
        return self.function.unique_name(base)

    def _value(self, base: str | None, dtype: Any, shape: Any) -> Value:
        return Value(self._name(base), as_dtype(dtype), shape)

    # -- creation --------------------------------------------------------------------------------
    def make_cast(self, value: Value, dtype: Any, name: str | None = None) -> UnaryOp:
        """A detached cast (not inserted); see module-level make_cast."""
        return make_cast(value, dtype, name, self.function)

    def cast_to(self, value: Any, dtype: Any, name: str | None = None) -> UnaryOp:
        """Create and insert ``cast value to dtype``: at the insertion point if set, else right after the
        value's definition. Returns the cast (its ``result`` is the new value). Users of ``value`` are
        NOT rewired — do that with ``value.replaceAllUsesWithExcept(cast, cast)``."""
        v: Value = value.result if isinstance(value, Instruction) else value  # type: ignore[assignment]
        cast = self.make_cast(v, dtype, name)
        if self._mode == "none":
            if v.owner is None or v.owner.parent is None:
                raise ValueError(
                    "cast_to: no insertion point and the value has no placed definition"
                )
            cast.insert_after(v.owner)
        else:
            self.insert(cast)
        return cast

    def create_unary(
        self, kind: str, data: Value, dtype: Any = None, name: str | None = None
    ) -> UnaryOp:
        """Insert ``%r = kind data`` (dtype defaults to data's)."""
        return self.insert(UnaryOp(kind, data, self._value(name, dtype or data.dtype, data.shape)))  # type: ignore[return-value]

    def create_binary(
        self, kind: str, lhs: Operand, rhs: Operand, dtype: Any = None, name: str | None = None
    ) -> BinaryOp:
        """Insert ``%r = kind lhs, rhs`` (shape from the Value operand; dtype defaults to its dtype,
        uint8 for comparisons)."""
        v = lhs if isinstance(lhs, Value) else rhs
        if dtype is None:
            dtype = "uint8" if kind.startswith("cmp_") else v.dtype
        return self.insert(BinaryOp(kind, lhs, rhs, self._value(name, dtype, v.shape)))  # type: ignore[return-value]

    def create_select(
        self, pred: Value, a: Operand, b: Operand, dtype: Any = None, name: str | None = None
    ) -> SelectOp:
        """Insert ``%r = select pred, a, b``."""
        v = a if isinstance(a, Value) else b if isinstance(b, Value) else pred
        return self.insert(SelectOp(pred, a, b, self._value(name, dtype or v.dtype, pred.shape)))  # type: ignore[return-value]

    def create_matmul(
        self, stationary: Value, moving: Value, dtype: Any = "float32", name: str | None = None
    ) -> TensorContractOp:
        """Insert ``%r = matmul stationary, moving`` with r shape [M, N]."""
        shape = (stationary.shape[1], moving.shape[1])
        return self.insert(TensorContractOp(stationary, moving, self._value(name, dtype, shape)))  # type: ignore[return-value]

    def create_load(
        self,
        tensor: Tensor | NeuronAP,
        dtype: Any = None,
        name: str | None = None,
        cls: type = AffineLoad,
        **kw: Any,
    ) -> Instruction:
        """Insert a load (AffineLoad by default; pass ``cls=SBAtomLoad`` and
        ``has_partition_broadcast=True, shape=...`` for a broadcast load)."""
        t = tensor.tensor
        view_dt = tensor.dtype if isinstance(tensor, NeuronAP) else t.dtype
        shape = kw.pop("shape", t.shape)
        res = self._value(name, dtype or view_dt, shape)
        return self.insert(cls(tensor, res, **kw))

    def create_store(self, value: Operand, tensor: Tensor | NeuronAP) -> AffineStore:
        """Insert ``affine_store value, @tensor``."""
        return self.insert(AffineStore(value, tensor))  # type: ignore[return-value]
