"""Readers on URLs (issue 15, "Remote files"): every reader takes fsspec URLs and gives what it gives
for the same bytes on a local path; headers and tensors are ranged reads, never the whole file;
a plain path (and file://) stays on the local code path without importing fsspec."""

from __future__ import annotations

import json
import mmap
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import fsspec
import numpy as np
import pytest
from test_remote_fs import CountingFS, fresh_bucket, upload, write_checkpoints

from pyprecision.errors import DumpError
from pyprecision.io import (
    INCOMPLETE_MARKER,
    is_remote,
    is_url,
    join,
    load_dump,
    open_tensors,
    parent,
    read_raw,
    read_text,
    save_safetensors,
)
from pyprecision.io.remote import as_local

MEM = fsspec.filesystem("memory")


@pytest.fixture
def bucket() -> Iterator[str]:
    """A fresh memory:// prefix, removed afterwards."""
    yield from fresh_bucket()


@pytest.fixture
def local(tmp_path: Path) -> dict[str, Path]:
    return write_checkpoints(tmp_path)


def _same_store(a_src: str, b_src: str) -> None:
    a, b = open_tensors(a_src), open_tensors(b_src)
    assert list(a) == list(b)
    for name in a:
        ta, tb = a[name], b[name]
        assert (ta.dtype, ta.shape, ta.offset, ta.stored, ta.format) == (
            tb.dtype,
            tb.shape,
            tb.offset,
            tb.stored,
            tb.format,
        )
        xa, xb = a.load(name), b.load(name)
        assert xa.dtype == xb.dtype and xa.shape == xb.shape
        assert xa.tobytes() == xb.tobytes()
        assert xb.flags.writeable == xa.flags.writeable
    assert [m for m in a.metadata.values()] == [m for m in b.metadata.values()]


@pytest.mark.parametrize("kind", ["safetensors", "npz", "deflated", "npy", "sharded"])
def test_a_url_reads_what_the_path_reads(local: dict[str, Path], bucket: str, kind: str) -> None:
    src = local[kind]
    url = f"{bucket}/{src.name}"
    upload(src, MEM, url)
    _same_store(str(src), url)
    if kind == "sharded":
        _same_store(
            str(src / "model.safetensors.index.json"), f"{url}/model.safetensors.index.json"
        )


def test_a_directory_url_without_index_lists_its_files(local: dict[str, Path], bucket: str) -> None:
    for kind in ("safetensors", "npy"):
        upload(local[kind], MEM, f"{bucket}/d/{local[kind].name}")
    store = open_tensors(f"{bucket}/d")
    assert store.files == [f"{bucket}/d/model.safetensors", f"{bucket}/d/w.npy"]
    assert store.load("w").tobytes() == np.load(local["npy"]).tobytes()


def test_raw_and_load_dump_and_text_on_a_url(local: dict[str, Path], bucket: str) -> None:
    upload(local["raw"], MEM, f"{bucket}/w.bin")
    upload(local["npz"], MEM, f"{bucket}/m.npz")
    want = np.fromfile(local["raw"], np.float32).reshape(64, 48)
    got = read_raw(f"{bucket}/w.bin", "float32", "64,48")
    assert got.tobytes() == want.tobytes() and got.shape == (64, 48)
    big = read_raw(f"{bucket}/w.bin", "float32", "64,48", byte_order="big")
    assert big.tobytes() == want.byteswap().tobytes()
    assert load_dump(f"{bucket}/m.npz", name="b").tolist() == list(range(17))
    with pytest.raises(DumpError, match=r"w\.bin: size does not match the shape"):
        read_raw(f"{bucket}/w.bin", "float32", "64,47")
    MEM.pipe_file(f"{bucket}/p.pir", b"func @f() {}\n")
    assert read_text(f"{bucket}/p.pir") == "func @f() {}\n"
    MEM.pipe_file(f"{bucket}/bad.pir", b"\x93NUMPY\xff")
    with pytest.raises(DumpError, match=r"bad\.pir: not text: .*\.npy array"):
        read_text(f"{bucket}/bad.pir")
    with pytest.raises(DumpError, match=r"nothing\.pir: no such file"):
        read_text(f"{bucket}/nothing.pir")


def test_a_safetensors_header_is_two_ranged_reads(tmp_path: Path) -> None:
    big = {"a": np.zeros((512, 512), np.float32), "b": np.arange(1000, dtype=np.int16)}
    save_safetensors(tmp_path / "m.safetensors", big)
    raw = (tmp_path / "m.safetensors").read_bytes()
    n = int.from_bytes(raw[:8], "little")
    fs = fsspec.filesystem("countmem")
    fs.pipe_file("/hdr/m.safetensors", raw)
    CountingFS.reads.clear()
    store = open_tensors("countmem://hdr/m.safetensors")
    assert CountingFS.reads == [
        ("/hdr/m.safetensors", 0, 8, 8),
        ("/hdr/m.safetensors", 8, 8 + n, n),
    ]
    assert CountingFS.bytes_read() == 8 + n < len(raw) // 100
    CountingFS.reads.clear()
    b = store.load("b")
    t = store["b"]
    assert CountingFS.reads == [("/hdr/m.safetensors", t.offset, t.offset + t.nbytes, t.nbytes)]
    assert b.tolist() == list(range(1000))
    fs.rm("/hdr", recursive=True)


def test_npz_and_npy_headers_are_ranged_reads(tmp_path: Path) -> None:
    a = np.arange(1 << 18, dtype=np.float32)
    np.savez(tmp_path / "m.npz", a=a, b=a[:10])
    np.save(tmp_path / "a.npy", a)
    fs = fsspec.filesystem("countmem")
    for name in ("m.npz", "a.npy"):
        fs.pipe_file(f"/z/{name}", (tmp_path / name).read_bytes())
    CountingFS.reads.clear()
    store = open_tensors("countmem://z/m.npz")
    size = (tmp_path / "m.npz").stat().st_size
    assert CountingFS.bytes_read() < 4096 < size // 100  # central directory and member headers
    CountingFS.reads.clear()
    assert store.load("a").tobytes() == a.tobytes()
    t = store["a"]
    assert CountingFS.reads == [("/z/m.npz", t.offset, t.offset + t.nbytes, t.nbytes)]
    CountingFS.reads.clear()
    store = open_tensors("countmem://z/a.npy")
    assert CountingFS.bytes_read() <= 256
    fs.rm("/z", recursive=True)


def test_truncated_remote_tensor_is_a_dump_error(bucket: str, tmp_path: Path) -> None:
    save_safetensors(tmp_path / "m.safetensors", {"a": np.ones(100, np.float32)})
    MEM.pipe_file(f"{bucket}/m.safetensors", (tmp_path / "m.safetensors").read_bytes()[:-4])
    with pytest.raises(DumpError, match=r"m\.safetensors: truncated"):
        open_tensors(f"{bucket}/m.safetensors")


def test_an_index_url_keeps_the_shard_name_rules(bucket: str, local: dict[str, Path]) -> None:
    upload(local["sharded"], MEM, f"{bucket}/ck")
    index = f"{bucket}/ck/model.safetensors.index.json"
    doc = json.loads(MEM.cat_file(index))
    doc["weight_map"]["half"] = "../outside.safetensors"
    MEM.pipe_file(index, json.dumps(doc).encode())
    with pytest.raises(DumpError, match="not a plain file name"):
        open_tensors(index)
    doc["weight_map"]["half"] = "model-00002-of-00002.safetensors"
    MEM.pipe_file(index, json.dumps(doc).encode())
    MEM.rm_file(f"{bucket}/ck/model-00002-of-00002.safetensors")
    with pytest.raises(DumpError, match="missing shard 'model-00002-of-00002.safetensors'"):
        open_tensors(index)


def test_an_incomplete_remote_directory_is_refused(bucket: str, local: dict[str, Path]) -> None:
    upload(local["sharded"], MEM, f"{bucket}/ck")
    MEM.pipe_file(f"{bucket}/ck/{INCOMPLETE_MARKER}", b"")
    with pytest.raises(DumpError, match="incomplete output"):
        open_tensors(f"{bucket}/ck")


def test_file_urls_are_plain_paths(local: dict[str, Path]) -> None:
    src = local["safetensors"]
    url = f"file://{src}"
    assert not is_remote(url) and is_url(url) and as_local(url) == str(src)
    assert as_local(f"file://localhost{src}") == str(src)
    store = open_tensors(url)
    assert store.files == [str(src)]
    x = store.load("layer.0.weight")
    base: object = x
    while isinstance(base, np.ndarray):
        base = base.base
    if isinstance(base, memoryview):
        base = base.obj
    assert isinstance(base, mmap.mmap)  # memory-mapped, as for the plain path


def test_url_helpers() -> None:
    assert is_url("s3://b/k") and is_url("simplecache::s3://b/k") and is_url("memory://x")
    assert not is_url("C://x") and not is_url("/a/b") and not is_url("a/b.safetensors")
    assert join("memory://a", "b") == "memory://a/b" and join("memory://a/", "b") == "memory://a/b"
    assert join("s3://", "b") == "s3://b" and join("/a", "b") == "/a/b"
    assert parent("s3://b/k/x.json") == "s3://b/k" and parent("memory://x.json") == "memory://"
    assert parent("/a/b") == "/a"


def test_plain_paths_and_file_urls_never_import_fsspec(
    local: dict[str, Path], tmp_path: Path
) -> None:
    code = textwrap.dedent(
        f"""
        import sys
        from pyprecision.io import open_tensors, load_dump, read_raw, save_safetensors
        from pyprecision.reencode import reencode
        for src in [{str(local["safetensors"])!r}, "file://" + {str(local["sharded"])!r}]:
            s = open_tensors(src)
            [s.load(n) for n in s]
        load_dump({str(local["npz"])!r}, name="a")
        read_raw({str(local["raw"])!r}, "float32")
        reencode({str(local["sharded"])!r}, {str(tmp_path / "out")!r}, "bf16", verify=True)
        out = "file://" + {str(tmp_path / "o.safetensors")!r}
        reencode("file://" + {str(local["safetensors"])!r}, out, "bf16")
        assert "fsspec" not in sys.modules, "fsspec was imported"
        print("ok")
        """
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"
    assert (tmp_path / "o.safetensors").is_file()


def test_fortran_order_big_endian_and_bf16_on_a_url(tmp_path: Path, bucket: str) -> None:
    import ml_dtypes

    x = np.arange(24, dtype=">f4").reshape(4, 6)
    np.save(tmp_path / "f.npy", np.asfortranarray(x))
    np.save(tmp_path / "b.npy", x)
    save_safetensors(tmp_path / "h.safetensors", {"h": x.astype(ml_dtypes.bfloat16)})
    for name in ("f.npy", "b.npy", "h.safetensors"):
        upload(tmp_path / name, MEM, f"{bucket}/{name}")
        _same_store(str(tmp_path / name), f"{bucket}/{name}")
    f = open_tensors(f"{bucket}/f.npy").load("f")
    assert f.flags.f_contiguous and f.tolist() == x.tolist()
    assert open_tensors(f"{bucket}/h.safetensors").load("h").dtype == ml_dtypes.bfloat16


def test_a_remote_torch_file_is_refused_in_one_line(bucket: str) -> None:
    MEM.pipe_file(f"{bucket}/w.pt", b"PK\x03\x04 not really")
    with pytest.raises(DumpError, match=r"w\.pt: torch\.save files are read from local paths only"):
        open_tensors(f"{bucket}/w.pt")
