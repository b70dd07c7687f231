"""Issue 13 item 7 (io side): tensors at odd file offsets and arrays with odd strides reach the C
core aligned and contiguous, and give the same bits as an aligned copy. .ci/run runs this file
under AddressSanitizer + UBSan, which reports any misaligned load the C core would make."""

from __future__ import annotations

import json
import struct

import ml_dtypes
import numpy as np
import pytest

import pyprecision as pp
from pyprecision.io import load_dump, open_tensors, read_raw
from pyprecision.reencode import reencode

FORMATS = ["bf16", "fp16", "fp8e4", "fp8e4m3fn", "fp8e5", "fp32r"]


def _odd_safetensors(path, x: np.ndarray, st_dtype: str) -> None:
    """A safetensors file whose only tensor starts at an odd absolute offset (the header is not
    padded to 8 bytes, which the format allows)."""
    header = {"w": {"dtype": st_dtype, "shape": list(x.shape), "data_offsets": [0, x.nbytes]}}
    text = json.dumps(header).encode()
    if (8 + len(text)) % 2 == 0:
        text += b" "
    path.write_bytes(struct.pack("<Q", len(text)) + text + x.tobytes())


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("src", [np.float32, np.float64, np.float16, ml_dtypes.bfloat16])
def test_tensor_at_an_odd_offset_encodes_like_an_aligned_copy(tmp_path, fmt, src):
    x = (np.random.default_rng(7).standard_normal(1031) * 50).astype(src)
    name = {np.float32: "F32", np.float64: "F64", np.float16: "F16"}.get(src, "BF16")
    p = tmp_path / "odd.safetensors"
    _odd_safetensors(p, x, name)
    store = open_tensors(p)
    assert (store["w"].offset or 0) % 2 == 1
    y = store.load("w")
    assert y.flags.aligned
    want = pp.encode(np.ascontiguousarray(x), fmt)
    np.testing.assert_array_equal(pp.encode(y, fmt), want)
    out = tmp_path / f"out-{fmt}.safetensors"
    s = reencode(p, out, fmt, verify=True, chunk_elements=97)
    assert not s.verify_failures
    np.testing.assert_array_equal(open_tensors(out).load("w").view(want.dtype), want)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("offset", [1, 3, 5])
def test_raw_dump_at_an_odd_offset(tmp_path, fmt, offset):
    x = np.linspace(-100, 100, 257, dtype=np.float32)
    p = tmp_path / "raw.bin"
    p.write_bytes(b"\0" * offset + x.tobytes())
    y = read_raw(p, "float32", offset=offset)
    np.testing.assert_array_equal(pp.encode(y, fmt), pp.encode(x, fmt))


@pytest.mark.parametrize("fmt", FORMATS)
def test_odd_strides_and_fortran_order(tmp_path, fmt):
    base = np.random.default_rng(3).standard_normal((33, 17)).astype(np.float32)
    np.save(tmp_path / "f.npy", np.asfortranarray(base))
    y = load_dump(tmp_path / "f.npy")
    assert not y.flags.c_contiguous
    np.testing.assert_array_equal(pp.encode(y, fmt), pp.encode(base, fmt))
    strided = base[::3, 1::2]
    np.testing.assert_array_equal(pp.encode(strided, fmt),
                                  pp.encode(np.ascontiguousarray(strided), fmt))
    out = tmp_path / f"f-{fmt}.safetensors"
    assert not reencode(tmp_path / "f.npy", out, fmt, verify=True).verify_failures


def test_big_endian_npy_reencodes_like_native(tmp_path):
    x = np.linspace(-3, 3, 101, dtype=np.float32)
    np.save(tmp_path / "be.npy", x.astype(">f4"))
    out = tmp_path / "be.safetensors"
    assert not reencode(tmp_path / "be.npy", out, "bf16", verify=True).verify_failures
    np.testing.assert_array_equal(open_tensors(out).load("be").view(np.uint16),
                                  pp.encode(x, "bf16"))


def test_void_member_at_an_odd_offset_is_copied_so_a_bf16_view_is_aligned(tmp_path):
    """numpy saves bfloat16 as raw void ``V2`` and calls a V2 array aligned at any address; the
    reader copies it anyway, so the bfloat16 view the C core decodes is 2-byte aligned."""
    import zipfile

    x = np.linspace(-4, 4, 33).astype(ml_dtypes.bfloat16)
    for name in ("a", "ab", "abc", "abcd"):
        p = tmp_path / f"{name}.npz"
        with zipfile.ZipFile(p, "w") as zf, zf.open(f"{name}.npy", "w") as fh:
            np.lib.format.write_array(fh, x.view("V2"))
        info = open_tensors(p)[name]
        if (info.offset or 0) % 2:
            break
    else:
        pytest.skip("no member name gave an odd data offset")
    y = load_dump(p, dtype="bfloat16")
    assert y.ctypes.data % 2 == 0
    np.testing.assert_array_equal(pp.decode(y.view(np.uint16), "bf16"), x.astype(np.float32))
