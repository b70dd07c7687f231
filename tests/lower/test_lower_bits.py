"""reduce-precision, popcnt, count-leading-zeros and a logical right shift of a signed integer
(the rest of the real ``elementwise_misc`` module): the lowered module equals the HLO evaluator
bit for bit on random values, exponent / mantissa widths, integer types and shift amounts; the IR
ops print, parse back and verify with located errors."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from lower_cases import bits_equal

from pyprecision import emulate, frontend, hlo, ir
from pyprecision.errors import VerifyError

NONE = frontend.parse_flags(["--auto-cast", "none"])
NP = {"s8": np.int8, "s16": np.int16, "s32": np.int32, "s64": np.int64, "u8": np.uint8,
      "u32": np.uint32, "u64": np.uint64}


def _module(body: str) -> hlo.HloModule:
    return hlo.parse(f"HloModule m\n\nENTRY main {{\n{body}}}\n", "bits.hlo.txt")


def _same(module: hlo.HloModule, args: list[np.ndarray]) -> None:
    got = emulate.run_hlo(module, args, NONE)
    want = emulate.run_hlo(module, args)
    for g, w in zip(got, want, strict=True):
        assert bits_equal(g, w)
        if g.dtype.kind == "f":
            assert np.array_equal(np.signbit(g), np.signbit(w))


@settings(max_examples=80, deadline=None)
@given(hnp.arrays(np.float32, st.integers(1, 12), elements=st.floats(width=32)),
       st.integers(1, 8), st.integers(0, 23), st.booleans())
def test_lowered_reduce_precision_equals_the_hlo_evaluator(x, e, m, bf16):
    t, x = ("bf16", x.astype(ml_dtypes.bfloat16)) if bf16 else ("f32", x)
    n = x.size
    _same(_module(f"  x = {t}[{n}] parameter(0)\n  ROOT r = {t}[{n}] reduce-precision(x), "
                  f"exponent_bits={e}, mantissa_bits={m}\n"), [x])


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(sorted(NP)), st.data())
def test_lowered_bit_counts_and_logical_shifts_equal_the_hlo_evaluator(t, data):
    dt = NP[t]
    info = np.iinfo(dt)
    n = data.draw(st.integers(1, 10))
    x = data.draw(hnp.arrays(dt, n, elements=st.integers(int(info.min), int(info.max))))
    s = data.draw(hnp.arrays(dt, n, elements=st.integers(0, min(int(info.max), 70))))
    body = (f"  x = {t}[{n}] parameter(0)\n  s = {t}[{n}] parameter(1)\n"
            f"  p = {t}[{n}] popcnt(x)\n  c = {t}[{n}] count-leading-zeros(x)\n"
            f"  r = {t}[{n}] shift-right-logical(x, s)\n"
            f"  ROOT o = ({t}[{n}], {t}[{n}], {t}[{n}]) tuple(p, c, r)\n")
    _same(_module(body), [x, s])


def test_a_logical_shift_of_a_negative_s32():
    x = np.array([-1, -8, 5, -2147483648], np.int32)
    s = np.array([28, 1, 0, 31], np.int32)
    m = _module("  x = s32[4] parameter(0)\n  s = s32[4] parameter(1)\n"
                "  ROOT r = s32[4] shift-right-logical(x, s)\n")
    (got,) = emulate.run_hlo(m, [x, s], NONE)
    assert got.tolist() == [15, 2147483644, 5, 1]


TEXT = """func @main {
  tensor @x : input float32[3]
  tensor @i : input int32[3]
  tensor @y : output float32[3]
  tensor @p : output int32[3]
  tensor @c : output int32[3]
^bb0:
  %x = affine_load @x : float32[3]
  %i = affine_load @i : int32[3]
  %r = reduce_precision %x exponent_bits=5 mantissa_bits=2 : float32[3]
  %p = popcnt %i : int32[3]
  %c = clz %i : int32[3]
  affine_store %r, @y
  affine_store %p, @p
  affine_store %c, @c
}
"""


def test_the_ops_round_trip_and_run():
    m = ir.parse(TEXT, "b.pir")
    assert ir.to_text(m) == TEXT
    out = emulate.run_ir(m, {"x": np.array([1.3, 70000.0, 1e-6], np.float32),
                             "i": np.array([-1, 1, 0], np.int32)})
    assert out["y"].tolist() == [1.25, np.inf, 0.0]
    assert out["p"].tolist() == [32, 1, 0] and out["c"].tolist() == [0, 31, 32]


@pytest.mark.parametrize("old,new,message", [
    ("%p = popcnt %i : int32[3]", "%p = popcnt %x : int32[3]", "integer"),
    ("%c = clz %i : int32[3]", "%c = clz %i : int16[3]", "its dtype"),
    ("mantissa_bits=2 : float32[3]", "mantissa_bits=2 : int32[3]", "floats"),
    ("exponent_bits=5", "exponent_bits=0", "exponent_bits"),
])
def test_the_verifier_rejects_with_a_location(old, new, message):
    bad = TEXT.replace(old, new)
    with pytest.raises(VerifyError) as e:
        ir.parse(bad, "bad.pir")
    line = next(n for n, ln in enumerate(bad.splitlines(), 1) if new in ln)
    assert str(e.value).startswith(f"bad.pir:{line}:") and message in str(e.value)
