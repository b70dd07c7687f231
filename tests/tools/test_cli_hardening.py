"""Issue 13 items 1, 6, 8 at the command line: each bad input is ONE line on stderr and exit 2
(never a traceback); a broken pipe exits quietly; each case is named after the issue's."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from pyprecision import passes
from pyprecision.errors import DumpError
from pyprecision.io import open_tensors, save_safetensors
from pyprecision.kernel import NAN_POLICIES, ROUNDINGS
from pyprecision.reencode import ReencodeOptions, reencode
from pyprecision.tools import _options
from pyprecision.tools.cli import main

ROOT = Path(__file__).resolve().parents[2]
MLP = ROOT / "examples" / "mlp.pir"
HLO = "HloModule m\n\nENTRY e {\n  p = f32[2]{0} parameter(0)\n  ROOT n = f32[2]{0} negate(p)\n}\n"


def one_line_error(capsys, argv, match: str) -> str:
    code = main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"pyprecision {argv[0]}: error: "), err
    assert match in err, err
    return err


@pytest.fixture
def npy(tmp_path) -> Path:
    p = tmp_path / "x.npy"
    np.save(p, np.arange(4.0, dtype=np.float32))
    return p


@pytest.mark.parametrize("command", ["opt", "explain", "hlo-opt"])
def test_npy_given_as_a_program(capsys, npy, command):
    one_line_error(capsys, [command, npy], "not an HLO module: it looks like a .npy array")


@pytest.mark.parametrize("command", ["opt", "explain"])
def test_non_utf8_program(capsys, tmp_path, command):
    p = tmp_path / "bad.pir"
    p.write_bytes(b"func @main {\n  \xff\n}\n")
    one_line_error(capsys, [command, p], "not UTF-8 text")


@pytest.mark.parametrize(
    "text", ["", "// only a comment\n\n# and another\n"], ids=["empty", "comments"]
)
@pytest.mark.parametrize("command", ["opt", "explain"])
def test_empty_program(capsys, tmp_path, command, text):
    p = tmp_path / "e.pir"
    p.write_text(text)
    one_line_error(capsys, [command, p], f"{p}:1:1: empty program")


def test_number_of_5000_digits_in_a_program(capsys, tmp_path):
    p = tmp_path / "long.pir"
    p.write_text(MLP.read_text().replace("float32[4,2]", "float32[" + "9" * 5000 + ",2]", 1))
    one_line_error(capsys, ["opt", p], "number literal of 5000 characters is too long")


def test_hlo_run_inputs_truncated_npz(capsys, tmp_path):
    src = tmp_path / "m.hlo"
    src.write_text(HLO)
    inp = tmp_path / "in.npz"
    np.savez(inp, arg0=np.ones(2, np.float32))
    inp.write_bytes(inp.read_bytes()[:-25])
    one_line_error(capsys, ["hlo-run", src, "--inputs", inp, "-o", tmp_path / "o.npz"], "in.npz")


def test_hlo_run_inputs_npy(capsys, tmp_path, npy):
    src = tmp_path / "m.hlo"
    src.write_text(HLO)
    one_line_error(
        capsys,
        ["hlo-run", src, "--inputs", npy, "-o", tmp_path / "o.npz"],
        "no input for parameter 0",
    )


def test_hlo_run_inputs_with_dtypes_table_still_work(capsys, tmp_path):
    src = tmp_path / "m.hlo"
    src.write_text(HLO)
    inp = tmp_path / "in.npz"
    np.savez(
        inp, arg0=np.array([1.0, -2.0], np.float32), __dtypes__=np.array('{"arg0": "float32"}')
    )
    assert main(["hlo-run", str(src), "--inputs", str(inp), "-o", str(tmp_path / "o.npz")]) == 0
    assert np.load(tmp_path / "o.npz")["out0"].tolist() == [-1.0, 2.0]


@pytest.mark.parametrize("dtype", ["object", "str"])
def test_verify_dtype_object_or_str(capsys, tmp_path, npy, dtype):
    raw = tmp_path / "d.bin"
    raw.write_bytes(b"\0" * 8)
    one_line_error(
        capsys,
        ["verify", "--input", npy, "--format", "bf16", "--dump", raw, "--dtype", dtype],
        "holds no numbers",
    )


def test_broken_pipe_exits_quietly():
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line is written (`| head` that left)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    code = "import sys; from pyprecision.tools.cli import main; sys.exit(main())"
    r = subprocess.run(
        [sys.executable, "-c", code, "explain", str(MLP), "--auto-cast", "all"],
        stdout=write,
        stderr=subprocess.PIPE,
        env=env,
        cwd=ROOT,
        timeout=120,
    )
    os.close(write)
    assert r.stderr == b""
    assert r.returncode == _options.EXIT_BROKEN_PIPE


@pytest.mark.parametrize("n", ["0", "-1", str(2**31), "1e3"])
def test_threads_out_of_range(capsys, tmp_path, npy, n):
    with pytest.raises(SystemExit) as e:
        main(["cast", str(npy), "--to", "bf16", "-o", str(tmp_path / "o.npy"), "--threads", n])
    assert e.value.code == 2
    assert "--threads" in capsys.readouterr().err


def test_reencode_threads_2_31_is_refused(tmp_path):
    src = tmp_path / "a.safetensors"
    save_safetensors(src, {"w": np.ones(4, np.float32)})
    with pytest.raises(ValueError, match="expected an integer from 1 to"):
        reencode(src, tmp_path / "o.safetensors", "bf16", threads=2**31)


SPLAT = """func @main {
  tensor @x : input float32[4,2]
  tensor @b : const float32[4,1099511627776] = splat 0.25
  tensor @y : output float32[4,2]
^bb0:
  %x = affine_load @x : float32[4,2]
  affine_store %x, @y
}
"""


@pytest.mark.parametrize("command", ["verify", "explain"])
def test_splat_too_large_for_memory_is_refused_before_allocation(capsys, tmp_path, command):
    prog = tmp_path / "big.pir"
    prog.write_text(SPLAT)
    inp = tmp_path / "in.npz"
    np.savez(inp, x=np.ones((4, 2), np.float32), y=np.ones((4, 2), np.float32))
    argv = (
        ["explain", prog, "--inputs", inp]
        if command == "explain"
        else ["verify", "--program", prog, "--inputs", inp, "--dump", inp]
    )
    one_line_error(capsys, argv, "more than the emulator can hold in memory")


def test_include_matching_no_tensor_says_so(capsys, tmp_path):
    src = tmp_path / "a.safetensors"
    save_safetensors(src, {"w": np.ones(4, np.float32)})
    one_line_error(
        capsys,
        [
            "reencode",
            "-q",
            src,
            "-o",
            tmp_path / "o.safetensors",
            "--to",
            "bf16",
            "--include",
            "decoder.*",
        ],
        "--include 'decoder.*' matches no tensor",
    )


def test_output_in_a_nonexistent_directory_is_refused(capsys, tmp_path):
    src = tmp_path / "a.safetensors"
    save_safetensors(src, {"w": np.ones(4, np.float32)})
    one_line_error(
        capsys,
        ["reencode", "-q", src, "-o", tmp_path / "nonexistent/dir/y.safetensors", "--to", "bf16"],
        "no such directory",
    )
    assert not (tmp_path / "nonexistent").exists()


def test_decode_of_a_raw_file_takes_dtype_and_shape(capsys, tmp_path):
    raw = tmp_path / "codes.bin"
    np.array([0x3F80, 0xC000, 0x7F80, 0], np.uint16).tofile(raw)
    out = tmp_path / "v.npy"
    assert main(["decode", str(raw), "--from", "bf16", "--shape", "2,2", "-o", str(out), "-q"]) == 0
    assert np.load(out).tolist() == [[1.0, -2.0], [np.inf, 0.0]]
    one_line_error(
        capsys,
        ["decode", raw, "--from", "bf16", "--shape", "3,3", "-o", out, "-q"],
        "size does not match the shape",
    )


def test_cast_of_a_raw_file_says_it_is_not_npy(capsys, tmp_path):
    raw = tmp_path / "x.bin"
    raw.write_bytes(b"\0" * 16)
    one_line_error(capsys, ["cast", raw, "--to", "bf16", "-o", tmp_path / "o.npy"], "not a .npy")


@pytest.mark.parametrize(
    "fmt,dt", [("fp8e4m3fn", ml_dtypes.float8_e4m3fn), ("fp8e5", ml_dtypes.float8_e5m2)]
)
def test_float8_npy_saved_by_numpy_is_accepted_as_a_dump(capsys, tmp_path, fmt, dt):
    x = np.linspace(-3, 3, 16).astype(np.float32)
    np.save(tmp_path / "in.npy", x)
    np.save(tmp_path / "d.npy", x.astype(dt))
    assert (
        main(
            [
                "verify",
                "--input",
                str(tmp_path / "in.npy"),
                "--format",
                fmt,
                "--dump",
                str(tmp_path / "d.npy"),
            ]
        )
        == 0
    ), capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ["opt", "{m}"],
        ["explain", "{m}"],
        ["hlo-opt", "{m}"],
        ["cast", "{m}", "--to", "bf16", "-o", "{o}"],
        ["decode", "{m}", "--from", "bf16", "-o", "{o}"],
        ["reencode", "-q", "{m}", "-o", "{o}", "--to", "bf16"],
        ["verify", "--input", "{m}", "--format", "bf16", "--dump", "{m}"],
        ["verify", "--program", "{m}", "--inputs", "{m}", "--dump", "{m}"],
    ],
    ids=lambda a: a[0] if a[0] != "verify" else "verify" + a[1],
)
def test_missing_file_messages_agree(capsys, tmp_path, argv):
    missing = tmp_path / "missing.pir"
    args = [a.format(m=missing, o=tmp_path / "o.npy") for a in argv]
    one_line_error(capsys, args, f"{missing}: no such file")


def test_shared_choices_match_the_rooms():
    assert tuple(sorted(passes.GENERATIONS)) == _options.TARGETS
    assert set(_options.ROUNDING_CHOICES) == set(ROUNDINGS)
    assert set(_options.NAN_CHOICES) == set(NAN_POLICIES)


# -- --verify checks what a reader will decode (item 6) ----------------------------------------


def _retag(path: Path, edit) -> None:
    """Rewrite a safetensors header in place (same length: the JSON is padded with spaces)."""
    data = path.read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    edit(header)
    text = json.dumps(header, separators=(",", ":")).encode()
    assert len(text) <= n
    path.write_bytes(data[:8] + text + b" " * (n - len(text)) + data[8 + n :])


def _verify_after(tmp_path: Path, to: str, edit) -> list[str]:
    import pyprecision.reencode.core as core
    from pyprecision.formats import format as fmt

    src = tmp_path / "a.safetensors"
    if not src.exists():
        save_safetensors(src, {"w": np.linspace(-2, 2, 8).astype(np.float32)})
    out = tmp_path / f"o-{to}.safetensors"
    s = reencode(src, out, to)
    _retag(out, edit)
    o = ReencodeOptions(to=to).checked()
    return core._verify_file(open_tensors(src), str(out), o, fmt(to), s.tensors)


def test_verify_catches_f8_e4m3_relabelled_f8_e5m2(tmp_path):
    def edit(h):
        h["w"]["dtype"] = "F8_E5M2"
        h["__metadata__"].pop("pyprecision.dtypes")

    bad = _verify_after(tmp_path, "fp8e4m3fn", edit)
    assert bad and "a reader decodes it as" in bad[0]


def test_verify_catches_bf16_relabelled_f16(tmp_path):
    def edit(h):
        h["w"]["dtype"] = "F16"
        h["__metadata__"].pop("pyprecision.dtypes")

    assert _verify_after(tmp_path, "bf16", edit)


def test_verify_catches_a_dropped_pyprecision_dtypes_entry(tmp_path):
    assert _verify_after(tmp_path, "fp8e4", lambda h: h["__metadata__"].pop("pyprecision.dtypes"))
    assert _verify_after(tmp_path, "bf16", lambda h: h["__metadata__"].pop("pyprecision.dtypes"))


def test_verify_passes_an_untouched_output(tmp_path):
    assert _verify_after(tmp_path, "fp8e4m3fn", lambda h: None) == []


def test_dump_error_is_a_value_error():
    assert issubclass(DumpError, ValueError)


def test_error_quoting_control_characters_stays_one_printable_line(capsys, tmp_path):
    p = tmp_path / "m.hlo"
    p.write_bytes(b"\x0b\x1b[31mHloModule\x0c")
    err = one_line_error(capsys, ["hlo-opt", p], "error")
    assert err.strip().isprintable() and "\x1b" not in err
