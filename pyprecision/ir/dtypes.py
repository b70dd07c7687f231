"""Element types of the loop-level IR: one canonical text spelling per dtype, its numpy storage type and,
for the narrow floats, the name of the cast-core format that rounds to it.

The narrow formats' IR names, widths, numpy value dtypes and spellings are read from ``pyprecision.formats``
(the C core's one table), never retyped here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from pyprecision.formats import format as _format

__all__ = [
    "DTYPES",
    "FLOAT_DTYPES",
    "INTEGER_DTYPES",
    "DType",
    "bfloat16",
    "dtype_from_name",
    "float8_e5m2",
    "float8e4",
    "float8e4m3fn",
    "float16",
    "float32",
    "float32r",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
]


@dataclass(frozen=True, eq=False)
class DType:
    """An IR element type.

    ``name`` is the canonical text spelling; ``storage`` is the numpy dtype whose values (and bytes) hold
    one element (float32r is held in a float32 container with the low 13 mantissa bits zero);
    ``fmt`` is the cast-core format name (``None`` for float32 and the integers, which numpy rounds).
    Instances are singletons: compare with ``==`` or ``is``. ``dtype == np.float32`` is also accepted
    (true for ``float32`` only — never for ``float32r``).
    """

    name: str
    bits: int
    kind: str  # "float" | "int" | "uint"
    storage: Any
    fmt: str | None = None

    @property
    def is_float(self) -> bool:
        """True for every floating-point dtype (float32, float32r, bf16, fp16, the fp8s)."""
        return self.kind == "float"

    @property
    def is_integer(self) -> bool:
        """True for the signed and unsigned integer dtypes."""
        return self.kind in ("int", "uint")

    @property
    def is_signed(self) -> bool:
        """True for signed integers and for every float."""
        return self.kind != "uint"

    @property
    def itemsize(self) -> int:
        """Bytes per element in memory."""
        return self.bits // 8

    @property
    def np_dtype(self) -> np.dtype:
        """The numpy dtype of stored values (``np.float32`` for float32r)."""
        return np.dtype(self.storage)

    def __repr__(self) -> str:
        return self.name

    def __str__(self) -> str:
        return self.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DType):
            return self is other
        if other is None or isinstance(other, str):
            return False
        try:
            npd = np.dtype(other)  # type: ignore[call-overload]
        except TypeError:
            return NotImplemented
        return self.name != "float32r" and npd == self.np_dtype

    def __ne__(self, other: object) -> bool:
        r = self.__eq__(other)
        return r if r is NotImplemented else not r


float32 = DType("float32", 32, "float", np.float32)


def _narrow(fmt: str) -> DType:
    """The narrow float dtype of a cast-core format: its IR name, width and numpy value dtype all come
    from the format table (``pyprecision.formats``)."""
    f = _format(fmt)
    return DType(f.ir_name, f.bits, "float", f.dtype, f.name)


float32r = _narrow("fp32r")
bfloat16 = _narrow("bf16")
float16 = _narrow("fp16")
float8e4 = _narrow("fp8e4")
float8e4m3fn = _narrow("fp8e4m3fn")
float8_e5m2 = _narrow("fp8e5")
int8 = DType("int8", 8, "int", np.int8)
int16 = DType("int16", 16, "int", np.int16)
int32 = DType("int32", 32, "int", np.int32)
int64 = DType("int64", 64, "int", np.int64)
uint8 = DType("uint8", 8, "uint", np.uint8)
uint16 = DType("uint16", 16, "uint", np.uint16)
uint32 = DType("uint32", 32, "uint", np.uint32)
uint64 = DType("uint64", 64, "uint", np.uint64)

FLOAT_DTYPES: tuple[DType, ...] = (
    float32,
    float32r,
    bfloat16,
    float16,
    float8e4,
    float8e4m3fn,
    float8_e5m2,
)
INTEGER_DTYPES: tuple[DType, ...] = (int8, int16, int32, int64, uint8, uint16, uint32, uint64)
DTYPES: dict[str, DType] = {d.name: d for d in FLOAT_DTYPES + INTEGER_DTYPES}

# Accepted on input only; the printer always writes the canonical name. A narrow float is spelt by
# any lower-case spelling of its format (the format table's name, aliases, IR and HLO names:
# docs/decisions/numerics.md N1); float32 and the integers have short names of their own.
_ALIASES: dict[str, DType] = {
    **{s: d for d in FLOAT_DTYPES if d.fmt is not None for s in _format(d.fmt).spellings},
    "fp32": float32,
    "f32": float32,
    **{f"{d.kind[0]}{d.bits}": d for d in INTEGER_DTYPES},
}


def dtype_from_name(name: str) -> DType:
    """The dtype spelled ``name`` (canonical or alias); raises KeyError for unknown names."""
    d = DTYPES.get(name) or _ALIASES.get(name)
    if d is None:
        raise KeyError(name)
    return d


def as_dtype(x: Any) -> DType:
    """Coerce a DType, a dtype name, or a numpy dtype/type (float32 → float32, never float32r) to DType."""
    if isinstance(x, DType):
        return x
    if isinstance(x, str):
        return dtype_from_name(x)
    npd = np.dtype(x)
    for d in DTYPES.values():
        if d.name != "float32r" and d.np_dtype == npd:
            return d
    raise KeyError(str(npd))
