"""cbrt is an elementwise float op (decision L22): the IR's ``cbrt`` computes the cube root in
float64 and rounds once, as the HLO evaluator does, so the lowering equals it bit for bit; the
passes treat it like exp or tanh (fp32 in the matmult modes, the mode's dtype in the all modes)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from lower_cases import bits_equal

from pyprecision import emulate, frontend, hlo, ir

TEXT = """HloModule m

ENTRY main {{
  x = {t}[{n}] parameter(0)
  ROOT c = {t}[{n}] cbrt(x)
}}
"""
SPECIALS = np.array([-8.0, -0.0, 0.0, 27.0, np.inf, -np.inf, np.nan, 1e-45, -3.0e38, 2.0],
                    np.float32)


def _module(t: str, n: int) -> hlo.HloModule:
    return hlo.parse(TEXT.format(t=t, n=n), "cbrt.hlo.txt")


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.float32, st.integers(1, 16), elements=st.floats(width=32)))
def test_lowered_cbrt_equals_the_hlo_evaluator(x):
    m = _module("f32", x.size)
    got = emulate.run_hlo(m, [x], frontend.parse_flags(["--auto-cast", "none"]))
    assert bits_equal(got[0], emulate.run_hlo(m, [x])[0])


@pytest.mark.parametrize("t", ["f32", "bf16"])
def test_specials_bit_for_bit(t):
    x = SPECIALS.astype(np.float32 if t == "f32" else ml_dtypes.bfloat16)
    m = _module(t, x.size)
    got = emulate.run_hlo(m, [x], frontend.parse_flags(["--auto-cast", "none"]))[0]
    want = emulate.run_hlo(m, [x])[0]
    assert bits_equal(got, want) and np.array_equal(np.signbit(got), np.signbit(want))
    assert np.signbit(got[1]) and got[0] == -2


def test_mode_all_runs_cbrt_in_bf16_and_matmult_leaves_it_alone():
    x = np.array([2.0, 3.0, 10.0], np.float32)
    m = _module("f32", 3)
    mm = emulate.run_hlo(m, [x], frontend.parse_flags(["--auto-cast", "matmult"]))[0]
    assert np.array_equal(mm, np.cbrt(x.astype(np.float64)).astype(np.float32))
    got = emulate.run_hlo(m, [x], frontend.parse_flags(["--auto-cast", "all"]))[0]
    want = emulate.run_hlo(_module("bf16", 3), [x.astype(ml_dtypes.bfloat16)])[0]
    assert bits_equal(got, want.astype(np.float32))
    fn = emulate.compile_hlo(m, frontend.parse_flags(["--auto-cast", "all"])).lowered.function
    (op,) = [i for i in fn.instructions() if isinstance(i, ir.UnaryOp) and i.kind == "cbrt"]
    assert op.dtype is ir.bfloat16


def test_cbrt_is_an_ir_word_that_round_trips_and_needs_a_float():
    text = ("func @main {\n  tensor @x : input float32[2]\n  tensor @y : output float32[2]\n^bb0:\n"
            "  %x = affine_load @x : float32[2]\n  %c = cbrt %x : float32[2]\n"
            "  affine_store %c, @y\n}\n")
    assert ir.to_text(ir.parse(text)) == text
    assert emulate.run_ir(ir.parse(text), {"x": np.array([-27, 8], np.float32)})["y"].tolist() == [-3, 2]
    bad = text.replace("float32", "int32")
    with pytest.raises(Exception) as e:
        ir.parse(bad, "b.pir")
    assert str(e.value).startswith("b.pir:")
