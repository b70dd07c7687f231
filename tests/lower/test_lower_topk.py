"""topk → ``sort_perm`` (descending for largest, XLA's total order) + its first k entries + a
``gather`` (decision L23): on random shapes, k, largest / smallest, f32 / bf16 / s32 values full of
ties, NaNs (both signs), signed zeros and infinities, the lowered module equals the HLO evaluator
bit for bit; the passes never cast the indices."""

from __future__ import annotations

import ml_dtypes
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from lower_cases import bits_equal

from pyprecision import emulate, frontend, hlo, ir
from pyprecision.frontend import FP32_CAST_MODES

NONE = frontend.parse_flags(["--auto-cast", "none"])
SPECIALS = np.array([-1.0, 0.0, -0.0, 1.0, 2.0, np.nan, -np.nan, np.inf, -np.inf, 0.5],
                    np.float32)
NP = {"f32": np.float32, "bf16": ml_dtypes.bfloat16, "s32": np.int32}


def topk_text(t: str, shape: tuple[int, ...], k: int, largest: bool) -> str:
    sh = ",".join(map(str, shape))
    osh = ",".join(map(str, shape[:-1] + (k,)))
    return (f"HloModule m\n\nENTRY main {{\n  x = {t}[{sh}] parameter(0)\n"
            f"  t = ({t}[{osh}], s32[{osh}]) topk(x), k={k}, largest={str(largest).lower()}\n"
            f"  v = {t}[{osh}] get-tuple-element(t), index=0\n"
            f"  i = s32[{osh}] get-tuple-element(t), index=1\n"
            f"  ROOT out = ({t}[{osh}], s32[{osh}]) tuple(v, i)\n}}\n")


@st.composite
def cases(draw: st.DrawFn) -> tuple[str, np.ndarray]:
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=rank, max_size=rank)))
    k = draw(st.integers(0, shape[-1]))
    t = draw(st.sampled_from(["f32", "bf16", "s32"]))
    n = int(np.prod(shape))
    raw = np.array(draw(st.lists(st.integers(0, 1000), min_size=n, max_size=n)), np.int64)
    if t == "s32":
        x = (raw % 5 - 2).astype(np.int32).reshape(shape)
    else:
        x = SPECIALS[raw % len(SPECIALS)].astype(NP[t]).reshape(shape)
    return topk_text(t, shape, k, draw(st.booleans())), x


def _signs(a: np.ndarray) -> np.ndarray:
    return np.signbit(a.astype(np.float32)) if a.dtype.kind == "f" or a.dtype == ml_dtypes.bfloat16 \
        else a


@settings(max_examples=150, deadline=None)
@given(cases())
def test_lowered_topk_equals_the_hlo_evaluator(case):
    text, x = case
    module = hlo.parse(text, "topk.hlo.txt")
    want = emulate.run_hlo(module, [x])
    got = emulate.run_hlo(module, [x], NONE)
    for g, w in zip(got, want, strict=True):
        assert bits_equal(g, w) and np.array_equal(_signs(g), _signs(w))


def test_ties_nan_and_signed_zero_order():
    """largest: NaN above +inf, +0 above -0, a -NaN below -inf, equal values lower index first;
    smallest: the reverse order, equal values still lower index first."""
    x = np.array([[1, np.nan, 1, np.inf, -0.0, 0.0, -np.nan, -np.inf]], np.float32)
    v, i = emulate.run_hlo(hlo.parse(topk_text("f32", (1, 8), 8, True), "a"), [x], NONE)
    assert i.tolist() == [[1, 3, 0, 2, 5, 4, 7, 6]]
    v, i = emulate.run_hlo(hlo.parse(topk_text("f32", (1, 8), 8, False), "a"), [x], NONE)
    assert i.tolist() == [[6, 7, 4, 5, 0, 2, 3, 1]]


def test_the_passes_never_touch_the_indices():
    module = hlo.parse(topk_text("f32", (3, 6), 2, True), "a.hlo.txt")
    for mode in FP32_CAST_MODES:
        fn = emulate.compile_hlo(module, frontend.parse_flags(["--fp32-cast", mode])).lowered.function
        (perm,) = [i for i in fn.instructions() if isinstance(i, ir.SortPermOp)]
        assert perm.dtype is ir.int32
        assert not any(isinstance(i, ir.UnaryOp) and i.is_cast and i.dtype.is_integer
                       for i in fn.instructions())  # fmt: skip
        (g,) = [i for i in fn.instructions() if isinstance(i, ir.GatherOp)]
        assert (g.dtype is ir.float32) == (mode == "none" or mode.startswith("matmult")), mode


def test_keys_that_tie_only_in_bf16_keep_index_order_in_mode_all():
    x = np.array([[1.0, 1.0 + 2**-10, 0.5]], np.float32)
    module = hlo.parse(topk_text("f32", (1, 3), 2, True), "a")
    assert emulate.run_hlo(module, [x], NONE)[1].tolist() == [[1, 0]]
    v, i = emulate.run_hlo(module, [x], frontend.parse_flags(["--auto-cast", "all"]))
    assert i.tolist() == [[0, 1]] and v.tolist() == [[1.0, 1.0]]
