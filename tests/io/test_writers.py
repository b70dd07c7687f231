"""Writers: valid safetensors / .npz, atomic rename, never over an input."""

from __future__ import annotations

import os

import ml_dtypes
import numpy as np
import pytest
import safetensors
import safetensors.numpy as stnp

from pyprecision.errors import DumpError
from pyprecision.io import NpzWriter, SafetensorsWriter, atomic_file, open_tensors, save_safetensors


def test_safetensors_writer_is_read_by_the_reference_library(tmp_path):
    t = {
        "w": np.arange(7, dtype=np.float16),
        "x": np.arange(12, dtype=np.float32).reshape(3, 4),
        "i": np.arange(3, dtype=np.int64),
        "empty": np.zeros((0, 3), np.float32),
    }
    save_safetensors(tmp_path / "o.safetensors", t, {"k": "v"})
    got = stnp.load_file(str(tmp_path / "o.safetensors"))
    for k, v in t.items():
        assert got[k].dtype == v.dtype and got[k].shape == v.shape
        np.testing.assert_array_equal(got[k], v)
    with safetensors.safe_open(str(tmp_path / "o.safetensors"), "numpy") as f:
        assert f.metadata() == {"k": "v"}


def test_safetensors_writer_bf16_fp8_bytes(tmp_path):
    bf = np.array([1.0, -3.0, 0.5], ml_dtypes.bfloat16)
    e4 = np.array([448, -1], ml_dtypes.float8_e4m3fn)
    save_safetensors(tmp_path / "o.safetensors", {"bf": bf, "e4": e4})
    raw = dict(safetensors.deserialize((tmp_path / "o.safetensors").read_bytes()))
    assert raw["bf"]["dtype"] == "BF16" and bytes(raw["bf"]["data"]) == bf.tobytes()
    assert raw["e4"]["dtype"] == "F8_E4M3" and bytes(raw["e4"]["data"]) == bytes([0x7E, 0xB8])


def test_tensors_are_aligned(tmp_path):
    save_safetensors(
        tmp_path / "o.safetensors",
        {
            "a": np.ones(3, np.uint8),
            "b": np.ones(3, np.float64),
            "c": np.ones(1, np.float16),
            "d": np.ones(2, np.float32),
        },
    )
    for t in open_tensors(tmp_path / "o.safetensors").values():
        assert t.offset % t.dtype.itemsize == 0


def test_chunked_writes(tmp_path):
    x = np.arange(100, dtype=np.float32)
    with SafetensorsWriter(tmp_path / "o.safetensors", [("x", np.float32, (10, 10))]) as w:
        for i in range(0, 100, 30):
            w.write("x", x[i : i + 30])
    np.testing.assert_array_equal(
        stnp.load_file(str(tmp_path / "o.safetensors"))["x"], x.reshape(10, 10)
    )


def _no_temps(d) -> bool:
    return not [n for n in os.listdir(d) if n.endswith(".tmp")]


def test_incomplete_tensor_writes_nothing(tmp_path):
    with (
        pytest.raises(DumpError, match="incomplete tensors"),
        SafetensorsWriter(tmp_path / "o.safetensors", [("x", np.float32, (10,))]) as w,
    ):
        w.write("x", np.ones(5, np.float32))
    assert not (tmp_path / "o.safetensors").exists() and _no_temps(tmp_path)


def test_exception_leaves_no_file(tmp_path):
    with (
        pytest.raises(RuntimeError),
        SafetensorsWriter(tmp_path / "o.safetensors", [("x", np.float32, (2,))]) as w,
    ):
        w.write("x", np.ones(2, np.float32))
        raise RuntimeError("boom")
    assert not (tmp_path / "o.safetensors").exists() and _no_temps(tmp_path)


def test_nothing_visible_until_complete(tmp_path):
    with SafetensorsWriter(tmp_path / "o.safetensors", [("x", np.float32, (2,))]) as w:
        w.write("x", np.ones(2, np.float32))
        assert not (tmp_path / "o.safetensors").exists()
    assert (tmp_path / "o.safetensors").exists() and _no_temps(tmp_path)


def test_wrong_item_size_and_overflowing_write(tmp_path):
    with (
        pytest.raises(DumpError, match="4-byte items"),
        SafetensorsWriter(tmp_path / "o.safetensors", [("x", np.float32, (2,))]) as w,
    ):
        w.write("x", np.ones(2, np.float16))
    with (
        pytest.raises(DumpError, match="only 8 declared"),
        SafetensorsWriter(tmp_path / "o.safetensors", [("x", np.float32, (2,))]) as w,
    ):
        w.write("x", np.ones(3, np.float32))


def test_refuses_to_overwrite_an_input(tmp_path):
    src = tmp_path / "in.safetensors"
    save_safetensors(src, {"x": np.ones(2, np.float32)})
    before = src.read_bytes()
    with pytest.raises(DumpError, match="refusing to write over the input"):
        save_safetensors(src, {"x": np.zeros(2, np.float32)}, inputs=[src], overwrite=True)
    link = tmp_path / "link.safetensors"
    link.symlink_to(src)
    with pytest.raises(DumpError, match="refusing"):
        save_safetensors(link, {"x": np.zeros(2, np.float32)}, inputs=[src], overwrite=True)
    assert src.read_bytes() == before


def test_refuses_existing_output_unless_overwrite(tmp_path):
    p = tmp_path / "o.bin"
    p.write_bytes(b"old")
    with pytest.raises(DumpError, match="already exists"), atomic_file(p) as fh:
        fh.write(b"new")
    with atomic_file(p, overwrite=True) as fh:
        fh.write(b"new")
    assert p.read_bytes() == b"new"


def test_npz_writer(tmp_path):
    x = np.arange(10, dtype=np.float32)
    with NpzWriter(tmp_path / "o.npz", {"a": "b"}) as w:
        w.begin("x", np.float32, (2, 5))
        w.write(x[:3])
        w.write(x[3:])
        w.add("codes", np.array([1, 2], np.uint16))
    z = np.load(tmp_path / "o.npz")
    np.testing.assert_array_equal(z["x"], x.reshape(2, 5))
    np.testing.assert_array_equal(z["codes"], [1, 2])
    assert open_tensors(tmp_path / "o.npz").metadata[str(tmp_path / "o.npz")] == {"a": "b"}


def test_npz_writer_missing_bytes(tmp_path):
    with pytest.raises(DumpError, match="bytes missing"), NpzWriter(tmp_path / "o.npz") as w:
        w.begin("x", np.float32, (4,))
        w.write(np.ones(2, np.float32))
    assert not (tmp_path / "o.npz").exists() and _no_temps(tmp_path)
