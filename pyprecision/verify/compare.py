"""Bit-for-bit comparison of two code arrays of one format, with ULP distances in its code space.

The ULP distance of two codes is the distance between their positions on the format's number line:
a code with sign s and magnitude m (the bits below the sign, shifted down by the format's storage
shift, so fp32r counts fp32r ulps) sits at ``-m`` if s else ``m``; +inf is one step above +max.
Special cases, stated once (docs/decisions/verify.md):

* equal codes are 0 apart; any two *different* codes are at least 1 apart, so ``--max-ulp 0``
  means bit-exact (+0 and -0 are 1 apart, not 0);
* two NaN codes that differ (sign or payload) are 1 apart: same value class, other encoding;
* a NaN against a non-NaN is *unbounded*: beyond every ``--max-ulp`` (reported as ``None``).

Besides the cast formats, program outputs are compared in the code space of float32 (its bits)
and of integers (where the distance is the plain difference).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from pyprecision.formats import Format, format
from pyprecision.kernel import decode, ordered_codes
from pyprecision.kernel import is_nan_code as _is_nan_code

__all__ = [
    "CodeSpace",
    "Comparison",
    "code_space",
    "compare_codes",
    "is_nan_code",
    "ordered",
    "ulp_histogram",
]


@dataclass(frozen=True)
class CodeSpace:
    """The codes of one element type: a cast format, float32 (``fmt`` None, kind float) or an
    integer type (kind int; a code is the integer itself)."""

    name: str
    kind: str
    bits: int
    storage_dtype: np.dtype
    shift: int = 0
    fmt: Format | None = None

    def values(self, codes: np.ndarray) -> np.ndarray:
        """Decoded values (float32 for floats, int64 / uint64 for integers)."""
        if self.fmt is not None:
            return decode(np.asarray(codes, self.storage_dtype), self.fmt)
        if self.kind == "float":
            return np.asarray(codes, self.storage_dtype).view(np.float32)
        return np.asarray(codes)

    def is_nan(self, codes: np.ndarray) -> np.ndarray:
        """True where a code is a NaN code."""
        if self.kind != "float":
            return np.zeros(np.shape(codes), bool)
        return _is_nan_code(codes, self.fmt)

    def ordered(self, codes: np.ndarray) -> np.ndarray:
        """Each code's position on the number line (int64; integers are their own position)."""
        if self.kind != "float":
            return np.asarray(codes).astype(np.int64)
        return ordered_codes(codes, self.bits, self.shift)

    def hex(self, code: Any) -> str:
        """A code as it is usually written: hex for floats, decimal for integers."""
        if self.kind != "float":
            return str(int(code))
        return f"0x{int(code):0{self.bits // 4}x}"


def code_space(what: Any) -> CodeSpace:
    """The code space of a Format (or format name), ``"float32"``, or an integer numpy dtype."""
    if isinstance(what, CodeSpace):
        return what
    if isinstance(what, Format) or (isinstance(what, str) and what not in ("float32", "fp32")):
        f = format(what)
        return CodeSpace(f.name, "float", f.bits, f.storage_dtype, f.storage_shift, f)
    dt = np.dtype(np.float32) if isinstance(what, str) else np.dtype(what)
    if dt == np.float32:
        return CodeSpace("float32", "float", 32, np.dtype(np.uint32))
    if dt.kind in "iub":
        return CodeSpace(dt.name, "int", dt.itemsize * 8, dt)
    return code_space(format(dt))


def is_nan_code(codes: np.ndarray, f: Any) -> np.ndarray:
    """True where a code is one of the format's NaN codes."""
    return code_space(f).is_nan(codes)


def ordered(codes: np.ndarray, f: Any) -> np.ndarray:
    """Each code's position on the number line (int64): ±(magnitude >> storage shift)."""
    return code_space(f).ordered(codes)


@dataclass
class Comparison:
    """The elementwise outcome of comparing ``expected`` with ``dumped`` codes (flat arrays).

    ``ulp`` holds each element's distance (int64, 0 where equal); ``unbounded`` marks NaN against
    non-NaN, whose ``ulp`` entry is meaningless and must not be used.
    """

    expected: np.ndarray
    dumped: np.ndarray
    equal: np.ndarray
    ulp: np.ndarray
    unbounded: np.ndarray

    @property
    def elements(self) -> int:
        """Number of compared elements."""
        return int(self.equal.size)

    @property
    def matches(self) -> int:
        """Elements whose codes agree bit for bit."""
        return int(np.count_nonzero(self.equal))

    @property
    def mismatches(self) -> int:
        """Elements whose codes differ."""
        return self.elements - self.matches

    def max_ulp(self) -> int | None:
        """Largest distance, ``None`` when some mismatch is unbounded (NaN against a number)."""
        if self.unbounded.any():
            return None
        return int(self.ulp.max()) if self.ulp.size else 0

    def max_finite_ulp(self) -> int:
        """Largest distance among the bounded elements."""
        bounded = self.ulp[~self.unbounded]
        return int(bounded.max()) if bounded.size else 0

    def mean_ulp(self) -> float:
        """Mean distance over the bounded elements (matches count as 0)."""
        bounded = self.ulp[~self.unbounded]
        return float(bounded.mean()) if bounded.size else 0.0

    def within(self, max_ulp: int) -> bool:
        """Whether every element is at most ``max_ulp`` apart (unbounded ones never are)."""
        return not self.unbounded.any() and (self.ulp.size == 0 or int(self.ulp.max()) <= max_ulp)

    def mismatch_indices(self) -> np.ndarray:
        """Flat indices of the mismatching elements, in order."""
        return np.flatnonzero(~self.equal)


def compare_codes(expected: np.ndarray, dumped: np.ndarray, f: Any,
                  nan_by_class: bool = False) -> Comparison:
    """Compare two code arrays of ``f`` (a Format, a CodeSpace, ...) element by element (see the
    module docstring). With ``nan_by_class`` any NaN equals any NaN (for dumps of decoded values,
    whose NaN codes are not observable)."""
    space = code_space(f)
    e = np.ascontiguousarray(expected, dtype=space.storage_dtype).reshape(-1)
    d = np.ascontiguousarray(dumped, dtype=space.storage_dtype).reshape(-1)
    equal = e == d
    e_nan, d_nan = space.is_nan(e), space.is_nan(d)
    if nan_by_class:
        equal |= e_nan & d_nan
    dist = np.abs(space.ordered(e) - space.ordered(d))
    dist = np.where(equal, 0, np.maximum(dist, 1))
    dist[~equal & e_nan & d_nan] = 1
    unbounded = ~equal & (e_nan != d_nan)
    dist[unbounded] = 0
    return Comparison(expected=e, dumped=d, equal=equal, ulp=dist, unbounded=unbounded)


def ulp_histogram(cmp: Comparison) -> list[dict[str, object]]:
    """Counts per distance bucket: 0, 1, 2, 3-4, 5-8, ... (powers of two), then ``unbounded``.

    Buckets run up to the largest non-empty one; ``unbounded`` is listed only when non-zero.
    """
    bounded = cmp.ulp[~cmp.unbounded]
    rows: list[dict[str, object]] = []
    top = int(bounded.max()) if bounded.size else 0
    lo, hi = 0, 0
    while lo <= max(top, 0):
        n = int(np.count_nonzero((bounded >= lo) & (bounded <= hi)))
        label = str(lo) if lo == hi else f"{lo}-{hi}"
        rows.append({"bucket": label, "min": lo, "max": hi, "count": n})
        lo, hi = hi + 1, max(1, 2 * hi)
    n_unb = int(np.count_nonzero(cmp.unbounded))
    if n_unb:
        rows.append({"bucket": "unbounded", "min": None, "max": None, "count": n_unb})
    return rows
