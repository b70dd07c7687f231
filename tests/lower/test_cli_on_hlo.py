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
