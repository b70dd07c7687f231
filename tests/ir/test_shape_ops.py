"""The data-movement, reduction and index ops the HLO lowering builds: each declared once, so each
prints, parses back, clones, verifies and evaluates from its one declaration."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from pyprecision import ir
from pyprecision.emulate import run_ir
from pyprecision.errors import VerifyError

BODY = """func @main {{
  tensor @x : input float32[2,3]
  tensor @y : output {out}
^bb0:
  %x = affine_load @x : float32[2,3]
  {line}
  affine_store %r, @y
}}
"""
X = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5

# (instruction text, result type, what NumPy says it computes from X)
CASES = [
    ("%r = broadcast %x dims=[0,2] : float32[2,4,3]", "float32[2,4,3]",
     lambda x: np.broadcast_to(x[:, None, :], (2, 4, 3))),
    ("%r = reshape %x : float32[3,2]", "float32[3,2]", lambda x: x.reshape(3, 2)),
    ("%r = transpose %x perm=[1,0] : float32[3,2]", "float32[3,2]", lambda x: x.T),
    ("%r = slice %x start=[0,1] limit=[2,3] strides=[1,2] : float32[2,1]", "float32[2,1]",
     lambda x: x[:, 1:3:2]),
    ("%r = concatenate %x, %x dim=1 : float32[2,6]", "float32[2,6]",
     lambda x: np.concatenate([x, x], 1)),
    ("%r = pad %x, float32 9.0 low=[1,-1] high=[0,2] interior=[1,0] : float32[4,4]", "float32[4,4]",
     lambda x: np.array([[9, 9, 9, 9], [-1.5, -0.5, 9, 9], [9, 9, 9, 9], [1.5, 2.5, 9, 9]])),
    ("%r = iota dim=1 : float32[2,3]", "float32[2,3]", lambda x: np.tile(np.arange(3.0), (2, 1))),
    ("%r = reduce.add %x, float32 0.5 dims=[1] : float32[2]", "float32[2]",
     lambda x: x.sum(1) + 0.5),
    ("%r = reduce.max %x, float32 -inf dims=[0,1] : float32[1]", "float32[1]",
     lambda x: np.array([x.max()])),
    ("%r = reverse %x dims=[1] : float32[2,3]", "float32[2,3]", lambda x: x[:, ::-1]),
    ("%r = update_slice %x, %x start=[0,0] : float32[2,3]", "float32[2,3]", lambda x: x),
    ("%r = satinf %x : float32[2,3]", "float32[2,3]", lambda x: x),
    ("%r = erf %x : float32[2,3]", "float32[2,3]",
     lambda x: np.vectorize(__import__("math").erf)(x)),
]


@pytest.mark.parametrize("line,out,numpy", CASES, ids=[c[0].split()[2] for c in CASES])
def test_op_prints_parses_clones_and_evaluates(line, out, numpy):
    text = BODY.format(out=out, line=line)
    m = ir.parse(text)
    assert ir.to_text(m) == text
    inst = next(i for i in m.main.instructions() if i.result is not None and i.result.name == "r")
    clone = inst.clone("r2")
    assert ir.instruction_to_text(clone).replace("%r2 ", "%r ") == line
    clone.drop_all_references()  # a detached clone is registered on its operands; drop it
    got = run_ir(m, {"x": X})["y"]
    want = np.asarray(numpy(X.astype(np.float64)), np.float32)
    assert np.array_equal(got, want.astype(got.dtype))


@pytest.mark.parametrize("line,message", [
    ("%r = broadcast %x dims=[1,0] : float32[3,2]", "increasing"),
    ("%r = reshape %x : float32[4,2]", "cannot reshape"),
    ("%r = transpose %x perm=[0,0] : float32[2,3]", "not a permutation"),
    ("%r = slice %x start=[0,2] limit=[2,1] strides=[1,1] : float32[2,1]", "bad slice"),
    ("%r = concatenate %x, %x dim=0 : float32[4,4]", "does not fit"),
    ("%r = reduce.add %x, float32 0.0 dims=[1] : float32[3]", "reduced shape"),
    ("%r = update_slice %x, %x start=[1,0] : float32[2,3]", "does not fit"),
    ("%r = reduce.and %x, float32 0.0 dims=[1] : float32[2]", "needs integers"),
])  # fmt: skip
def test_op_rules_are_checked_with_a_location(line, message):
    out = line.rsplit(":", 1)[1].strip()
    with pytest.raises(VerifyError, match=message) as e:
        ir.parse(BODY.format(out=out, line=line), "p.pir")
    assert "p.pir:6:3:" in str(e.value)


def test_reduce_accumulates_in_fp32_unless_narrow_acc():
    """bf16 operand, 300 ones plus a large start: fp32 accumulation keeps every one; narrow_acc
    rounds each partial sum to bf16 (256 + 1 = 256 in bf16)."""
    text = """func @main {
  tensor @x : input bfloat16[300]
  tensor @y : output bfloat16[1]
  tensor @z : output bfloat16[1]
^bb0:
  %x = affine_load @x : bfloat16[300]
  %a = reduce.add %x, bfloat16 256.0 dims=[0] : bfloat16[1]
  %b = reduce.add %x, bfloat16 256.0 dims=[0] narrow_acc : bfloat16[1]
  affine_store %a, @y
  affine_store %b, @z
}
"""
    m = ir.parse(text)
    assert ir.to_text(m) == text
    out = run_ir(m, {"x": np.ones(300, ml_dtypes.bfloat16)})
    assert float(out["y"][0]) == 556.0
    assert float(out["z"][0]) == 256.0


def test_satinf_clamps_to_the_max_of_its_own_dtype():
    text = """func @main {
  tensor @x : input float32[4]
  tensor @y : output bfloat16[4]
^bb0:
  %x = affine_load @x : float32[4]
  %r = satinf %x : bfloat16[4]
  affine_store %r, @y
}
"""
    got = run_ir(ir.parse(text), {"x": np.array([np.inf, -np.inf, np.nan, 1.0], np.float32)})["y"]
    top = float(ml_dtypes.finfo(ml_dtypes.bfloat16).max)
    assert [float(v) for v in got[:2]] == [top, -top] and np.isnan(float(got[2]))
