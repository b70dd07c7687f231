"""torch's own ``.to(dtype)`` against pyprecision's rne, where the two agree and where they do not
(docs/torch.md): on this torch (2.13, CPU) they agree on every value except NaN codes
(bf16 / fp16 / fp8e5), saturation (torch saturates float8_e4m3fn and only it) and float64 sources
(torch rounds them through float32 first: double rounding). And hypothesis properties of the intake.
"""
from __future__ import annotations

import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings

torch = pytest.importorskip(
    "torch", reason="PyTorch is not installed (pip install pyprecision[torch]); torch interop untested"
)

import pyprecision as pp  # noqa: E402
import pyprecision.testing as pt  # noqa: E402
from pyprecision.testing.sources import source_arrays, source_values  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from kernel.samples import SPECIAL_F32_BITS, boundary_f32_bits, stratified_f32_bits  # noqa: E402

#: format -> (torch dtype, the saturate setting under which torch's cast is pyprecision's rne)
TORCH_CASTS = {"bf16": (torch.bfloat16, False), "fp16": (torch.float16, False),
               "fp8e4m3fn": (torch.float8_e4m3fn, True), "fp8e5": (torch.float8_e5m2, False)}
_INT = {1: torch.int8, 2: torch.int16}
_UINT = {1: np.uint8, 2: np.uint16}


def _bits(t: object) -> np.ndarray:
    return t.view(_INT[t.element_size()]).numpy().view(_UINT[t.element_size()])


@pytest.mark.parametrize("fmt", list(TORCH_CASTS))
def test_torch_float32_casts_are_rne_except_nan_codes(fmt: str) -> None:
    td, sat = TORCH_CASTS[fmt]
    bits = np.concatenate([boundary_f32_bits(fmt), SPECIAL_F32_BITS, stratified_f32_bits(fmt, 1 << 16)])
    x = bits.view(np.float32)
    theirs = _bits(torch.from_numpy(x.copy()).to(td))
    ours = pp.encode(x, fmt, saturate=sat)
    differ = theirs != ours
    nan = np.isnan(x)
    assert not (differ & ~nan).any(), "torch and pyprecision differ on a non-NaN input"
    # where they differ, both are NaN codes (torch: another payload / sign)
    assert np.isnan(pp.decode(theirs[differ], fmt)).all()
    if fmt == "fp8e4m3fn":  # e4m3fn has one NaN code per sign: no room to differ
        assert not differ.any()
    else:
        assert differ.any()


@pytest.mark.parametrize("fmt", list(TORCH_CASTS))
def test_saturation_is_where_torch_and_the_neuron_default_part(fmt: str) -> None:
    td, sat = TORCH_CASTS[fmt]
    f = pp.format(fmt)
    m = min(f.max * 1.5, float(np.finfo(np.float32).max))
    big = np.array([m, -m, np.inf], np.float32)
    theirs = pp.decode(_bits(torch.from_numpy(big).to(td)), fmt)
    if sat:  # torch saturates e4m3fn to ±448 and sends inf there too, as Neuron's default does
        np.testing.assert_array_equal(theirs, pp.quantize(big, fmt))
    else:
        assert np.isinf(theirs).all()
        if f.default_saturate:  # fp8e5: Neuron saturates by default, torch does not
            np.testing.assert_array_equal(pp.quantize(big, fmt), [f.max, -f.max, f.max])


def _exact_rne_code(v: float, fmt: str) -> int:
    """The code of the format value nearest to v (ties to even code), by exact fractions."""
    f = pp.format(fmt)
    codes = np.arange(1 << (f.bits - 1), dtype=np.int64).astype(f.storage_dtype)
    with np.errstate(invalid="ignore"):
        vals = pp.decode(codes, fmt).astype(np.float64)
    ok = np.isfinite(vals)
    target = Fraction(v)
    best = min((abs(Fraction(float(val)) - target), int(c) & 1, int(c)) for c, val in
               zip(codes[ok], vals[ok], strict=True))
    return best[2]


def test_torch_double_rounds_float64_and_pyprecision_does_not() -> None:
    # issue 14's two values: a hair above a tie of the target; through float32 they land on it
    for raw, fmt, td in ((0x3790000000000001, "bf16", torch.bfloat16),
                         (0x3F50000000000001, "fp8e4m3fn", torch.float8_e4m3fn)):
        v = np.array([raw], np.uint64).view(np.float64)
        exact = _exact_rne_code(float(v[0]), fmt)
        assert int(pp.encode(v, fmt)[0]) == exact == 1
        theirs = int(_bits(torch.from_numpy(v).to(td))[0])
        assert theirs == int(pp.encode(v.astype(np.float32), fmt)[0]) == 0  # float32 first


@pytest.mark.parametrize("fmt", [f.name for f in pp.formats()])
@pytest.mark.parametrize("td", [torch.float64, torch.float32, torch.float16, torch.bfloat16,
                                torch.float8_e4m3fn, torch.float8_e5m2, torch.int32], ids=str)
def test_property_a_tensor_casts_as_its_array(td: object, fmt: str) -> None:
    dt = pp.kernel.tensor_as_array(torch.empty(0, dtype=td)).dtype

    @settings(max_examples=25, deadline=None, database=None)
    @given(source_arrays(source_values(fmt, dt), dt))
    def check(a: np.ndarray) -> None:
        t = pp.kernel.array_as_tensor(a.copy()) if dt.name != "int32" else torch.from_numpy(a.copy())
        assert t.dtype == td
        for rounding in ("rne", "rtz"):
            pt.assert_bits_equal(pp.encode(t, fmt, rounding=rounding).numpy(),
                                 pp.encode(a, fmt, rounding=rounding), fmt, inputs=a)

    check()
