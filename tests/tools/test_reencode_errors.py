"""Bad inputs to ``pyprecision reencode``: one line on stderr, exit code 2, nothing written."""

from __future__ import annotations

import json
import os
import struct

import numpy as np
import pytest
from test_reencode_helpers import sharded, single

from pyprecision.errors import DumpError, FormatError
from pyprecision.reencode import reencode
from pyprecision.tools.cli import main


def _cli_error(capsys, argv, match):
    code = main(["reencode", "-q", *map(str, argv)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and err.startswith("pyprecision reencode: error: ")
    assert match in err, err
    return err


def _nothing_written(d):
    return not [n for n in os.listdir(d) if n.startswith("out") or n.endswith(".tmp")]


def test_truncated_safetensors(tmp_path, capsys):
    src, _ = single(tmp_path)
    src.write_bytes(src.read_bytes()[:-10])
    _cli_error(capsys, [src, "-o", tmp_path / "out.safetensors", "--to", "bf16"], "truncated")
    assert _nothing_written(tmp_path)


def test_header_lies_about_sizes(tmp_path, capsys):
    head = json.dumps({"w": {"dtype": "F32", "shape": [4, 4], "data_offsets": [0, 60]}}).encode()
    p = tmp_path / "lies.safetensors"
    p.write_bytes(struct.pack("<Q", len(head)) + head + bytes(60))
    err = _cli_error(capsys, [p, "-o", tmp_path / "out.safetensors", "--to", "bf16"], "header lies")
    assert str(p) in err
    assert _nothing_written(tmp_path)


def test_missing_shard(tmp_path, capsys):
    d, _ = sharded(tmp_path)
    (d / "model-00002-of-00002.safetensors").unlink()
    _cli_error(capsys, [d, "-o", tmp_path / "out", "--to", "bf16"], "missing shard")
    assert not (tmp_path / "out").exists()


def test_output_is_the_input(tmp_path, capsys):
    src, _ = single(tmp_path)
    before = src.read_bytes()
    _cli_error(
        capsys, [src, "-o", src, "--to", "bf16", "--force"], "refusing to write over the input"
    )
    link = tmp_path / "link.safetensors"
    link.symlink_to(src)
    _cli_error(capsys, [src, "-o", link, "--to", "bf16", "--force"], "refusing")
    assert src.read_bytes() == before


def test_output_directory_is_the_input_directory(tmp_path, capsys):
    d, _ = sharded(tmp_path)
    before = {p.name: p.read_bytes() for p in d.iterdir()}
    _cli_error(capsys, [d, "-o", d, "--to", "fp8e5", "--force"], "refusing to write over the input")
    assert {p.name: p.read_bytes() for p in d.iterdir()} == before


def test_unknown_format(tmp_path, capsys):
    src, _ = single(tmp_path)
    _cli_error(
        capsys, [src, "-o", tmp_path / "out.safetensors", "--to", "fp7"], "unknown format 'fp7'"
    )


def test_existing_output_needs_force(tmp_path, capsys):
    src, _ = single(tmp_path)
    out = tmp_path / "o.safetensors"
    out.write_bytes(b"keep me")
    _cli_error(capsys, [src, "-o", out, "--to", "bf16"], "already exists")
    assert out.read_bytes() == b"keep me"
    assert main(["reencode", "-q", str(src), "-o", str(out), "--to", "bf16", "--force"]) == 0
    assert out.read_bytes() != b"keep me"


def test_seed_without_stochastic(tmp_path, capsys):
    src, _ = single(tmp_path)
    _cli_error(
        capsys,
        [src, "-o", tmp_path / "out.safetensors", "--to", "bf16", "--seed", "3"],
        "--seed is only used with --rounding stochastic",
    )


def test_input_not_a_checkpoint(tmp_path, capsys):
    p = tmp_path / "x.bin"
    p.write_bytes(b"0123")
    _cli_error(
        capsys,
        [p, "-o", tmp_path / "out.safetensors", "--to", "bf16"],
        "unknown checkpoint file type",
    )
    _cli_error(
        capsys,
        [tmp_path / "nope.safetensors", "-o", tmp_path / "out.safetensors", "--to", "bf16"],
        "no such file",
    )


def test_two_inputs_to_the_same_output_name(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    np.save(d / "a.npy", np.ones(2, np.float32))
    np.savez(d / "a.npz", b=np.ones(2, np.float32))
    with pytest.raises(DumpError, match="would both be written"):
        reencode(d, tmp_path / "out", "bf16")


def test_bad_option_values(tmp_path):
    src, _ = single(tmp_path)
    with pytest.raises(FormatError, match="unknown rounding"):
        reencode(src, tmp_path / "o.safetensors", "bf16", rounding="up")
    with pytest.raises(FormatError, match="unknown scale"):
        reencode(src, tmp_path / "o.safetensors", "bf16", scale="rms")


def test_failure_midway_leaves_no_partial_file(tmp_path, monkeypatch):
    import pyprecision.reencode.core as mod

    src, _ = single(tmp_path)
    calls = []

    def boom(*a, **k):
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("disk on fire")
        return real(*a, **k)

    real = mod.encode_chunks
    monkeypatch.setattr(mod, "encode_chunks", boom)
    with pytest.raises(RuntimeError):
        reencode(src, tmp_path / "out.safetensors", "bf16")
    assert _nothing_written(tmp_path)


def test_compressed_npz_input_is_read(tmp_path):
    np.savez_compressed(tmp_path / "c.npz", w=np.linspace(-1, 1, 50, dtype=np.float32))
    s = reencode(tmp_path / "c.npz", tmp_path / "out.safetensors", "fp8e4m3fn", verify=True)
    assert not s.verify_failures
