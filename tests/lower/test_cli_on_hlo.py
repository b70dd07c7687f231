"""Every precision flag on a user's HLO at the command line: verify --program (and its diagnosis),
explain, opt, hlo-run."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from lower_cases import DATA, case

from pyprecision import emulate, frontend
from pyprecision.tools import cli

DOT = DATA / "dot_f32.hlo.txt"


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str]):
    def go(*argv: str) -> tuple[int, str, str]:
        code = cli.main([str(a) for a in argv])
        out, err = capsys.readouterr()
        return code, out, err

    return go


@pytest.fixture
def dot_files(tmp_path: Path) -> dict[str, Path]:
    """dot_f32's inputs, and a 'device dump' made under --auto-cast matmult."""
    m, _, _, (a, b), _ = case("dot_f32")
    np.savez(tmp_path / "in.npz", arg0=a, arg1=b)
    (out,) = emulate.run_hlo(m, [a, b], frontend.parse_flags(["--auto-cast", "matmult"]))
    np.savez(tmp_path / "dump.npz", out0=out)
    return {"in": tmp_path / "in.npz", "dump": tmp_path / "dump.npz"}


def test_verify_hlo_under_the_flags_that_made_the_dump_is_exact(run, dot_files):
    code, out, err = run("verify", "--program", DOT, "--inputs", dot_files["in"], "--dump",
                         dot_files["dump"], "--auto-cast", "matmult")  # fmt: skip
    assert code == 0, out + err


def test_verify_hlo_diagnosis_names_flags_the_cli_accepts(run, dot_files):
    code, out, _ = run("verify", "--program", DOT, "--inputs", dot_files["in"], "--dump",
                       dot_files["dump"], "--json")  # fmt: skip
    assert code == 1
    diag = json.loads(out)["diagnosis"]
    flags = diag["policy"]["flags"]
    assert "matmult-bf16" in flags or "matmult" in flags
    code2, out2, err2 = run("verify", "--program", DOT, "--inputs", dot_files["in"], "--dump",
                            dot_files["dump"], *flags)  # fmt: skip
    assert code2 == 0, out2 + err2


@pytest.mark.parametrize("typ", ["tf32", "fp8_e4m3"])
def test_explain_and_verify_accept_every_auto_cast_type(run, dot_files, typ):
    """The canonical names (fp32r, fp8e4) used to be fed back to argparse and rejected."""
    code, out, err = run("explain", DOT, "--auto-cast", "matmult", "--auto-cast-type", typ)
    assert code == 0, err
    code, out, err = run("verify", "--program", DOT, "--inputs", dot_files["in"], "--dump",
                         dot_files["dump"], "--auto-cast", "matmult", "--auto-cast-type", typ,
                         "--no-diagnosis")  # fmt: skip
    assert code in (0, 1), err


def test_a_flag_that_changes_nothing_says_so(run):
    elementwise = DATA / "elementwise_f32.hlo.txt"
    code, _, err = run("opt", elementwise, "--auto-cast", "matmult", "--fast-math",
                       "no-fast-relayout", "--target", "gen3")  # fmt: skip
    assert code == 0
    assert "the mode matmult-bf16 changes nothing" in err
    assert "--fast-math no-fast-relayout changes nothing" in err
    assert "--target gen3 changes nothing" in err
    code, _, err = run("opt", DOT, "--fp32-cast", "matmult", "--fast-math", "fast-relayout-fp8e4")
    assert code == 0 and "changes nothing" not in err


def _rows(run, path, *flags):
    code, out, err = run("explain", path, *flags, "--json")
    assert code == 0, err
    return json.loads(out)["rows"]


def test_explain_rows_matmult_dots_read_bf16_and_return_f32(run):
    rows = _rows(run, DATA / "dot_general_batched_f32.hlo.txt", "--auto-cast", "matmult")
    dots = [r for r in rows if r["op"] == "dot"]
    assert dots and all(r["operand_dtypes"] == ["bfloat16", "bfloat16"] for r in dots)
    assert all(r["after"] == "float32" and r["before"] == "float32" for r in dots)
    assert all(r["location"].endswith(":6") for r in dots)  # the dot's line in the module


def test_explain_rows_all_mode_runs_elementwise_ops_in_bf16_but_all_tf32_keeps_f32(run):
    path = DATA / "elementwise_f32.hlo.txt"
    ops = {"add", "multiply", "subtract", "divide", "exponential", "tanh"}
    all_rows = [r for r in _rows(run, path, "--auto-cast", "all") if r["op"] in ops]
    tf32_rows = [r for r in _rows(run, path, "--auto-cast", "all", "--auto-cast-type", "tf32")
                 if r["op"] in ops]  # fmt: skip
    assert all_rows and all(r["after"] == "bfloat16" for r in all_rows)
    assert tf32_rows and all(r["after"] == "float32" for r in tf32_rows)


def test_explain_hlo_with_inputs_measures_each_op(run, dot_files):
    code, out, err = run("explain", DOT, "--auto-cast", "matmult", "--inputs", dot_files["in"],
                         "--json")  # fmt: skip
    assert code == 0, err
    rows = json.loads(out)["rows"]
    dot = next(r for r in rows if r["op"] == "dot")
    assert dot["error"] is not None and dot["error"]["max_rel"] > 0
    # worst first by the scale-relative error (explain decision X2): the operand cast to bf16
    # carries the rounding the dot then sums, so it may rank above the dot, never below it
    scaled = [r["error"]["scaled"] for r in rows if r.get("error")]
    assert scaled == sorted(scaled, reverse=True) and dot["error"]["scaled"] > 0
    assert rows.index(dot) <= 2


def test_opt_prints_the_lowered_program_and_emit_lowered_shows_it_before_the_passes(run):
    code, after, _ = run("opt", DOT, "--auto-cast", "all")
    code2, before, _ = run("opt", DOT, "--auto-cast", "all", "--emit-lowered")
    assert code == code2 == 0
    assert "bfloat16" in after and "bfloat16" not in before
    assert "matmul" in before and "@out0" in before


def test_hlo_run_takes_the_flags(run, dot_files, tmp_path):
    code, _, err = run("hlo-run", DOT, "--inputs", dot_files["in"], "-o", tmp_path / "o.npz",
                       "--auto-cast", "matmult")  # fmt: skip
    assert code == 0, err
    got = np.load(tmp_path / "o.npz")["out0"]
    assert np.array_equal(got, np.load(dot_files["dump"])["out0"])


def test_unknown_opcode_is_one_located_error_at_the_command_line(run, tmp_path):
    p = tmp_path / "g.hlo.txt"  # rng-bit-generator: not lowered (gather is, since h6gather)
    p.write_text((DATA.parents[1] / "hlo-eval" / "jax-0.10.2" / "rng_bit_generator.hlo.txt")
                 .read_text())  # fmt: skip
    code, _, err = run("opt", p, "--auto-cast", "all")
    assert code == 2
    line = err.strip().splitlines()
    assert len(line) == 1 and f"{p}:" in line[0] and "(rng-bit-generator)" in line[0]


def test_explain_compare_and_plot_on_hlo(run, dot_files, tmp_path):
    code, out, err = run("explain", DOT, "--inputs", dot_files["in"], "--json", "--compare",
                         "--auto-cast matmult", "--auto-cast all")  # fmt: skip
    assert code == 0, err
    doc = json.loads(out)
    a = {r["name"]: r["after"] for r in doc["a"]["rows"]}
    b = {r["name"]: r["after"] for r in doc["b"]["rows"]}
    assert a["dot_general.1"] == "float32" and b["dot_general.1"] == "bfloat16"
    png = tmp_path / "e.png"
    code, _, err = run("explain", DOT, "--auto-cast", "matmult", "--inputs", dot_files["in"],
                       "--plot", png)  # fmt: skip
    assert code == 0, err
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    code, _, err = run("explain", DOT, "--auto-cast", "matmult", "--plot", png)
    assert code == 2 and "--plot needs --inputs" in err
