"""select-and-scatter (the gradient of a max / min pool) through the loop IR (decisions L19, L20):
on random windows — strides below, equal to and above the size (overlapping windows), padding,
ties, every JAX select direction — the lowered module equals the HLO evaluator bit for bit; the
IR op prints and parses back, its rules are located errors, its sums accumulate like a scatter-add,
and the passes retype it as a movement op. Unsupported select / scatter computations are one
located error each."""

from __future__ import annotations

import re
from dataclasses import dataclass

import ml_dtypes
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from lower_cases import bits_equal

from pyprecision import emulate, frontend, hlo, ir
from pyprecision.emulate import run_ir
from pyprecision.errors import LoweringError, ParseError, VerifyError
from pyprecision.frontend import FP32_CAST_MODES

NONE = frontend.parse_flags(["--auto-cast", "none"])
DIRECTIONS = ["GE", "GT", "LE", "LT"]


@dataclass(frozen=True)
class SasCase:
    """One select-and-scatter: operand shape, window, select direction, init."""

    shape: tuple[int, ...]
    size: tuple[int, ...]
    stride: tuple[int, ...]
    pads: tuple[tuple[int, int], ...]
    direction: str
    init: float

    @property
    def out(self) -> tuple[int, ...]:
        """The source shape (window positions per dimension)."""
        return tuple((b + lo + hi - k) // s + 1 for b, k, s, (lo, hi) in
                     zip(self.shape, self.size, self.stride, self.pads, strict=True))  # fmt: skip

    def text(self, select_root: str | None = None, scatter_root: str = "add(a, b)",
             dt: str = "f32") -> str:
        """The module; ``select_root`` / ``scatter_root`` replace the two computations' roots."""
        sh = lambda s: ",".join(map(str, s))  # noqa: E731
        x = lambda s: "x".join(map(str, s))  # noqa: E731
        sel = select_root or f"compare(a, b), direction={self.direction}"
        pad = "x".join(f"{lo}_{hi}" for lo, hi in self.pads)
        return (f"HloModule sas\n\nsel {{\n  a = {dt}[] parameter(0)\n  b = {dt}[] parameter(1)\n"
                f"  ROOT c = pred[] {sel}\n}}\n\nsc {{\n  a = {dt}[] parameter(0)\n"
                f"  b = {dt}[] parameter(1)\n  ROOT c = {dt}[] {scatter_root}\n}}\n\n"
                f"ENTRY main {{\n  x = {dt}[{sh(self.shape)}] parameter(0)\n"
                f"  s = {dt}[{sh(self.out)}] parameter(1)\n  i = {dt}[] constant({self.init})\n"
                f"  ROOT r = {dt}[{sh(self.shape)}] select-and-scatter(x, s, i), "
                f"window={{size={x(self.size)} stride={x(self.stride)} pad={pad}}}, "
                f"select=sel, scatter=sc\n}}\n")


@st.composite
def sas_cases(draw: st.DrawFn) -> SasCase:
    """A valid select-and-scatter with at least one window."""
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(1, 5)) for _ in range(rank))
    size = tuple(draw(st.integers(1, 3)) for _ in range(rank))
    stride = tuple(draw(st.integers(1, 3)) for _ in range(rank))
    pads = tuple((draw(st.integers(0, 1)), draw(st.integers(0, 1))) for _ in range(rank))
    assume(all(b + lo + hi >= k for b, k, (lo, hi) in zip(shape, size, pads, strict=True)))
    return SasCase(shape, size, stride, pads, draw(st.sampled_from(DIRECTIONS)),
                   draw(st.sampled_from([0.0, 1.5, -2.0])))


def _inputs(c: SasCase, seed: int) -> list[np.ndarray]:
    r = np.random.RandomState(seed)
    x = np.round(r.standard_normal(c.shape) * 2).astype(np.float32)  # small integers: many ties
    return [x, r.standard_normal(c.out).astype(np.float32)]


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(sas_cases(), st.integers(0, 2**16))
def test_lowered_select_and_scatter_equals_the_hlo_evaluator(c, seed):
    m = hlo.parse(c.text(), "s.hlo.txt")
    args = _inputs(c, seed)
    (got,), (want,) = emulate.run_hlo(m, args, NONE), emulate.run_hlo(m, args)
    assert bits_equal(got, want)


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(sas_cases(), st.integers(0, 2**16))
def test_a_bf16_select_and_scatter_with_narrow_accumulation_equals_the_evaluator(c, seed):
    """XLA's evaluator adds in the scatter computation's bf16: ``narrow_acc`` in the IR."""
    args = [a.astype(ml_dtypes.bfloat16) for a in _inputs(c, seed)]
    m = hlo.parse(c.text(dt="bf16"))
    cfg = frontend.parse_flags(["--auto-cast", "none", "--disable-mixed-precision-accumulation"])
    (got,), (want,) = emulate.run_hlo(m, args, cfg), emulate.run_hlo(m, args)
    assert bits_equal(got, want)


@settings(max_examples=40, deadline=None, derandomize=True, database=None)
@given(sas_cases())
def test_lowered_select_and_scatter_prints_and_parses_back(c):
    printed = ir.to_text(emulate.compile_hlo(hlo.parse(c.text()), None).lowered.module)
    assert "select_and_scatter." + c.direction.lower() in printed
    assert ir.to_text(ir.parse(printed)) == printed


BODY = """func @main {{
  tensor @x : input float32[3]
  tensor @s : input {stype}
  tensor @y : output {out}
^bb0:
  %x = affine_load @x : float32[3]
  %s = affine_load @s : {stype}
  {line}
  affine_store %r, @y
}}
"""
LINE = ("%r = select_and_scatter.{sel} %x, %s, float32 {init} size={size} stride=[1] pad_lo=[0] "
        "pad_hi=[0] : {out}")  # fmt: skip


def _line(sel: str = "ge", init: str = "0.5", size: str = "[2]", out: str = "float32[3]") -> str:
    return LINE.format(sel=sel, init=init, size=size, out=out)


@pytest.mark.parametrize("sel,want", [("ge", [1.5, 2.5, 0.5]), ("gt", [0.5, 1.5, 2.5]),
                                      ("le", [1.5, 2.5, 0.5]), ("lt", [0.5, 1.5, 2.5])])
def test_select_and_scatter_text_and_semantics(sel, want):
    """x = [3, 3, 3], two overlapping windows of 2: ge / le keep the first of a tie, gt / lt
    move to the last; each source value is added onto init = 0.5 at its window's choice."""
    text = BODY.format(line=_line(sel), stype="float32[2]", out="float32[3]")
    m = ir.parse(text, "p.pir")
    assert ir.to_text(ir.parse(ir.to_text(m))) == ir.to_text(m)
    got = run_ir(m, {"x": np.full(3, 3, np.float32), "s": np.array([1, 2], np.float32)})["y"]
    assert got.tolist() == want


@pytest.mark.parametrize("line,stype,out,message", [
    (_line(), "float32[3]", "float32[3]", "window output shape"),
    (_line(out="float32[2]"), "float32[2]", "float32[2]", "operand shape"),
    (_line(size="[2,1]"), "float32[2]", "float32[3]", "need 1 entries"),
    (_line(size="[0]"), "float32[4]", "float32[3]", ">= 1"),
    (_line(out="int32[3]"), "float32[2]", "int32[3]", "dtype class"),
])  # fmt: skip
def test_select_and_scatter_rules_are_checked_with_a_location(line, stype, out, message):
    with pytest.raises(VerifyError, match=message) as e:
        ir.parse(BODY.format(line=line, stype=stype, out=out), "p.pir")
    assert "p.pir:8:3:" in str(e.value)


def test_an_unknown_select_kind_is_a_parse_error():
    with pytest.raises(ParseError, match="unknown select_and_scatter op 'eq'"):
        ir.parse(BODY.format(line=_line("eq"), stype="float32[2]", out="float32[3]"), "p.pir")


CASE = SasCase((4, 4), (2, 2), (2, 2), ((0, 0), (0, 0)), "GE", 0.0)


@pytest.mark.parametrize("select_root,scatter_root,message", [
    ("compare(a, b), direction=EQ", "add(a, b)", "its select computation"),
    ("compare(b, a), direction=GE", "add(a, b)", "its select computation"),
    ("compare(a, b), direction=GE, type=TOTALORDER", "add(a, b)", "its select computation"),
    (None, "multiply(a, b)", "its scatter computation"),
    (None, "maximum(a, b)", "its scatter computation"),
])  # fmt: skip
def test_an_unsupported_select_or_scatter_is_one_located_error(select_root, scatter_root, message):
    text = CASE.text(select_root, scatter_root)
    with pytest.raises(LoweringError) as e:
        emulate.compile_hlo(hlo.parse(text, "s.hlo.txt"), NONE, filename="s.hlo.txt", text=text)
    assert re.match(rf"s\.hlo\.txt:\d+:\d+: r \(select-and-scatter\): {message}", str(e.value))
    assert "not lowered" in str(e.value)


def test_select_and_scatter_accumulates_in_fp32_unless_accumulation_is_narrowed():
    """Mode all runs it in bf16. Eight windows (size 8, stride 1, padding 7 low) all select x[0];
    their eight 2^-8 sources land on init 1.0: accumulated in fp32 (the default, as scatter.add,
    decision L20) they give 1.03125; narrowed, 1 + 2^-8 rounds back to 1 each time."""
    c = SasCase((8,), (8,), (1,), ((7, 0),), "GE", 1.0)
    m = hlo.parse(c.text())
    args = [np.array([1, 0, 0, 0, 0, 0, 0, 0], np.float32), np.full(8, 2.0**-8, np.float32)]
    wide = emulate.run_hlo(m, args, frontend.parse_flags(["--auto-cast", "all"]))[0]
    narrow = emulate.run_hlo(m, args, frontend.parse_flags(
        ["--auto-cast", "all", "--disable-mixed-precision-accumulation"]))[0]
    assert float(wide[0]) == 1.03125 and float(narrow[0]) == 1.0
    assert np.all(wide[1:] == 1.0) and np.all(narrow[1:] == 1.0)


def test_the_passes_retype_select_and_scatter_as_a_movement_op():
    """Under every --fp32-cast mode: fp32 in none and the matmult modes (AutoCastTCInputs casts
    only matmul operands), the mode's dtype in the all modes, where its operand and source arrive
    narrowed — the selection compares them in that dtype (decision L20)."""
    c = SasCase((4, 6), (2, 2), (2, 2), ((0, 0), (0, 0)), "GE", 0.0)
    m = hlo.parse(c.text())
    for mode in FP32_CAST_MODES:
        fn = emulate.compile_hlo(m, frontend.parse_flags(["--fp32-cast", mode])).lowered.function
        (op,) = [i for i in fn.instructions() if isinstance(i, ir.SelectAndScatterOp)]
        if mode == "none" or mode.startswith("matmult"):
            assert op.dtype is op.data.dtype is op.source.dtype is ir.float32, mode
        else:
            assert op.dtype is not ir.float32 and op.data.dtype is op.source.dtype is op.dtype, mode


def test_in_mode_all_ties_below_bf16_precision_keep_the_first_element():
    """1.0 and 1 + 2^-12 are one bf16 value: in mode all the max-pool gradient goes to the first
    element of the window (GE keeps a tie), in fp32 to the larger one."""
    c = SasCase((2,), (2,), (2,), ((0, 0),), "GE", 0.0)
    m = hlo.parse(c.text())
    args = [np.array([1.0, 1.0 + 2.0**-12], np.float32), np.array([4.0], np.float32)]
    assert emulate.run_hlo(m, args, NONE)[0].tolist() == [0.0, 4.0]
    assert emulate.run_hlo(m, args, frontend.parse_flags(["--auto-cast", "all"]))[0].tolist() == \
        [4.0, 0.0]
