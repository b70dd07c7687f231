"""``pyprecision tune`` at the command line: the report, --json, --plot, --validate, and bad input
as one line on stderr with exit code 2 and nothing written."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pyprecision.frontend import parse_flags
from pyprecision.tools.cli import main

D = Path(__file__).resolve().parents[1] / "data" / "models" / "jax-0.10.2"
MLP, NPZ = str(D / "mlp_param.hlo.txt"), str(D / "mlp_param.npz")


def _inputs() -> list[np.ndarray]:
    with np.load(NPZ) as z:
        return [z[f"in{i}"] for i in range(7)]


def _npz(path: Path, arrays: dict[str, np.ndarray]) -> str:
    np.savez(path, **arrays)
    return str(path)


def test_the_report_names_flags_a_user_can_paste(capsys):
    assert main(["tune", MLP, "--inputs", NPZ, "--budget", "1e-2"]) == 0
    out = capsys.readouterr().out
    rec = next(line for line in out.splitlines() if line.startswith("recommended: "))
    flags = rec.removeprefix("recommended: ").split()
    assert parse_flags(flags).fp32_cast_mode != "none"
    assert f'NEURON_CC_FLAGS="{" ".join(flags)}"' in out
    assert "Pareto frontier" in out and "not a measurement" in out


def test_json_and_plot(tmp_path, capsys):
    png = tmp_path / "f.png"
    assert main(["tune", MLP, "--inputs", NPZ, "--budget", "0.01", "--json", "--plot", str(png),
                 "--target", "gen3"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc["recommended"]) >= {"flags", "error", "cost"}
    assert doc["recommended"]["error"] <= 0.01 and doc["target"] == "gen3"
    rows = doc["frontier"]
    assert rows and all(set(r) >= {"flags", "error", "cost"} for r in rows)
    assert [r["cost"] for r in rows] == sorted(r["cost"] for r in rows)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in tmp_path.iterdir()] == ["f.png"]  # no temporary left


def test_zero_budget_recommends_an_exact_set(capsys):
    assert main(["tune", MLP, "--inputs", NPZ, "--budget", "0", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["recommended"]["error"] == 0


def test_validate_warns_when_the_held_out_error_exceeds_the_budget(tmp_path, capsys):
    big = _npz(tmp_path / "big.npz", {f"in{i}": a * np.float32(3e4) for i, a in enumerate(_inputs())})
    assert main(["tune", MLP, "--inputs", NPZ, "--budget", "1e-3", "--validate", big]) == 0
    err = capsys.readouterr().err
    assert "warning" in err and "exceeds the budget" in err
    assert main(["tune", MLP, "--inputs", NPZ, "--budget", "1e-3", "--validate", NPZ]) == 0
    assert "warning" not in capsys.readouterr().err


def _bad_cases(tmp: Path) -> dict[str, tuple[list[str], str]]:
    ins = _inputs()
    table = tmp / "table.json"
    table.write_text(json.dumps({"gen2": {"peak_tflops": {"float32": 47.5}, "memory_gbps": 820}}))
    few = _npz(tmp / "few.npz", {f"in{i}": a for i, a in enumerate(ins[:6])})
    more = _npz(tmp / "more.npz", {**{f"in{i}": a for i, a in enumerate(ins)}, "in7": ins[0]})
    shape = _npz(tmp / "shape.npz", {**{f"in{i}": a for i, a in enumerate(ins)}, "in0": ins[0][:2]})
    dtype = _npz(tmp / "dtype.npz", {**{f"in{i}": a for i, a in enumerate(ins)},
                                     "in0": ins[0].astype(np.float64)})  # fmt: skip
    return {
        "count": (["--inputs", few, "--budget", "0.1"], "no input for parameter 6"),
        "extra": (["--inputs", more, "--budget", "0.1"], "input 7 given"),
        "shape": (["--inputs", shape, "--budget", "0.1"], "shape.npz: input 'in0' has shape (2, 16), parameter 0 'x.1' needs f32[4,16]"),
        "dtype": (["--inputs", dtype, "--budget", "0.1"], "has dtype float64, parameter 0"),
        "negative": (["--inputs", NPZ, "--budget", "-0.1"], "--budget must be a number"),
        "nan": (["--inputs", NPZ, "--budget", "nan"], "--budget must be a number"),
        "metric": (["--inputs", NPZ, "--budget", "0.1", "--metric", "l7"], "unknown metric 'l7'"),
        "table": (["--inputs", NPZ, "--budget", "0.1", "--cost-table", str(table)],
                  "no peak_tflops for bfloat16"),
    }


@pytest.mark.parametrize("case", ["count", "extra", "shape", "dtype", "negative", "nan", "metric",
                                  "table"])
def test_bad_input_is_one_line_exit_2_nothing_written(case, tmp_path, capsys):
    argv, message = _bad_cases(tmp_path)[case]
    before = sorted(p.name for p in tmp_path.iterdir())
    png = tmp_path / "f.png"
    assert main(["tune", MLP, *argv, "--plot", str(png)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("pyprecision tune: error: ") and message in err
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_threads_one_forks_nothing_and_prints_what_two_do(capsys, monkeypatch):
    """--threads caps tune's second process too (decisions TU14-TU16): one thread forks nothing;
    the JSON is the same either way."""
    from pyprecision.tune import search

    assert main(["tune", MLP, "--inputs", NPZ, "--budget", "1e-2", "--json", "--threads", "2"]) == 0
    two = json.loads(capsys.readouterr().out)

    real = search.forked

    def no_fork(fn, enabled=True):
        assert not enabled, "forked with --threads 1"
        return real(fn, enabled)

    monkeypatch.setattr(search, "forked", no_fork)
    assert main(["tune", MLP, "--inputs", NPZ, "--budget", "1e-2", "--json", "--threads", "1"]) == 0
    assert json.loads(capsys.readouterr().out) == two


@pytest.mark.parametrize("n", ["0", "abc"])
def test_threads_out_of_range_is_one_line_exit_2(capsys, n):
    with pytest.raises(SystemExit) as e:
        main(["tune", MLP, "--inputs", NPZ, "--budget", "1e-2", "--threads", n])
    assert e.value.code == 2 and "--threads" in capsys.readouterr().err
