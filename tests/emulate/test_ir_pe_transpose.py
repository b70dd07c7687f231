"""Decision EM-24: a PE transpose (an identity operand) whose other operand has the result's dtype
skips the rounding to that dtype, for the dtypes whose rounding leaves each of their values as it
is (float32, bf16, fp16); it must equal ``round_to(matmul_fp32(s, m), dt)`` bit for bit, on values
of the format with NaN payloads, ±inf, ±0 and subnormals, and decline everywhere else."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyprecision import ir
from pyprecision.emulate.ir.numbers import round_to
from pyprecision.emulate.ir.ops import matmul_fp32, pe_transpose

from tests.emulate.test_ir_narrow_routes import _identity, matrices

TAKEN = [ir.float32, ir.bfloat16, ir.float16]
DECLINED = [ir.float8e4, ir.float8e4m3fn, ir.float8_e5m2, ir.float32r]


def _same(x: np.ndarray, y: np.ndarray) -> bool:
    x, y = np.ascontiguousarray(x), np.ascontiguousarray(y)
    return x.shape == y.shape and x.dtype == y.dtype and np.array_equal(
        x.view(np.uint8), y.view(np.uint8))


def _of(dt: ir.DType, y: np.ndarray) -> np.ndarray:
    """``y``'s words made values of ``dt`` (an input of the evaluator always is one)."""
    with np.errstate(all="ignore"):
        return np.ascontiguousarray(round_to(y.astype(np.float64), dt), dtype=np.float32)


@settings(max_examples=150, deadline=None)
@given(data=st.data(), dt=st.sampled_from(TAKEN))
def test_the_unrounded_transpose_equals_the_rounded_dot(data, dt: ir.DType) -> None:
    k, c = data.draw(st.integers(1, 9)), data.draw(st.integers(1, 9))
    y = _of(dt, data.draw(matrices(k, c)))
    eye = _identity(k, data.draw(st.booleans()))
    for s, m, sdt, mdt in ((y, eye, dt, ir.float32), (eye, y, ir.float32, dt)):
        got = pe_transpose(s, m, sdt, mdt, dt)
        assert got is not None
        assert _same(got, round_to(matmul_fp32(s, m), dt))


@pytest.mark.parametrize("dt", DECLINED, ids=lambda d: d.name)
def test_saturating_and_other_formats_are_rounded(dt: ir.DType) -> None:
    """The fp8s saturate a ±inf to their max and fp32r is not float32: no shortcut for them."""
    y = np.array([[np.inf, 1.0], [2.0, -3.0], [1.5, 0.0]], np.float32)  # ±inf: fp8e4 has it
    eye = _identity(3, False)
    assert pe_transpose(y, eye, dt, ir.float32, dt) is None
    assert pe_transpose(eye, y, ir.float32, dt, dt) is None
    if dt is ir.float8e4:  # where skipping the rounding would be wrong: its ±inf saturates
        assert not _same(y.T, round_to(matmul_fp32(y, eye), dt))


def test_an_operand_of_another_dtype_is_rounded() -> None:
    """An fp32 operand transposed into a bf16 result is rounded; so is a product that is not a
    transpose."""
    y = np.array([[1.0 + 2.0 ** -10, 3.0]], np.float32)
    eye = _identity(1, False)
    assert pe_transpose(y, eye, ir.float32, ir.float32, ir.bfloat16) is None
    assert pe_transpose(y, eye * 2, ir.bfloat16, ir.float32, ir.bfloat16) is None
    assert pe_transpose(eye, y, ir.bfloat16, ir.float32, ir.bfloat16) is None  # y is the fp32 one
