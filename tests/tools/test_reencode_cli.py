"""``pyprecision reencode`` end to end through the CLI."""

from __future__ import annotations

import json

import numpy as np
from test_reencode_helpers import metadata, sharded, single

import pyprecision as pp
from pyprecision.io import open_tensors
from pyprecision.tools.cli import main


def test_cli_single_file_with_verify(tmp_path, capsys):
    src, w = single(tmp_path)
    out = tmp_path / "o.safetensors"
    code = main(
        [
            "reencode",
            str(src),
            "-o",
            str(out),
            "--to",
            "fp8e4m3fn",
            "--exclude",
            "norm.*",
            "--exclude",
            "*.bias",
            "--verify",
            "--no-saturate",
            "--nan",
            "nvidia",
        ]
    )
    cap = capsys.readouterr()
    assert code == 0, cap.err
    assert cap.err == ""  # not a terminal: no progress bar
    assert "float32 → fp8e4m3fn" in cap.out and "verify" in cap.out and f"wrote {out}" in cap.out
    run = json.loads(metadata(out)["pyprecision.reencode"])
    assert run["saturate"] is False and run["nan"] == "nvidia"
    got = open_tensors(out).load("layer.1.weight").view(np.uint8)
    np.testing.assert_array_equal(
        got, pp.encode(w["layer.1.weight"], "fp8e4m3fn", saturate=False, nan="nvidia")
    )


def test_cli_sharded_to_directory_with_scale(tmp_path, capsys):
    d, _ = sharded(tmp_path)
    code = main(
        [
            "reencode",
            str(d / "model.safetensors.index.json"),
            "-o",
            str(tmp_path / "out"),
            "--to",
            "fp8e5",
            "--scale",
            "amax",
            "--verify",
            "-q",
        ]
    )
    assert code == 0, capsys.readouterr().err
    index = json.loads((tmp_path / "out" / "model.safetensors.index.json").read_text())
    assert index["weight_map"]["layer.0.weight.scale"] == index["weight_map"]["layer.0.weight"]
    assert "position_ids.scale" not in index["weight_map"]


def test_cli_verify_failure_exits_1(tmp_path, capsys, monkeypatch):
    import pyprecision.reencode.core as mod

    src, _ = single(tmp_path)
    real = mod.fresh_encode
    monkeypatch.setattr(mod, "fresh_encode", lambda *a, **k: real(*a, **k) ^ 1)
    code = main(
        [
            "reencode",
            str(src),
            "-o",
            str(tmp_path / "o.safetensors"),
            "--to",
            "bf16",
            "--verify",
            "-q",
        ]
    )
    assert code == 1
    assert "FAILED" in capsys.readouterr().out


def test_cli_list(tmp_path, capsys):
    src, _ = single(tmp_path)
    assert (
        main(["reencode", str(src), "-o", "unused", "--to", "bf16", "--exclude", "norm*", "--list"])
        == 0
    )
    lines = dict(line.split("\t", 1) for line in capsys.readouterr().out.splitlines())
    assert lines["norm.weight"].endswith("kept") and lines["position_ids"].endswith("kept")
    assert lines["layer.0.weight"] == "float32[64, 48]\t→ bf16"


def test_cli_progress_bar_on_a_terminal(tmp_path, capsys, monkeypatch):
    import sys

    src, _ = single(tmp_path)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    assert main(["reencode", str(src), "-o", str(tmp_path / "o.safetensors"), "--to", "bf16"]) == 0
    err = capsys.readouterr().err
    assert "reencode → bf16" in err and "B/s" in err


def test_docs_io_example_output_is_real(tmp_path, capsys, monkeypatch):
    """The command and table in docs/io.md, re-run (timings masked)."""
    import re
    import shlex
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "io.md").read_text(encoding="utf-8")
    block = re.search(r"```\n(\$ pyprecision reencode .*?)```", doc, re.S)
    assert block is not None
    lines = block.group(1).splitlines()
    command = lines[0][2:].rstrip("\\").strip() + " " + lines[1].strip()
    shown = lines[2:]
    monkeypatch.chdir(tmp_path)
    single(tmp_path)
    argv = shlex.split(command)[1:]
    assert argv[0] == "reencode" and main([*argv, "-q"]) == 0
    got = capsys.readouterr().out.splitlines()

    def mask(text: str) -> str:
        return re.sub(r"\d+\.\d+ s|\d+\.\d+ GB/s", "#", text)

    assert [mask(x) for x in got] == [mask(x) for x in shown]
