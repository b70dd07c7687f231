"""Writers on URLs (issue 15): a temporary object next to the final one, renamed when complete;
nothing under the final name when anything fails; an input is never overwritten; a store without
write access is refused before any work."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import fsspec
import numpy as np
import pytest
from test_remote_fs import FailingFS, fresh_bucket, objects, weights

import pyprecision.io.remote_write as remote_write
from pyprecision.errors import DumpError
from pyprecision.io import (
    INCOMPLETE_MARKER,
    TEMP_TAG,
    NpzWriter,
    OutputDirectory,
    SafetensorsWriter,
    atomic_file,
    check_output_path,
    open_tensors,
    save_safetensors,
)

MEM = fsspec.filesystem("memory")


@pytest.fixture
def bucket() -> Iterator[str]:
    """A fresh memory:// prefix, removed afterwards."""
    yield from fresh_bucket()


def _temporaries(fs: object, prefix: str) -> list[str]:
    return [o for o in objects(fs, prefix) if TEMP_TAG in o and o.endswith(".tmp")]


def test_publish_goes_through_a_temporary_object_next_to_the_final_one(bucket: str) -> None:
    url = f"{bucket}/d/out.bin"
    with atomic_file(url) as fh:
        fh.write(b"hello")
        assert not MEM.exists(url)
        tmps = _temporaries(MEM, bucket)
        assert len(tmps) == 1 and tmps[0].startswith("d/.out.bin.")
    assert MEM.cat_file(url) == b"hello"
    assert objects(MEM, bucket) == ["d/out.bin"]


def test_an_exception_leaves_nothing(bucket: str) -> None:
    url = f"{bucket}/out.bin"
    with pytest.raises(RuntimeError), atomic_file(url) as fh:
        fh.write(b"partial")
        raise RuntimeError("the writer failed")
    assert objects(MEM, bucket) == []


def test_a_write_failing_in_the_middle_leaves_nothing_under_the_final_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fs = fsspec.filesystem("failmem")
    monkeypatch.setattr(remote_write, "UPLOAD_CHUNK", 4096)
    monkeypatch.setattr(FailingFS, "writes_left", 3)  # the 4th chunk of the upload fails
    w = {"a": np.arange(1 << 14, dtype=np.float32)}  # 64 KiB: 16 chunks
    with pytest.raises(DumpError, match=r"failmem://fail/m\.safetensors: cannot write: .*No space"):
        save_safetensors("failmem://fail/m.safetensors", w)
    assert objects(fs, "/fail") == []
    monkeypatch.setattr(FailingFS, "writes_left", 1 << 30)
    save_safetensors("failmem://fail/m.safetensors", w)  # the next run publishes it whole
    assert open_tensors("failmem://fail/m.safetensors").load("a").tobytes() == w["a"].tobytes()
    assert objects(fs, "/fail") == ["m.safetensors"]
    fs.rm("/fail", recursive=True)


def test_never_replace_and_overwrite(bucket: str) -> None:
    url = f"{bucket}/out.bin"
    MEM.pipe_file(url, b"old")
    with pytest.raises(DumpError, match="already exists"), atomic_file(url) as fh:
        fh.write(b"new")
    assert MEM.cat_file(url) == b"old"
    with atomic_file(url, overwrite=True) as fh:
        fh.write(b"new")
    assert MEM.cat_file(url) == b"new"


def test_a_run_that_lost_the_race_replaces_nothing(bucket: str) -> None:
    url = f"{bucket}/out.bin"
    with pytest.raises(DumpError, match="another run created it meanwhile"), atomic_file(url) as fh:
        fh.write(b"ours")
        MEM.pipe_file(url, b"theirs")  # another writer publishes between our check and rename
    assert MEM.cat_file(url) == b"theirs"
    assert _temporaries(MEM, bucket) == []


def test_an_input_is_never_overwritten_whatever_its_spelling(bucket: str) -> None:
    url = f"{bucket}/in.bin"
    MEM.pipe_file(url, b"input")
    other = url.replace("memory:///", "memory://")
    assert other != url
    for out in (url, other):
        with pytest.raises(DumpError, match="refusing to write over the input"):
            check_output_path(out, [url], overwrite=True)
    assert MEM.cat_file(url) == b"input"


def test_writers_on_urls_write_the_bytes_they_write_locally(bucket: str, tmp_path: Path) -> None:
    w = weights()
    save_safetensors(tmp_path / "m.safetensors", w, {"k": "v"})
    save_safetensors(f"{bucket}/m.safetensors", w, {"k": "v"})
    assert MEM.cat_file(f"{bucket}/m.safetensors") == (tmp_path / "m.safetensors").read_bytes()
    spec = [("a", "F32", (4,)), ("b", "I64", (2,))]
    for dst in (str(tmp_path / "s.safetensors"), f"{bucket}/s.safetensors"):
        with SafetensorsWriter(dst, spec) as sw:
            sw.write("b", np.array([7, 8], np.int64))  # out of layout order: the spool seeks
            sw.write("a", np.arange(4, dtype=np.float32))
    assert MEM.cat_file(f"{bucket}/s.safetensors") == (tmp_path / "s.safetensors").read_bytes()
    for dst in (str(tmp_path / "m.npz"), f"{bucket}/m.npz"):
        with NpzWriter(dst, {"k": "v"}) as nw:
            nw.add("a", w["layer.0.weight"])
    local_npz = open_tensors(str(tmp_path / "m.npz"))
    remote_npz = open_tensors(f"{bucket}/m.npz")
    assert remote_npz.load("a").tobytes() == local_npz.load("a").tobytes()


def test_an_incomplete_writer_leaves_nothing(bucket: str) -> None:
    with (
        pytest.raises(DumpError, match="incomplete tensors"),
        SafetensorsWriter(f"{bucket}/m.safetensors", [("a", "F32", (4,))]) as sw,
    ):
        sw.write("a", np.zeros(2, np.float32))
    assert objects(MEM, bucket) == []


def test_a_bucket_without_write_access_is_one_error_before_any_work() -> None:
    ran = []
    denied = r"romem://ro/out\.bin: cannot write: permission denied"
    with pytest.raises(DumpError, match=denied), atomic_file("romem://ro/out.bin"):
        ran.append(True)
    assert ran == []
    denied = r"romem://ro/dir: cannot write: permission denied"
    with pytest.raises(DumpError, match=denied), OutputDirectory("romem://ro/dir"):
        ran.append(True)
    assert ran == [] and objects(fsspec.filesystem("romem"), "/ro") == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_a_read_only_local_directory_via_file_url(tmp_path: Path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        with pytest.raises(DumpError, match="cannot write: Permission denied"):
            save_safetensors(f"file://{ro}/m.safetensors", {"a": np.zeros(2, np.float32)})
        assert os.listdir(ro) == []
    finally:
        ro.chmod(0o755)


def test_a_remote_output_directory_is_marked_until_done(bucket: str) -> None:
    d = f"{bucket}/out"
    with OutputDirectory(d) as od:
        assert MEM.exists(f"{d}/{INCOMPLETE_MARKER}")
        with pytest.raises(DumpError, match="incomplete output"):
            open_tensors(d)
        save_safetensors(f"{d}/a.safetensors", {"a": np.zeros(2, np.float32)})
        od.published(f"{d}/a.safetensors", False)
    assert objects(MEM, bucket) == ["out/a.safetensors"]


def test_a_failed_remote_output_directory_removes_what_it_published(bucket: str) -> None:
    d = f"{bucket}/out"
    with pytest.raises(RuntimeError), OutputDirectory(d) as od:
        save_safetensors(f"{d}/a.safetensors", {"a": np.zeros(2, np.float32)})
        od.published(f"{d}/a.safetensors", False)
        raise RuntimeError("a later shard failed")
    assert objects(MEM, bucket) == []


def test_a_killed_runs_marker_is_taken_over(bucket: str) -> None:
    d = f"{bucket}/out"
    MEM.pipe_file(f"{d}/{INCOMPLETE_MARKER}", b"pid 1\n")  # left by a killed run: no lock to ask
    with OutputDirectory(d):
        pass
    assert objects(MEM, bucket) == []


def test_no_room_for_the_spool_is_one_error_and_leaves_nothing(
    bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "missing"))
    no_spool = r"out\.bin: cannot make the local spool file in .*missing"
    with pytest.raises(DumpError, match=no_spool), atomic_file(f"{bucket}/out.bin") as fh:
        fh.write(b"never")
    assert objects(MEM, bucket) == []


def test_a_sharded_reencode_failing_on_its_second_shard_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from test_remote_fs import write_checkpoints

    from pyprecision.reencode import reencode

    local = write_checkpoints(tmp_path)
    reencode(local["sharded"], tmp_path / "ref", "bf16")
    first = (tmp_path / "ref" / "model-00001-of-00002.safetensors").stat().st_size
    monkeypatch.setattr(remote_write, "UPLOAD_CHUNK", 256)
    monkeypatch.setattr(FailingFS, "writes_left", -(-first // 256) + 1)  # shard 2: 1 chunk, then out
    fs = fsspec.filesystem("failmem")
    with pytest.raises(DumpError, match=r"model-00002-of-00002\.safetensors: cannot write: .*space"):
        reencode(local["sharded"], "failmem://job/out", "bf16")
    assert objects(fs, "/job") == []  # shard 1 was published, then removed with the marker
    monkeypatch.setattr(FailingFS, "writes_left", 1 << 30)
    reencode(local["sharded"], "failmem://job/out", "bf16")
    got = {o: fs.cat_file(f"/job/out/{o}") for o in objects(fs, "/job/out")}
    want = {p.name: p.read_bytes() for p in (tmp_path / "ref").iterdir()}
    assert got == want
    fs.rm("/job", recursive=True)
