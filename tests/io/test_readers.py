"""Readers: raw binary, .npy, .npz, safetensors (incl. BF16/FP8), shards, directories, errors."""

from __future__ import annotations

import json
import mmap
import struct

import ml_dtypes
import numpy as np
import pytest
import safetensors.numpy as stnp

from pyprecision.errors import DumpError
from pyprecision.io import load_dump, open_tensors, parse_dtype, read_raw, read_safetensors_header


def _base_is_mmap(a: np.ndarray) -> bool:
    b = a
    while b is not None:
        if isinstance(b, (mmap.mmap, np.memmap)):
            return True
        b = getattr(b, "base", None) if not isinstance(b, memoryview) else b.obj
    return False


def _st_file(path, entries: dict, data: bytes, meta=None, pad=True) -> None:
    """Hand-written safetensors (the oracle for dtypes numpy cannot name)."""
    h = dict(entries)
    if meta:
        h["__metadata__"] = meta
    text = json.dumps(h).encode()
    if pad:
        text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + data)


@pytest.mark.parametrize(
    "spec,expected",
    [
        ("float32", np.float32),
        ("<f4", np.float32),
        ("F32", np.float32),
        ("bf16", ml_dtypes.bfloat16),
        ("bfloat16", ml_dtypes.bfloat16),
        ("BF16", ml_dtypes.bfloat16),
        ("F8_E4M3", ml_dtypes.float8_e4m3fn),
        ("fp8e4", ml_dtypes.float8_e4m3),
        ("float8_e5m2", ml_dtypes.float8_e5m2),
        ("fp32r", np.float32),
        ("uint16", np.uint16),
        ("fp16", np.float16),
    ],
)
def test_parse_dtype(spec, expected):
    assert parse_dtype(spec) == np.dtype(expected)


def test_parse_dtype_unknown():
    with pytest.raises(DumpError, match="unknown dtype 'float7'"):
        parse_dtype("float7")


@pytest.mark.parametrize("order", ["little", "big"])
def test_raw_byte_order_offset_and_shape(tmp_path, order):
    x = np.arange(24, dtype=np.float32).reshape(4, 6) * 1.5
    p = tmp_path / "d.bin"
    p.write_bytes(b"HEAD" + x.astype("<f4" if order == "little" else ">f4").tobytes())
    got = read_raw(p, "float32", "4x6", byte_order=order, offset=4)
    assert got.dtype == np.float32 and got.dtype.isnative
    np.testing.assert_array_equal(got, x)


def test_raw_bf16_big_endian(tmp_path):
    codes = np.array([0x3F80, 0xC000, 0x7F80], np.uint16)
    p = tmp_path / "d.raw"
    p.write_bytes(codes.astype(">u2").tobytes())
    got = read_raw(p, "bf16", [3], byte_order="big")
    assert got.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(got.astype(np.float32), [1.0, -2.0, np.inf])


def test_raw_is_memory_mapped(tmp_path):
    p = tmp_path / "d.bin"
    np.arange(1000, dtype=np.float32).tofile(p)
    got = read_raw(p, np.float32, (1000,))
    assert _base_is_mmap(got) and not got.flags.writeable


@pytest.mark.parametrize("nbytes", [95, 97])
def test_raw_size_mismatch_is_an_error(tmp_path, nbytes):
    p = tmp_path / "d.bin"
    p.write_bytes(bytes(nbytes))
    with pytest.raises(DumpError, match=r"d\.bin: size does not match the shape.*needs 96 bytes"):
        read_raw(p, "float32", (4, 6))


def test_raw_flat_needs_whole_items(tmp_path):
    p = tmp_path / "d.bin"
    p.write_bytes(bytes(10))
    with pytest.raises(DumpError, match="not a whole number"):
        read_raw(p, "float32")
    assert read_raw(p, "bf16").shape == (5,)


def test_npy_fortran_and_relabel(tmp_path):
    x = np.asfortranarray(np.arange(12, dtype=np.float32).reshape(3, 4))
    np.save(tmp_path / "a.npy", x)
    np.testing.assert_array_equal(load_dump(tmp_path / "a.npy"), x)
    b = np.array([1, 2, -3], ml_dtypes.bfloat16)
    np.save(tmp_path / "b.npy", b)  # numpy writes '<V2'
    got = load_dump(tmp_path / "b.npy", dtype="bf16")
    np.testing.assert_array_equal(got.astype(np.float32), [1, 2, -3])
    with pytest.raises(DumpError, match="shape"):
        load_dump(tmp_path / "a.npy", shape=(4, 3))
    with pytest.raises(DumpError, match="stored as float32, not float16"):
        load_dump(tmp_path / "a.npy", dtype="float16")


@pytest.mark.parametrize("cut", [1, 7, 100])
def test_npy_truncated(tmp_path, cut):
    p = tmp_path / "a.npy"
    np.save(p, np.arange(100, dtype=np.float32))
    p.write_bytes(p.read_bytes()[:-cut])
    with pytest.raises(DumpError, match=r"a\.npy: truncated"):
        load_dump(p)


def test_npy_trailing_bytes(tmp_path):
    p = tmp_path / "a.npy"
    np.save(p, np.arange(10, dtype=np.float32))
    p.write_bytes(p.read_bytes() + b"\0\0\0\0")
    with pytest.raises(DumpError, match="trailing bytes"):
        load_dump(p)


def test_npy_garbage(tmp_path):
    p = tmp_path / "a.npy"
    p.write_bytes(b"hello world, not numpy")
    with pytest.raises(DumpError, match=r"a\.npy: not a \.npy array"):
        load_dump(p)


@pytest.mark.parametrize("compressed", [False, True])
def test_npz_members(tmp_path, compressed):
    x, y = np.arange(1000, dtype=np.float32), np.arange(6, dtype=np.int16).reshape(2, 3)
    (np.savez_compressed if compressed else np.savez)(tmp_path / "a.npz", x=x, y=y)
    store = open_tensors(tmp_path / "a.npz")
    assert list(store) == ["x", "y"] and store["y"].shape == (2, 3)
    np.testing.assert_array_equal(store.load("x"), x)
    np.testing.assert_array_equal(load_dump(tmp_path / "a.npz", name="y"), y)
    with pytest.raises(DumpError, match="holds 2 arrays"):
        load_dump(tmp_path / "a.npz")


def test_npz_truncated(tmp_path):
    p = tmp_path / "a.npz"
    np.savez(p, x=np.arange(1000, dtype=np.float32))
    p.write_bytes(p.read_bytes()[:2000])
    with pytest.raises(DumpError, match=r"a\.npz"):
        open_tensors(p)


def test_safetensors_written_by_the_reference_library(tmp_path):
    tensors = {
        "a": np.arange(12, dtype=np.float32).reshape(3, 4),
        "b": np.arange(5, dtype=np.int64),
        "c": np.array([1.5, -2], np.float16),
    }
    stnp.save_file(tensors, str(tmp_path / "m.safetensors"), metadata={"format": "np"})
    store = open_tensors(tmp_path / "m.safetensors")
    assert set(store) == set(tensors)
    assert store.metadata[str(tmp_path / "m.safetensors")] == {"format": "np"}
    for k, v in tensors.items():
        got = store.load(k)
        assert got.dtype == v.dtype and _base_is_mmap(got)
        np.testing.assert_array_equal(got, v)


def test_safetensors_bf16_and_fp8_bytes(tmp_path):
    bf = np.array([0x3F80, 0xC040], "<u2").tobytes()  # 1.0, -3.0
    e4 = bytes([0x38, 0x7E, 0xFF])  # 1.0, 448, NaN (e4m3fn)
    e5 = bytes([0x3C, 0x7B])  # 1.0, 57344
    _st_file(
        tmp_path / "m.safetensors",
        {
            "bf": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]},
            "e4": {"dtype": "F8_E4M3", "shape": [3], "data_offsets": [4, 7]},
            "e5": {"dtype": "F8_E5M2", "shape": [2], "data_offsets": [7, 9]},
        },
        bf + e4 + e5,
    )
    s = open_tensors(tmp_path / "m.safetensors")
    assert s["e4"].dtype == ml_dtypes.float8_e4m3fn and s["e4"].stored == "F8_E4M3"
    np.testing.assert_array_equal(s.load("bf").astype(np.float32), [1.0, -3.0])
    np.testing.assert_array_equal(s.load("e4").astype(np.float32), [1.0, 448.0, np.nan])
    np.testing.assert_array_equal(s.load("e5").astype(np.float32), [1.0, 57344.0])


def test_safetensors_u8_with_format_metadata_is_fp8e4(tmp_path):
    _st_file(
        tmp_path / "m.safetensors",
        {"x": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]}},
        bytes([0x78, 0x77]),
        meta={"pyprecision.dtypes": json.dumps({"x": "fp8e4"})},
    )
    x = open_tensors(tmp_path / "m.safetensors").load("x")
    assert x.dtype == ml_dtypes.float8_e4m3
    np.testing.assert_array_equal(x.astype(np.float32), [np.inf, 240.0])


@pytest.mark.parametrize(
    "entries,data,message",
    [
        (
            {"x": {"dtype": "F32", "shape": [4], "data_offsets": [0, 12]}},
            bytes(12),
            "header lies about its size",
        ),
        ({"x": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}, bytes(10), "truncated"),
        (
            {"x": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}},
            bytes(8),
            "bytes after the last",
        ),
        (
            {"x": {"dtype": "Q7", "shape": [1], "data_offsets": [0, 4]}},
            bytes(4),
            "unsupported dtype 'Q7'",
        ),
        (
            {
                "x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                "y": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]},
            },
            bytes(8),
            "overlaps",
        ),
        ({"x": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, bytes(8), "gap"),
        ({"x": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}, bytes(4), "shape"),
        ({"x": {"dtype": "F32", "shape": [1]}}, bytes(4), "needs dtype, shape and data_offsets"),
    ],
)
def test_safetensors_malformed(tmp_path, entries, data, message):
    p = tmp_path / "bad.safetensors"
    _st_file(p, entries, data)
    with pytest.raises(DumpError, match=message) as info:
        read_safetensors_header(p)
    assert str(p) in str(info.value)


@pytest.mark.parametrize(
    "blob,message",
    [
        (b"\x01\x02", "shorter than the 8-byte header length"),
        (struct.pack("<Q", 1 << 40), "implausible"),
        (struct.pack("<Q", 100) + b"{}", "truncated: header says 100 bytes"),
        (struct.pack("<Q", 4) + b"{x}}", "malformed JSON"),
        (struct.pack("<Q", 2) + b"[]", "not an object"),
    ],
)
def test_safetensors_bad_header(tmp_path, blob, message):
    p = tmp_path / "bad.safetensors"
    p.write_bytes(blob)
    with pytest.raises(DumpError, match=message):
        open_tensors(p)


def _sharded(tmp_path):
    a = {"a": np.arange(4, dtype=np.float32)}
    b = {"b": np.arange(3, dtype=np.float32), "c": np.ones(2, np.float32)}
    stnp.save_file(a, str(tmp_path / "m-1.safetensors"))
    stnp.save_file(b, str(tmp_path / "m-2.safetensors"))
    index = {
        "metadata": {"total_size": 36},
        "weight_map": {"a": "m-1.safetensors", "b": "m-2.safetensors", "c": "m-2.safetensors"},
    }
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    return index


def test_sharded_index_and_directory(tmp_path):
    _sharded(tmp_path)
    for src in (tmp_path / "model.safetensors.index.json", tmp_path):
        s = open_tensors(src)
        assert sorted(s) == ["a", "b", "c"] and s.index is not None and len(s.files) == 2
        np.testing.assert_array_equal(s.load("b"), [0, 1, 2])


def test_sharded_missing_shard(tmp_path):
    _sharded(tmp_path)
    (tmp_path / "m-2.safetensors").unlink()
    with pytest.raises(DumpError, match="missing shard 'm-2.safetensors'"):
        open_tensors(tmp_path)


def test_sharded_weight_map_lies(tmp_path):
    index = _sharded(tmp_path)
    index["weight_map"]["a"] = "m-2.safetensors"
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(DumpError, match="weight_map puts 'a' in m-2.safetensors"):
        open_tensors(tmp_path)


def test_directory_of_mixed_files_and_duplicates(tmp_path):
    np.save(tmp_path / "w.npy", np.ones(3, np.float32))
    np.savez(tmp_path / "z.npz", v=np.zeros(2))
    s = open_tensors(tmp_path)
    assert sorted(s) == ["v", "w"]
    np.savez(tmp_path / "y.npz", w=np.zeros(2))
    with pytest.raises(DumpError, match="'w' appears in both"):
        open_tensors(tmp_path)


def test_empty_directory_and_unknown_file(tmp_path):
    with pytest.raises(DumpError, match="no .safetensors"):
        open_tensors(tmp_path)
    (tmp_path / "x.txt").write_text("hi")
    with pytest.raises(DumpError, match="unknown checkpoint file type"):
        open_tensors(tmp_path / "x.txt")


@pytest.mark.parametrize(
    "dt,fmt",
    [
        (ml_dtypes.float8_e5m2, "fp8e5"),
        (ml_dtypes.float8_e4m3fn, "fp8e4m3fn"),
        (ml_dtypes.bfloat16, "bf16"),
    ],
)
def test_npy_of_ml_dtypes_relabelled(tmp_path, dt, fmt):
    x = np.array([1.0, -2.0, 0.5], dt)
    np.save(tmp_path / "a.npy", x)  # numpy writes <f1 / <V1 / <V2: the type is lost
    got = load_dump(tmp_path / "a.npy", dtype=fmt)
    assert got.dtype == np.dtype(dt) and got.tobytes() == x.tobytes()
