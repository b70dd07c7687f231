"""Which cast policy explains a dump? Try the neighbours of the requested policy and say.

Candidates vary the rounding (rne/rtz/rna), the saturation, the NaN encoding, the fp8 e4 variant
whose codes the dump holds (e4m3fn-as-e4m3, CAST_SEMANTICS.md §7) and a double rounding through a
wider format (fp32 for float64/int inputs, fp32r, bf16, fp16, the other e4 variant). Among the
policies that reproduce the dump bit for bit the one with the fewest changed settings wins; when
none does, the one with the fewest mismatches is reported as the closest. Stochastic rounding is
never a candidate: without the device's random words it cannot be reproduced, only checked for
consistency (every element at one of its input's two neighbours).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from pyprecision.formats import Format, format
from pyprecision.kernel import decode, encode
from pyprecision.verify.compare import is_nan_code
from pyprecision.verify.policy import E4_PAIR, INTERMEDIATES, CastPolicy

__all__ = ["Diagnosis", "candidates", "diagnose", "stochastic_consistent"]

ROUNDINGS = ("rne", "rtz", "rna")
NANS = ("ml_dtypes", "nvidia")
#: At most this many further exact policies (same number of changes) are listed.
MAX_ALTERNATIVES = 8


@dataclass
class Diagnosis:
    """The verdict. ``exact``: the policy reproducing the dump (fewest changes), or None.
    ``closest``: when nothing is exact, the candidate with the fewest mismatches if it beats the
    requested policy. ``stochastic_consistent``: every element lies at one of its input's two
    representable neighbours (what stochastic rounding would produce with *some* random words)."""

    requested: CastPolicy
    exact: CastPolicy | None = None
    alternatives: list[CastPolicy] = field(default_factory=list)
    closest: CastPolicy | None = None
    closest_mismatches: int | None = None
    tried: int = 0
    stochastic_consistent: bool | None = None

    def summary(self) -> str:
        """One sentence for the text report."""
        if self.exact is not None:
            changes = ", ".join(self.exact.changes_from(self.requested))
            return f"the dump is reproduced exactly by {self.exact.describe()} ({changes})"
        if self.closest is not None:
            changes = ", ".join(self.closest.changes_from(self.requested))
            head = (f"no policy among {self.tried} tried explains the dump exactly; closest: "
                    f"{self.closest.describe()} ({changes}) with {self.closest_mismatches} "
                    "mismatches")
        else:
            head = (f"no policy among {self.tried} tried explains the dump exactly or comes closer "
                    "than the requested one")
        return head + "; " + self._stochastic_note()

    def _stochastic_note(self) -> str:
        verdict = ("it IS consistent with stochastic rounding (every element is one of its "
                   "input's two neighbours)" if self.stochastic_consistent else
                   "it is NOT consistent with stochastic rounding either (some element is not "
                   "one of its input's two neighbours)")
        return "stochastic rounding cannot be diagnosed without the device's random words; " + verdict

    def to_json(self) -> dict[str, object]:
        """The diagnosis as JSON (``policy`` null when nothing explains the dump exactly)."""
        return {
            "policy": self.exact.to_json() if self.exact else None,
            "changes": self.exact.changes_from(self.requested) if self.exact else [],
            "description": self.exact.describe() if self.exact else None,
            "alternatives": [p.to_json() for p in self.alternatives],
            "closest": None if self.closest is None else {
                "policy": self.closest.to_json(),
                "changes": self.closest.changes_from(self.requested),
                "mismatches": self.closest_mismatches,
            },
            "candidates_tried": self.tried,
            "stochastic_consistent": self.stochastic_consistent,
            "summary": self.summary(),
        }


def _vias(x: np.ndarray, target: Format) -> list[str | None]:
    out: list[str | None] = [None]
    wide_input = x.dtype == np.float64 or (x.dtype.kind in "iu" and x.dtype.itemsize >= 4)
    for name in INTERMEDIATES:
        if name == "fp32":
            if wide_input:
                out.append(name)
        elif name == E4_PAIR.get(target.name) or _finer(format(name), target):
            out.append(name)
    return out


def _finer(mid: Format, target: Format) -> bool:
    """Whether rounding through ``mid`` first can differ from rounding once: ``mid`` keeps more
    mantissa bits, or as many with a wider exponent range (fp32r before fp16: the subnormals)."""
    if mid.name == target.name:
        return False
    return mid.mantissa_bits > target.mantissa_bits or (
        mid.mantissa_bits == target.mantissa_bits and mid.exponent_bits > target.exponent_bits)


def candidates(requested: CastPolicy, x: np.ndarray) -> list[CastPolicy]:
    """Every deterministic policy the diagnosis tries, fewest changed settings first."""
    target = requested.fmt

    def first(value: object, options: tuple[object, ...]) -> list[object]:
        return ([value] if value in options else []) + [o for o in options if o != value]

    combos = itertools.product(
        first(requested.rounding, ROUNDINGS), first(requested.saturate, (True, False)),
        first(requested.nan, NANS), _vias(x, target), [None, E4_PAIR.get(target.name)])
    seen, out = set(), []
    for rounding, saturate, nan, via, computed_as in combos:
        if (computed_as is not None and target.name not in E4_PAIR) or \
                (computed_as is not None and via == computed_as):
            continue
        p = CastPolicy(target.name, rounding=str(rounding), saturate=bool(saturate), nan=str(nan),
                       via=via, computed_as=computed_as)
        if p == requested or p in seen:
            continue
        seen.add(p)
        out.append(p)
    out.sort(key=lambda p: len(p.changes_from(requested)))  # stable: enumeration order breaks ties
    return out


def _mismatches(codes: np.ndarray, dumped: np.ndarray, f: Format, nan_by_class: bool) -> int:
    diff = codes != dumped
    if nan_by_class and diff.any():
        diff &= ~(is_nan_code(codes, f) & is_nan_code(dumped, f))
    return int(np.count_nonzero(diff))


def diagnose(requested: CastPolicy, x: np.ndarray, dumped: np.ndarray,
             nan_by_class: bool = False) -> Diagnosis:
    """Find the policy that reproduces ``dumped`` (codes of ``requested.fmt``) from ``x``.

    Exact search: candidates are first scored on the elements the requested policy gets wrong;
    only those that fix all of them are checked on the rest. Closest: scored the same way, with
    a branch-and-bound cut (a candidate's total is at least its score on the wrong elements).
    """
    f = requested.fmt
    xf, df = np.asarray(x).reshape(-1), np.asarray(dumped).reshape(-1)
    base_codes = requested.encode(xf)
    wrong = base_codes != df
    if nan_by_class:
        wrong &= ~(is_nan_code(base_codes, f) & is_nan_code(df, f))
    bad, good = np.flatnonzero(wrong), np.flatnonzero(~wrong)
    cands = candidates(requested, xf)
    diag = Diagnosis(requested=requested, tried=len(cands))
    x_bad, d_bad = xf[bad], df[bad]
    x_good, d_good = xf[good], df[good]
    scored = [(_mismatches(p.encode(x_bad), d_bad, f, nan_by_class), p) for p in cands]

    level: int | None = None
    for score, p in scored:
        n_changes = len(p.changes_from(requested))
        if score or (level is not None and n_changes > level):
            continue
        if _mismatches(p.encode(x_good), d_good, f, nan_by_class) == 0:
            if diag.exact is None:
                diag.exact, level = p, n_changes
            elif len(diag.alternatives) < MAX_ALTERNATIVES:
                diag.alternatives.append(p)
    if diag.exact is not None:
        return diag

    best_total = int(bad.size)
    for score, p in sorted(scored, key=lambda sp: sp[0]):  # stable: fewer changes first
        if score >= best_total:
            break
        total = score + _mismatches(p.encode(x_good), d_good, f, nan_by_class)
        if total < best_total:
            best_total, diag.closest, diag.closest_mismatches = total, p, total
    diag.stochastic_consistent = stochastic_consistent(requested, xf, df)
    return diag


def stochastic_consistent(requested: CastPolicy, x: np.ndarray, dumped: np.ndarray) -> bool:
    """Whether every dumped code is one of the two codes stochastic rounding could give for its
    input (§2): the truncated neighbour ``lo``, or for an inexact input the next code up in
    magnitude, where the step past max is an overflow handled by the saturation setting (§3)."""
    f = requested.fmt
    xf = np.asarray(x).reshape(-1)
    lo = encode(xf, f, rounding="rtz", saturate=requested.saturate, nan=requested.nan)
    inexact = _inexact_values(xf, lo, f)
    sign_bit = 1 << (f.bits - 1)
    sign = (lo.astype(np.uint64) & sign_bit)
    mag = (lo.astype(np.uint64) & (sign_bit - 1)) + (1 << f.storage_shift)
    over = np.uint64(_overflow_code(requested, f))
    hi = np.where(mag > f.max_bits, over | sign, mag | sign)
    ok = (dumped == lo) | (inexact & (dumped.astype(np.uint64) == hi))
    return bool(ok.all())


def _overflow_code(requested: CastPolicy, f: Format) -> int:
    """The positive code an overflowing step produces: max, inf, or (no inf) the NaN code, which
    keeps the number's sign under either NaN policy (CAST_SEMANTICS.md §4)."""
    if requested.saturate:
        return f.max_bits
    if f.inf_bits is not None:
        return f.inf_bits
    return f.nan_bits


def _inexact_values(x: np.ndarray, lo: np.ndarray, f: Format) -> np.ndarray:
    """True where ``x`` is finite and differs from the value of its truncated code ``lo``."""
    xv = x.astype(np.float64)
    lv = decode(lo, f).astype(np.float64)
    return np.isfinite(xv) & (xv != lv)
