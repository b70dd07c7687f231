"""How far a dump is from the emulation, and how far it may be: the distance distribution of one
output (median / p99 / max ULP, relative L2 in units of the format's precision) and the tolerance
that applies to it, chosen by the classes of the ops upstream of it (docs/decisions/verify.md V21).

The op classes: the bits of casts, PE dots, add/sub/mul/div, compares and data movement are what
the project emulates, so an output computed from those alone is compared **exactly**. A device
computes transcendentals (exp, log, tanh, erf, rsqrt, ...) with its own approximations, so an
output with one upstream gets the **transcendental tolerance** (``TRANSCENDENTAL_RTOL`` by
default, scaled by the output's size; overridable; ``exact=True`` turns it off).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from pyprecision.kernel import sq_sums
from pyprecision.verify.compare import CodeSpace, Comparison

__all__ = ["TRANSCENDENTAL", "TRANSCENDENTAL_MIN_ULP", "TRANSCENDENTAL_RTOL", "Distance",
           "Tolerance", "class_tolerance", "distance", "output_classes", "passing",
           "upstream_transcendentals"]  # fmt: skip

#: HLO opcodes whose result a device computes with its own approximation
TRANSCENDENTAL = frozenset({
    "exponential", "exponential-minus-one", "log", "log-plus-one", "tanh", "logistic", "erf",
    "rsqrt", "sqrt", "cbrt", "sine", "cosine", "tan", "atan2", "power",
})  # fmt: skip
#: the default transcendental tolerance, relative to max(|expected|, RMS of the output): 2^-16
TRANSCENDENTAL_RTOL = 2.0**-16
#: below this many ULP of the output's format an element always passes a transcendental output
TRANSCENDENTAL_MIN_ULP = 2


@dataclass(frozen=True)
class Tolerance:
    """What one output may differ by. An element passes when its codes are equal, both are NaN,
    it is within ``max_ulp``, or (finite values) ``|d - e| <= atol + rtol * |e| + srtol * max(|e|,
    rms)`` where ``rms`` is the RMS of the expected output (``srtol``: the scaled relative
    tolerance of transcendental outputs). A NaN against a number never passes."""

    max_ulp: int = 0
    rtol: float = 0.0
    atol: float = 0.0
    srtol: float = 0.0
    why: str = "exact"

    @property
    def exact(self) -> bool:
        """Nothing but equal codes (and NaN against NaN) passes."""
        return self.max_ulp == 0 and self.rtol == 0 and self.atol == 0 and self.srtol == 0

    def describe(self) -> str:
        """The tolerance in words, e.g. ``transcendental (tanh): 2 ULP or 1.53e-05 x max(|expected|,
        RMS)``; ``bit-exact`` for an exact one."""
        if self.exact:
            return "bit-exact"
        parts = []
        if self.max_ulp:
            parts.append(f"{self.max_ulp} ULP")
        if self.rtol:
            parts.append(f"rtol {self.rtol:g}")
        if self.atol:
            parts.append(f"atol {self.atol:g}")
        if self.srtol:
            parts.append(f"{self.srtol:.3g} x max(|expected|, RMS)")
        return f"{self.why}: " + (" or ".join(parts) if parts else "bit-exact")

    def to_json(self) -> dict[str, Any]:
        """Every field."""
        return {"class": self.why, "max_ulp": self.max_ulp, "rtol": self.rtol, "atol": self.atol,
                "scaled_rtol": self.srtol}


def _finite_values(cmp: Comparison, space: CodeSpace) -> tuple[np.ndarray, np.ndarray]:
    e = np.asarray(space.values(cmp.expected), np.float64)
    d = np.asarray(space.values(cmp.dumped), np.float64)
    return e, d


def passing(cmp: Comparison, space: CodeSpace, tol: Tolerance) -> np.ndarray:
    """Per element: does it pass ``tol`` (see :class:`Tolerance`)?"""
    ok = cmp.equal.copy()
    if space.kind == "float":
        both_nan = space.is_nan(cmp.expected) & space.is_nan(cmp.dumped)
        ok |= both_nan
    if tol.exact:
        return ok
    ok |= ~cmp.unbounded & (cmp.ulp <= tol.max_ulp)
    if tol.rtol or tol.atol or tol.srtol:
        e, d = _finite_values(cmp, space)
        fin = np.isfinite(e) & np.isfinite(d)
        ef = np.where(fin, e, 0.0)
        rms = math.sqrt(float(np.mean(ef * ef))) if ef.size else 0.0
        with np.errstate(invalid="ignore", over="ignore"):
            room = tol.atol + tol.rtol * np.abs(ef) + tol.srtol * np.maximum(np.abs(ef), rms)
            ok |= fin & (np.abs(np.where(fin, d, 0.0) - ef) <= room)
    return ok & ~cmp.unbounded


def _epsilon(space: CodeSpace) -> float | None:
    """The format's precision: the distance from 1 to the next value (None for integers)."""
    if space.kind != "float":
        return None
    mant = space.fmt.mantissa_bits if space.fmt is not None else 23
    return 2.0**-mant


@dataclass(frozen=True)
class Distance:
    """The distance distribution of one output. ULP figures are over the bounded elements
    (matches count as 0); ``rel_l2_eps`` is ``||d - e|| / ||e||`` over the finite pairs in units
    of the format's precision (None for integers or an all-zero output); ``unbounded`` counts NaN
    against a number, ``nonfinite`` the other pairs left out of the L2 (inf against a value)."""

    median_ulp: float
    p99_ulp: float
    max_ulp: int
    unbounded: int
    nonfinite: int
    rel_l2: float | None
    rel_l2_eps: float | None

    def key(self) -> tuple[float, float, float]:
        """What the diagnosis ranks by: NaN-against-number first, then relative L2, then median."""
        l2 = self.rel_l2_eps if self.rel_l2_eps is not None else float(self.max_ulp)
        return (float(self.unbounded + self.nonfinite), l2, self.median_ulp)

    def describe(self) -> str:
        """``median 0 / p99 3 / max 12 ULP, relative L2 4.1 eps`` (plus NaN-vs-number counts)."""
        text = f"median {self.median_ulp:g} / p99 {self.p99_ulp:g} / max {self.max_ulp} ULP"
        if self.rel_l2_eps is not None:
            text += f", relative L2 {self.rel_l2_eps:.3g} eps"
        if self.unbounded:
            text += f", {self.unbounded} NaN against a number"
        if self.nonfinite:
            text += f", {self.nonfinite} inf against another value"
        return text

    def to_json(self) -> dict[str, Any]:
        """Every field (``rel_l2_eps`` null when undefined)."""
        return {"median_ulp": self.median_ulp, "p99_ulp": self.p99_ulp, "max_ulp": self.max_ulp,
                "unbounded": self.unbounded, "nonfinite": self.nonfinite,
                "rel_l2": self.rel_l2, "rel_l2_eps": self.rel_l2_eps}


def distance(cmp: Comparison, space: CodeSpace) -> Distance:
    """The distance distribution of one comparison."""
    bounded = cmp.ulp[~cmp.unbounded]
    if bounded.size:
        median = float(np.median(bounded))
        p99 = float(np.quantile(bounded, 0.99, method="inverted_cdf"))  # smallest x, CDF(x) >= .99
        top = int(bounded.max())
    else:
        median = p99 = 0.0
        top = 0
    unb = int(np.count_nonzero(cmp.unbounded))
    rel = rel_eps = None
    nonfinite = 0
    eps = _epsilon(space)
    if eps is not None:
        e, d = _finite_values(cmp, space)
        both_nan = np.isnan(e) & np.isnan(d)
        fin = np.isfinite(e) & np.isfinite(d)
        same_inf = np.isinf(e) & (e == d)
        nonfinite = int(np.count_nonzero(~fin & ~both_nan & ~same_inf & ~cmp.unbounded))
        # float64 sums in an order fixed by the size, not BLAS's (decision TU23)
        ref2, diff2 = sq_sums(np.where(fin, d, 0.0), np.where(fin, e, 0.0))
        if ref2 > 0:
            rel = float(np.sqrt(diff2) / np.sqrt(ref2))
            rel_eps = rel / eps
        elif diff2 == 0:
            rel, rel_eps = 0.0, 0.0
    return Distance(median, p99, top, unb, nonfinite, rel, rel_eps)


def output_classes(module: Any) -> list[list[str]]:
    """Per output leaf of the HLO ``module``'s ENTRY (in result order): the transcendental opcodes
    upstream of it (called computations included), sorted; empty for an exact output."""
    entry = module.entry
    root = entry.root
    leaves = _leaves(root)
    memo: dict[int, frozenset[str]] = {}
    return [sorted(_upstream(inst, memo)) for inst in leaves]


def upstream_transcendentals(inst: Any, memo: dict[int, frozenset[str]] | None = None
                             ) -> list[str]:
    """The transcendental opcodes at or upstream of one HLO instruction, sorted."""
    return sorted(_upstream(inst, {} if memo is None else memo))


def class_tolerance(ops: list[str], *, max_ulp: int = 0, rtol: float = 0.0, atol: float = 0.0,
                    exact: bool = False,
                    transcendental_rtol: float = TRANSCENDENTAL_RTOL) -> Tolerance:
    """The tolerance of a value with the transcendental opcodes ``ops`` upstream: with
    ``exact`` bit-exact; else the given ``max_ulp``/``rtol``/``atol``, plus, when ``ops`` is not
    empty, the transcendental allowance (``transcendental_rtol`` x max(|e|, RMS), and
    ``TRANSCENDENTAL_MIN_ULP`` ULP)."""
    if exact:
        return Tolerance(why="exact")
    given = bool(max_ulp or rtol or atol)
    if ops and transcendental_rtol > 0:
        return Tolerance(max(max_ulp, TRANSCENDENTAL_MIN_ULP), rtol, atol, transcendental_rtol,
                         why=f"transcendental ({', '.join(ops)})")
    return Tolerance(max_ulp, rtol, atol, why="given" if given else "exact")


def _leaves(inst: Any) -> list[Any]:
    if inst.opcode == "tuple":
        return [leaf for op in inst.operands for leaf in _leaves(op)]
    if inst.shape.is_tuple:
        return [inst] * _count_leaves(inst.shape)
    return [inst]


def _count_leaves(shape: Any) -> int:
    return sum(_count_leaves(s) for s in shape.tuple_shapes) if shape.is_tuple else 1


def _called(inst: Any, memo: dict[int, frozenset[str]]) -> frozenset[str]:
    found: set[str] = set()
    for comp in inst.called_computations:
        for sub in comp.instructions:
            if sub.opcode in TRANSCENDENTAL:
                found.add(sub.opcode)
            found |= _called(sub, memo)
    return frozenset(found)


def _upstream(inst: Any, memo: dict[int, frozenset[str]]) -> frozenset[str]:
    """Iterative walk (deep graphs must not hit the recursion limit)."""
    stack = [inst]
    while stack:
        top = stack[-1]
        if id(top) in memo:
            stack.pop()
            continue
        pending = [op for op in top.operands if id(op) not in memo]
        if pending:
            stack.extend(pending)
            continue
        stack.pop()
        own = {top.opcode} if top.opcode in TRANSCENDENTAL else set()
        acc = frozenset(own).union(_called(top, memo), *(memo[id(op)] for op in top.operands))
        memo[id(top)] = acc
    return memo[id(inst)]
