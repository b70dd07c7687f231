"""What a cast did to an array: the counts people ask about after a cast."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from pyprecision.formats import format
from pyprecision.kernel.cast import decode

__all__ = ["CastStats", "cast_stats"]


@dataclass(frozen=True)
class CastStats:
    """Counts over one cast of ``elements`` values (NaN inputs excluded from the error figures)."""

    format: str
    elements: int
    exact: int           # finite inputs represented exactly
    rounded: int         # finite inputs that changed value but stayed finite and in range
    overflowed: int      # finite inputs whose rounded magnitude exceeds max (saturated, inf or NaN)
    underflowed: int     # non-zero finite inputs that became zero
    nan_in: int
    nan_out: int
    inf_out: int
    max_abs_error: float  # over finite inputs with finite results
    max_rel_error: float  # over finite non-zero inputs with finite results

    def lines(self) -> list[str]:
        """A short human-readable summary."""
        return [
            f"elements      {self.elements}",
            f"exact         {self.exact}",
            f"rounded       {self.rounded}",
            f"overflowed    {self.overflowed}",
            f"underflowed   {self.underflowed}",
            f"NaN in / out  {self.nan_in} / {self.nan_out}",
            f"inf out       {self.inf_out}",
            f"max abs error {self.max_abs_error:.6g}",
            f"max rel error {self.max_rel_error:.6g}",
        ]


def cast_stats(x: Any, codes: np.ndarray, fmt: Any) -> CastStats:
    """Compare the source values ``x`` with the ``codes`` a cast produced for them."""
    f = format(fmt)
    xv = np.asarray(x)
    if xv.dtype.kind not in "iu":
        xv = xv.astype(np.float64)
    xv = xv.reshape(-1)
    y = decode(codes, f).astype(np.float64).reshape(-1)
    if xv.dtype.kind in "iu":
        finite_in = np.ones(xv.shape, bool)
        nan_in = np.zeros(xv.shape, bool)
        xf = xv.astype(np.float64)  # only for error figures
        exact = (y == xf) & (np.abs(xf) < 2.0**53)
    else:
        finite_in = np.isfinite(xv)
        nan_in = np.isnan(xv)
        xf = xv
        exact = finite_in & (y == xf)
    finite_out = np.isfinite(y)
    with np.errstate(all="ignore"):
        over = finite_in & (~finite_out | (np.abs(y) >= f.max) & (np.abs(xf) > f.max))
        under = finite_in & (xf != 0) & (y == 0)
        ok = finite_in & finite_out
        err = np.abs(y[ok] - xf[ok])
        nz = ok & (xf != 0)
        rel = np.abs(y[nz] - xf[nz]) / np.abs(xf[nz])
    return CastStats(
        format=f.name,
        elements=int(xv.size),
        exact=int(np.count_nonzero(exact)),
        rounded=int(np.count_nonzero(finite_in & ~exact & ~over)),
        overflowed=int(np.count_nonzero(over)),
        underflowed=int(np.count_nonzero(under)),
        nan_in=int(np.count_nonzero(nan_in)),
        nan_out=int(np.count_nonzero(np.isnan(y))),
        inf_out=int(np.count_nonzero(np.isinf(y))),
        max_abs_error=float(err.max()) if err.size else 0.0,
        max_rel_error=float(rel.max()) if rel.size else 0.0,
    )
