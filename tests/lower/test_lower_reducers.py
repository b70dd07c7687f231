"""Reducers recognised by meaning (decision OP3): PyTorch/XLA's torch.all / torch.any reducers,
operands swapped, select-written integer max/min; float select-max stays unrecognised."""
from __future__ import annotations

import numpy as np
import pytest

from pyprecision import emulate, frontend, hlo
from pyprecision.errors import LoweringError
from pyprecision.lower.reducers import reducer_kind

NONE = frontend.parse_flags(["--auto-cast", "none"])

# as PyTorch/XLA 2.9 prints torch.all's reducer (an nn.TransformerEncoderLayer's padding mask)
TORCH_ALL = """  x = pred[] parameter(0)
  c0 = pred[] constant(false)
  ne0 = pred[] compare(x, c0), direction=NE
  y = pred[] parameter(1)
  c1 = pred[] constant(false)
  ne1 = pred[] compare(y, c1), direction=NE
  ROOT r = pred[] {op}(ne0, ne1)"""


def _module(reducer: str, t: str = "pred", init: str = "true") -> str:
    return (f"HloModule m\n\nR {{\n{reducer}\n}}\n\nENTRY e {{\n  p = {t}[3,4] parameter(0)\n"
            f"  i = {t}[] constant({init})\n  ROOT s = {t}[3] reduce(p, i), dimensions={{1}}, "
            "to_apply=R\n}\n")


def _kind(text: str) -> str | None:
    m = hlo.parse(text, "t.hlo")
    return reducer_kind(m.get_computation("R") if hasattr(m, "get_computation") else
                        next(c for c in m.computations if c.name == "R"))


@pytest.mark.parametrize("op,kind", [("and", "and"), ("or", "or")])
def test_torch_all_and_any_reducers_are_and_or(op, kind):
    assert _kind(_module(TORCH_ALL.format(op=op))) == kind


def test_torch_all_reducer_lowers_and_equals_the_evaluator():
    text = _module(TORCH_ALL.format(op="and"))
    m = hlo.parse(text, "t.hlo")
    x = np.array([[1, 1, 1, 1], [1, 0, 1, 1], [0, 0, 0, 0]], bool)
    want = emulate.run_hlo(m, [x])[0]
    assert want.tolist() == [True, False, False]
    got = emulate.run_hlo(m, [x], NONE)[0]
    assert np.asarray(got).astype(bool).tolist() == want.tolist()


def test_a_pred_reducer_that_is_neither_and_nor_or_is_not_a_kind_and_is_folded():
    xor = _module(TORCH_ALL.format(op="xor"))
    assert _kind(xor) is None
    m = hlo.parse(xor, "t.hlo")
    x = np.array([[1, 1, 1, 0], [1, 0, 1, 1], [0, 0, 0, 0]], bool)
    want = emulate.run_hlo(m, [x])[0]
    assert want.tolist() == [False, False, True]  # parity from the init true
    assert np.asarray(emulate.run_hlo(m, [x], NONE)[0]).astype(bool).tolist() == want.tolist()


def test_swapped_operands_are_the_same_kind():
    r = "  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT r = f32[] add(b, a)"
    assert _kind(_module(r, "f32", "0")) == "add"


@pytest.mark.parametrize("direction,on_true,kind", [
    ("GT", "a", "max"), ("GE", "a", "max"), ("LT", "a", "min"), ("GT", "b", "min"),
    ("LE", "b", "max"),
])
def test_select_written_integer_max_min(direction, on_true, kind):
    other = "b" if on_true == "a" else "a"
    r = (f"  a = s32[] parameter(0)\n  b = s32[] parameter(1)\n"
         f"  c = pred[] compare(a, b), direction={direction}\n"
         f"  ROOT r = s32[] select(c, {on_true}, {other})")
    text = _module(r, "s32", "0")
    assert _kind(text) == kind
    m = hlo.parse(text, "t.hlo")
    x = np.array([[3, -7, 9, 0], [-1, -2, -3, -4], [5, 5, 5, 5]], np.int32)
    assert np.array_equal(emulate.run_hlo(m, [x], NONE)[0], emulate.run_hlo(m, [x])[0])


def test_select_written_float_max_is_not_max():
    """select(NaN > y, NaN, y) = y but max(NaN, y) = NaN: not the same reducer."""
    r = ("  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
         "  c = pred[] compare(a, b), direction=GT\n  ROOT r = f32[] select(c, a, b)")
    assert _kind(_module(r, "f32", "0")) is None


_FLOAT_SELECT_MAX = ("  a = {t}[] parameter(0)\n  b = {t}[] parameter(1)\n"
                     "  c = pred[] compare(a, b), direction=GT\n  ROOT r = {t}[] select(c, a, b)")
_WEIGHTED = ("  a = {t}[] parameter(0)\n  b = {t}[] parameter(1)\n  h = {t}[] constant(0.5)\n"
             "  m = {t}[] multiply(b, h)\n  ROOT r = {t}[] add(a, m)")


@pytest.mark.parametrize("body", [_FLOAT_SELECT_MAX, _WEIGHTED], ids=["select-max", "a+b/2"])
@pytest.mark.parametrize("t", ["f32", "bf16"])
@pytest.mark.parametrize("dims,out", [("{1}", "[3]"), ("{0,1}", "[]"), ("{0}", "[4]")])
def test_any_other_elementwise_reducer_is_folded_in_the_evaluator_s_order(body, t, dims, out):
    """No reduce kind (select-max of floats keeps y on NaN; a + b/2 is not associative): folded
    step by step, the same bits as the evaluator's sequential fold (decision OP11)."""
    import ml_dtypes

    text = (f"HloModule m\n\nR {{\n{body.format(t=t)}\n}}\n\nENTRY e {{\n"
            f"  p = {t}[3,4] parameter(0)\n  i = {t}[] constant(-1)\n"
            f"  ROOT s = {t}{out} reduce(p, i), dimensions={dims}, to_apply=R\n}}\n")
    m = hlo.parse(text, "t.hlo")
    dt = np.float32 if t == "f32" else ml_dtypes.bfloat16
    x = np.array([[3, np.nan, 9, 0], [-0.0, 0.0, -3, 1.7], [5, 5, np.inf, 2.3]],
                 np.float32).astype(dt)
    want = np.asarray(emulate.run_hlo(m, [x])[0]).reshape(-1)
    got = np.asarray(emulate.run_hlo(m, [x], NONE)[0]).reshape(-1)
    assert np.array_equal(got.view(np.uint8), want.view(np.uint8)), (got, want)


def test_a_folded_reduce_too_long_is_one_located_error():
    text = (f"HloModule m\n\nR {{\n{_WEIGHTED.format(t='f32')}\n}}\n\nENTRY e {{\n"
            "  p = f32[2,300] parameter(0)\n  i = f32[] constant(0)\n"
            "  ROOT s = f32[2] reduce(p, i), dimensions={1}, to_apply=R\n}\n")
    with pytest.raises(LoweringError, match=r"t\.hlo:\d+:\d+: .*300 elements exceeds 256"):
        emulate.compile_hlo(hlo.parse(text, "t.hlo"), NONE, filename="t.hlo", text=text)
