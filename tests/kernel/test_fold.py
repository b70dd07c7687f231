"""``kernel.fold_f32`` (csrc/fold.c, decision EM-17): a reduce's sequential fold of float32 rows,
bit for bit NumPy's ``accumulate`` along the last axis from the initial value — on ±0, ±inf,
subnormals, sums and products that overflow or underflow, rows that are not a multiple of the
eight the kernel keeps in flight, at 1 and 2 threads; a NaN operand is refused (None)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyprecision.errors import CastError
from pyprecision.kernel import fold_f32

SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, 1e-45, -1e-40, 1.1754942e-38, 3.4e38, -3.4e38,
                    1.0, -1.0, 0.5], np.float32)  # fmt: skip


def accumulate(kind: str, x: np.ndarray, init: np.ndarray) -> np.ndarray:
    op = np.add if kind == "add" else np.multiply
    start = np.broadcast_to(init, x.shape[:-1])[..., None]
    with np.errstate(all="ignore"):
        return op.accumulate(np.concatenate([start, x], axis=-1), axis=-1)[..., -1]


def values(rng: np.random.Generator, shape: tuple[int, ...], special: float) -> np.ndarray:
    x = np.array(rng.standard_normal(shape) * 2.0 ** rng.integers(-40, 40, shape), np.float32)
    pick = np.asarray(rng.random(shape) < special)
    x[pick] = rng.choice(SPECIAL, size=int(pick.sum()))
    return x


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(["add", "mul"]), st.lists(st.integers(0, 19), min_size=0, max_size=2),
       st.integers(0, 300), st.sampled_from([0.0, 0.05, 0.5]), st.integers(1, 2),
       st.integers(0, 2**32 - 1))
def test_fold_is_accumulate(kind: str, lead: list[int], n: int, special: float, threads: int,
                            seed: int) -> None:
    rng = np.random.default_rng(seed)
    shape = tuple(lead) + (n,)
    x = values(rng, shape, special)
    init = values(rng, tuple(lead), special)
    want = accumulate(kind, x, init)
    got = fold_f32(kind, x, init, threads=threads)
    assert got is not None and got.shape == want.shape and got.dtype == np.float32
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def test_many_rows_split_between_threads_and_views() -> None:
    """Rows across the pool's chunks (2^16 elements each) and a transposed (copied) operand."""
    rng = np.random.default_rng(5)
    x = values(rng, (3001, 77), 0.01)
    init = np.float32(-0.0)
    want = accumulate("add", x, np.asarray(init))
    for t in (1, 2):
        got = fold_f32("add", x, np.asarray(init), threads=t)
        assert got is not None and np.array_equal(got.view(np.uint32), want.view(np.uint32))
    xt = values(rng, (40, 33), 0.0).T
    got = fold_f32("mul", xt, np.ones(33, np.float32))
    assert got is not None
    assert np.array_equal(got.view(np.uint32), accumulate("mul", xt, np.ones(33, np.float32)).view(np.uint32))


def test_a_step_that_makes_a_nan_gives_the_default_nan() -> None:
    """inf + -inf in a NaN-free row: the hardware's default NaN, as accumulate makes it."""
    x = np.array([[np.inf, -np.inf, 1.0], [0.0, np.inf, 2.0]], np.float32)
    for kind in ("add", "mul"):
        got = fold_f32(kind, x, np.zeros(2, np.float32) if kind == "add" else np.ones(2, np.float32))
        want = accumulate(kind, x, np.zeros(2, np.float32) if kind == "add" else np.ones(2, np.float32))
        assert got is not None and np.array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("where", ["x", "init"])
def test_a_nan_operand_is_refused(where: str) -> None:
    x = np.ones((9, 4), np.float32)
    init = np.zeros(9, np.float32)
    (x if where == "x" else init).reshape(-1)[3] = np.nan
    assert fold_f32("add", x, init) is None


@pytest.mark.parametrize("args,match", [
    (("max", np.ones((2, 2), np.float32), np.zeros(2, np.float32)), "kind"),
    (("add", np.ones((2, 2), np.float64), np.zeros(2, np.float32)), "float32 array"),
    (("add", np.ones((2, 2), np.float32), np.zeros(2, np.float64)), "init must be float32"),
    (("add", np.ones((2, 2), np.float32), np.zeros(3, np.float32)), "does not broadcast"),
    (("add", np.float32(1.0), np.zeros((), np.float32)), "at least 1 dimension"),
])
def test_bad_arguments(args: tuple[object, ...], match: str) -> None:
    with pytest.raises(CastError, match=match):
        fold_f32(*args)  # type: ignore[arg-type]
