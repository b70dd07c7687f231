"""Cast elimination: absorb the casts AutoCast and DTypeMutator left redundant (docs/passes.md).

Three rules, applied in one forward walk plus a backward dead sweep:

1. identity   ``%c = cast %x : T`` with ``x : T``            → uses of %c read %x; %c erased.
2. cast-of-cast ``%c = cast (%b = cast %a : B) : C`` where A→B is exact (every A value is a B value)
   → ``%c = cast %a : C`` (repeated while the new source is again an exact cast).
3. dead      a cast whose result has no use is erased (recursively through cast chains).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, TypeGuard

from pyprecision.ir import (
    DType,
    Function,
    Instruction,
    Rewriter,
    UnaryOp,
    Value,
    bfloat16,
    float8_e5m2,
    float8e4,
    float8e4m3fn,
    float16,
    float32,
    float32r,
)
from pyprecision.passes.base import FunctionPass
from pyprecision.passes.provenance import ProvenanceLog, note
from pyprecision.passes.statistics import register_stats

#: A → the float dtypes that hold every A value exactly (range, precision, subnormals, inf/NaN).
_FLOAT_WIDENING: dict[DType, frozenset[DType]] = {
    float8e4: frozenset({float16, bfloat16, float32r, float32}),
    float8e4m3fn: frozenset({float16, bfloat16, float32r, float32}),
    float8_e5m2: frozenset({float16, bfloat16, float32r, float32}),
    float16: frozenset({float32r, float32}),
    bfloat16: frozenset({float32r, float32}),
    float32r: frozenset({float32}),
    float32: frozenset(),
}


def is_exact_cast(src: DType, dst: DType) -> bool:
    """Every value of ``src`` converts to ``dst`` without rounding, saturation or wrap-around."""
    if src is dst:
        return True
    if src.is_float:
        return dst in _FLOAT_WIDENING.get(src, frozenset())
    if dst.is_integer:  # integer → wider integer that holds the whole range
        if src.kind == dst.kind:
            return dst.bits > src.bits
        return src.kind == "uint" and dst.kind == "int" and dst.bits > src.bits
    # integer → float: exact when the float's significand covers every integer of src
    significand = {float16: 11, bfloat16: 8, float32r: 11, float32: 24}.get(dst)
    if significand is None:
        return False
    magnitude_bits = src.bits - 1 if src.kind == "int" else src.bits
    return magnitude_bits <= significand


def _is_cast(inst: object) -> TypeGuard[UnaryOp]:
    return isinstance(inst, UnaryOp) and inst.is_cast


@dataclass(frozen=True)
class CastElimination(FunctionPass):
    """cast(x : T → T) → x; cast(cast(a → B exact) → C) → cast(a → C); unused cast → erased.

    ``provenance``: None, or a list every rule application is appended to (:mod:`.provenance`).
    """

    name: ClassVar[str] = "cast-elimination"
    identity_casts: ClassVar[int] = 0
    folded_cast_chains: ClassVar[int] = 0
    dead_casts: ClassVar[int] = 0
    provenance: ProvenanceLog | None = field(default=None, compare=False, repr=False)

    def run_on_function(self, f: Function) -> bool:
        """Forward walk (rules 2 then 1 on each cast), then the dead sweep (rule 3)."""
        changed = False
        rw = Rewriter()
        casts = [i for i in f.instructions() if _is_cast(i)]
        for cast in casts:
            if cast.parent is None:
                continue
            changed |= self.fold_cast_of_cast(cast, rw)
            changed |= self.remove_identity(cast, rw)
        dead = self.erase_dead_casts([c for c in casts if c.parent is not None], rw)
        return changed or dead > 0

    def erase_dead_casts(self, casts: list[UnaryOp], rewriter: Rewriter | None = None) -> int:
        """Rule 3: erase unused casts, then any cast feeding them that became unused."""
        rw = rewriter or Rewriter()
        work = [c for c in casts if not c.result._uses]  # type: ignore[union-attr]
        erased = 0
        while work:
            cast = work.pop()
            if cast.parent is None or cast.result._uses:  # type: ignore[union-attr]
                continue
            feeder = _producer(cast)
            rw.erase(cast)
            note(self.provenance, cast, self.name, "rule 3", "dead cast erased")
            erased += 1
            if _is_cast(feeder) and feeder.parent is not None:
                work.append(feeder)
        CastElimination.dead_casts += erased
        return erased

    def fold_cast_of_cast(self, cast: UnaryOp, rewriter: Rewriter | None = None) -> bool:
        """Rule 2: read through exact inner casts."""
        rw = rewriter or Rewriter()
        changed = False
        inner = _producer(cast)
        while _is_cast(inner) and inner.dtype is not None \
                and is_exact_cast(inner.data.dtype, inner.dtype):
            if self.provenance is not None:
                note(self.provenance, cast, self.name, "rule 2", f"cast-of-cast read through the "
                     f"exact inner cast %{inner.result.name}"  # type: ignore[union-attr]
                     f" ({inner.data.dtype.name} → {inner.dtype.name})")
            rw.set_operand(cast, 0, inner.data)
            CastElimination.folded_cast_chains += 1
            changed = True
            inner = _producer(cast)
        return changed

    def remove_identity(self, cast: UnaryOp, rewriter: Rewriter | None = None) -> bool:
        """Rule 1: a cast to its source's own dtype."""
        if cast.data.dtype is not cast.dtype:
            return False
        (rewriter or Rewriter()).replace_and_erase(cast, cast.data)
        if self.provenance is not None and cast.dtype is not None:
            note(self.provenance, cast, self.name, "rule 1",
                 f"identity cast removed ({cast.dtype.name} → {cast.dtype.name})")
        CastElimination.identity_casts += 1
        return True


def _producer(cast: UnaryOp) -> Instruction | None:
    data = cast.data
    return data.owner if isinstance(data, Value) else None


register_stats(CastElimination, {
    "identity_casts": "Number of casts removed because source and result dtype are equal",
    "folded_cast_chains": "Number of cast-of-cast pairs read through an exact inner cast",
    "dead_casts": "Number of unused casts erased",
})
