"""``pyprecision opt``: transformed program, statistics, errors as one line with a non-zero exit."""
from __future__ import annotations

from pathlib import Path

import pytest

from pyprecision import ir
from pyprecision.tools.cli import main

from .helpers import EXAMPLES


def opt(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(["opt", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_opt_all_mode_prints_parseable_program_and_stats(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = opt(capsys, str(EXAMPLES / "mlp.pir"), "--auto-cast", "all", "--stats")
    assert rc == 0 and err == ""
    m = ir.parse(out)  # the statistics are // comments: the output still parses
    assert "tensor @w_bfloat16 : const bfloat16[4,3]" in out
    assert "//         48 DTypeMutator.casted_weights" in out
    assert "// pass dtype-mutator: changed" in out
    assert m.main.get_tensor("y").dtype.name == "bfloat16"


def test_opt_fp32_cast_door_and_target(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = opt(capsys, str(EXAMPLES / "transpose_matmul.pir"), "--fp32-cast", "matmult",
                     "--target", "gen3")
    assert rc == 0
    assert "%xT = matmul %x, %ident : float32[4,3]" in out
    assert "tensor @ident_float16 : const float16[3,3]" in out


def test_opt_explicit_passes_with_option(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    prog = tmp_path / "p.pir"
    prog.write_text("""func @main {
  tensor @x : input float32[2]
  tensor @y : output float32[2]
  tensor @z : output float32[2]
^bb0:
  %x = affine_load @x : float32[2]
  opaque "copy" ins(@x) outs(@z)
  affine_store %x, @y
}
""")
    out_file = tmp_path / "out.pir"
    rc, out, _ = opt(capsys, str(prog), "--fp32-cast", "all-fp32r", "--passes",
                     "auto-cast-fp32{disable-inline-cast=true},cast-elimination", "-o", str(out_file))
    assert rc == 0 and out == ""
    text = out_file.read_text()
    assert "%float32r.x = cast %x.1 : float32r[2]" in text


def test_opt_none_mode_is_identity(capsys: pytest.CaptureFixture[str]) -> None:
    path = EXAMPLES / "masked_select.pir"
    rc, out, _ = opt(capsys, str(path))
    assert rc == 0
    assert out == ir.to_text(ir.parse(path.read_text()))


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--passes", "nope"], "unknown pass 'nope'"),
        (["--passes", "dtype-mutator{bogus=1}"], "has no option 'bogus'"),
        (["--fp32-cast", "all", "--auto-cast-type", "fp16"], "give one door"),
    ],
)
def test_opt_user_errors_one_line(capsys: pytest.CaptureFixture[str], argv: list[str],
                                  needle: str) -> None:
    rc, out, err = opt(capsys, str(EXAMPLES / "mlp.pir"), *argv)
    assert rc == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and needle in err


def test_opt_malformed_program(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.pir"
    bad.write_text("func @main {\n  tensor @x : input float32[2\n}\n")
    rc, _, err = opt(capsys, str(bad), "--auto-cast", "all")
    assert rc == 2
    assert err.strip().splitlines() == [err.strip()]
    assert f"{bad}:2:" in err


@pytest.mark.parametrize("argv", [["--fp32-cast", "bogus"], ["--target", "gen9"]])
def test_opt_unknown_mode_or_target_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["opt", str(EXAMPLES / "mlp.pir"), *argv])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and "invalid choice" in err
