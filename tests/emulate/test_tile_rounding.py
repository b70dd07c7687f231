"""The IR evaluator's per-frame rounding of PE tiles (``emulate/ir/numbers.TileRounding``, decision
EM-16) gives ``round_to``'s bits on every narrow dtype: tiles sliced from one root (rounded whole
on the second tile), transposed and strided views, views of a rounded copy rounded again, bf16
values passed through — with NaN, ±inf, ±0 and subnormal elements — and rounding a rounded value
again changes nothing for any code of any format (what the pass-through relies on)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyprecision import ir
from pyprecision.emulate.ir.numbers import TileRounding, round_to

NARROW = [d for d in ir.FLOAT_DTYPES if d.fmt is not None]
SPECIAL = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -3e-39, 65520.0, 448.0,
                    57344.0, 3.4e38, 1.0 + 2.0**-8], np.float32)  # fmt: skip
# NaNs whose low 16 bits are zero (bf16-shaped) but whose payload rounding changes
SPECIAL = np.concatenate([SPECIAL, np.array([0x7F810000, 0xFFA50000, 0x7FC10000],
                                            np.uint32).view(np.float32)])


def bits(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x).view(np.uint32)


def root_values(rng: np.random.Generator, shape: tuple[int, ...], special: float,
                bf16: bool) -> np.ndarray:
    x = (rng.standard_normal(shape) * 2.0 ** rng.integers(-30, 30, shape)).astype(np.float32)
    if bf16:
        x = (x.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)
    pick = rng.random(shape) < special
    x[pick] = rng.choice(SPECIAL, size=int(pick.sum()))
    return x


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(NARROW), st.integers(2, 12), st.integers(1, 40), st.integers(1, 40),
       st.sampled_from([0.0, 0.02, 0.3]), st.booleans(), st.integers(0, 2**32 - 1))
def test_tiles_of_one_root_round_as_round_to(dt: ir.DType, b: int, m: int, k: int,
                                            special: float, bf16: bool, seed: int) -> None:
    rng = np.random.default_rng(seed)
    root = root_values(rng, (b, m, k), special, bf16)
    tiles = TileRounding()
    views = [root[i:i + 1].reshape(m, k) for i in range(b)] + [root[i].T for i in range(b)] \
        + [root[:, ::2, 1:], root[::-1, 0]]
    for v in views + views[:3]:  # seen again: from the rounded root
        got = tiles(v, dt)
        want = round_to(v, dt)
        assert got.shape == want.shape
        assert np.array_equal(bits(got), bits(want))
        again = tiles(got.T, dt)  # a view of the rounded copy, rounded again
        assert np.array_equal(bits(again), bits(round_to(got.T, dt)))


def test_interleaved_roots_and_a_broadcast() -> None:
    """The lowering's order: lhs tile, rhs tile, their transposes' casts, next batch entry."""
    rng = np.random.default_rng(3)
    lhs = root_values(rng, (16, 32, 8), 0.01, False)
    rhs = root_values(rng, (16, 32, 8), 0.01, False)
    tiles = TileRounding()
    bf16 = ir.bfloat16
    for i in range(16):
        for root in (lhs, rhs):
            t = root[i:i + 1].reshape(32, 8)
            got = tiles(t, bf16)
            assert np.array_equal(bits(got), bits(round_to(t, bf16)))
            assert np.array_equal(bits(tiles(got.T, bf16)), bits(round_to(got.T, bf16)))
    small = np.float32([1.1, np.nan])
    wide = np.broadcast_to(small, (20, 2))
    assert np.array_equal(bits(tiles(wide, bf16)), bits(round_to(wide, bf16)))


@pytest.mark.parametrize("dt", NARROW, ids=lambda d: d.name)
def test_rounding_a_rounded_value_changes_nothing(dt: ir.DType) -> None:
    """round_to(round_to(x)) is round_to(x), bit for bit: x every code of the format decoded
    (fp32r: its 2^19 codes), the specials, and 2^18 random float32 words (NaN payloads of both
    signs among them). (Rounding a *decoded* code is not always the identity: a saturating
    format's ±inf becomes ±max, a NaN code's payload the canonical NaN; a rounded value is.)"""
    import pyprecision as pp

    width = {"fp32r": 32, "bf16": 16, "fp16": 16}.get(dt.fmt or "", 8)
    if width == 32:
        codes = np.arange(1 << 19, dtype=np.uint32) << np.uint32(13)
    else:
        codes = np.arange(1 << width, dtype=np.uint8 if width == 8 else np.uint16)
    words = np.random.default_rng(11).integers(0, 2**32, 1 << 18, dtype=np.uint32)
    x = np.concatenate([pp.decode(codes, dt.fmt), SPECIAL, words.view(np.float32)])
    once = round_to(x, dt)
    assert np.array_equal(bits(round_to(once, dt)), bits(once))


def test_bf16_values_pass_through_but_not_their_nans() -> None:
    """bf16-valued tiles come back as they are; a NaN among them (which round_to makes the
    canonical NaN) sends the tile through round_to."""
    rng = np.random.default_rng(9)
    tiles = TileRounding()
    clean = root_values(rng, (64, 8), 0.0, True)
    assert tiles(clean, ir.bfloat16) is clean
    for word in (0x7F810000, 0xFFA50000, 0x7FC10000):
        t = clean.copy()
        t.view(np.uint32)[5, 3] = word
        assert np.array_equal(bits(tiles(t, ir.bfloat16)), bits(round_to(t, ir.bfloat16)))
