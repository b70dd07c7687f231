"""API edge cases: layouts, shapes, byte order, out=, argument validation with useful messages."""
from __future__ import annotations

import numpy as np
import pytest

import pyprecision as pp
from pyprecision.errors import FormatError, PyPrecisionError

from . import refmodel as rm
from . import refmodel_np as rn

FMTS = rm.FORMAT_NAMES


def _x(shape: tuple, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4, shape)).astype(np.float32)


@pytest.mark.parametrize("name", FMTS)
def test_non_contiguous_inputs(name: str) -> None:
    x = _x((64, 48))
    for view in (x[::2], x[:, ::3], x.T, x[::-1, ::-2], np.asfortranarray(x)):
        got = pp.encode(view, name)
        assert got.shape == view.shape
        assert np.array_equal(got, pp.encode(np.ascontiguousarray(view), name))
        assert np.array_equal(got, rn.encode_np(name, np.ascontiguousarray(view), saturate=None))
        codes = pp.encode(x, name)
        cv = codes.T[::2]
        assert np.array_equal(pp.decode(cv, name), pp.decode(np.ascontiguousarray(cv), name))


@pytest.mark.parametrize("name", FMTS)
@pytest.mark.parametrize("shape", [(0,), (3, 0), (0, 5, 2)])
def test_zero_size(name: str, shape: tuple) -> None:
    fmt = rm.FORMATS[name]
    x = np.zeros(shape, np.float32)
    for kw in ({}, {"rounding": "stochastic", "seed": 1},
               {"rounding": "stochastic", "random_bits": np.zeros(shape, np.uint32)}):
        got = pp.encode(x, name, **kw)
        assert got.shape == shape and got.dtype == fmt.storage
    d = pp.decode(np.zeros(shape, fmt.storage), name)
    assert d.shape == shape and d.dtype == np.float32
    assert pp.quantize(x, name).shape == shape
    assert pp.cast(x, name).dtype == np.dtype(fmt.dtype)


@pytest.mark.parametrize("name", FMTS)
def test_zero_d(name: str) -> None:
    fmt = rm.FORMATS[name]
    x = np.array(1 + 2.0**-3 + 2.0**-12, np.float32)
    got = pp.encode(x, name)
    assert got.shape == () and got.dtype == fmt.storage
    assert int(got) == int(rn.encode_np(name, x.reshape(1), saturate=None)[0])
    d = pp.decode(got, name)
    assert d.shape == () and d.dtype == np.float32
    r = np.array(123456789, np.uint32)
    assert pp.encode(x, name, rounding="stochastic", random_bits=r).shape == ()


@pytest.mark.parametrize("dt", [">f4", ">f8", ">f2", ">i8", ">u2", ">i4"])
def test_big_endian_inputs(dt: str) -> None:
    """Big-endian input either works with the native result or raises a clear error."""
    with np.errstate(over="ignore", invalid="ignore"):
        native = (_x((257,)) * 100).astype(np.dtype(dt).newbyteorder("="))
    be = native.astype(dt)
    for name in FMTS:
        want = pp.encode(native, name)
        try:
            got = pp.encode(be, name)
        except PyPrecisionError as e:
            assert "endian" in str(e) or "byte order" in str(e)
            continue
        assert np.array_equal(got, want)


@pytest.mark.parametrize("name", FMTS)
def test_big_endian_codes_decode(name: str) -> None:
    fmt = rm.FORMATS[name]
    codes = pp.encode(_x((100,)), name)
    be = codes.astype(np.dtype(fmt.storage).newbyteorder(">"))
    try:
        got = pp.decode(be, name)
    except PyPrecisionError as e:
        assert "endian" in str(e) or "byte order" in str(e)
        return
    assert np.array_equal(got.view(np.uint32), pp.decode(codes, name).view(np.uint32))


def test_big_endian_random_bits() -> None:
    x = _x((100,))
    r = np.random.default_rng(0).integers(0, 1 << 32, 100, dtype=np.uint64).astype(np.uint32)
    want = pp.encode(x, "fp8e4", rounding="stochastic", random_bits=r)
    try:
        got = pp.encode(x, "fp8e4", rounding="stochastic", random_bits=r.astype(">u4"))
    except PyPrecisionError as e:
        assert "endian" in str(e) or "byte order" in str(e) or "uint32" in str(e)
        return
    assert np.array_equal(got, want)


def test_python_lists_and_scalars() -> None:
    assert np.array_equal(pp.encode([1.0, 2.5, -3.0], "bf16"),
                          pp.encode(np.array([1.0, 2.5, -3.0]), "bf16"))
    assert int(pp.encode(3.0, "fp8e4")) == 0x44


@pytest.mark.parametrize("name", FMTS)
def test_out_is_filled_and_returned(name: str) -> None:
    fmt = rm.FORMATS[name]
    x = _x((5, 7))
    out = np.empty((5, 7), fmt.storage)
    res = pp.encode(x, name, out=out)
    assert res is out
    assert np.array_equal(out, pp.encode(x, name))
    dout = np.empty((5, 7), np.float32)
    assert pp.decode(out, name, out=dout) is dout
    assert np.array_equal(dout.view(np.uint32), pp.decode(out, name).view(np.uint32))


@pytest.mark.parametrize("name", FMTS)
def test_out_refused_with_reason(name: str) -> None:
    fmt = rm.FORMATS[name]
    x = _x((4, 3))
    wrong = np.uint16 if fmt.bits != 16 else np.uint8
    with pytest.raises(PyPrecisionError, match="dtype"):
        pp.encode(x, name, out=np.empty((4, 3), wrong))
    with pytest.raises(PyPrecisionError, match="shape"):
        pp.encode(x, name, out=np.empty((3, 4), fmt.storage))
    ro = np.empty((4, 3), fmt.storage)
    ro.setflags(write=False)
    with pytest.raises(PyPrecisionError, match="read-only|writeable|writable"):
        pp.encode(x, name, out=ro)
    codes = pp.encode(x, name)
    with pytest.raises(PyPrecisionError, match="dtype"):
        pp.decode(codes, name, out=np.empty((4, 3), np.float64))
    with pytest.raises(PyPrecisionError, match="shape"):
        pp.decode(codes, name, out=np.empty((12,), np.float32))
    rof = np.empty((4, 3), np.float32)
    rof.setflags(write=False)
    with pytest.raises(PyPrecisionError, match="read-only|writeable|writable"):
        pp.decode(codes, name, out=rof)


def test_non_contiguous_out_works_or_is_refused() -> None:
    x = _x((10,))
    out = np.zeros(20, np.uint16)[::2]
    try:
        pp.encode(x, "bf16", out=out)
    except PyPrecisionError as e:
        assert "contiguous" in str(e)
        return
    assert np.array_equal(out, pp.encode(x, "bf16"))


def test_unknown_names_list_the_valid_ones() -> None:
    x = _x((3,))
    with pytest.raises(FormatError) as ei:
        pp.encode(x, "fp4")
    assert all(n in str(ei.value) for n in FMTS)
    with pytest.raises(FormatError) as ei:
        pp.encode(x, "bf16", rounding="nearest")
    assert all(r in str(ei.value) for r in rm.ROUNDINGS)
    with pytest.raises(FormatError) as ei:
        pp.encode(x, "bf16", nan="ieee")
    assert all(p in str(ei.value) for p in rm.NAN_POLICIES)
    with pytest.raises(FormatError, match="rtz"):
        pp.quantize(x, "bf16", rounding="RTZ ")
    with pytest.raises(FormatError, match="nvidia"):
        pp.cast(x, "fp8e4", nan="NVIDIA!")


def test_random_bits_refused_with_reason() -> None:
    x = _x((4, 3))
    with pytest.raises(PyPrecisionError, match="shape"):
        pp.encode(x, "bf16", rounding="stochastic", random_bits=np.zeros(12, np.uint32))
    with pytest.raises(PyPrecisionError, match="shape"):
        pp.encode(x, "bf16", rounding="stochastic", random_bits=np.zeros((4, 2), np.uint32))
    for dt in (np.int32, np.uint64, np.float32, np.uint16):
        with pytest.raises(PyPrecisionError, match="uint32"):
            pp.encode(x, "bf16", rounding="stochastic", random_bits=np.zeros((4, 3), dt))


@pytest.mark.parametrize("threads", [0, -1, -8])
def test_bad_thread_counts_refused(threads: int) -> None:
    with pytest.raises(PyPrecisionError, match="threads"):
        pp.encode(_x((8,)), "bf16", threads=threads)
    with pytest.raises(PyPrecisionError, match="threads"):
        pp.encode(_x((8,)), "bf16", rounding="stochastic", seed=1, threads=threads)


def test_unsupported_dtypes_refused_with_reason() -> None:
    for bad in (np.array(["a"]), np.array([1 + 2j]), np.array([None], object)):
        with pytest.raises(PyPrecisionError, match="dtype"):
            pp.encode(bad, "bf16")
    with pytest.raises(PyPrecisionError, match="8-bit|uint8"):
        pp.decode(np.zeros(3, np.uint16), "fp8e4")
    with pytest.raises(PyPrecisionError, match="16-bit|uint16"):
        pp.decode(np.zeros(3, np.uint32), "bf16")
