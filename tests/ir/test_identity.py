"""``ir.is_identity_matrix``: the one identity test of the passes' transpose test (P8) and the
emulator's PE-transpose shortcut (EM-12); what it remembers (P28, P29)."""
from __future__ import annotations

import gc

import ml_dtypes
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pyprecision import ir
from pyprecision.ir.identity import _IDENTITIES

_IDENTITY_DTYPES = ["float32", "float64", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2",
                    "int32", "uint8", "bool", "complex64"]


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 5), st.sampled_from(_IDENTITY_DTYPES), st.data())
def test_identity_test_equals_array_equal_with_eye(n: int, dtype: str, data: st.DataObject) -> None:
    """The cheap identity test (decision P24) decides exactly what ``np.array_equal(value
    .astype(float64), np.eye(n))`` decided: identities, near-identities (one element changed to 0,
    2, -1, -0, NaN, inf), non-square and 1-D arrays; asked twice of a read-only array (the
    second answer may be remembered), it answers alike."""
    dt = np.dtype(getattr(ml_dtypes, dtype, None) or dtype)
    rows = data.draw(st.sampled_from([n, n + 1])) if n else n
    value = np.eye(rows, n).astype(dt)
    if value.size and data.draw(st.booleans()):
        i = data.draw(st.integers(0, rows - 1))
        j = data.draw(st.integers(0, n - 1))
        changes = [0, 2, -1] if dt.kind in "iub" else [0.0, 2.0, -1.0, -0.0, np.nan, np.inf, 1.0]
        if dt.kind == "b":
            changes = [False, True]
        with np.errstate(invalid="ignore"):
            value[i, j] = np.array(data.draw(st.sampled_from(changes))).astype(dt)
    if data.draw(st.booleans()):
        value = value.reshape(-1)
    want = value.ndim == 2 and value.shape[0] == value.shape[1] and bool(
        np.array_equal(value.astype(np.complex128 if dt.kind == "c" else np.float64),
                       np.eye(value.shape[0])))
    assert ir.is_identity_matrix(value) == want
    value.flags.writeable = False
    assert ir.is_identity_matrix(value) == want
    assert ir.is_identity_matrix(value) == want


@settings(max_examples=150, deadline=None)
@given(n=st.integers(1, 40), where=st.integers(0, 1599),
       word=st.sampled_from([0x80000000, 0x00000001, 0x80000001, 0x7FC00000, 0x3F800000,
                             0x00000000, 0xBF800000]),
       transpose=st.booleans())
def test_the_float32_shortcut_decides_as_the_definition(n: int, where: int, word: int,
                                                        transpose: bool) -> None:
    """Float32: square, 1.0 on the diagonal, zeros of either sign elsewhere; the uint32 count
    decides nothing the float test would decide otherwise (-0 off the diagonal stays an
    identity, a subnormal does not), C-contiguous or transposed."""
    x = np.eye(n, dtype=np.float32)
    i, j = divmod(where % (n * n), n)
    x[i, j] = np.array(word, np.uint32).view(np.float32)
    if transpose:
        x = x.T
    off = ~np.eye(n, dtype=bool)
    want = bool((np.diagonal(x) == 1).all() and (x[off] == 0).all())
    assert ir.is_identity_matrix(x) is want
    assert ir.is_identity_matrix(np.ascontiguousarray(x)) is want


def test_only_arrays_that_cannot_change_are_remembered() -> None:
    """A read-only array is remembered by object, a view of it by its own; a writeable one is
    tested each time (a write is seen); another array is tested on its own; a dead one is
    forgotten."""
    eye = np.eye(4, dtype=np.float32)
    assert ir.is_identity_matrix(eye) and id(eye) not in _IDENTITIES
    eye[0, 1] = 3.0
    assert not ir.is_identity_matrix(eye)

    frozen = np.eye(4, dtype=np.float32)
    frozen.flags.writeable = False
    assert ir.is_identity_matrix(frozen) and _IDENTITIES[id(frozen)]() is frozen
    ro_view = frozen[:, :]
    assert ir.is_identity_matrix(ro_view) and _IDENTITIES[id(ro_view)]() is ro_view
    from_bytes = np.frombuffer(np.eye(3, dtype=np.float32).tobytes(), np.float32).reshape(3, 3)
    assert ir.is_identity_matrix(from_bytes) and id(from_bytes) in _IDENTITIES

    other = np.eye(4, dtype=np.float32)[::-1].copy()
    other.flags.writeable = False
    assert not ir.is_identity_matrix(other) and id(other) not in _IDENTITIES

    key = id(frozen)
    del frozen, ro_view
    gc.collect()
    assert key not in _IDENTITIES


def test_the_emulator_and_the_passes_ask_one_test() -> None:
    """The emulator's PE transpose asks the same test the passes ask: an identity the pass
    remembered is remembered for the emulator, and the emulated transpose of a real model
    is the exact transpose."""
    from pyprecision import hlo, lower
    from pyprecision.passes import is_matmult_transpose
    from tests.models_data import load_model

    model = load_model("encoder_block")
    low = lower.lower(hlo.parse(model.text))
    tcs = [i for i in low.module.main.instructions() if isinstance(i, ir.TensorContractOp)]
    moving = [i.operands[1].owner.tensor.value for i in tcs if is_matmult_transpose(i)]
    assert moving and all(_IDENTITIES[id(v)]() is v for v in moving)

    from pyprecision.emulate.ir.ops import matmul_fp32

    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    eye = np.eye(3, dtype=np.float32)
    eye.flags.writeable = False
    np.testing.assert_array_equal(matmul_fp32(x, eye), x.T)
    assert _IDENTITIES[id(eye)]() is eye
