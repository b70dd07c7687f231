"""Every unary kind and the opaque kernels, against numpy computed in float64 and rounded once."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from pyprecision import ir
from pyprecision.emulate import run_ir

UN = """func @main {{
  tensor @x : input {dt}[6]
  tensor @y : output {dt}[6]
  %x = affine_load @x : {dt}[6]
  %r = {op} %x : {dt}[6]
  affine_store %r, @y
}}
"""

X = np.array([0.5, 1.75, 3.0, 0.1, 7.25, 2.0], np.float32)
REF = {
    "copy": lambda x: x,
    "neg": lambda x: -x,
    "abs": np.abs,
    "exp": np.exp,
    "log": np.log,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1.0 / np.sqrt(x),
    "reciprocal": lambda x: 1.0 / x,
    "relu": lambda x: np.maximum(x, 0),
    "tanh": np.tanh,
    "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "square": lambda x: x * x,
}


@pytest.mark.parametrize("op", sorted(REF))
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_float_unary(op, sign):
    x = X * np.float32(sign)
    with np.errstate(all="ignore"):
        want = REF[op](x.astype(np.float64)).astype(np.float32)
        got = run_ir(ir.parse(UN.format(dt="float32", op=op)), {"x": x})["y"]
    np.testing.assert_array_equal(got, want)


def test_bf16_unary_rounds_once_from_float64():
    x = np.array([0.5, 1.75, 3.0, 0.1, 7.25, 2.0], ml_dtypes.bfloat16)
    got = run_ir(ir.parse(UN.format(dt="bfloat16", op="sqrt")), {"x": x})["y"]
    exact = np.sqrt(x.astype(np.float64))
    # independent RNE to bf16: nearest of the two bf16 neighbours, ties to even mantissa
    lo = exact.astype(np.float32).view(np.uint32) & 0xFFFF0000
    cands = [lo, lo + 0x10000]
    vals = [c.view(np.float32).astype(np.float64) for c in cands]
    pick = np.where(np.abs(vals[0] - exact) <= np.abs(vals[1] - exact), vals[0], vals[1])
    np.testing.assert_array_equal(got.astype(np.float64), pick)


@pytest.mark.parametrize(
    "op,want",
    [
        ("neg", [-5, 128 - 256, 3]),
        ("abs", [5, -128, 3]),
        ("relu", [5, 0, 0]),
        ("square", [25, 0, 9]),
    ],
)
def test_int8_unary_wraps(op, want):
    text = UN.format(dt="int8", op=op).replace("[6]", "[3]")
    got = run_ir(ir.parse(text), {"x": np.array([5, -128, -3], np.int8)})["y"]
    assert got.dtype == np.int8 and got.tolist() == want


def test_opaque_add_and_copy():
    text = """func @main {
  tensor @a : input float32[2]
  tensor @b : input bfloat16[2]
  tensor @s : output bfloat16[2]
  tensor @c : output float32[2]
  opaque "add" ins(@a, @b) outs(@s)
  opaque "copy" ins(@b) outs(@c)
}
"""
    a = np.array([1.0, 2.0**-9], np.float32)
    b = np.array([2.0**-8, 1.0], ml_dtypes.bfloat16)
    got = run_ir(ir.parse(text), {"a": a, "b": b})
    # 1 + 2^-8 is a bf16 tie → 1.0; 1 + 2^-9 rounds down → 1.0
    assert got["s"].astype(np.float32).tolist() == [1.0, 1.0]
    assert got["c"].tolist() == [2.0**-8, 1.0]


def test_call_converts_at_the_boundary():
    text = """func @half {
  tensor @a : input bfloat16[2]
  tensor @r : output bfloat16[2]
  %a = affine_load @a : bfloat16[2]
  affine_store %a, @r
}

func @main {
  tensor @x : input float32[2]
  tensor @y : output float32[2]
  call @half ins(@x) outs(@y)
}
"""
    got = run_ir(ir.parse(text), {"x": np.array([1.0 + 2.0**-8 + 2.0**-20, 3.0], np.float32)})
    assert got["y"].tolist() == [1.0 + 2.0**-7, 3.0]
