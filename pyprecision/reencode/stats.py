"""Counters and the summary table of a re-encode run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pyprecision.formats import Format
from pyprecision.kernel import encode

__all__ = ["TensorResult", "ReencodeSummary", "count_specials"]


@dataclass
class TensorResult:
    """What happened to one tensor. ``action``: encoded | kept (excluded or not floating)."""

    name: str
    file: str
    action: str
    in_dtype: str
    out_dtype: str
    shape: tuple[int, ...]
    bytes_in: int
    bytes_out: int
    saturated: int = 0
    overflowed: int = 0
    nan: int = 0
    inf: int = 0
    scale: float | None = None


@dataclass
class ReencodeSummary:
    """The run's results: one TensorResult per input tensor, files written, time, verification."""

    format: str
    tensors: list[TensorResult] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    seconds: float = 0.0
    verified: bool = False
    verify_seconds: float = 0.0
    verify_failures: list[str] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)
    copied: list[str] = field(default_factory=list)  # a model folder's other files, copied
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (file, why) left out
    notes: list[str] = field(default_factory=list)  # e.g. config.json's torch_dtype rewritten

    @property
    def bytes_in(self) -> int:
        """Bytes of tensor data read."""
        return sum(t.bytes_in for t in self.tensors)

    @property
    def bytes_out(self) -> int:
        """Bytes of tensor data written (scale companions included)."""
        return sum(t.bytes_out for t in self.tensors)

    @property
    def gb_per_s(self) -> float:
        """Input bytes per second, in GB (10^9)."""
        return self.bytes_in / self.seconds / 1e9 if self.seconds > 0 else 0.0

    def total(self, counter: str) -> int:
        """Sum of one counter (saturated, overflowed, nan, inf) over all tensors."""
        return sum(int(getattr(t, counter)) for t in self.tensors)

    def rows(self) -> list[tuple[str, int, int, int]]:
        """(label, tensors, bytes in, bytes out) per input → output dtype, first seen first."""
        acc: dict[str, list[int]] = {}
        for t in self.tensors:
            label = (
                f"{t.in_dtype} → {t.out_dtype}" if t.action == "encoded" else f"{t.in_dtype} (kept)"
            )
            r = acc.setdefault(label, [0, 0, 0])
            r[0] += 1
            r[1] += t.bytes_in
            r[2] += t.bytes_out
        return [(k, *v) for k, v in acc.items()]  # type: ignore[misc]

    def table(self) -> str:
        """The human summary printed at the end of ``pyprecision reencode``."""
        w = max([len(r[0]) for r in self.rows()] + [len("dtype"), len("total")])
        lines = [f"{'dtype':<{w}}  {'tensors':>8}  {'bytes in':>11}  {'bytes out':>11}"]
        for label, n, bi, bo in self.rows():
            lines.append(f"{label:<{w}}  {n:>8}  {_size(bi):>11}  {_size(bo):>11}")
        lines.append(
            f"{'total':<{w}}  {len(self.tensors):>8}  {_size(self.bytes_in):>11}  "
            f"{_size(self.bytes_out):>11}"
        )
        lines.append(
            f"saturated {self.total('saturated')}, overflowed {self.total('overflowed')}, "
            f"NaN {self.total('nan')}, inf {self.total('inf')} (in {self.format} outputs)"
        )
        lines.append(f"time {self.seconds:.2f} s, {self.gb_per_s:.2f} GB/s")
        if self.verified:
            lines.append(
                f"verify ({self.verify_seconds:.2f} s): "
                + (
                    "ok, every tensor matches a fresh encode"
                    if not self.verify_failures
                    else f"{len(self.verify_failures)} FAILED: "
                    + "; ".join(self.verify_failures[:5])
                )
            )
        for o in self.outputs:
            lines.append(f"wrote {o}")
        if self.copied:
            lines.append(f"copied {len(self.copied)} other files of the model folder "
                         "(unchanged but for what a config.json line below says)")
        lines += self.notes
        for rel, why in self.skipped:
            lines.append(f"skipped {rel}: {why}")
        return "\n".join(lines)


def _size(n: int) -> str:
    for unit, k in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= k:
            return f"{n / k:.2f} {unit}"
    return f"{n} B"


def count_specials(
    codes: np.ndarray,
    src: np.ndarray,
    f: Format,
    opts: dict[str, Any],
    random_bits: np.ndarray | None,
    result: TensorResult,
    scratch: np.ndarray | None = None,
) -> None:
    """Add this chunk's NaN / inf / overflowed / saturated counts to ``result``.

    ``overflowed``: finite inputs that became inf or NaN (non-saturating). ``saturated``: inputs
    (finite or inf) clamped to ±max that would have become inf/NaN without saturation. Codes are
    ordered by magnitude (max < inf < NaN), so the largest magnitude tells whether there is any
    candidate at all; ``scratch`` (the codes' dtype, at least as long) avoids an allocation.
    """
    sign = 1 << (f.bits - 1)
    if codes.size == 0:
        return
    # Positive candidates are codes in [max, sign), negative ones codes >= sign + max: two
    # reductions without a temporary decide whether there is any candidate at all.
    signed = codes.view(np.dtype(f"i{codes.dtype.itemsize}"))
    if int(codes.max()) < sign + f.max_bits and int(signed.max()) < f.max_bits:
        return
    out = None if scratch is None else scratch[: codes.size].reshape(codes.shape)
    mag = np.bitwise_and(codes, codes.dtype.type(sign - 1), out=out)
    special = mag >= f.max_bits
    idx = np.flatnonzero(special)
    m = mag[idx].astype(np.int64)
    with np.errstate(invalid="ignore"):
        x = np.asarray(src[idx]).astype(np.float64)
    top = f.inf_bits if f.inf_bits is not None else f.max_bits
    is_nan = m > top
    is_inf = (m == f.inf_bits) if f.inf_bits is not None else np.zeros(m.shape, bool)
    finite = np.isfinite(x)
    result.nan += int(np.count_nonzero(is_nan))
    result.inf += int(np.count_nonzero(is_inf))
    result.overflowed += int(np.count_nonzero(finite & (is_nan | is_inf)))
    at_max = np.flatnonzero(m == f.max_bits)
    if not opts["saturate"] or at_max.size == 0:
        return
    xs = src[idx[at_max]]
    rb = None if random_bits is None else random_bits[idx[at_max]]
    plain = encode(
        np.ascontiguousarray(xs),
        f,
        rounding=opts["rounding"],
        saturate=False,
        nan=opts["nan"],
        random_bits=rb,
    )
    result.saturated += int(np.count_nonzero((plain & (sign - 1)) > f.max_bits))
