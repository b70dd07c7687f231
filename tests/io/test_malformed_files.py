"""Issue 13 items 1, 7, 8 (io side): malformed files are a DumpError naming the file, never
another exception; outputs follow the umask and never create missing directories."""

from __future__ import annotations

import json
import os
import stat
import struct
import zipfile

import ml_dtypes
import numpy as np
import pytest

from pyprecision.errors import DumpError
from pyprecision.io import (
    NpzWriter,
    atomic_file,
    load_dump,
    open_tensors,
    parse_dtype,
    read_text,
    save_safetensors,
)


def _safetensors(path, header: dict | bytes, data: bytes = b"") -> str:
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + data)
    return str(path)


def _entry(**kw) -> dict:
    e = {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}
    e.update(kw)
    return {"w": e}


@pytest.mark.parametrize("dtype", [["F32"], {"F32": 1}, 3, None])
def test_safetensors_dtype_that_is_a_list_or_dict(tmp_path, dtype):
    p = _safetensors(tmp_path / "x.safetensors", _entry(dtype=dtype), b"\0" * 4)
    with pytest.raises(DumpError, match="unsupported dtype"):
        open_tensors(p)


def test_safetensors_shape_of_booleans(tmp_path):
    p = _safetensors(tmp_path / "x.safetensors", _entry(shape=[True]), b"\0" * 4)
    with pytest.raises(DumpError, match="not a list of non-negative integers"):
        open_tensors(p)


def test_safetensors_shape_too_large_to_address(tmp_path):
    p = _safetensors(tmp_path / "x.safetensors", _entry(shape=[0, 2**63, 2**63],
                                                        data_offsets=[0, 0]))
    with pytest.raises(DumpError, match="too large to address"):
        open_tensors(p)


def test_safetensors_shape_of_65_dimensions(tmp_path):
    p = _safetensors(tmp_path / "x.safetensors", _entry(shape=[1] * 65), b"\0" * 4)
    with pytest.raises(DumpError, match="65 dimensions; at most 64"):
        open_tensors(p)
    q = _safetensors(tmp_path / "y.safetensors", _entry(shape=[1] * 64), b"\0" * 4)
    assert open_tensors(q).load("w").ndim == 64


def test_safetensors_header_nested_1000_deep(tmp_path):
    p = _safetensors(tmp_path / "x.safetensors", b'{"w":' + b"[" * 100000 + b"]" * 100000 + b"}")
    with pytest.raises(DumpError):
        open_tensors(p)


@pytest.mark.parametrize("offs", [[False, True], [0, True], [0.0, 4.0]])
def test_safetensors_data_offsets_of_booleans(tmp_path, offs):
    p = _safetensors(tmp_path / "x.safetensors", _entry(shape=[], data_offsets=offs), b"\0")
    with pytest.raises(DumpError, match="data_offsets"):
        open_tensors(p)


@pytest.mark.parametrize("table", ['["bf16"]', "{nope", '{"w": 3}', '{"w": "fp99"}'])
def test_safetensors_pyprecision_dtypes_malformed(tmp_path, table):
    h = {**_entry(dtype="BF16", shape=[2]), "__metadata__": {"pyprecision.dtypes": table}}
    p = _safetensors(tmp_path / "x.safetensors", h, b"\0" * 4)
    with pytest.raises(DumpError, match="malformed pyprecision.dtypes"):
        open_tensors(p)


def _npz(path, meta) -> str:
    with zipfile.ZipFile(path, "w") as zf:
        with zf.open("w.npy", "w") as fh:
            np.lib.format.write_array(fh, np.zeros(2, np.uint16))
        zf.writestr("__metadata__.json", meta if isinstance(meta, str) else json.dumps(meta))
    return str(path)


@pytest.mark.parametrize(
    "meta",
    [{"pyprecision.dtypes": ["bf16"]}, {"pyprecision.dtypes": "{x"}, {"pyprecision.dtypes": 7},
     {"pyprecision.dtypes": {"w": ["bf16"]}}],
    ids=["list", "bad-json", "int", "list-value"],
)
def test_npz_metadata_pyprecision_dtypes_malformed_or_a_list(tmp_path, meta):
    with pytest.raises(DumpError, match="malformed pyprecision.dtypes"):
        open_tensors(_npz(tmp_path / "x.npz", meta))


@pytest.mark.parametrize("meta", ["[1, 2]", "\"text\"", "{"])
def test_npz_metadata_member_not_an_object(tmp_path, meta):
    with pytest.raises(DumpError, match="malformed __metadata__.json"):
        open_tensors(_npz(tmp_path / "x.npz", meta))


def test_truncated_npz_is_a_dump_error(tmp_path):
    p = tmp_path / "x.npz"
    np.savez(p, a=np.arange(100.0))
    p.write_bytes(p.read_bytes()[:-30])
    with pytest.raises(DumpError, match="x.npz"):
        open_tensors(p)


def _npy(path, header: str) -> str:
    text = header.encode("latin1")
    text += b" " * (-(len(text) + 11) % 64) + b"\n"
    path.write_bytes(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text)) + text)
    return str(path)


@pytest.mark.parametrize(
    "shape,match",
    [("(True,)", "non-negative integers"), ("(1,)*65", "malformed"),
     (repr((1,) * 65), "65 dimensions"), (f"({2**63}, 2)", "too large"), ("(-1,)", "non-negative")],
)
def test_npy_header_shapes(tmp_path, shape, match):
    p = _npy(tmp_path / "x.npy", f"{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}}}")
    with pytest.raises(DumpError, match=match):
        open_tensors(p)


def test_npy_header_of_implausible_length(tmp_path):
    p = tmp_path / "x.npy"
    p.write_bytes(b"\x93NUMPY\x02\x00" + struct.pack("<I", 1 << 31) + b"{")
    with pytest.raises(DumpError, match="implausible"):
        open_tensors(p)


@pytest.mark.parametrize("name", ["object", "str", "<U8", "S4", "datetime64", "V3", "O"])
def test_parse_dtype_refuses_dtypes_without_numbers(name):
    with pytest.raises(DumpError, match="holds no numbers"):
        parse_dtype(name)


@pytest.mark.parametrize("name", ["float32", "bool", "bf16", "F8_E4M3", "uint16", "<i4"])
def test_parse_dtype_keeps_numeric_dtypes(name):
    assert parse_dtype(name).kind in "biufV"


def test_output_follows_the_umask(tmp_path):
    old = os.umask(0o027)
    try:
        save_safetensors(tmp_path / "a.safetensors", {"w": np.ones(2, np.float32)})
        with NpzWriter(tmp_path / "b.npz") as w:
            w.add("w", np.ones(2, np.float32))
    finally:
        os.umask(old)
    for name in ("a.safetensors", "b.npz"):
        assert stat.S_IMODE(os.stat(tmp_path / name).st_mode) == 0o640, name


def test_output_in_a_missing_directory_is_refused(tmp_path):
    target = tmp_path / "nonexistent" / "dir" / "y.safetensors"
    with pytest.raises(DumpError, match="no such directory"):
        save_safetensors(target, {"w": np.ones(2, np.float32)})
    assert not (tmp_path / "nonexistent").exists()


def test_publish_never_replaces_a_file_created_meanwhile(tmp_path):
    p = tmp_path / "out.bin"
    with pytest.raises(DumpError, match="created it meanwhile"), atomic_file(p) as fh:
        fh.write(b"mine")
        p.write_bytes(b"theirs")  # another run publishes first
    assert p.read_bytes() == b"theirs"
    assert [n for n in os.listdir(tmp_path) if n.endswith(".tmp")] == []


def test_read_text_of_npy_and_binary_files(tmp_path):
    np.save(tmp_path / "x.npy", np.arange(3))
    with pytest.raises(DumpError, match="not UTF-8 text.*looks like a .npy array"):
        read_text(tmp_path / "x.npy")
    (tmp_path / "b.pir").write_bytes(b"func \xff\xfe")
    with pytest.raises(DumpError, match=r"b.pir: not text: not UTF-8 text \(byte 0xff at offset 5"):
        read_text(tmp_path / "b.pir")
    with pytest.raises(DumpError, match="no such file"):
        read_text(tmp_path / "missing.pir")
    with pytest.raises(DumpError, match="is a directory"):
        read_text(tmp_path)


def test_float8_npy_saved_by_numpy_reads_as_raw_bytes_and_relabels(tmp_path):
    x = np.array([1.0, -2.0, 0.5], ml_dtypes.float8_e5m2)
    np.save(tmp_path / "d.npy", x)  # numpy writes descr '<f1' (e5m2) or '|V1'
    arr = load_dump(tmp_path / "d.npy", dtype="float8_e5m2")
    assert arr.tolist() == x.tolist()


def test_npy_version_2_header_cut_inside_its_length(tmp_path):
    """Found by atheris (scripts/fuzz_atheris.py npy): a v2 header whose 4-byte length is cut."""
    p = tmp_path / "x.npy"
    p.write_bytes(b"\x93NUMPY\x02\x00v\x93N")
    with pytest.raises(DumpError, match="truncated .npy header"):
        open_tensors(p)


def test_text_and_module_inputs_share_one_reader(tmp_path):
    """io.read_input_bytes is the one check of an input file (review D6): read_text and
    verify.read_module_text give its messages, naming the path as given."""
    from pyprecision.errors import DumpError
    from pyprecision.io import read_input_bytes, read_text
    from pyprecision.verify.module_source import read_module_text

    (tmp_path / "m.hlo").write_bytes(b"HloModule m\n\nENTRY e {\n  ROOT c = f32[] constant(1)\n}\n")
    assert read_input_bytes(str(tmp_path / "m.hlo"), "x").startswith(b"HloModule")
    for read, what in ((read_text, "text"), (read_module_text, "an HLO module")):
        with pytest.raises(DumpError, match=f"^{tmp_path}: is a directory, not {what}$"):
            read(str(tmp_path))
        with pytest.raises(DumpError, match=f"^{tmp_path}/none: no such file$"):
            read(str(tmp_path / "none"))
