"""The IR evaluator's value representation and memory (issue 27): float32 values, values dropped
after their last use, memory shared read-only and copied before a row store (decisions EM-8, EM-9)."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from pyprecision import ir
from pyprecision.emulate import run_ir


def run1(text: str, **inputs):
    return run_ir(ir.parse(text), inputs)


def test_a_row_store_into_a_shared_tensor_changes_neither_the_input_nor_an_earlier_load():
    """Memory shares the float32 input array (no copy, decision EM-9); a generic_store into that
    tensor copies it first, so the caller's array and the value loaded before the store keep their
    values, and the output sees the store."""
    text = """func @main {
  tensor @x : input float32[3,2]
  tensor @i : input int32[1]
  tensor @y : output float32[3,2]
  tensor @z : output float32[3,2]
  %before = affine_load @x : float32[3,2]
  %u = affine_load @x : float32[3,2]
  %i = affine_load @i : int32[1]
  %r = mul %u, float32 2.0 : float32[3,2]
  %one = slice %r start=[0,0] limit=[1,2] strides=[1,1] : float32[1,2]
  generic_store %one, @x[%i]
  %after = affine_load @x : float32[3,2]
  affine_store %before, @y
  affine_store %after, @z
}
"""
    x = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32)
    keep = x.copy()
    got = run1(text, x=x, i=np.array([2], np.int32))
    assert np.array_equal(x, keep)  # the caller's array is untouched
    np.testing.assert_array_equal(got["y"], keep)  # the load before the store is a snapshot
    np.testing.assert_array_equal(got["z"], np.array([[1, 2], [3, 4], [2, 4]], np.float32))


def test_float_values_are_float32_and_a_trace_keeps_every_value():
    """Float values are held as float32 (exact for every float dtype, EM-8); with a trace nothing
    is dropped, and each traced value is its instruction's rounded result."""
    text = """func @main {
  tensor @x : input float32[2]
  tensor @y : output bfloat16[2]
  %x = affine_load @x : float32[2]
  %a = add %x, float32 1.0 : float32[2]
  %b = mul %a, %a : bfloat16[2]
  affine_store %b, @y
}
"""
    m = ir.parse(text)
    trace: dict[int, np.ndarray] = {}
    x = np.array([1.0 / 3, 2.0**-30], np.float32)
    got = run_ir(m, {"x": x}, trace=trace)
    insts = [i for i in m.main.instructions() if i.result is not None]
    assert len(trace) == len(insts)
    a, b = (trace[id(i)] for i in insts[1:])
    assert a.dtype == b.dtype == np.float32
    assert np.array_equal(a, x + np.float32(1))  # IEEE single add: already the rounded sum
    want = (a.astype(np.float64) ** 2).astype(ml_dtypes.bfloat16)  # one rounding from the exact
    assert np.array_equal(b.astype(ml_dtypes.bfloat16).view(np.uint16), want.view(np.uint16))
    assert np.array_equal(got["y"].view(np.uint16), want.view(np.uint16))


def test_a_value_is_dropped_after_its_last_reader():
    """Without a trace the frame holds no value past its last use (EM-9): when %c is computed,
    %a's array (last read by %b) is gone."""
    import gc
    import weakref

    text = """func @main {
  tensor @x : input float32[4]
  tensor @y : output float32[4]
  %x = affine_load @x : float32[4]
  %a = add %x, float32 1.0 : float32[4]
  %b = mul %a, %a : float32[4]
  %c = add %b, float32 1.0 : float32[4]
  affine_store %c, @y
}
"""
    from pyprecision.emulate.ir import ops

    seen: list[weakref.ref] = []
    alive: list[bool] = []
    real = ops.binary_rounded

    def spy(kind, a, b, is_float, dt, *src):
        if len(seen) == 2:  # computing %c
            gc.collect()
            alive.append(seen[0]() is not None)
        out = real(kind, a, b, is_float, dt, *src)
        seen.append(weakref.ref(out))
        return out

    from pyprecision.emulate.ir.eval import NUMERICS

    NUMERICS.binary_rounded = spy
    try:
        got = run1(text, x=np.arange(4, dtype=np.float32))
    finally:
        NUMERICS.binary_rounded = real
    assert alive == [False]
    np.testing.assert_array_equal(got["y"], (np.arange(4, dtype=np.float32) + 1) ** 2 + 1)


def test_a_stored_copy_of_a_tensor_is_not_changed_by_a_later_row_store_into_the_original():
    """@b = @a after one row store; a second row store into @a leaves @b (and the value loaded
    from @a) as they were, and repeated row stores into a tensor nobody read in between
    accumulate."""
    text = """func @main {
  tensor @x : input float32[3,2]
  tensor @i : input int32[1]
  tensor @j : input int32[1]
  tensor @a : output float32[3,2]
  tensor @b : output float32[3,2]
  %x = affine_load @x : float32[3,2]
  affine_store %x, @a
  %i = affine_load @i : int32[1]
  %j = affine_load @j : int32[1]
  %r = slice %x start=[0,0] limit=[1,2] strides=[1,1] : float32[1,2]
  generic_store %r, @a[%i]
  %v = affine_load @a : float32[3,2]
  affine_store %v, @b
  %s = mul %r, float32 10.0 : float32[1,2]
  generic_store %s, @a[%j]
  generic_store %s, @a[%i]
}
"""
    x = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32)
    got = run1(text, x=x, i=np.array([1], np.int32), j=np.array([2], np.int32))
    np.testing.assert_array_equal(got["b"], np.array([[1, 2], [1, 2], [5, 6]], np.float32))
    np.testing.assert_array_equal(got["a"], np.array([[1, 2], [10, 20], [10, 20]], np.float32))
