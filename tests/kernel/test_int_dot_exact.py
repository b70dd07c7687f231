"""Issue 13 item 7: ``int_dot(report=True)`` compares against the exact product even when it does
not fit int64/uint64 (Python integers, never a wrapped value)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pyprecision.kernel import int_dot


def _python_product(a: np.ndarray, b: np.ndarray) -> list[list[int]]:
    return [[sum(int(a[i, k]) * int(b[k, j]) for k in range(a.shape[1]))
             for j in range(b.shape[1])] for i in range(a.shape[0])]


def test_int_dot_report_exact_when_the_product_overflows_int64():
    a = np.full((2, 3), 2**62, np.int64)
    b = np.full((3, 2), 4, np.int64)
    got, rep = int_dot(a, b, np.int64, report=True)
    assert rep.exact.tolist() == [[3 * 2**64] * 2] * 2  # not wrapped
    assert rep.changed == 4  # the F32 route saturates at int64 max
    assert rep.max_abs_diff == 3 * 2**64 - int(got[0, 0])


def test_int_dot_report_exact_when_the_product_overflows_uint64():
    a = np.full((1, 1), 2**64 - 1, np.uint64)
    b = np.full((1, 1), 2, np.uint64)
    _, rep = int_dot(a, b, np.uint64, report=True)
    assert rep.exact.tolist() == [[2**65 - 2]] and rep.changed == 1


def test_int_dot_report_stays_int64_when_it_fits():
    a = np.array([[3, 4]], np.int32)
    b = np.array([[5], [6]], np.int32)
    _, rep = int_dot(a, b, report=True)
    assert rep.exact.dtype == np.int64 and rep.exact.tolist() == [[39]] and rep.changed == 0


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.data(), st.sampled_from([np.int64, np.uint64, np.int32]), st.integers(1, 3),
       st.integers(1, 4), st.integers(1, 3))
def test_int_dot_report_exact_equals_python_integers(data, dt, m, k, n):
    info = np.iinfo(dt)
    ints = st.integers(int(info.min), int(info.max))
    a = np.array(data.draw(st.lists(ints, min_size=m * k, max_size=m * k)), dt).reshape(m, k)
    b = np.array(data.draw(st.lists(ints, min_size=k * n, max_size=k * n)), dt).reshape(k, n)
    got, rep = int_dot(a, b, np.int64, report=True)
    exact = _python_product(a, b)
    assert rep.exact.tolist() == exact
    assert rep.changed == sum(int(g) != e for gr, er in zip(got.tolist(), exact, strict=True)
                              for g, e in zip(gr, er, strict=True))


def test_stride_zero_broadcast_larger_than_memory_is_refused_before_copying():
    """Issue 13 item 1: a broadcast view of 2**40 elements used to be copied whole (MemoryError)."""
    import numpy as np
    import pytest

    import pyprecision as pp
    from pyprecision.errors import CastError

    huge = np.broadcast_to(np.float32(1.0), (2**40,))
    with pytest.raises(CastError, match="more than this machine's memory"):
        pp.encode(huge, "bf16")
    small = np.broadcast_to(np.float32(1.5), (1000, 3))
    assert np.array_equal(pp.decode(pp.encode(small, "bf16"), "bf16"), np.full((1000, 3), 1.5))
