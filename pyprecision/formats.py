"""The format records, read from the C core's one table (CAST_SEMANTICS.md §1); never retyped here.

A Format carries its names in every vocabulary the package speaks (the C table's name and aliases,
the HLO element type, the loop IR's dtype, the safetensors dtype, the numpy value and storage
dtypes); ``format(name)`` is the one lookup of a spelling (docs/decisions/numerics.md N1).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np

from pyprecision._core import ffi, lib
from pyprecision.errors import FormatError

__all__ = ["Format", "format", "formats"]


@dataclass(frozen=True)
class Format:
    """One target format of the cast engine.

    ``max`` is the largest finite value; codes (``*_bits``) are positive magnitudes in storage
    position. ``storage_dtype`` holds raw codes, ``dtype`` holds decoded values (float32 for fp32r).
    ``hlo_name`` is the XLA element type (``f8e4m3`` for the IEEE-like fp8e4; None for fp32r),
    ``ir_name`` the loop IR's dtype, ``safetensors_name`` the safetensors dtype of the values (None
    for fp8e4, which has none: ``F8_E4M3`` is e4m3fn), ``source_type`` the C core's ``PP_T_*``
    code for an array of ``dtype``.
    """

    name: str
    aliases: tuple[str, ...]
    index: int
    bits: int
    exponent_bits: int
    mantissa_bits: int
    bias: int
    has_inf: bool
    storage_shift: int
    max_bits: int
    inf_bits: int | None
    nan_bits: int
    nan_nvidia_bits: int
    max: float
    min_normal: float
    min_subnormal: float
    storage_dtype: np.dtype
    dtype: np.dtype
    hlo_name: str | None
    ir_name: str
    safetensors_name: str | None
    source_type: int

    @property
    def spellings(self) -> tuple[str, ...]:
        """Every lower-case spelling ``format()`` accepts for this format, the name first."""
        names = (self.name, *self.aliases, self.ir_name, self.hlo_name or "")
        return tuple(dict.fromkeys(n.lower() for n in names if n))

    @property
    def default_saturate(self) -> bool:
        """The Neuron default (§3): the fp8 conversion primitive saturates, wider formats don't."""
        return self.bits == 8

    def __str__(self) -> str:
        return self.name


def _value_dtype(name: str) -> np.dtype:
    if name in ("float16", "float32"):
        return np.dtype(name)
    return np.dtype(getattr(ml_dtypes, name))


def _text(p: Any) -> str | None:
    """A C string of the table, None where it is empty (the vocabulary has no name)."""
    return ffi.string(p).decode() or None


def _read_table() -> tuple[Format, ...]:
    rows = []
    for i in range(lib.pp_format_count()):
        r = lib.pp_format_get(i)
        bits = int(r.bits)
        rows.append(
            Format(
                name=ffi.string(r.name).decode(),
                aliases=tuple(a for a in ffi.string(r.aliases).decode().split(",") if a),
                index=i,
                bits=bits,
                exponent_bits=int(r.exponent_bits),
                mantissa_bits=int(r.mantissa_bits),
                bias=int(r.bias),
                has_inf=bool(r.has_inf),
                storage_shift=int(r.storage_shift),
                max_bits=int(r.max_bits),
                inf_bits=int(r.inf_bits) if r.has_inf else None,
                nan_bits=int(r.nan_mldtypes),
                nan_nvidia_bits=int(r.nan_nvidia),
                max=float(r.max_value),
                min_normal=float(r.min_normal),
                min_subnormal=float(r.min_subnormal),
                storage_dtype=np.dtype(f"uint{bits}"),
                dtype=_value_dtype(ffi.string(r.numpy_dtype).decode()),
                hlo_name=_text(r.hlo_name),
                ir_name=ffi.string(r.ir_name).decode(),
                safetensors_name=_text(r.safetensors),
                source_type=int(r.source_type),
            )
        )
    return tuple(rows)


_FORMATS = _read_table()
_BY_NAME: dict[str, Format] = {}
for _f in _FORMATS:
    for _n in _f.spellings:
        _BY_NAME[_n] = _f
# Value dtypes that name exactly one format (float32 does not: it could be anything).
_BY_DTYPE = {f.dtype: f for f in _FORMATS if f.dtype != np.dtype(np.float32)}


def formats() -> list[Format]:
    """Every format, in the C table's order."""
    return list(_FORMATS)


def format(name: Any) -> Format:  # noqa: A001 - the contract's name
    """The Format for a spelling (case-insensitive: name, alias, IR dtype or HLO type name), a
    Format, or a format's value dtype."""
    if isinstance(name, Format):
        return name
    if isinstance(name, str):
        f = _BY_NAME.get(name.strip().lower())
        if f is not None:
            return f
    else:
        try:
            f = _BY_DTYPE.get(np.dtype(name))
        except TypeError:
            f = None
        if f is not None:
            return f
    valid = ", ".join(f"{f.name} ({', '.join(f.aliases)})" for f in _FORMATS)
    raise FormatError(f"unknown format {name!r}; valid formats: {valid}")
