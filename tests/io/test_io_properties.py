"""Properties: whatever goes in comes out, bit for bit, whatever the chunking."""

from __future__ import annotations

import tempfile
from pathlib import Path

import ml_dtypes
import numpy as np
import safetensors
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import pyprecision as pp
from pyprecision.io import (
    NpzWriter,
    SafetensorsWriter,
    open_tensors,
    read_raw,
    save_safetensors,
)
from pyprecision.io.numpy_files import npy_can_store
from pyprecision.reencode import reencode
from pyprecision.testing import cast_inputs, float32_arrays

DTYPES = [
    np.float32,
    np.float16,
    np.float64,
    np.int8,
    np.uint16,
    np.int64,
    np.bool_,
    ml_dtypes.bfloat16,
    ml_dtypes.float8_e4m3fn,
    ml_dtypes.float8_e5m2,
]
SETTINGS = settings(max_examples=40, deadline=None)


@st.composite
def arrays(draw):
    dt = np.dtype(draw(st.sampled_from(DTYPES)))
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5))
    raw = draw(
        st.binary(
            min_size=int(np.prod(shape)) * dt.itemsize, max_size=int(np.prod(shape)) * dt.itemsize
        )
    )
    return np.frombuffer(raw, dt).reshape(shape) if raw or not shape else np.zeros(shape, dt)


@SETTINGS
@given(st.dictionaries(st.text("abc._", min_size=1, max_size=6), arrays(), min_size=1, max_size=5))
def test_safetensors_round_trip(tensors):
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "t.safetensors"
        save_safetensors(p, tensors)
        ref = dict(safetensors.deserialize(p.read_bytes()))  # the reference parser accepts it
        store = open_tensors(p)
        for k, v in tensors.items():
            assert bytes(ref[k]["data"]) == v.tobytes() and ref[k]["shape"] == list(v.shape)
            got = store.load(k)
            assert got.dtype == v.dtype and got.shape == v.shape and got.tobytes() == v.tobytes()


@SETTINGS
@given(arrays(), st.integers(1, 7))
def test_chunked_writers_equal_whole(a, step):
    flat = a.reshape(-1)
    with tempfile.TemporaryDirectory() as d:
        with SafetensorsWriter(Path(d) / "s.safetensors", [("a", a.dtype, a.shape)]) as w:
            for i in range(0, max(flat.size, 1), step):
                w.write("a", flat[i : i + step])
        assert open_tensors(Path(d) / "s.safetensors").load("a").tobytes() == a.tobytes()
        if npy_can_store(a.dtype):
            with NpzWriter(Path(d) / "n.npz") as nw:
                nw.begin("a", a.dtype, a.shape)
                for i in range(0, max(flat.size, 1), step):
                    nw.write(flat[i : i + step])
            assert np.load(Path(d) / "n.npz")["a"].tobytes() == a.tobytes()


@SETTINGS
@given(arrays(), st.sampled_from(["little", "big"]), st.integers(0, 9))
def test_raw_round_trip(a, order, offset):
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "r.bin"
        swapped = a.view(f"u{a.dtype.itemsize}").astype(
            ("<" if order == "little" else ">") + f"u{a.dtype.itemsize}"
        )
        p.write_bytes(b"x" * offset + swapped.tobytes())
        got = read_raw(p, a.dtype, a.shape, byte_order=order, offset=offset)
        assert got.dtype == a.dtype and got.tobytes() == a.tobytes()


@settings(max_examples=30, deadline=None)
@given(
    st.sampled_from(["bf16", "fp16", "fp32r", "fp8e4", "fp8e4m3fn", "fp8e5"]),
    st.sampled_from(["rne", "rtz", "rna", "stochastic"]),
    st.sampled_from([None, True, False]),
    st.integers(1, 40),
    st.data(),
)
def test_reencode_equals_one_encode_whatever_the_chunking(fmt, rounding, saturate, chunk, data):
    x = data.draw(float32_arrays(cast_inputs(fmt), max_size=100))
    seed = 7 if rounding == "stochastic" else None
    with tempfile.TemporaryDirectory() as d:
        src, out = Path(d) / "m.safetensors", Path(d) / "o.safetensors"
        save_safetensors(src, {"x": x})
        s = reencode(
            src, out, fmt, rounding=rounding, saturate=saturate, seed=seed, chunk_elements=chunk
        )
        from pyprecision.reencode import tensor_seed

        kw = {"seed": tensor_seed(7, "x")} if seed is not None else {}
        want = pp.encode(x, fmt, rounding=rounding, saturate=saturate, **kw)
        got = open_tensors(out).load("x").view(pp.format(fmt).storage_dtype)
        np.testing.assert_array_equal(got, want)
        assert s.total("nan") == int(np.isnan(pp.decode(want, fmt)).sum())
