"""pyprecision.format / formats against the spec's §1 table (literal facts in refmodel.FORMATS)."""
from __future__ import annotations

import numpy as np
import pytest

import pyprecision as pp
from pyprecision.errors import FormatError, PyPrecisionError

from . import refmodel as rm


@pytest.mark.parametrize("name", rm.FORMAT_NAMES)
def test_format_record_matches_spec_table(name: str) -> None:
    want = rm.FORMATS[name]
    f = pp.format(name)
    assert f.name == name
    assert (f.bits, f.exponent_bits, f.mantissa_bits, f.bias) == (
        want.bits, want.exponent_bits, want.mantissa_bits, want.bias)
    assert f.max == want.max_value
    assert f.max_bits == want.max_bits
    assert f.has_inf == (want.inf_bits is not None)
    assert np.dtype(f.storage_dtype) == np.dtype(want.storage)
    assert np.dtype(f.dtype) == np.dtype(want.dtype)


@pytest.mark.parametrize("alias,name", sorted(rm.ALIASES.items()))
def test_every_spec_alias_resolves(alias: str, name: str) -> None:
    assert pp.format(alias).name == name
    assert alias in pp.format(name).aliases


def test_formats_lists_the_six() -> None:
    assert sorted(f.name for f in pp.formats()) == sorted(rm.FORMAT_NAMES)


def test_unknown_format_lists_the_valid_ones() -> None:
    with pytest.raises(FormatError) as ei:
        pp.format("fp8e9")
    for name in rm.FORMAT_NAMES:
        assert name in str(ei.value)
    with pytest.raises(PyPrecisionError, match="fp8e4m3fn"):
        pp.encode(np.zeros(2, np.float32), "float9")
    with pytest.raises(PyPrecisionError, match="bf16"):
        pp.decode(np.zeros(2, np.uint16), "bf17")
