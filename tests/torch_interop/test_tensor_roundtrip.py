"""Evidence for the torch intake (issue 14): for every torch dtype × format, the bits of
``encode`` / ``cast`` / ``decode`` / ``quantize`` on a tensor equal the numpy path's on the same
bits, over a stratified sample (ties, overflow, subnormals, NaN payloads, infinities).

The directory is not named ``tests/torch``: the suite puts ``tests/`` on sys.path (prepend import
mode, tests/kernel is a package), and a ``tests/torch`` directory would be importable as a namespace
package called ``torch`` on a machine without PyTorch.
"""
from __future__ import annotations

import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

torch = pytest.importorskip(
    "torch", reason="PyTorch is not installed (pip install pyprecision[torch]); torch interop untested"
)

import pyprecision as pp  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from kernel.samples import SPECIAL_F32_BITS, boundary_f32_bits  # noqa: E402

FORMATS = [f.name for f in pp.formats()]
#: torch dtype -> numpy twin, written out here (independently of the module under test)
TWINS = {
    torch.float64: np.dtype(np.float64), torch.float32: np.dtype(np.float32),
    torch.float16: np.dtype(np.float16), torch.bfloat16: np.dtype(ml_dtypes.bfloat16),
    torch.float8_e4m3fn: np.dtype(ml_dtypes.float8_e4m3fn),
    torch.float8_e5m2: np.dtype(ml_dtypes.float8_e5m2),
    torch.float8_e4m3fnuz: np.dtype(ml_dtypes.float8_e4m3fnuz),
    torch.float8_e5m2fnuz: np.dtype(ml_dtypes.float8_e5m2fnuz),
    torch.float8_e8m0fnu: np.dtype(ml_dtypes.float8_e8m0fnu),
    torch.int8: np.dtype(np.int8), torch.int16: np.dtype(np.int16),
    torch.int32: np.dtype(np.int32), torch.int64: np.dtype(np.int64),
    torch.uint8: np.dtype(np.uint8), torch.uint16: np.dtype(np.uint16),
    torch.uint32: np.dtype(np.uint32), torch.uint64: np.dtype(np.uint64),
}
_TORCH_INT = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
#: the torch dtype cast() returns for each format (fp8e4: torch has none, so its uint8 codes)
CAST_DTYPE = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32r": torch.float32,
              "fp8e4": torch.uint8, "fp8e4m3fn": torch.float8_e4m3fn, "fp8e5": torch.float8_e5m2}


def sample_bits(dt: np.dtype, fmt: str) -> np.ndarray:
    """Bit patterns of ``dt`` (unsigned): every pattern of a 1- or 2-byte dtype; for wider ones the
    target's rounding boundaries (as float32 or float64), the specials and random patterns."""
    rng = np.random.default_rng(14)
    u = _UINT[dt.itemsize]
    if dt.itemsize <= 2:
        return np.arange(1 << (8 * dt.itemsize), dtype=np.int64).astype(u)
    rand = rng.integers(0, 1 << 63, 4096, dtype=np.int64).astype(np.uint64)
    if dt.kind in "iu":
        edges = np.array([0, 1, 2, 3, 255, 256, 257, 2**24 - 1, 2**24 + 1, 2**31 - 1, 2**31,
                          2**32 - 1, 2**53 + 1, 2**63 - 1, 2**63, 2**64 - 1], np.uint64)
        return np.concatenate([edges, rand]).astype(u)  # wraps: negative values for signed
    f32 = boundary_f32_bits(fmt)
    f32 = np.concatenate([f32[:: max(1, f32.size // 60000)], SPECIAL_F32_BITS])  # fp32r's is huge
    if dt.itemsize == 4:
        return np.concatenate([f32, rand.astype(np.uint32)])
    with np.errstate(invalid="ignore"):
        wide = f32.view(np.float32).astype(np.float64).view(np.uint64)
    near = np.concatenate([wide + np.uint64(k) for k in (1, 2)] + [wide - np.uint64(k) for k in (1, 2)])
    return np.concatenate([wide, near, rand, np.array([0x7FF0000000000001, 0xFFF8000000000123,
                                                       0x3790000000000001], np.uint64)])


def as_tensor(bits: np.ndarray, td: object) -> object:
    """A tensor of dtype ``td`` holding ``bits`` (torch views its own integer tensor)."""
    return torch.from_numpy(bits.view(f"i{bits.dtype.itemsize}").copy()).view(td)


def tensor_bits(t: object) -> np.ndarray:
    """The unsigned bits of a result tensor, read by torch itself."""
    size = t.element_size()
    return t.view(_TORCH_INT[size]).numpy().view(_UINT[size])


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("td", list(TWINS), ids=str)
def test_encode_and_cast_of_a_tensor_equal_the_numpy_path(td: object, fmt: str) -> None:
    dt = TWINS[td]
    bits = sample_bits(dt, fmt)
    x = as_tensor(bits, td)
    ref = pp.encode(bits.view(dt), fmt)
    codes = pp.encode(x, fmt)
    assert isinstance(codes, torch.Tensor) and codes.dtype == {8: torch.uint8, 16: torch.uint16,
                                                               32: torch.uint32}[pp.format(fmt).bits]
    np.testing.assert_array_equal(tensor_bits(codes), ref)
    c = pp.cast(x, fmt)
    assert c.dtype == CAST_DTYPE[fmt] and tuple(c.shape) == bits.shape
    np.testing.assert_array_equal(tensor_bits(c), ref)


@pytest.mark.parametrize("rounding", ["rtz", "rna", "stochastic"])
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("td", [torch.float32, torch.float64, torch.bfloat16, torch.float16], ids=str)
def test_every_rounding_mode_and_saturation_agrees(td: object, fmt: str, rounding: str) -> None:
    dt = TWINS[td]
    bits = sample_bits(dt, fmt)[:20000]
    x = as_tensor(bits, td)
    kw = {"rounding": rounding, "seed": 7} if rounding == "stochastic" else {"rounding": rounding}
    for sat in (True, False):
        np.testing.assert_array_equal(tensor_bits(pp.encode(x, fmt, saturate=sat, **kw)),
                                      pp.encode(bits.view(dt), fmt, saturate=sat, **kw))
    if rounding == "stochastic":  # words from a uint32 tensor are the words from an array
        words = np.random.default_rng(3).integers(0, 2**32, bits.size, dtype=np.uint64).astype(np.uint32)
        got = pp.encode(x, fmt, rounding="stochastic", random_bits=torch.from_numpy(words))
        np.testing.assert_array_equal(
            tensor_bits(got), pp.encode(bits.view(dt), fmt, rounding="stochastic", random_bits=words))


@pytest.mark.parametrize("fmt", FORMATS)
def test_decode_and_quantize_of_a_tensor_equal_the_numpy_path(fmt: str) -> None:
    f = pp.format(fmt)
    codes = (np.arange(1 << f.bits, dtype=np.int64).astype(f.storage_dtype) if f.bits <= 16
             else boundary_f32_bits("fp32r") & np.uint32(0xFFFFE000))
    want = pp.decode(codes, fmt).view(np.uint32)
    for td in {CAST_DTYPE[fmt], _TORCH_INT[f.bits // 8]}:  # the format's own dtype and int codes
        got = pp.decode(as_tensor(codes, td), fmt)
        assert got.dtype == torch.float32
        np.testing.assert_array_equal(tensor_bits(got), want)
    src = boundary_f32_bits(fmt)
    q = pp.quantize(as_tensor(src, torch.float32), fmt)
    assert q.dtype == torch.float32
    np.testing.assert_array_equal(tensor_bits(q), pp.quantize(src.view(np.float32), fmt).view(np.uint32))


def test_shapes_zero_d_empty_and_non_contiguous() -> None:
    x = torch.arange(24, dtype=torch.float32).reshape(2, 3, 4) / 7
    for t in (x, x.transpose(0, 2), x[:, ::2], x[0, 0, 0], x[:0]):
        got = pp.cast(t, "bf16")
        assert tuple(got.shape) == tuple(t.shape) and got.dtype == torch.bfloat16
        want = pp.encode(np.ascontiguousarray(t.numpy()), "bf16")
        np.testing.assert_array_equal(tensor_bits(got).reshape(want.shape), want)
