"""The C core's PE dot (csrc/dot.c, pyprecision.kernel.pe_dot) against the definition written here
as a plain NumPy loop over k: products rounded to the accumulation type, added k = 0, 1, ... to an
accumulator starting at +0, no FMA, NaN canonical (docs/decisions/numerics.md N5, N6), on every
instruction set this CPU has (tests/kernel/isas.py: KERNEL_TEST_ISAS narrows them), with NaN,
±inf, ±0 and subnormal operands, random and broadcast shapes, 1 and 2 threads."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyprecision.errors import CastError
from pyprecision.kernel import pe_dot, pe_matmul

from .isas import selected

ISAS = selected()


def loop_dot(a: np.ndarray, b: np.ndarray, dt: type) -> np.ndarray:
    """The definition: one NumPy step per k (every lane its own sum), from +0."""
    x, y = np.asarray(a).astype(dt), np.asarray(b).astype(dt)
    shape = np.broadcast_shapes(x.shape[:-2], y.shape[:-2]) + (x.shape[-2], y.shape[-1])
    acc = np.zeros(shape, dt)
    with np.errstate(all="ignore"):
        for k in range(x.shape[-1]):
            prod = x[..., :, k:k + 1] * y[..., k:k + 1, :]
            acc = acc + prod
    acc[np.isnan(acc)] = np.nan  # N6: the positive quiet NaN
    return acc


def bits(x: np.ndarray) -> np.ndarray:
    return x.view(np.uint32 if x.dtype == np.float32 else np.uint64)


def same_bits(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape
    diff = np.flatnonzero(bits(got) != bits(want))
    assert diff.size == 0, (f"{diff.size} elements differ, first at {diff[0]}: "
                            f"{got.flat[diff[0]]!r} != {want.flat[diff[0]]!r}")


SPECIAL32 = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1e-40, -3e-39, 1.1754942e-38,
             3.4028235e38, -3.4028235e38, 1.0, -1.0, 0.5]


def operand(rng: np.random.Generator, shape: tuple[int, ...], dt: type, special: float) -> np.ndarray:
    """Normal values across many binades, with a fraction ``special`` of specials mixed in."""
    x = rng.standard_normal(shape) * 2.0 ** rng.integers(-20, 20, shape)
    if dt == np.float64:
        x = x * 2.0 ** rng.integers(-900, 900, shape)
        pool = [0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -2e-310, 1.7976931348623157e308]
    else:
        pool = SPECIAL32
    pick = rng.random(shape) < special
    x[pick] = rng.choice(pool, size=int(pick.sum()))
    return x.astype(dt)


batch_dims = st.lists(st.integers(1, 3), min_size=0, max_size=2)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([np.float32, np.float64]), batch_dims, st.integers(1, 3),
       st.integers(1, 19), st.integers(0, 40), st.integers(1, 70), st.sampled_from([0, 0.05, 0.5]),
       st.integers(0, 2**32 - 1))
def test_pe_dot_is_the_k_loop_on_every_isa(dt: type, bdims: list[int], mask: int, m: int, k: int,
                                          n: int, special: float, seed: int) -> None:
    """Random shapes (K = 0 included; M, N not multiples of any vector width), batch dimensions
    broadcast one side or the other (mask), specials mixed in: bit for bit on every path."""
    rng = np.random.default_rng(seed)
    ab = tuple(d if mask & 1 else 1 for d in bdims)
    bb = tuple(d if mask & 2 else 1 for d in bdims)[len(bdims) // 2:]
    a = operand(rng, ab + (m, k), dt, special)
    b = operand(rng, bb + (k, n), dt, special)
    want = loop_dot(a, b, dt)
    for isa in ISAS:
        same_bits(pe_dot(a, b, dt, isa=isa, threads=1 + seed % 2), want)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("m,k,n", [(131, 300, 263), (7, 513, 70), (260, 1, 33), (1, 257, 1)])
def test_block_edges_and_threads(dt: type, m: int, k: int, n: int) -> None:
    """Shapes across the work items (128 rows, 256 columns) and the k blocks (256): the partial
    sums stored and reloaded between blocks change nothing; 1 and 2 threads give the same bits."""
    rng = np.random.default_rng(m * k + n)
    a, b = operand(rng, (m, k), dt, 0.01), operand(rng, (k, n), dt, 0.01)
    want = loop_dot(a, b, dt)
    for isa in ISAS:
        one = pe_dot(a, b, dt, isa=isa, threads=1)
        same_bits(one, want)
        same_bits(pe_dot(a, b, dt, isa=isa, threads=2), one)


def test_batched_attention_shape_threads() -> None:
    """bhqd,bhkd->bhqk after the caller's transpose: one call, batch threaded, = the loop."""
    rng = np.random.default_rng(3)
    q = operand(rng, (2, 3, 40, 32), np.float32, 0.0)
    kt = operand(rng, (2, 3, 32, 40), np.float32, 0.0)
    want = loop_dot(q, kt, np.float32)
    for isa in ISAS:
        same_bits(pe_dot(q, kt, isa=isa, threads=1), want)
        same_bits(pe_dot(q, kt, isa=isa, threads=2), want)


@pytest.mark.parametrize("isa", ISAS)
def test_no_fma(isa: str | None) -> None:
    """k=0: -(1+2^-11); k=1: (1+2^-12)^2 = 1 + 2^-11 + 2^-24 rounds to 1 + 2^-11, so the sum is
    +0. A fused multiply-add would keep the 2^-24."""
    h = 1 + 2.0**-12
    a = np.array([[-1.0, h]], np.float32)
    b = np.array([[1 + 2.0**-11], [h]], np.float32)
    got = pe_dot(np.repeat(a, 20, 0), np.repeat(b, 37, 1), isa=isa)
    assert np.all(bits(got) == 0)


@pytest.mark.parametrize("isa", ISAS)
def test_zero_sums_and_canonical_nan(isa: str | None) -> None:
    """-0 products sum to +0 (N5); K = 0 gives +0; inf - inf is the positive quiet NaN (N6)."""
    neg = pe_dot(np.full((3, 5), -0.0, np.float32), np.ones((5, 17), np.float32), isa=isa)
    assert np.all(bits(neg) == 0)
    empty = pe_dot(np.zeros((4, 0), np.float32), np.zeros((0, 19), np.float32), isa=isa)
    assert empty.shape == (4, 19) and np.all(bits(empty) == 0)
    a = np.array([[np.inf, -np.inf]], np.float64)
    nan = pe_dot(np.repeat(a, 9, 0), np.ones((2, 11)), np.float64, isa=isa)
    assert np.all(bits(nan) == 0x7FF8000000000000)
    nan32 = pe_dot(np.array([[-np.nan]], np.float32), np.ones((1, 18), np.float32), isa=isa)
    assert np.all(bits(nan32) == 0x7FC00000)


def test_pe_matmul_is_pe_dot_and_widens_narrow_operands() -> None:
    """pe_matmul is this dot; bf16 / int operands are converted exactly first."""
    import ml_dtypes

    rng = np.random.default_rng(11)
    a = rng.standard_normal((5, 9)).astype(ml_dtypes.bfloat16)
    b = rng.integers(-50, 50, (9, 4)).astype(np.int16)
    same_bits(pe_matmul(a, b), loop_dot(a.astype(np.float32), b.astype(np.float32), np.float32))
    same_bits(pe_matmul(a, b, np.float64), loop_dot(a, b, np.float64))


@pytest.mark.parametrize("a,b,acc,match", [
    (np.ones((2, 3)), np.ones((4, 2)), np.float32, "contracting dimensions differ"),
    (np.ones(3), np.ones((3, 2)), np.float32, "at least 2 dimensions"),
    (np.ones((2, 2, 3)), np.ones((3, 3, 2)), np.float32, "do not broadcast"),
    (np.ones((2, 3)), np.ones((3, 2)), np.float16, "float32 or float64"),
    (np.ones((2, 3), complex), np.ones((3, 2)), np.float32, "real number"),
    (np.ones((2, 3)), np.ones((3, 2)), "nope", "accumulation dtype"),
])
def test_bad_arguments(a: np.ndarray, b: np.ndarray, acc: object, match: str) -> None:
    with pytest.raises(CastError, match=match):
        pe_dot(a, b, acc)


def test_result_too_large_is_refused_before_allocation(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bytes are named; nothing is allocated (a broadcast view of 2^40 elements stays small)."""
    from pyprecision.kernel import _args

    a = np.broadcast_to(np.float32(1), (1 << 20, 1 << 20, 1))
    b = np.ones((1, 1 << 10), np.float32)
    with pytest.raises(CastError, match=r"needs 4,503,599,627,370,496 bytes"):
        pe_dot(a, b)
    monkeypatch.setattr(_args, "physical_memory", lambda: 1000)
    with pytest.raises(CastError, match=r"the result \(16, 16\) \(float32\) needs 1,024 bytes"):
        pe_dot(np.ones((16, 2), np.float32), np.ones((2, 16), np.float32))


@pytest.mark.parametrize("threads", [0, -1, 1.5, True])
def test_bad_thread_count(threads: object) -> None:
    with pytest.raises(CastError, match="threads"):
        pe_dot(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32), threads=threads)  # type: ignore[arg-type]


def test_hlo_dot_too_large_is_an_emulation_error_naming_the_op(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from pyprecision import hlo
    from pyprecision.emulate import run_hlo
    from pyprecision.errors import EmulationError
    from pyprecision.kernel import _args

    m = hlo.parse("HloModule m\nENTRY e {\n  a = f32[16,2]{1,0} parameter(0)\n"
                  "  b = f32[2,16]{1,0} parameter(1)\n  ROOT huge.7 = f32[16,16]{1,0} dot(a, b), "
                  "lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n")
    monkeypatch.setattr(_args, "physical_memory", lambda: 1000)
    with pytest.raises(EmulationError, match=r"huge\.7: pe_dot: the result .* needs 1,024 bytes"):
        run_hlo(m, [np.ones((16, 2), np.float32), np.ones((2, 16), np.float32)])
