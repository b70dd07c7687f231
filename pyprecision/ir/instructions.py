"""The instruction base class (NeuronInst); compute ops live in compute.py, memory ops in memory.py.

Uses and tensor accesses are registered when an instruction is created (as in LLVM): a detached
instruction already appears in its operands' use lists, which is why ``replaceAllUsesWithExcept`` must
name a freshly built cast (spec 000 §2 GOTCHA). ``eraseFromParent`` unlinks and drops them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from pyprecision.errors import EmulationError
from pyprecision.ir.dtypes import DTYPES, DType, as_dtype
from pyprecision.ir.opdef import Piece, View, Views, field_names
from pyprecision.ir.tensors import NeuronAP
from pyprecision.ir.values import ScalarValue, Use, Value

if TYPE_CHECKING:  # pragma: no cover
    from pyprecision.ir.core import Block, Function

__all__ = [
    "BINARY_KINDS",
    "COMPARE_KINDS",
    "FLOAT_ONLY_UNARY",
    "INT_ONLY_UNARY",
    "INT_ONLY_BINARY",
    "UNARY_KINDS",
    "Instruction",
    "NeuronInst",
    "Operand",
    "operand_values",
]

Operand = Value | ScalarValue

UNARY_KINDS = (
    "cast",
    "bitcast",
    "copy",
    "neg",
    "abs",
    "exp",
    "log",
    "sqrt",
    "rsqrt",
    "reciprocal",
    "relu",
    "tanh",
    "sigmoid",
    "square",
    "floor",
    "ceil",
    "round_ne",
    "sign",
    "sin",
    "cos",
    "erf",
    "log1p",
    "expm1",
    "cbrt",
    "not",
    "satinf",
)
FLOAT_ONLY_UNARY = (
    "exp", "log", "sqrt", "rsqrt", "reciprocal", "tanh", "sigmoid", "floor", "ceil", "round_ne",
    "sin", "cos", "erf", "log1p", "expm1", "cbrt", "satinf",
)  # fmt: skip
INT_ONLY_UNARY = ("not",)
COMPARE_KINDS = ("cmp_eq", "cmp_ne", "cmp_lt", "cmp_le", "cmp_gt", "cmp_ge")
INT_ONLY_BINARY = ("and", "or", "xor", "shl", "shr_a", "shr_l")
BINARY_KINDS = (
    ("add", "sub", "mul", "div", "max", "min", "pow", "rem", "atan2") + INT_ONLY_BINARY + COMPARE_KINDS
)


class Instruction:
    """Base of every instruction (the spec's NeuronInst).

    ``operands`` are SSA values and immediate scalars; ``result`` is the SSA value produced (or None);
    ``aps`` are the NeuronAP views on memory tensors this instruction reads or writes.
    """

    opname = "?"
    #: the dtypes this instruction's dst may be retyped to (see ``allowed_dtypes``)
    _allowed: tuple[DType, ...] = tuple(DTYPES.values())
    #: the declaration (see :mod:`pyprecision.ir.opdef`): keywords, text syntax, result or not
    WORDS: ClassVar[dict[str, dict[str, Any]]] = {}
    SYNTAX: ClassVar[tuple[Piece, ...]] = ()
    HAS_RESULT: ClassVar[bool] = True

    def __init__(
        self,
        operands: Sequence[Operand] = (),
        result: Value | None = None,
        aps: Sequence[NeuronAP] = (),
    ):
        self._operands: list[Operand] = []
        self.result = result
        self.aps: list[NeuronAP] = list(aps)
        self.parent: Block | None = None
        self.prev: Instruction | None = None
        self.next: Instruction | None = None
        self.id: int | None = None
        self.dl: Any = None
        if result is not None:
            result.owner = self
        for op in operands:
            self._append_operand(op)
        for ap in self.aps:
            ap.owner = self
            ap._attach()

    def __repr__(self) -> str:
        from pyprecision.ir.printer import instruction_to_text

        try:
            return f"<{instruction_to_text(self)}>"
        except Exception:  # noqa: BLE001 - repr must never fail
            return f"<{type(self).__name__}>"

    # -- operands and uses ------------------------------------------------------------------------
    @property
    def operands(self) -> list[Operand]:
        """The SSA and scalar operands, in order (a copy; use set_operand / replaceUseOfWith to change)."""
        return list(self._operands)

    def _append_operand(self, op: Operand) -> None:
        if not isinstance(op, (Value, ScalarValue)):
            raise TypeError(f"operand must be a Value or ScalarValue, got {op!r}")
        self._operands.append(op)
        if isinstance(op, Value):
            op._uses[Use(self, len(self._operands) - 1)] = None

    def set_operand(self, index: int, new: Any) -> None:
        """Replace operand ``index`` by ``new`` (a Value, a ScalarValue or an instruction with a result)."""
        if not isinstance(new, (Value, ScalarValue)):
            new = getattr(new, "result", None)
            if not isinstance(new, Value):
                raise TypeError(
                    "set_operand needs a Value, a ScalarValue or an instruction with a result"
                )
        old = self._operands[index]
        if isinstance(old, Value):
            old._uses.pop(Use(self, index), None)
        self._operands[index] = new
        if isinstance(new, Value):
            new._uses[Use(self, index)] = None

    def replace_use_of_with(self, old: Any, new: Any) -> int:
        """Replace every operand that is ``old`` (a Value, or an instruction meaning its result) by
        ``new``. Returns the number of slots changed."""
        old_v = old.result if isinstance(old, Instruction) else old
        n = 0
        for i, op in enumerate(self._operands):
            if op is old_v:
                self.set_operand(i, new)
                n += 1
        return n


    def drop_all_references(self) -> None:
        """Remove this instruction from every use list and tensor access list."""
        for i, op in enumerate(self._operands):
            if isinstance(op, Value):
                op._uses.pop(Use(self, i), None)
        for ap in self.aps:
            ap._detach()

    # -- results -----------------------------------------------------------------------------------
    @property
    def dst(self) -> Any:
        """What this instruction writes: its result value, or for memory writers the destination view."""
        return self.result

    @property
    def dtype(self) -> DType | None:
        """The dtype of ``dst`` (None when the instruction writes nothing single)."""
        d = self.dst
        return None if d is None else d.dtype

    @dtype.setter
    def dtype(self, value: Any) -> None:
        self.mutate_dst_ty(value)

    def mutate_dst_ty(self, dtype: Any) -> None:
        """Retype ``dst`` in place (a result value, or the tensor a store writes)."""
        d = self.dst
        if d is None:
            raise TypeError(f"{type(self).__name__} has no dst to retype")
        d.tensor.mutate_tensor_ty(as_dtype(dtype))


    @property
    def shape(self) -> tuple[int, ...] | None:
        """Shape of ``dst``."""
        d = self.dst
        return None if d is None else d.shape

    def replace_all_uses_with(self, new: Any) -> int:
        """Replace every use of this instruction's result by ``new``."""
        assert self.result is not None, "instruction has no result"
        return self.result.replace_all_uses_with(new)

    def replace_all_uses_with_except(self, new: Any, except_: Any) -> int:
        """Replace every use of this instruction's result by ``new`` except in ``except_``."""
        assert self.result is not None, "instruction has no result"
        return self.result.replace_all_uses_with_except(new, except_)


    # -- properties the passes read ---------------------------------------------------------------
    @property
    def has_single_user(self) -> bool:
        """The result is used by exactly one instruction."""
        return self.result is not None and self.result.has_single_user

    @property
    def reinterpret(self) -> Any:
        """Truthy when the instruction reinterprets bits (a view's dtype, or True for bitcast)."""
        for ap in self.aps:
            if ap.reinterpret is not None:
                return ap.reinterpret
        return None

    @property
    def is_reinterpreted(self) -> bool:
        """``bool(reinterpret)``."""
        return bool(self.reinterpret)

    @property
    def is_cast(self) -> bool:
        """A UnaryOp of kind ``cast``."""
        return False

    @property
    def allowed_dtypes(self) -> tuple[DType, ...]:
        """The dtypes ``dst`` may legally take."""
        return self._allowed

    @property
    def can_mutate_dst_ty(self) -> bool:
        """May DTypeMutator retype ``dst``? A property, never a method (spec 002 gate 8)."""
        return False

    @property
    def has_side_effects(self) -> bool:
        """Writes memory (never removed by DCE merely for having no uses)."""
        return any(ap.role == "store" for ap in self.aps)

    # -- placement ---------------------------------------------------------------------------------
    @property
    def function(self) -> Function | None:
        """The function whose block holds this instruction (None when detached)."""
        return None if self.parent is None else self.parent.parent

    def insert_before(self, other: Instruction) -> Instruction:
        """Insert this (detached) instruction just before ``other``."""
        assert other.parent is not None, "insert_before: anchor is not in a block"
        other.parent._link_before(self, other)
        return self

    def insert_after(self, other: Instruction) -> Instruction:
        """Insert this (detached) instruction just after ``other``."""
        assert other.parent is not None, "insert_after: anchor is not in a block"
        other.parent._link_after(self, other)
        return self

    def remove_from_parent(self) -> Instruction:
        """Unlink from the block, keeping operands and accesses registered."""
        if self.parent is not None:
            self.parent._unlink(self)
        return self

    def erase_from_parent(self) -> None:
        """Unlink and drop every reference. The result must have no remaining uses."""
        if self.result is not None and self.result._uses:
            users = ", ".join(sorted({type(u.user).__name__ for u in self.result._uses}))
            raise ValueError(f"cannot erase %{self.result.name}: still used by {users}")
        self.remove_from_parent()
        self.drop_all_references()


    def allocate_id(self) -> int:
        """Give this instruction a fresh id from its function (or a global counter when detached)."""
        f = self.function
        self.id = f.allocate_id() if f is not None else _next_global_id()
        return self.id


    def update_debug_loc(self, dl: Any) -> None:
        """Carry a source debug location (not printed)."""
        self.dl = dl


    # -- the declaration: fields, construction, copying, rule, semantics -------------------------
    def word(self) -> str:
        """The keyword this instruction is printed with."""
        return self.opname

    def fields(self) -> dict[str, Any]:
        """The constructor fields its keyword fixes and its syntax names, read off this instruction."""
        names = list(self.WORDS.get(self.word(), {})) + field_names(self.SYNTAX)
        return {name: getattr(self, name) for name in names}

    @classmethod
    def from_fields(cls, result: Value | None, **fields: Any) -> Instruction:
        """Build from declared fields (what the parser and ``clone`` call)."""
        if cls.HAS_RESULT:
            return cls(result=result, **fields)
        return cls(**fields)

    def clone(self, name: str | None = None) -> Instruction:
        """A detached copy reading the same operands and tensors; its result gets ``name`` (default:
        a fresh name from the function, or the old name + ``.clone``). Immediate scalars are copied
        (mutate_fp32 retypes them in place, which must not reach the original); views are fresh."""
        fields = self.fields()
        for piece in self.SYNTAX:
            if isinstance(piece, View):
                fields[piece.field] = _fresh_view(fields[piece.field], piece.role)
            elif isinstance(piece, Views):
                fields[piece.field] = [_fresh_view(a, piece.role) for a in fields[piece.field]]
        for key, value in fields.items():
            if isinstance(value, ScalarValue):
                fields[key] = ScalarValue(value.value, value.dtype)
        return self._after_clone(type(self).from_fields(self._clone_result(name), **fields))

    def _after_clone(self, other: Instruction) -> Instruction:
        """Copy state the syntax does not name (none by default)."""
        return other

    def check(self, f: Function) -> None:
        """The dtype and shape rule of this kind; raises ``RuleViolation`` (none by default)."""

    def evaluate(self, ev: Any) -> Any:
        """This instruction's semantics on NumPy data (``ev``: the emulator's frame); returns the
        result array, or None for an instruction that only writes memory."""
        raise EmulationError(f"cannot emulate {type(self).__name__}")

    def _op(self, i: int) -> Operand:
        """Operand ``i`` for a clone: values shared, immediate scalars copied."""
        op = self._operands[i]
        return ScalarValue(op.value, op.dtype) if isinstance(op, ScalarValue) else op

    def _clone_result(self, name: str | None) -> Value | None:
        if self.result is None:
            return None
        if name is None:
            f = self.function
            name = f.unique_name(self.result.name) if f is not None else self.result.name + ".clone"
        return Value(name, self.result.dtype, self.result.shape)


def _fresh_view(ap: NeuronAP, role: str) -> NeuronAP:
    return NeuronAP(ap.tensor, ap.reinterpret, role)


NeuronInst = Instruction

_GLOBAL_ID = [1 << 40]


def _next_global_id() -> int:
    _GLOBAL_ID[0] += 1
    return _GLOBAL_ID[0]


def operand_values(ops: Iterable[Operand]) -> list[Value]:
    """The SSA values among ``ops``."""
    return [o for o in ops if isinstance(o, Value)]
