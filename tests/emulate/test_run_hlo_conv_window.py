"""convolution, reduce-window and select-and-scatter against definitions written out here
(loops over every output and window element), on hypothesis-drawn attributes. Integer-valued
inputs make every summation order exact, so the comparisons are exact."""
from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pyprecision import hlo
from pyprecision.emulate import run_hlo

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True)


def window_text(size, stride, pads, lhs, rhs, rev=None) -> str:
    j = "x".join
    text = (f"size={j(map(str, size))} stride={j(map(str, stride))} "
            f"pad={j(f'{a}_{b}' for a, b in pads)} lhs_dilate={j(map(str, lhs))} "
            f"rhs_dilate={j(map(str, rhs))}")
    if rev is not None:
        text += f" rhs_reversal={j(str(int(r)) for r in rev)}"
    return "{" + text + "}"


def dims_text(dims) -> str:
    return "f32[" + ",".join(map(str, dims)) + "]"


def ref_input(x, n, c, pos, lhs, pads):
    """Element at dilated-padded position ``pos`` of x[n, c, ...] (canonical layout), or None."""
    idx = []
    for p, dil, (lo, _), size in zip(pos, lhs, pads, x.shape[2:], strict=True):
        q = p - lo
        if q < 0 or q % dil or q // dil >= size:
            return None
        idx.append(q // dil)
    return x[(n, c, *idx)]


def conv_reference(x, k, stride, pads, lhs, rhs, rev, fgc, bgc, out_sp):
    """x [N, C, S...], k [O, I, K...] → [N/bgc, O, out_sp...] by the definition."""
    n_all, c = x.shape[:2]
    o, ki = k.shape[:2]
    out = np.zeros((n_all // bgc, o, *out_sp))
    for b, f in itertools.product(range(n_all // bgc), range(o)):
        g_f = f // (o // fgc)
        g_b = f // (o // bgc)
        for s in itertools.product(*map(range, out_sp)):
            acc = 0.0
            for kpos in itertools.product(*map(range, k.shape[2:])):
                pos = [si * st_ + kp * rd for si, st_, kp, rd in zip(s, stride, kpos, rhs, strict=True)]
                kk = tuple(ks - 1 - kp if r else kp
                           for ks, kp, r in zip(k.shape[2:], kpos, rev, strict=True))
                for i in range(ki):
                    v = ref_input(x, g_b * (n_all // bgc) + b, g_f * (c // fgc) + i, pos, lhs, pads)
                    if v is not None:
                        acc += v * k[(f, i, *kk)]
            out[(b, f, *s)] = acc
    return out


@st.composite
def conv_case(draw):
    nsp = draw(st.integers(1, 2))
    groups = draw(st.sampled_from([(1, 1), (2, 1), (3, 1), (1, 2)]))
    fgc, bgc = groups
    n = draw(st.integers(1, 2)) * bgc
    ki = draw(st.integers(1, 2))
    c = ki * fgc
    o = draw(st.integers(1, 2)) * fgc * bgc
    sp = [draw(st.integers(1, 5)) for _ in range(nsp)]
    ks = [draw(st.integers(1, 3)) for _ in range(nsp)]
    stride = [draw(st.integers(1, 3)) for _ in range(nsp)]
    pads = [(draw(st.integers(-1, 2)), draw(st.integers(-1, 2))) for _ in range(nsp)]
    lhs = [draw(st.integers(1, 3)) for _ in range(nsp)]
    rhs = [draw(st.integers(1, 2)) for _ in range(nsp)]
    rev = [draw(st.booleans()) for _ in range(nsp)]
    # labels: a random order of each operand's dimensions
    spatial = "".join(str(d) for d in range(nsp))
    lhs_l = "".join(draw(st.permutations(list("bf" + spatial))))
    rhs_l = "".join(draw(st.permutations(list("io" + spatial))))
    out_l = "".join(draw(st.permutations(list("bf" + spatial))))
    seed = draw(st.integers(0, 2**31))
    return nsp, fgc, bgc, n, c, ki, o, sp, ks, stride, pads, lhs, rhs, rev, lhs_l, rhs_l, out_l, seed


def _labelled(canonical, labels, special):
    """Permute a canonical-order array ([special0, special1, spatial...]) to ``labels``."""
    order = [special.index(ch) if ch in special else 2 + int(ch) for ch in labels]
    return np.transpose(canonical, order)


@SETTINGS
@given(conv_case())
def test_convolution_matches_the_definition(case) -> None:
    (nsp, fgc, bgc, n, c, ki, o, sp, ks, stride, pads, lhs, rhs, rev,
     lhs_l, rhs_l, out_l, seed) = case
    r = np.random.RandomState(seed)
    x = r.randint(-3, 4, (n, c, *sp)).astype(np.float32)
    k = r.randint(-3, 4, (o, ki, *ks)).astype(np.float32)
    out_sp = []
    for d in range(nsp):
        w = hlo.WindowDim(ks[d], stride[d], pads[d][0], pads[d][1], lhs[d], rhs[d], rev[d])
        out_sp.append(w.output_size(sp[d]))
    want = conv_reference(x.astype(np.float64), k.astype(np.float64), stride, pads, lhs, rhs,
                          rev, fgc, bgc, out_sp)
    xl, kl = _labelled(x, lhs_l, "bf"), _labelled(k, rhs_l, "oi")
    wl = _labelled(want, out_l, "bf")
    attrs = (f"window={window_text(ks, stride, pads, lhs, rhs, rev)}, "
             f"dim_labels={lhs_l}_{rhs_l}->{out_l}, feature_group_count={fgc}, "
             f"batch_group_count={bgc}")
    text = (f"HloModule m\n\nENTRY e {{\n  x = {dims_text(xl.shape)} parameter(0)\n"
            f"  k = {dims_text(kl.shape)} parameter(1)\n"
            f"  ROOT c = {dims_text(wl.shape)} convolution(x, k), {attrs}\n}}\n")
    (got,) = run_hlo(hlo.parse(text), [np.ascontiguousarray(xl), np.ascontiguousarray(kl)])
    np.testing.assert_array_equal(got, wl.astype(np.float32))


CONV_1D = """HloModule m

ENTRY e {
  x = f32[1,1,3] parameter(0)
  k = f32[1,1,3] parameter(1)
  ROOT c = f32[1,1,1] convolution(x, k), window={size=3}, dim_labels=bf0_oi0->bf0
}
"""


def test_convolution_sums_sequentially_in_f32() -> None:
    x = np.array([[[1e8, 1.0, -1e8]]], np.float32)
    (got,) = run_hlo(hlo.parse(CONV_1D), [x, np.ones((1, 1, 3), np.float32)])
    assert got[0, 0, 0] == 0.0  # (1e8 + 1) rounds to 1e8 in f32, then - 1e8; exact would be 1


def test_convolution_padding_contributes_nothing_even_against_inf() -> None:
    text = CONV_1D.replace("window={size=3}", "window={size=3 pad=1_1}").replace(
        "f32[1,1,1] convolution", "f32[1,1,3] convolution")
    k = np.array([[[np.inf, 1.0, 1.0]]], np.float32)
    (got,) = run_hlo(hlo.parse(text), [np.array([[[1.0, 2.0, 3.0]]], np.float32), k])
    assert got[0, 0, 0] == 3.0 and np.isinf(got[0, 0, 1:]).all()  # no 0 * inf = NaN


def reduce_window_reference(x, init, fn, size, stride, pads, lhs, rhs):
    out_sp = [hlo.WindowDim(s, t, a, b, ld, rd).output_size(n)
              for s, t, (a, b), ld, rd, n in zip(size, stride, pads, lhs, rhs, x.shape, strict=True)]
    out = np.empty(out_sp)
    for s in itertools.product(*map(range, out_sp)):
        acc = init
        for kpos in itertools.product(*map(range, size)):
            pos = [si * t + kp * rd for si, t, kp, rd in zip(s, stride, kpos, rhs, strict=True)]
            v = ref_input(x[None, None], 0, 0, pos, lhs, pads)
            if v is not None:
                acc = fn(acc, v)
        out[s] = acc
    return out


@SETTINGS
@given(st.integers(1, 3).flatmap(lambda r: st.tuples(
    st.lists(st.integers(1, 5), min_size=r, max_size=r),
    st.lists(st.integers(1, 3), min_size=r, max_size=r),
    st.lists(st.integers(1, 3), min_size=r, max_size=r),
    st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2)), min_size=r, max_size=r),
    st.lists(st.integers(1, 2), min_size=r, max_size=r),
    st.lists(st.integers(1, 2), min_size=r, max_size=r),
    st.sampled_from(["add", "maximum"]), st.integers(0, 2**31))))
def test_reduce_window_matches_the_definition(case) -> None:
    shape, size, stride, pads, lhs, rhs, op, seed = case
    x = np.random.RandomState(seed).randint(-9, 10, shape).astype(np.float32)
    init = 0.0 if op == "add" else -np.inf
    fn = (lambda a, b: a + b) if op == "add" else max
    want = reduce_window_reference(x.astype(np.float64), init, fn, size, stride, pads, lhs, rhs)
    text = (f"HloModule m\n\nr {{\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
            f"  ROOT c = f32[] {op}(a, b)\n}}\n\nENTRY e {{\n  x = {dims_text(shape)} parameter(0)\n"
            f"  i = f32[] constant({'0' if op == 'add' else '-inf'})\n"
            f"  ROOT w = {dims_text(want.shape)} reduce-window(x, i), "
            f"window={window_text(size, stride, pads, lhs, rhs)}, to_apply=r\n}}\n")
    (got,) = run_hlo(hlo.parse(text), [x])
    np.testing.assert_array_equal(got, want.astype(np.float32))


SELECT_AND_SCATTER = """HloModule m

ge {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=GE
}

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}

ENTRY e {
  x = f32[6] parameter(0)
  s = f32[5] parameter(1)
  z = f32[] constant(0)
  ROOT r = f32[6] select-and-scatter(x, s, z), window={size=2 stride=1}, select=ge, scatter=add
}
"""


def test_select_and_scatter_picks_the_first_maximum_and_adds_overlaps_in_order() -> None:
    x = np.array([1, 5, 5, 2, 7, 7], np.float32)
    s = np.array([10, 20, 30, 40, 50], np.float32)
    (got,) = run_hlo(hlo.parse(SELECT_AND_SCATTER), [x, s])
    # windows [1,5] [5,5] [5,2] [2,7] [7,7]: selected 1, 1 (tie: first), 2, 4, 4 (tie: first)
    np.testing.assert_array_equal(got, [0, 10 + 20, 30, 0, 40 + 50, 0])
