"""The convolution's im2col route (emulate/shared/conv.py ``_as_dot``: one PE dot per feature
group) equals the loop over kernel positions and input features bit for bit, on random float
operands (where the order of the sum shows) with padding, strides, dilations, reversal and
feature groups; weights with inf take the loop (padding contributes nothing, not 0 · inf)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyprecision import hlo
from pyprecision.emulate import run_hlo
from pyprecision.emulate.shared import conv


def module(x_shape, k_shape, nsp, ks, stride, pads, lhs, rhs, rev, fgc, out_type="f32") -> str:
    j = "x".join
    window = (f"size={j(map(str, ks))} stride={j(map(str, stride))} "
              f"pad={j(f'{a}_{b}' for a, b in pads)} lhs_dilate={j(map(str, lhs))} "
              f"rhs_dilate={j(map(str, rhs))} rhs_reversal={j(str(int(r)) for r in rev)}")
    sp = "".join(str(d) for d in range(nsp))
    out_sp = [hlo.WindowDim(ks[d], stride[d], pads[d][0], pads[d][1], lhs[d], rhs[d],
                            rev[d]).output_size(x_shape[2 + d]) for d in range(nsp)]
    dims = lambda t, s: f"{t}[" + ",".join(map(str, s)) + "]"  # noqa: E731
    t = out_type
    return (f"HloModule m\n\nENTRY e {{\n  x = {dims(t, x_shape)} parameter(0)\n"
            f"  k = {dims(t, k_shape)} parameter(1)\n"
            f"  ROOT c = {dims(t, [x_shape[0], k_shape[0], *out_sp])} convolution(x, k), "
            f"window={{{window}}}, dim_labels=bf{sp}_oi{sp}->bf{sp}, "
            f"feature_group_count={fgc}\n}}\n")


def both_routes(text: str, x: np.ndarray, k: np.ndarray,
                monkeypatch: pytest.MonkeyPatch) -> tuple[np.ndarray, np.ndarray]:
    m = hlo.parse(text)
    (fast,) = run_hlo(m, [x, k])
    with monkeypatch.context() as mp:
        mp.setattr(conv, "USE_DOT", False)
        (loop,) = run_hlo(m, [x, k])
    return fast, loop


@settings(max_examples=40, deadline=None, derandomize=True)
@given(st.data())
def test_im2col_route_is_the_loop(data: st.DataObject) -> None:
    mp = pytest.MonkeyPatch()
    nsp = data.draw(st.integers(1, 2))
    fgc = data.draw(st.sampled_from([1, 2, 3]))
    n, ki, og = (data.draw(st.integers(1, 3)) for _ in range(3))
    sp = [data.draw(st.integers(1, 6)) for _ in range(nsp)]
    ks = [data.draw(st.integers(1, 3)) for _ in range(nsp)]
    stride = [data.draw(st.integers(1, 2)) for _ in range(nsp)]
    pads = [(data.draw(st.integers(-1, 2)), data.draw(st.integers(-1, 2))) for _ in range(nsp)]
    lhs = [data.draw(st.integers(1, 2)) for _ in range(nsp)]
    rhs = [data.draw(st.integers(1, 2)) for _ in range(nsp)]
    rev = [data.draw(st.booleans()) for _ in range(nsp)]
    dt = data.draw(st.sampled_from(["f32", "f64"]))
    out_sp = [hlo.WindowDim(ks[d], stride[d], pads[d][0], pads[d][1], lhs[d], rhs[d],
                            rev[d]).output_size(sp[d]) for d in range(nsp)]
    if min(out_sp) <= 0:
        return
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    npdt = np.float32 if dt == "f32" else np.float64
    x = (rng.standard_normal((n, ki * fgc, *sp)) * 1e3).astype(npdt)
    x.flat[:: 5] = -0.0
    if x.size > 3:
        x.flat[3] = np.inf
    k = rng.standard_normal((og * fgc, ki, *ks)).astype(npdt)
    text = module(x.shape, k.shape, nsp, ks, stride, pads, lhs, rhs, rev, fgc, dt)
    fast, loop = both_routes(text, x, k, mp)
    assert fast.dtype == loop.dtype and fast.tobytes() == loop.tobytes()


def test_inf_weights_take_the_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    text = module((1, 1, 3), (1, 1, 3), 1, [3], [1], [(1, 1)], [1], [1], [False], 1)
    k = np.array([[[np.inf, 1.0, 1.0]]], np.float32)
    fast, loop = both_routes(text, np.array([[[1.0, 2.0, 3.0]]], np.float32), k, monkeypatch)
    assert fast.tobytes() == loop.tobytes() and fast[0, 0, 0] == 3.0  # no 0 * inf


def test_large_columns_take_the_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(conv, "DOT_COLUMNS_MAX_BYTES", 16)
    text = module((1, 2, 5), (3, 2, 2), 1, [2], [1], [(0, 0)], [1], [1], [False], 1)
    rng = np.random.default_rng(5)
    x, k = rng.standard_normal((1, 2, 5)).astype(np.float32), rng.standard_normal((3, 2, 2))
    fast, loop = both_routes(text, x, k.astype(np.float32), monkeypatch)
    assert fast.tobytes() == loop.tobytes()
