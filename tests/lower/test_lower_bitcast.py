"""bitcast-convert under the precision passes (decision L25): the bits of an input are read through a
reinterpreting load, which no pass retypes; a bitcast of a value a mode narrowed reads it widened
back to float32. Before this, every mode that narrows fp32 (``--auto-cast all``) stopped with a
VerifyError ("bitcast bfloat16 -> int32 changes the width") on any bitcast of a float.

The expectations are independent of the lowering: the input's own bits (``x.view(int32)``), and the
HLO evaluator run on the module written by hand the way the mode computes it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from pyprecision import emulate, frontend, hlo, ir

HEAD = "HloModule m, entry_computation_layout={(f32[6]{0})->(s32[6]{0}, s32[6]{0})}\n\n"
#: a bitcast of the input, and one of a value the mode computes (exp)
BOTH = HEAD + """ENTRY main {
  p = f32[6]{0} parameter(0)
  e = f32[6]{0} exponential(p)
  b = s32[6]{0} bitcast-convert(p)
  c = s32[6]{0} bitcast-convert(e)
  ROOT t = (s32[6]{0}, s32[6]{0}) tuple(b, c)
}
"""
#: what mode `all` computes, written out: the input is loaded as bf16 (the boundary), exp of it in
#: bf16 is widened for the bitcast (L25), and DTypeMutator then writes exp's result as float32
#: directly, the widening cast made an identity (spec 002: operator_type_mutated; CastElimination
#: removes it): exp of the bf16 input, in float32
BY_HAND = HEAD + """ENTRY main {
  p = f32[6]{0} parameter(0)
  pb = bf16[6]{0} convert(p)
  pw = f32[6]{0} convert(pb)
  ew = f32[6]{0} exponential(pw)
  b = s32[6]{0} bitcast-convert(p)
  c = s32[6]{0} bitcast-convert(ew)
  ROOT t = (s32[6]{0}, s32[6]{0}) tuple(b, c)
}
"""
MODES = [["--auto-cast", "none"], ["--auto-cast", "matmult"], ["--auto-cast", "all"],
         ["--auto-cast", "all", "--auto-cast-type", "fp16"],
         ["--auto-cast", "all", "--auto-cast-type", "fp8_e4m3"],
         ["--fp32-cast", "all-fp32r"], ["--fp32-cast", "matmult-fp8e4"]]  # fmt: skip
FLOATS = hnp.arrays(np.float32, 6, elements=st.floats(width=32, allow_nan=True))


def _run(text: str, x: np.ndarray, argv: list[str] | None = None) -> list[np.ndarray]:
    module = hlo.parse(text, "m.hlo")
    if argv is None:
        return emulate.run_hlo(module, [x])  # the HLO evaluator
    return emulate.run_hlo(module, [x], frontend.parse_flags(argv))


def test_a_bitcast_of_an_input_is_a_reinterpreting_load():
    c = emulate.compile_hlo(hlo.parse(BOTH, "m.hlo"), frontend.parse_flags(["--auto-cast", "none"]),
                            filename="m.hlo", text=BOTH)
    text = ir.to_text(c.lowered.module)
    assert "affine_load @p as int32 : int32[6]" in text
    assert "bitcast %e : int32[6]" in text  # an interior value stays a bitcast


@pytest.mark.parametrize("argv", MODES, ids=[" ".join(a) for a in MODES])
@settings(max_examples=25, deadline=None)
@given(x=FLOATS)
def test_the_input_bits_survive_every_mode(argv: list[str], x: np.ndarray):
    b, _ = _run(BOTH, x, argv)
    assert b.dtype == np.int32 and b.tobytes() == x.view(np.int32).tobytes()


@settings(max_examples=50, deadline=None)
@given(x=FLOATS)
def test_mode_all_bitcasts_the_value_it_computed_widened(x: np.ndarray):
    got = _run(BOTH, x, ["--auto-cast", "all"])
    want = _run(BY_HAND, x)
    assert [g.tobytes() for g in got] == [w.tobytes() for w in want]


@settings(max_examples=25, deadline=None)
@given(x=FLOATS)
def test_mode_none_equals_the_evaluator(x: np.ndarray):
    got = _run(BOTH, x, ["--auto-cast", "none"])
    assert [g.tobytes() for g in got] == [w.tobytes() for w in _run(BOTH, x)]


def test_the_real_elementwise_misc_module_runs_in_mode_all():
    path = Path(__file__).resolve().parents[1] / "data" / "hlo-eval" / "jax-0.10.2"
    text = (path / "elementwise_misc.hlo.txt").read_text()
    z = np.load(path / "elementwise_misc.npz")
    ins = [z[f"in{i}"] for i in range(4)]
    out = emulate.run_hlo(hlo.parse(text, "elementwise_misc.hlo.txt"), ins,
                          frontend.parse_flags(["--auto-cast", "all"]))
    assert out[10].tobytes() == ins[0].view(np.int32).tobytes()  # bitcast_convert_type.1 of x


#: a value that is a matmul operand and is bitcast too: castTCOperand rewires every user of the
#: operand to its bf16 cast (L13) but the bitcast's (L25)
SHARED = """HloModule s, entry_computation_layout={(f32[2,2]{1,0}, f32[2,2]{1,0})->(s32[2,2]{1,0}, f32[2,2]{1,0})}

ENTRY main {
  p = f32[2,2]{1,0} parameter(0)
  q = f32[2,2]{1,0} parameter(1)
  e = f32[2,2]{1,0} exponential(p)
  d = f32[2,2]{1,0} dot(e, q), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  b = s32[2,2]{1,0} bitcast-convert(e)
  ROOT t = (s32[2,2]{1,0}, f32[2,2]{1,0}) tuple(b, d)
}
"""


@settings(max_examples=25, deadline=None)
@given(x=hnp.arrays(np.float32, (2, 2), elements=st.floats(-10, 10, width=32)))
def test_a_matmul_operand_that_is_bitcast_keeps_its_bits_for_the_bitcast(x: np.ndarray):
    module = hlo.parse(SHARED, "s.hlo")
    want = emulate.run_hlo(module, [x, x])  # the evaluator: exp in f32
    got = emulate.run_hlo(module, [x, x], frontend.parse_flags(["--auto-cast", "matmult"]))
    assert got[0].tobytes() == want[0].tobytes()
