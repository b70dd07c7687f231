"""ULP distance and array assertions whose failure messages show index, values, bits and ULPs.

NumPy only: importing this module does not need hypothesis.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pyprecision.errors import CastError
from pyprecision.formats import Format
from pyprecision.formats import format as _format
from pyprecision.kernel import decode, is_nan_code, ordered_codes

__all__ = ["as_codes", "ulp_distance", "assert_bits_equal", "assert_within_ulp", "NAN_MISMATCH"]

#: ulp_distance of a NaN against a non-NaN (larger than any real distance).
NAN_MISMATCH = int(np.iinfo(np.int64).max)


def as_codes(a: Any, fmt: Any) -> np.ndarray:
    """The raw codes of ``a`` in ``fmt`` (storage uint dtype, native order).

    ``a`` holds codes (any integer dtype, values in range) or values of the format's own dtype
    (bfloat16, float16, the ml_dtypes fp8 types, float32 for fp32r). Other float dtypes are
    refused: re-rounding them here would hide the very differences being tested.
    """
    f = _format(fmt)
    arr = np.asarray(a)
    if arr.dtype == f.dtype:
        return np.ascontiguousarray(arr).view(f.storage_dtype)
    if arr.dtype.kind in "iu":
        wide = arr.astype(np.int64)
        if wide.size and (wide.min() < 0 or wide.max() >= 1 << f.bits):
            raise CastError(f"codes of {f.name} must be in [0, 2**{f.bits})")
        return wide.astype(f.storage_dtype)
    raise CastError(
        f"expected {f.name} codes ({f.storage_dtype}) or {f.dtype} values, got "
        f"{arr.dtype}; cast floats with pyprecision.encode first"
    )


def ulp_distance(actual: Any, expected: Any, fmt: Any) -> np.ndarray:
    """Elementwise distance in representable steps of ``fmt`` (int64).

    ±0 are 0 apart; ±inf is one step beyond ±max; two NaNs (any payloads) are 0 apart; a NaN and a
    non-NaN are :data:`NAN_MISMATCH` apart.
    """
    f = _format(fmt)
    a, e = np.broadcast_arrays(as_codes(actual, f), as_codes(expected, f))
    d = np.abs(ordered_codes(a, f.bits, f.storage_shift) - ordered_codes(e, f.bits, f.storage_shift))
    na, ne = is_nan_code(a, f), is_nan_code(e, f)
    d = np.where(na & ne, 0, d)
    return np.where(na ^ ne, NAN_MISMATCH, d)


def _cell(code: int, value: float, f: Format) -> str:
    return f"0x{code:0{f.bits // 4}x} ({value!r})"


def _report(
    title: str,
    bad: np.ndarray,
    a: np.ndarray,
    e: np.ndarray,
    dist: np.ndarray,
    f: Format,
    inputs: Any,
    max_rows: int,
) -> str:
    va, ve = decode(a, f), decode(e, f)
    x = None if inputs is None else np.broadcast_to(np.asarray(inputs), a.shape)
    head = ("index", "actual", "expected", "ulp") + (("input",) if x is not None else ())
    rows: list[tuple[str, ...]] = [head]
    for flat in bad[:max_rows]:
        idx = tuple(int(i) for i in np.unravel_index(int(flat), a.shape)) if a.ndim else ()
        dd = int(dist.reshape(-1)[flat])
        ca, ce = int(a.reshape(-1)[flat]), int(e.reshape(-1)[flat])
        # two NaNs 0 steps apart whose codes differ: their sign or payload differs, not "ulp 0"
        nan_bits = dd == 0 and ca != ce and np.isnan(va.reshape(-1)[flat])
        row: tuple[str, ...] = (
            str(idx),
            _cell(ca, float(va.reshape(-1)[flat]), f),
            _cell(ce, float(ve.reshape(-1)[flat]), f),
            "nan≠number" if dd == NAN_MISMATCH else ("nan≠nan" if nan_bits else str(dd)),
        )
        if x is not None:
            xv = x.reshape(-1)[flat]
            bits = (
                np.asarray(xv).reshape(1).view(f"u{np.asarray(xv).dtype.itemsize}")[0]
                if np.asarray(xv).dtype.kind == "f"
                else None
            )
            row += (
                f"{xv}"
                + (
                    f" (0x{int(bits):0{2 * np.asarray(xv).dtype.itemsize}x})"
                    if bits is not None
                    else ""
                ),
            )
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = [title] + [
        "  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows
    ]
    if bad.size > max_rows:
        lines.append(f"  ... and {bad.size - max_rows} more")
    return "\n".join(lines)


def _prepare(actual: Any, expected: Any, f: Format) -> tuple[np.ndarray, np.ndarray]:
    __tracebackhide__ = True
    a, e = as_codes(actual, f), as_codes(expected, f)
    if a.shape != e.shape:
        raise AssertionError(f"shape mismatch: actual {a.shape}, expected {e.shape}")
    return a, e


def assert_bits_equal(
    actual: Any, expected: Any, fmt: Any, *, inputs: Any = None, max_rows: int = 10
) -> None:
    """Assert two arrays of ``fmt`` codes/values are identical bit for bit (NaN payloads too).

    The AssertionError lists the first ``max_rows`` differing elements: index, actual and expected
    code with its value, ULP distance, and the input (with its bits) when ``inputs`` is given.
    """
    __tracebackhide__ = True
    f = _format(fmt)
    a, e = _prepare(actual, expected, f)
    bad = np.flatnonzero(a != e)
    if bad.size:
        dist = ulp_distance(a, e, f)
        raise AssertionError(
            _report(
                f"{bad.size} of {a.size} elements differ in their {f.name} bits",
                bad,
                a,
                e,
                dist,
                f,
                inputs,
                max_rows,
            )
        )


def assert_within_ulp(
    actual: Any, expected: Any, fmt: Any, ulp: int, *, inputs: Any = None, max_rows: int = 10
) -> None:
    """Assert every element is at most ``ulp`` representable steps of ``fmt`` from expected.

    NaN matches NaN whatever the payloads; NaN against a number always fails. The message
    shows the worst distance and the first ``max_rows`` offending elements.
    """
    __tracebackhide__ = True
    f = _format(fmt)
    a, e = _prepare(actual, expected, f)
    dist = ulp_distance(a, e, f)
    bad = np.flatnonzero(dist > ulp)
    if bad.size:
        worst = int(dist.max())
        worst_s = "a NaN against a number" if worst == NAN_MISMATCH else f"{worst} ulp"
        raise AssertionError(
            _report(
                f"{bad.size} of {a.size} elements are more than {ulp} ulp of {f.name} apart "
                f"(worst: {worst_s})",
                bad,
                a,
                e,
                dist,
                f,
                inputs,
                max_rows,
            )
        )
