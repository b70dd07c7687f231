"""``pyprecision flags``: the canonical pair, the token and the pass configuration; errors."""
from __future__ import annotations

import pytest

from pyprecision.tools.cli import main


def lines(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, list[str], str]:
    rc = main(["flags", *argv])
    out, err = capsys.readouterr()
    return rc, out.splitlines(), err


def test_flags_prints_pair_and_token_first(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = lines(capsys, ["--auto-cast", "all", "--auto-cast-type", "tf32"])
    assert rc == 0
    assert out[:3] == ["auto_cast: matmult", "auto_cast_type: fp32r",
                       "token: fp32-cast-matmult-fp32r"]
    assert "fp32_cast_mode: matmult-fp32r" in out
    assert "passes: auto-cast-tc-inputs dtype-mutator cast-elimination" in out
    assert "tensorizer_options: enable-penguin-mac-count" in out


def test_flags_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = lines(capsys, [])
    assert rc == 0
    assert out[:3] == ["auto_cast: none", "auto_cast_type: bf16", "token: fp32-cast-none-bf16"]
    assert "passes: []" in out
    assert "fast_math: none" in out


def test_flags_internal_mode_and_int64(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = lines(capsys, ["--fp32-cast", "matmult", "--enable-internal-native-int64"])
    assert rc == 0
    assert "transpose_dtype: fp16" in out and "dtype: bf16" in out
    assert "tensorizer_options: enable-penguin-mac-count enable-native-int64" in out


@pytest.mark.parametrize(
    "argv",
    [["--auto-cast", "most"], ["--fp32-cast", "all-bf16"], ["--disable-inline-cast"],
     ["--auto-cast-type", "fp8"]],
)
def test_flags_unknown_values_exit_2_without_traceback(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["flags", *argv])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and err.startswith("pyprecision flags: error:")


def test_flags_conflicting_doors_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = lines(capsys, ["--fp32-cast", "all-fp8e4", "--auto-cast", "matmult"])
    assert rc == 2 and out == []
    assert len(err.strip().splitlines()) == 1 and "give one door" in err
