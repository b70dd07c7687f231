"""The public references for rne / saturate=False / nan="ml_dtypes": ml_dtypes casts, numpy's
float16 cast, and for fp32r (which ml_dtypes lacks) the classic RNE bit trick."""
from __future__ import annotations

import numpy as np

from . import refmodel as rm
from . import refmodel_np as rn
from .samples import f32


def ml_reference(name: str, bits: np.ndarray) -> np.ndarray:
    """ml_dtypes / numpy reference (rne, saturate=False); NaN inputs follow the §4 policy."""
    fmt = rm.FORMATS[name]
    x = f32(bits)
    if name == "fp32r":
        return rn.fp32r_rne_bittrick(bits)
    with np.errstate(all="ignore"):
        out = x.astype(fmt.dtype).view(fmt.storage)
    isnan = np.isnan(x)
    if isnan.any():
        out = out.copy()
        sign = (np.asarray(bits, np.uint32)[isnan] >> np.uint32(31)).astype(fmt.storage)
        out[isnan] = fmt.nan_ml | (sign << np.array(fmt.bits - 1, fmt.storage))
    return out
