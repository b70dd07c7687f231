"""SSA data of the loop-level IR: values (``Value``) with their use lists (``Use``) and immediate
scalars (``ScalarValue``). Memory tensors and their access views live in ``tensors.py``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

from pyprecision.ir.dtypes import DType, as_dtype

if TYPE_CHECKING:  # pragma: no cover
    from pyprecision.ir.instructions import Instruction

__all__ = ["ScalarValue", "Use", "Value"]


class _DTypeAttr:
    """A ``dtype`` attribute that coerces what is assigned (a DType, a name/alias, a numpy dtype)."""

    def __get__(self, obj: Any, owner: Any = None) -> DType:
        return obj._dtype

    def __set__(self, obj: Any, value: Any) -> None:
        obj._dtype = as_dtype(value)


class Use(NamedTuple):
    """One operand slot: ``user.operands[index]`` is the used value."""

    user: Instruction
    index: int  # type: ignore[assignment]  # shadows tuple.index on purpose: the operand slot


def _exclusions(except_: Any) -> set[int]:
    if except_ is None:
        return set()
    if isinstance(except_, (list, tuple, set, frozenset)):
        return {id(x) for x in except_}
    return {id(except_)}


class Value:
    """An SSA value: the result of exactly one instruction (``owner``), with a use list.

    It also answers the tensor-like questions the passes ask of an instruction's ``dst``: ``tensor`` is
    the value itself, ``n_loads`` is its number of uses, ``mutateTensorTy`` retypes it.
    """

    is_reinterpreted = False
    is_const = False
    is_input = is_output = is_input_or_output = False
    is_input = is_output = is_input_or_output = False

    dtype = _DTypeAttr()

    def __init__(self, name: str, dtype: Any, shape: Iterable[int]):
        self.name = name
        self.dtype = dtype
        self.shape: tuple[int, ...] = tuple(int(s) for s in shape)
        self.owner: Instruction | None = None
        self._uses: dict[Use, None] = {}

    def __repr__(self) -> str:
        return f"%{self.name}"

    # -- use lists ---------------------------------------------------------------------------
    @property
    def uses(self) -> list[Use]:
        """Every operand slot that reads this value, in the order the uses were created."""
        return list(self._uses)

    @property
    def users(self) -> list[Instruction]:
        """The distinct instructions that use this value, in use order."""
        return list(dict.fromkeys(u.user for u in self._uses))

    @property
    def n_loads(self) -> int:
        """Number of uses (the passes' ``dst.tensor.n_loads``)."""
        return len(self._uses)

    @property
    def has_single_user(self) -> bool:
        """Exactly one distinct instruction uses this value."""
        return len(self.users) == 1

    @property
    def single_def_single_use(self) -> bool:
        """SSA values have one definition; true when there is also exactly one use."""
        return len(self._uses) == 1

    @property
    def tensor(self) -> Value:
        """The value itself (an instruction's ``dst.tensor``)."""
        return self

    @property
    def size_in_bytes(self) -> int:
        """Bytes the value would occupy in memory at its dtype."""
        return math.prod(self.shape) * self.dtype.itemsize

    def mutate_tensor_ty(self, dtype: Any) -> None:
        """Retype this value in place (no conversion; the defining op now rounds to ``dtype``)."""
        self.dtype = as_dtype(dtype)


    def replace_all_uses_with(self, new: Any) -> int:
        """Make every use read ``new`` (a Value or an instruction with a result). Returns the count."""
        return self.replace_all_uses_with_except(new, None)

    def replace_all_uses_with_except(self, new: Any, except_: Any) -> int:
        """Like replace_all_uses_with, but users in ``except_`` (an instruction or a collection of
        instructions) keep reading this value — the GOTCHA of spec 000 §2. Returns the count."""
        new_v = _as_value(new)
        if new_v is self:
            return 0
        skip = _exclusions(except_)
        n = 0
        for use in list(self._uses):
            if id(use.user) in skip:
                continue
            use.user.set_operand(use.index, new_v)
            n += 1
        return n



def _as_value(x: Any) -> Value:
    if isinstance(x, Value):
        return x
    res = getattr(x, "result", None)
    if isinstance(res, Value):
        return res
    raise TypeError(f"expected a Value or an instruction with a result, got {x!r}")


class ScalarValue:
    """An immediate scalar operand (``float32 0.5``). ``value`` is a Python float or int; the element
    is that number rounded to ``dtype`` (mutate_fp32 may retype a scalar in place)."""

    is_reinterpreted = False
    dtype = _DTypeAttr()

    def __init__(self, value: float, dtype: Any):
        self.dtype = dtype
        self.value: float | int = float(value) if self.dtype.is_float else int(value)

    shape: tuple[int, ...] = ()

    def __repr__(self) -> str:
        return f"ScalarValue({self.value!r}, {self.dtype})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ScalarValue):
            return NotImplemented
        return self.dtype is other.dtype and repr(self.value) == repr(other.value)

    def __hash__(self) -> int:
        return hash((self.dtype, repr(self.value)))

    def mutate_tensor_ty(self, dtype: Any) -> None:
        """Retype the scalar in place."""
        self.dtype = as_dtype(dtype)

