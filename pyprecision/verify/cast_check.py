"""The cast check: emulate the cast of an input under a policy and compare it with a dump."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pyprecision.errors import DumpError
from pyprecision.formats import Format, format
from pyprecision.kernel import decode, encode
from pyprecision.verify.compare import (
    CodeSpace,
    Comparison,
    code_space,
    compare_codes,
    is_nan_code,
    ulp_histogram,
)
from pyprecision.verify.diagnose import diagnose
from pyprecision.verify.policy import E4_PAIR, CastPolicy

__all__ = ["CastReport", "Report", "dump_as_codes", "verify_cast"]

_E4_DTYPES = {format(name).dtype: name for name in E4_PAIR}


def dump_as_codes(dump: np.ndarray, f: Format) -> tuple[np.ndarray, bool, list[str]]:
    """The codes of ``f`` a dump holds: ``(codes, holds_values, notes)``.

    Integer arrays of the format's width and arrays of the format's own dtype hold codes; an array
    typed as the *other* fp8 e4 variant is taken as codes too (the type label is what §7 confuses),
    with a note. Any other float array holds decoded values, which must all be values of ``f``
    (their NaN encodings are then not observable: ``holds_values`` is True).
    """
    d = np.asarray(dump)
    width = d.dtype.itemsize * 8
    if d.dtype == f.dtype or (d.dtype.kind in "ui" and width == f.bits):
        return np.ascontiguousarray(d).view(f.storage_dtype), False, []
    if d.dtype in _E4_DTYPES and f.name in E4_PAIR:
        note = f"the dump is typed {d.dtype.name}; its bytes are read as {f.name} codes"
        return np.ascontiguousarray(d).view(f.storage_dtype), False, [note]
    if d.dtype.kind in "ui":
        raise DumpError(f"the dump holds {d.dtype} integers, but {f.name} codes are {f.bits}-bit "
                        f"({f.storage_dtype}); is --format (or --dtype) right?")
    codes = encode(d, f, rounding="rne", saturate=False)
    back = decode(codes, f).astype(np.float64)
    values = d.astype(np.float64)
    bad = ~((back == values) | (np.isnan(back) & np.isnan(values)))
    if bad.any():
        i = int(np.flatnonzero(bad.reshape(-1))[0])
        raise DumpError(f"the dump holds {d.dtype} values that are not {f.name} values (first at "
                        f"flat index {i}: {values.reshape(-1)[i]!r}); is --format right?")
    note = (f"the dump holds decoded {d.dtype} values, not {f.name} codes: NaN encodings are "
            "compared by class only")
    return codes, True, [note]


@dataclass
class Report:
    """One comparison and everything found about it (rendered by :mod:`pyprecision.verify.render`).

    ``label`` names what was compared; ``space`` is the code space of the compared elements;
    ``inputs`` the flat input array of a cast check (None for program outputs); ``policy`` the
    CastPolicy of a cast check; ``counts`` maps a column (input, expected, dumped) to counts of
    NaN / inf / overflow / saturated elements; ``diagnosis`` has ``summary()`` and ``to_json()``.
    """

    label: str
    space: CodeSpace
    shape: tuple[int, ...]
    comparison: Comparison
    max_ulp_allowed: int
    counts: dict[str, dict[str, int]]
    inputs: np.ndarray | None = None
    policy: CastPolicy | None = None
    diagnosis: Any = None
    notes: list[str] = field(default_factory=list)
    kind: str = "cast"
    tolerance: Any = None

    @property
    def passing(self) -> np.ndarray:
        """Per element: within the tolerance (``tolerance``, else ``max_ulp_allowed``)."""
        from pyprecision.verify.distance import Tolerance, passing

        tol = self.tolerance or Tolerance(max_ulp=self.max_ulp_allowed,
                                          why="exact" if not self.max_ulp_allowed else "given")
        return passing(self.comparison, self.space, tol)

    def distance(self) -> Any:
        """The distance distribution (``verify.distance.Distance``)."""
        from pyprecision.verify.distance import distance

        return distance(self.comparison, self.space)

    @property
    def ok(self) -> bool:
        """Every element within the allowed ULP distance (or the output's ``tolerance``)."""
        if self.tolerance is None:
            return self.comparison.within(self.max_ulp_allowed)
        return bool(self.passing.all())

    def histogram(self) -> list[dict[str, object]]:
        """The ULP histogram rows."""
        return ulp_histogram(self.comparison)


#: The report of a cast check (a Report with ``policy`` and ``inputs`` set).
CastReport = Report


def _counts(x: np.ndarray, codes: np.ndarray, policy: CastPolicy,
            overflow: np.ndarray) -> dict[str, int]:
    f = policy.fmt
    values = decode(codes, f)
    magnitude = codes & np.asarray((1 << (f.bits - 1)) - 1, f.storage_dtype)
    at_max = magnitude == f.max_bits
    return {
        "nan": int(np.count_nonzero(is_nan_code(codes, f))),
        "inf": int(np.count_nonzero(np.isinf(values))),
        "max": int(np.count_nonzero(at_max)),
        "saturated": int(np.count_nonzero(at_max & overflow)),
        "zero": int(np.count_nonzero(values == 0)),
    }


def _overflow(x: np.ndarray, policy: CastPolicy) -> np.ndarray:
    """Inputs beyond the format's range after rounding (§3), including ±inf."""
    f = policy.fmt
    rounding = "rne" if policy.rounding == "stochastic" else policy.rounding
    free = encode(x, f, rounding=rounding, saturate=False, nan=policy.nan)
    xv = x.astype(np.float64)
    gone = np.isinf(decode(free, f)) | (is_nan_code(free, f) & ~np.isnan(xv))
    return gone | np.isinf(xv)


def verify_cast(x: Any, dump: Any, policy: CastPolicy, *, max_ulp: int = 0,
                run_diagnosis: bool = True) -> CastReport:
    """Emulate ``policy`` on ``x`` and compare with ``dump`` (codes or decoded values of the format).

    ``x`` and ``dump`` must hold the same number of elements; a 1-D dump (a raw file read without
    a shape) is reshaped to ``x``'s shape, any other shape difference is a DumpError.
    """
    xa = np.asarray(x)
    da = np.asarray(dump)
    if da.size != xa.size:
        raise DumpError(f"the dump has {da.size} elements, the input {xa.size} "
                        f"(shapes {da.shape} and {xa.shape})")
    if da.shape != xa.shape and da.ndim != 1:
        raise DumpError(f"the dump has shape {da.shape}, the input {xa.shape}")
    f = policy.fmt
    codes, by_class, notes = dump_as_codes(da.reshape(xa.shape), f)
    expected = policy.encode(xa)
    cmp = compare_codes(expected, codes, f, nan_by_class=by_class)
    flat_x = xa.reshape(-1)
    overflow = _overflow(flat_x, policy)
    counts = {
        "input": {"nan": int(np.count_nonzero(np.isnan(flat_x.astype(np.float64)))),
                  "inf": int(np.count_nonzero(np.isinf(flat_x.astype(np.float64)))),
                  "overflow": int(np.count_nonzero(overflow))},
        "expected": _counts(flat_x, cmp.expected, policy, overflow),
        "dumped": _counts(flat_x, cmp.dumped, policy, overflow),
    }
    diag = None
    if run_diagnosis and cmp.mismatches:
        diag = diagnose(policy, flat_x, cmp.dumped, nan_by_class=by_class)
    return Report(label=policy.describe(), space=code_space(f), shape=tuple(xa.shape),
                  comparison=cmp, max_ulp_allowed=max_ulp, counts=counts, inputs=flat_x,
                  policy=policy, diagnosis=diag, notes=notes)
