"""argmax / argmin (a reduce of values and s32 indices with JAX's comparator) → ``argreduce``
(decision L21): on random shapes, sets of reduced dimensions, f32 / bf16 / s32 values full of
ties, NaNs, signed zeros and infinities, and arbitrary indices, the lowered module equals the HLO
evaluator bit for bit (both outputs); the passes compare the values in the dtype they arrive in
and never touch the indices; other reducers of several operands are one located error."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lower_cases import bits_equal

from pyprecision import emulate, frontend, hlo, ir
from pyprecision.errors import LoweringError, ParseError, VerifyError
from pyprecision.frontend import FP32_CAST_MODES

NONE = frontend.parse_flags(["--auto-cast", "none"])
SPECIALS = np.array([-1.0, 0.0, -0.0, 1.0, 2.0, np.nan, np.inf, -np.inf, 0.5, 3.0e38], np.float32)
NP = {"f32": np.float32, "bf16": ml_dtypes.bfloat16, "s32": np.int32}
INIT = {("f32", "GT"): "-inf", ("f32", "LT"): "inf", ("bf16", "GT"): "-inf",
        ("bf16", "LT"): "inf", ("s32", "GT"): "-2147483648", ("s32", "LT"): "2147483647"}


def comparator(t: str, direction: str, *, nan: bool = True, tie: str = "LT",
               swap_or: bool = False) -> str:
    """JAX's argmax (GT) / argmin (LT) reducer on values of type ``t`` (variants for the refusal
    tests: no NaN clause, another tie rule, the or operands swapped)."""
    pick = "or(ne, gt)" if swap_or else "or(gt, ne)"
    lines = [f"  a = {t}[] parameter(0)", "  ia = s32[] parameter(1)",
             f"  b = {t}[] parameter(2)", "  ib = s32[] parameter(3)",
             f"  gt = pred[] compare(a, b), direction={direction}",
             "  ne = pred[] compare(a, a), direction=NE",
             f"  pick = pred[] {pick}" if nan else "  pick = pred[] and(gt, gt)",
             f"  v = {t}[] select(pick, a, b)",
             "  eq = pred[] compare(a, b), direction=EQ",
             f"  lt = pred[] compare(ia, ib), direction={tie}",
             "  tie = pred[] and(eq, lt)", "  pi = pred[] or(pick, tie)",
             "  i = s32[] select(pi, ia, ib)",
             f"  ROOT r = ({t}[], s32[]) tuple(v, i)"]
    return "cmp {\n" + "\n".join(lines) + "\n}\n"


def argreduce_text(t: str, shape: tuple[int, ...], dims: list[int], direction: str = "GT",
                   **variant: object) -> str:
    """A module reducing parameter 0 (values) and parameter 1 (s32 indices) over ``dims``."""
    out = [s for i, s in enumerate(shape) if i not in dims]
    sh = ",".join(map(str, shape))
    osh = ",".join(map(str, out))
    return ("HloModule m\n\n" + comparator(t, direction, **variant) +  # type: ignore[arg-type]
            f"\nENTRY main {{\n  x = {t}[{sh}] parameter(0)\n  idx = s32[{sh}] parameter(1)\n"
            f"  init = {t}[] constant({INIT[(t, direction)]})\n  zero = s32[] constant(0)\n"
            f"  red = ({t}[{osh}], s32[{osh}]) reduce(x, idx, init, zero), "
            f"dimensions={{{','.join(map(str, dims))}}}, to_apply=cmp\n"
            f"  v = {t}[{osh}] get-tuple-element(red), index=0\n"
            f"  i = s32[{osh}] get-tuple-element(red), index=1\n"
            f"  ROOT out = ({t}[{osh}], s32[{osh}]) tuple(v, i)\n}}\n")


def _values(t: str, draw_ints: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    if t == "s32":
        return (draw_ints % 5 - 2).astype(np.int32).reshape(shape)  # many ties
    return SPECIALS[draw_ints % len(SPECIALS)].astype(NP[t]).reshape(shape)


@st.composite
def cases(draw: st.DrawFn) -> tuple[str, str, np.ndarray, np.ndarray]:
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank)))
    dims = sorted(draw(st.sets(st.integers(0, rank - 1), max_size=rank)))
    t = draw(st.sampled_from(["f32", "bf16", "s32"]))
    direction = draw(st.sampled_from(["GT", "LT"]))
    n = int(np.prod(shape))
    raw = np.array(draw(st.lists(st.integers(0, 1000), min_size=n, max_size=n)), np.int64)
    x = _values(t, raw, shape)
    if draw(st.booleans()):  # JAX's iota along the last reduced dimension
        d = dims[-1] if dims else 0
        idx = np.broadcast_to(np.arange(shape[d], dtype=np.int32).reshape(
            [-1 if k == d else 1 for k in range(rank)]), shape).copy()
    else:  # any indices: repeated, negative
        idx = (raw[::-1] % 7 - 3).astype(np.int32).reshape(shape)
    return argreduce_text(t, shape, dims, direction), t, x, idx


@settings(max_examples=150, deadline=None)
@given(cases())
def test_lowered_argreduce_equals_the_hlo_evaluator(case):
    text, _, x, idx = case
    module = hlo.parse(text, "argreduce.hlo.txt")
    want = emulate.run_hlo(module, [x, idx])
    got = emulate.run_hlo(module, [x, idx], NONE)
    for g, w in zip(got, want, strict=True):
        assert bits_equal(g, w)
        if g.dtype.kind == "f":  # the signed zero the comparator picks, too
            assert np.array_equal(np.signbit(g.astype(np.float32)), np.signbit(w.astype(np.float32)))


def _run(text: str, args: list[np.ndarray], *flags: str) -> list[np.ndarray]:
    return emulate.run_hlo(hlo.parse(text, "a.hlo.txt"), args, frontend.parse_flags(list(flags)))


def test_nan_wins_and_ties_keep_the_lower_index():
    text = argreduce_text("f32", (3, 4), [1], "GT")
    x = np.array([[1, 5, 5, 2], [1, np.nan, 7, np.nan], [-np.inf] * 4], np.float32)
    idx = np.broadcast_to(np.arange(4, dtype=np.int32), (3, 4)).copy()
    v, i = _run(text, [x, idx], "--auto-cast", "none")
    assert i.tolist() == [1, 1, 0] and np.isnan(v[1]) and v[0] == 5 and v[2] == -np.inf
    v, i = _run(argreduce_text("f32", (3, 4), [1], "LT"), [x, idx], "--auto-cast", "none")
    assert i.tolist() == [0, 1, 0] and np.isnan(v[1])


def test_values_that_tie_only_in_bf16_pick_the_lower_index_in_mode_all():
    """1 + 2⁻¹⁰ and 1 differ in f32 and are both 1.0 in bf16: none and matmult compare in f32
    (index 1); all reads the input narrowed at the boundary (spec 000 §2), so the two tie and the
    lower index wins — what the HLO evaluator gives the module written in bf16."""
    text = argreduce_text("f32", (2, 3), [1], "GT")
    x = np.array([[1.0, 1.0 + 2**-10, 0.5], [0.25, -1.0, 0.25 + 2**-12]], np.float32)
    idx = np.broadcast_to(np.arange(3, dtype=np.int32), (2, 3)).copy()
    assert _run(text, [x, idx], "--auto-cast", "none")[1].tolist() == [1, 2]
    assert _run(text, [x, idx], "--auto-cast", "matmult")[1].tolist() == [1, 2]
    v, i = _run(text, [x, idx], "--auto-cast", "all")
    assert i.tolist() == [0, 0] and v.tolist() == [1.0, 0.25]
    bf = hlo.parse(text.replace("f32", "bf16"), "bf16.hlo.txt")
    want = emulate.run_hlo(bf, [x.astype(ml_dtypes.bfloat16), idx])
    assert i.tolist() == want[1].tolist() and bits_equal(v, want[0].astype(np.float32))


def _arg_ops(fn: ir.Function) -> list[ir.ArgReduceOp]:
    return [i for i in fn.instructions() if isinstance(i, ir.ArgReduceOp)]


def test_the_passes_never_touch_the_indices():
    """Under every --fp32-cast mode the index result and operand stay int32, no cast of an integer
    value is added, and the values result is fp32 or the mode's dtype."""
    module = hlo.parse(argreduce_text("f32", (4, 5), [0, 1], "GT"), "a.hlo.txt")
    for mode in FP32_CAST_MODES:
        fn = emulate.compile_hlo(module, frontend.parse_flags(["--fp32-cast", mode])).lowered.function
        ops = _arg_ops(fn)
        assert len(ops) == 2 and all(op.indices.dtype is ir.int32 for op in ops), mode
        assert [op.dtype for op in ops if not op.values] == [ir.int32]
        assert not any(isinstance(i, ir.UnaryOp) and i.is_cast and i.dtype.is_integer
                       for i in fn.instructions())  # fmt: skip
        (vals,) = [op for op in ops if op.values]
        assert (vals.dtype is ir.float32) == (mode == "none" or mode.startswith("matmult")), mode


def test_saturate_infinity_does_not_clamp_an_argmax():
    """An argmax cannot make a NaN of an infinity, so --enable-saturate-infinity leaves its operands
    alone: +inf still beats the largest finite f32 (clamped, the two would tie and index 0 win)."""
    text = argreduce_text("f32", (2,), [0], "GT")
    x = np.array([3.4028235e38, np.inf], np.float32)
    v, i = _run(text, [x, np.arange(2, dtype=np.int32)], "--enable-saturate-infinity")
    assert int(i.reshape(-1)[0]) == 1 and v.reshape(-1)[0] == np.inf


@pytest.mark.parametrize("variant,why", [
    ({"nan": False}, "no NaN clause"),
    ({"tie": "GT"}, "the higher index on ties"),
])
def test_an_unrecognised_reducer_is_one_located_error(variant, why):
    text = argreduce_text("f32", (2, 3), [1], "GT", **variant)
    with pytest.raises(LoweringError) as e:
        emulate.compile_hlo(hlo.parse(text, "r.hlo.txt"), NONE, filename="r.hlo.txt", text=text)
    line = next(n for n, ln in enumerate(text.splitlines(), 1) if " reduce(" in ln)
    assert str(e.value).startswith(f"r.hlo.txt:{line}:") and "argmax / argmin" in str(e.value), why


def test_the_or_operands_may_come_in_either_order():
    text = argreduce_text("f32", (2, 3), [1], "LT", swap_or=True)
    x = np.array([[2, 1, 1], [np.nan, 0, 0]], np.float32)
    idx = np.broadcast_to(np.arange(3, dtype=np.int32), (2, 3)).copy()
    want = emulate.run_hlo(hlo.parse(text, "a"), [x, idx])
    got = _run(text, [x, idx], "--auto-cast", "none")
    assert all(bits_equal(g, w) for g, w in zip(got, want, strict=True))
    assert got[1].tolist() == [1, 0]


THREE = """HloModule m

max3 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = f32[] parameter(2)
  d = f32[] parameter(3)
  e = f32[] parameter(4)
  f = f32[] parameter(5)
  x = f32[] maximum(a, e)
  y = f32[] maximum(b, d)
  z = f32[] maximum(c, f)
  ROOT r = (f32[], f32[], f32[]) tuple(x, y, z)
}

ENTRY main {
  p = f32[2,3] parameter(0)
  init = f32[] constant(-inf)
  ROOT red = (f32[2], f32[2], f32[2]) reduce(p, p, p, init, init, init), dimensions={1}, to_apply=max3
}
"""


def test_a_reduce_of_three_operands_that_mixes_them_is_one_located_error():
    with pytest.raises(LoweringError) as e:
        emulate.compile_hlo(hlo.parse(THREE, "r.hlo.txt"), NONE, filename="r.hlo.txt", text=THREE)
    assert str(e.value).startswith("r.hlo.txt:19:") and "3 operands" in str(e.value)


# -- the IR op itself --------------------------------------------------------------------------------
IR_TEXT = """func @main {
  tensor @x : input float32[2,3]
  tensor @i : output int32[2]
  tensor @v : output float32[2]
^bb0:
  %x = affine_load @x : float32[2,3]
  %n = iota dim=1 : int32[2,3]
  %a = argreduce.min %x, %n, float32 inf, int32 0 dims=[1] : int32[2]
  %b = argreduce.min %x, %n, float32 inf, int32 0 dims=[1] values : float32[2]
  affine_store %a, @i
  affine_store %b, @v
}
"""


def test_text_round_trips_and_runs():
    m = ir.parse(IR_TEXT, "a.pir")
    assert ir.to_text(m) == IR_TEXT
    out = emulate.run_ir(m, {"x": np.array([[3, -0.0, 0.0], [np.nan, 1, np.nan]], np.float32)})
    assert out["i"].tolist() == [1, 0] and np.isnan(out["v"][1])
    assert out["v"][0] == 0 and not np.signbit(out["v"][0])  # a tie picks the later value's bits


@pytest.mark.parametrize("old,new,message", [
    ("dims=[1] : int32[2]", "dims=[1] : int32[3]", "result shape"),
    ("dims=[1] : int32[2]", "dims=[2] : int32[2]", "increasing operand dimensions"),
    ("dims=[1] : int32[2]", "dims=[1] : int16[2]", "indices' dtype"),
    ("%n = iota dim=1 : int32[2,3]", "%n = iota dim=1 : float32[2,3]", "integers"),
    ("int32 0 dims=[1] values : float32[2]", "int32 0 dims=[1] values : int32[2]", "class"),
])
def test_the_verifier_rejects_with_a_location(old, new, message):
    bad = IR_TEXT.replace(old, new, 1)
    with pytest.raises(VerifyError) as e:
        ir.parse(bad, "bad.pir")
    line = next(n for n, ln in enumerate(bad.splitlines(), 1) if new.split(" :")[0] in ln)
    assert str(e.value).startswith("bad.pir:") and message in str(e.value)
    assert f":{line}:" in str(e.value) or "argreduce" in str(e.value)


def test_an_unknown_kind_is_a_parse_error():
    with pytest.raises(ParseError) as e:
        ir.parse(IR_TEXT.replace("argreduce.min %x, %n, float32 inf, int32 0 dims=[1] :",
                                 "argreduce.sum %x, %n, float32 inf, int32 0 dims=[1] :"), "k.pir")
    assert "argreduce" in str(e.value) and str(e.value).startswith("k.pir:8:")


INDEPENDENT = """HloModule m

both {
  a = f32[] parameter(0)
  b = s32[] parameter(1)
  c = f32[] parameter(2)
  d = s32[] parameter(3)
  s = f32[] add(c, a)
  m = s32[] maximum(b, d)
  ROOT r = (f32[], s32[]) tuple(s, m)
}

ENTRY main {
  x = f32[3,4] parameter(0)
  y = s32[3,4] parameter(1)
  z = f32[] constant(0)
  lo = s32[] constant(-7)
  ROOT red = (f32[3], s32[3]) reduce(x, y, z, lo), dimensions={1}, to_apply=both
}
"""


@pytest.mark.parametrize("flags", [["--auto-cast", "none"], ["--auto-cast", "all",
                                   "--disable-mixed-precision-accumulation"]])
def test_a_reduce_that_combines_each_operand_on_its_own_is_one_reduce_per_operand(flags):
    """tuple(add(p0, p2), maximum(p1, p3)) is a sum of x and a max of y sharing a loop: two
    ``reduce`` ops, equal to the evaluator (mode all with narrowed accumulation: the evaluator on
    the module written in bf16)."""
    x = (np.arange(12, dtype=np.float32).reshape(3, 4) / 7).astype(np.float32)
    y = np.array([[1, -9, 3, 2], [-8, -9, -10, -11], [5, 5, 0, 4]], np.int32)
    module = hlo.parse(INDEPENDENT, "i.hlo.txt")
    got = emulate.run_hlo(module, [x, y], frontend.parse_flags(flags))
    if "all" in flags:
        want = emulate.run_hlo(hlo.parse(INDEPENDENT.replace("f32", "bf16"), "b"),
                               [x.astype(ml_dtypes.bfloat16), y])
        want = [want[0].astype(np.float32), want[1]]
    else:
        want = emulate.run_hlo(module, [x, y])
    assert all(bits_equal(g, w) for g, w in zip(got, want, strict=True))
    assert got[1].tolist() == [3, -7, 5]
    fn = emulate.compile_hlo(module, frontend.parse_flags(flags)).lowered.function
    assert sorted(i.kind for i in fn.instructions() if isinstance(i, ir.ReduceOp)) == ["add", "max"]
