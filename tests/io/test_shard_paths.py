"""Issue 13 item 2: shard names are plain file names inside the checkpoint's directory; symbolic
links leading out of it are refused unless asked; nothing outside is opened before the refusal."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

import pyprecision.io.store as store_mod
from pyprecision.errors import DumpError
from pyprecision.io import INCOMPLETE_MARKER, open_tensors, save_safetensors
from pyprecision.reencode import reencode


def _ckpt(tmp: Path, wmap_value: object, name: str = "ckpt") -> Path:
    d = tmp / name
    d.mkdir()
    save_safetensors(d / "a.safetensors", {"w": np.arange(4, dtype=np.float32)})
    index = d / "model.safetensors.index.json"
    index.write_text(json.dumps({"metadata": {}, "weight_map": {"w": wmap_value}}))
    return index


@pytest.fixture
def opened(monkeypatch):
    """Every safetensors file whose header the store reads."""
    seen: list[str] = []
    real = store_mod.read_safetensors_header

    def spy(path):
        seen.append(os.fspath(path))
        return real(path)

    monkeypatch.setattr(store_mod, "read_safetensors_header", spy)
    return seen


def test_shard_named_dotdot_outside_is_refused_before_opening(tmp_path, opened):
    save_safetensors(tmp_path / "outside.safetensors", {"w": np.ones(4, np.float32)})
    index = _ckpt(tmp_path, "../outside.safetensors")
    with pytest.raises(DumpError, match="not a plain file name"):
        open_tensors(index)
    assert opened == []


@pytest.mark.parametrize("shard", ["../../../../etc/passwd", "/etc/passwd", "/proc/self/environ"])
def test_shard_named_by_absolute_or_deep_path_is_refused_before_opening(tmp_path, opened, shard):
    index = _ckpt(tmp_path, shard)
    with pytest.raises(DumpError, match="refusing to read outside the checkpoint"):
        open_tensors(index)
    assert opened == []


@pytest.mark.parametrize("shard", ["sub/a.safetensors", ".", "..", "", "a.safe\0tensors"])
def test_shard_name_with_a_directory_part_or_special_is_refused(tmp_path, opened, shard):
    index = _ckpt(tmp_path, shard)
    with pytest.raises(DumpError, match="not a plain file name"):
        open_tensors(index)
    assert opened == []


def test_every_shard_name_is_checked_before_any_shard_is_opened(tmp_path, opened):
    d = tmp_path / "ckpt"
    d.mkdir()
    save_safetensors(d / "a.safetensors", {"w": np.ones(2, np.float32)})
    index = d / "model.safetensors.index.json"
    index.write_text(json.dumps({"weight_map": {"w": "a.safetensors", "v": "/etc/passwd"}}))
    with pytest.raises(DumpError, match="outside the checkpoint"):
        open_tensors(index)
    assert opened == []


def _symlinked_shard(tmp_path: Path) -> Path:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    save_safetensors(outside / "real.safetensors", {"w": np.arange(4, dtype=np.float32)})
    index = _ckpt(tmp_path, "link.safetensors")
    (index.parent / "link.safetensors").symlink_to(outside / "real.safetensors")
    return index


def test_shard_symlink_leaving_the_directory_is_refused(tmp_path, opened):
    index = _symlinked_shard(tmp_path)
    with pytest.raises(DumpError, match="symbolic link leading out of"):
        open_tensors(index)
    assert opened == []


def test_shard_symlink_leaving_the_directory_is_accepted_when_asked(tmp_path):
    index = _symlinked_shard(tmp_path)
    store = open_tensors(index, allow_symlinks=True)
    assert store.load("w").tolist() == [0.0, 1.0, 2.0, 3.0]


def test_shard_symlink_inside_the_directory_is_accepted(tmp_path):
    index = _ckpt(tmp_path, "alias.safetensors")
    (index.parent / "alias.safetensors").symlink_to("a.safetensors")
    assert open_tensors(index).load("w").tolist() == [0.0, 1.0, 2.0, 3.0]


def test_directory_file_symlink_leaving_the_directory_is_refused(tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    save_safetensors(outside / "real.safetensors", {"w": np.ones(2, np.float32)})
    d = tmp_path / "dir"
    d.mkdir()
    (d / "model.safetensors").symlink_to(outside / "real.safetensors")
    with pytest.raises(DumpError, match="symbolic link leading out of"):
        open_tensors(d)
    assert len(open_tensors(d, allow_symlinks=True)) == 1


def test_reencode_never_writes_a_shard_named_outside(tmp_path):
    save_safetensors(tmp_path / "outside.safetensors", {"w": np.ones(4, np.float32)})
    index = _ckpt(tmp_path, "../outside.safetensors")
    out = tmp_path / "out"
    with pytest.raises(DumpError, match="not a plain file name"):
        reencode(index, out, "bf16")
    assert not out.exists()
    assert not (tmp_path / "out" / "outside.safetensors").exists()


@pytest.mark.parametrize("value", [3, None, ["a.safetensors"], {"a": 1}, 1.5, True])
def test_weight_map_value_that_is_not_a_string_is_refused(tmp_path, value):
    index = _ckpt(tmp_path, value)
    with pytest.raises(DumpError, match=r"weight_map\['w'\] is .*expected a shard file name"):
        open_tensors(index)


def test_empty_weight_map_beside_full_shards_is_refused(tmp_path):
    index = _ckpt(tmp_path, "a.safetensors")
    index.write_text(json.dumps({"metadata": {}, "weight_map": {}}))
    with pytest.raises(DumpError, match="weight_map is empty"):
        open_tensors(index)
    with pytest.raises(DumpError, match="weight_map is empty"):
        open_tensors(index.parent)


@pytest.mark.parametrize(
    "text",
    [b"[1, 2]", b'{"weight_map": 3}', b"\xff\xfe{", b"[" * 1000 + b"]" * 1000, b'{"weight_map": '],
    ids=["list", "weight_map-int", "not-utf8", "nested-1000-deep", "truncated"],
)
def test_malformed_index_json_is_a_dump_error(tmp_path, text):
    index = _ckpt(tmp_path, "a.safetensors")
    index.write_bytes(text)
    with pytest.raises(DumpError, match="not a valid safetensors index"):
        open_tensors(index)


def test_missing_index_says_no_such_file(tmp_path):
    with pytest.raises(DumpError, match="no such file"):
        open_tensors(tmp_path / "nope.safetensors.index.json")


def test_directory_marked_incomplete_is_refused(tmp_path):
    index = _ckpt(tmp_path, "a.safetensors")
    (index.parent / INCOMPLETE_MARKER).write_bytes(b"")
    for what in (index, index.parent):
        with pytest.raises(DumpError, match="incomplete output"):
            open_tensors(what)
    assert len(open_tensors(index.parent / "a.safetensors")) == 1  # a published file is whole
