"""``pyprecision verify`` (cast check) end to end: files in, exit code and report out."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

import pyprecision as pp
from pyprecision.tools import cli

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    """Run ``pyprecision ARGS`` (verify only, so other commands' state cannot interfere)."""
    monkeypatch.setattr(cli, "COMMAND_MODULES", ("verify_cmd",))

    def _run(*argv: str) -> tuple[int, str, str]:
        code = cli.main(["verify", *argv])
        out, err = capsys.readouterr()
        return code, out, err

    return _run


@pytest.fixture
def x(tmp_path: Path) -> np.ndarray:
    rng = np.random.default_rng(3)
    a = (rng.standard_normal((16, 24)) * 40).astype(np.float32)
    a[0, :4] = [np.nan, np.inf, 1000.0, 1.0625]
    np.save(tmp_path / "x.npy", a)
    return a


def _one_error_line(code: int, err: str) -> str:
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("pyprecision verify: error: ")
    return lines[0]


def test_match_exits_0(run, x, tmp_path: Path) -> None:
    pp.encode(x, "fp8e4").tofile(tmp_path / "d.bin")
    code, out, _ = run("--input", str(tmp_path / "x.npy"), "--dump", str(tmp_path / "d.bin"),
                       "--format", "fp8e4")
    assert code == 0
    assert "elements:    384" in out and "mismatches:  0" in out and "result: OK (bit-exact)" in out


def test_rtz_dump_against_rne_exits_1_with_diagnosis(run, x, tmp_path: Path) -> None:
    pp.encode(x, "fp8e4", rounding="rtz").tofile(tmp_path / "d.bin")
    code, out, _ = run("--input", str(tmp_path / "x.npy"), "--dump", str(tmp_path / "d.bin"),
                       "--format", "fp8e4", "--show", "2")
    assert code == 1
    assert "diagnosis: the dump is reproduced exactly by fp8e4 rtz" in out
    assert "(rounding=rtz)" in out
    assert "first 2 mismatches:" in out


def test_max_ulp_tolerates_one_ulp(run, x, tmp_path: Path) -> None:
    pp.encode(x, "bf16", rounding="rtz").tofile(tmp_path / "d.bin")
    args = ("--input", str(tmp_path / "x.npy"), "--dump", str(tmp_path / "d.bin"), "--format", "bf16")
    assert run(*args)[0] == 1
    code, out, _ = run(*args, "--max-ulp", "1")
    assert code == 0 and "result: OK (within 1 ULP)" in out


def test_json_schema(run, x, tmp_path: Path) -> None:
    dump = pp.encode(x, "fp8e5", nan="nvidia")
    np.save(tmp_path / "d.npy", dump)
    code, out, _ = run("--input", str(tmp_path / "x.npy"), "--dump", str(tmp_path / "d.npy"),
                       "--format", "fp8e5", "--json", "--show", "3")
    assert code == 1
    doc = json.loads(out)
    for key in ("elements", "matches", "mismatches", "max_ulp", "first_mismatches", "diagnosis",
                "mean_ulp", "ulp_histogram", "counts", "policy", "ok"):
        assert key in doc
    assert doc["elements"] == x.size
    assert doc["matches"] + doc["mismatches"] == x.size
    assert doc["mismatches"] == 1  # only the NaN's encoding differs: 0x7e vs nvidia's 0x7f
    assert doc["max_ulp"] == 1
    m = doc["first_mismatches"][0]
    assert m["index"] == [0, 0] and m["input"] == "nan"
    assert m["expected_bits"] == "0x7e" and m["dumped_bits"] == "0x7f" and m["ulp"] == 1
    assert doc["diagnosis"]["policy"]["nan"] == "nvidia"
    assert doc["diagnosis"]["changes"] == ["nan=nvidia"]
    assert doc["ok"] is False


def test_json_diagnosis_null_when_matching(run, x, tmp_path: Path) -> None:
    np.save(tmp_path / "d.npy", pp.encode(x, "fp16"))
    code, out, _ = run("--input", str(tmp_path / "x.npy"), "--dump", str(tmp_path / "d.npy"),
                       "--format", "fp16", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["diagnosis"] is None and doc["first_mismatches"] == []
    assert doc["max_ulp"] == 0 and doc["mismatches"] == 0


def test_plot_writes_a_png(run, x, tmp_path: Path) -> None:
    pp.encode(x, "fp8e4", rounding="rtz").tofile(tmp_path / "d.bin")
    png = tmp_path / "report.png"
    code, out, _ = run("--input", str(tmp_path / "x.npy"), "--dump", str(tmp_path / "d.bin"),
                       "--format", "fp8e4", "--plot", str(png))
    assert code == 1
    assert png.read_bytes()[:8] == PNG_SIGNATURE
    assert f"plot: {png}" in out


def test_raw_big_endian_with_offset(run, x, tmp_path: Path) -> None:
    codes = pp.encode(x, "bf16")
    (tmp_path / "d.bin").write_bytes(b"HEADER--" + codes.astype(">u2").tobytes())
    code, _, _ = run("--input", str(tmp_path / "x.npy"), "--dump", str(tmp_path / "d.bin"),
                     "--format", "bf16", "--byte-order", "big", "--offset", "8", "--shape", "16,24")
    assert code == 0
    code, _, _ = run("--input", str(tmp_path / "x.npy"), "--dump", str(tmp_path / "d.bin"),
                     "--format", "bf16", "--offset", "8")  # little-endian read: wrong bytes
    assert code == 1


def test_raw_input_and_dump(run, x, tmp_path: Path) -> None:
    x.astype(np.float32).tofile(tmp_path / "x.raw")
    pp.encode(x, "fp16").tofile(tmp_path / "d.raw")
    code, _, _ = run("--input", str(tmp_path / "x.raw"), "--dump", str(tmp_path / "d.raw"),
                     "--format", "fp16", "--shape", "16,24")
    assert code == 0


def test_safetensors_and_npz_dumps(run, x, tmp_path: Path) -> None:
    save_file({"y": pp.cast(x, "bf16"), "other": np.zeros(3, np.float32)},
              str(tmp_path / "d.safetensors"))
    np.savez(tmp_path / "d.npz", y=pp.encode(x, "bf16"), z=np.zeros(2))
    for dump in ("d.safetensors", "d.npz"):
        code, _, _ = run("--input", str(tmp_path / "x.npy"), "--dump", str(tmp_path / dump),
                         "--dump-key", "y", "--format", "bf16")
        assert code == 0
        code, _, err = run("--input", str(tmp_path / "x.npy"), "--dump", str(tmp_path / dump),
                           "--format", "bf16")
        line = _one_error_line(code, err)
        assert "holds 2 arrays" in line


def test_safetensors_fp8_e4m3fn_dump_checked_as_fp8e4(run, x, tmp_path: Path) -> None:
    save_file({"y": pp.cast(x, "fp8e4m3fn")}, str(tmp_path / "d.safetensors"))
    code, out, _ = run("--input", str(tmp_path / "x.npy"), "--dump", str(tmp_path / "d.safetensors"),
                       "--format", "fp8e4")
    assert code == 1
    assert "computed as fp8e4m3fn" in out and "read as fp8e4 codes" in out


@pytest.mark.parametrize("case", ["truncated", "wrong-shape", "unknown-format", "missing-input",
                                  "missing-dump", "count", "bad-dtype", "seedless-stochastic",
                                  "seed-without-stochastic", "negative-max-ulp", "bad-shape",
                                  "program-flag"])
def test_bad_inputs_exit_2_with_one_line(run, x, tmp_path: Path, case: str) -> None:
    pp.encode(x, "fp8e4").tofile(tmp_path / "d.bin")
    (tmp_path / "short.bin").write_bytes((tmp_path / "d.bin").read_bytes()[:-5])
    np.save(tmp_path / "d_small.npy", pp.encode(x[:3], "fp8e4"))
    args = {"--input": str(tmp_path / "x.npy"), "--dump": str(tmp_path / "d.bin"),
            "--format": "fp8e4"}
    extra: list[str] = []
    expect = {
        "truncated": "size does not match the shape",
        "wrong-shape": "size does not match the shape",
        "unknown-format": "unknown format 'fp9'",
        "missing-input": "no such file",
        "missing-dump": "no such file",
        "count": "elements",
        "bad-dtype": "unknown dtype",
        "seedless-stochastic": "needs --seed",
        "seed-without-stochastic": "only used with --rounding stochastic",
        "negative-max-ulp": "non-negative",
        "bad-shape": "bad shape",
        "program-flag": "apply to --program checks",
    }[case]
    if case == "truncated":
        args["--dump"] = str(tmp_path / "short.bin")
    elif case == "wrong-shape":
        extra = ["--shape", "10,10"]
    elif case == "unknown-format":
        args["--format"] = "fp9"
    elif case == "missing-input":
        args["--input"] = str(tmp_path / "nope.npy")
    elif case == "missing-dump":
        args["--dump"] = str(tmp_path / "nope.bin")
    elif case == "count":
        args["--dump"] = str(tmp_path / "d_small.npy")
    elif case == "bad-dtype":
        extra = ["--dtype", "uint7"]
    elif case == "seedless-stochastic":
        extra = ["--rounding", "stochastic"]
    elif case == "seed-without-stochastic":
        extra = ["--seed", "3"]
    elif case == "negative-max-ulp":
        extra = ["--max-ulp", "-1"]
    elif case == "bad-shape":
        extra = ["--shape", "4,y"]
    elif case == "program-flag":
        extra = ["--auto-cast", "all"]
    argv = [a for kv in args.items() for a in kv] + extra
    line = _one_error_line(*run(*argv)[::2])
    assert expect in line


def test_usage_errors_exit_2(run, x, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        run("--input", str(tmp_path / "x.npy"))  # --dump is required
    assert exc.value.code == 2
    assert "required: --dump" in capsys.readouterr().err
    code, _, err = run("--dump", str(tmp_path / "x.npy"))
    assert "give --input X --format F" in _one_error_line(code, err)


def test_bf16_npy_saved_by_numpy_as_void(run, x, tmp_path: Path) -> None:
    np.save(tmp_path / "d.npy", pp.cast(x, "bf16"))  # numpy stores ml_dtypes arrays as |V2
    code, _, _ = run("--input", str(tmp_path / "x.npy"), "--dump", str(tmp_path / "d.npy"),
                     "--format", "bf16", "--dtype", "bfloat16")
    assert code == 0
    assert np.load(tmp_path / "d.npy").dtype.kind == "V"


def test_float64_input_double_rounding_diagnosed(run, tmp_path: Path) -> None:
    x = np.full(8, 1 + 2.0**-8 + 2.0**-40)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "d.npy", pp.cast(x.astype(np.float32), "bf16").view(np.uint16))
    code, out, _ = run("--input", str(tmp_path / "x.npy"), "--dump", str(tmp_path / "d.npy"),
                       "--format", "bf16")
    assert code == 1 and "(via=fp32)" in out
    # a double-rounding input: rounding once from float64 and rounding through float32 differ
    # (whatever the installed ml_dtypes does; some versions round float64 through float32 too)
    assert pp.encode(x, "bf16")[0] != pp.encode(x.astype(np.float32), "bf16")[0]


def test_plot_without_matplotlib_is_one_clear_line(run, x, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` now fails
    pp.encode(x, "fp8e4").tofile(tmp_path / "d.bin")
    code, _, err = run("--input", str(tmp_path / "x.npy"), "--dump", str(tmp_path / "d.bin"),
                       "--format", "fp8e4", "--plot", str(tmp_path / "r.png"))
    assert "--plot needs matplotlib" in _one_error_line(code, err)
    assert not (tmp_path / "r.png").exists()
