"""verify's distances and tolerances (verify/distance.py): the distribution of one output, what
passes under each op-class tolerance, NaN against NaN and against a number, the op classes read
off an HLO module, and the ranking's margin."""
from __future__ import annotations

import math

import numpy as np
import pytest

from pyprecision import hlo
from pyprecision.verify import (
    Ranked,
    Tolerance,
    class_tolerance,
    code_space,
    compare_codes,
    distance,
    output_classes,
    passing,
)
from pyprecision.verify.ranking import ProgramDiagnosis

F32 = code_space("float32")


def _cmp(expected: list[float], dumped: list[float]):
    e = np.array(expected, np.float32).view(np.uint32)
    d = np.array(dumped, np.float32).view(np.uint32)
    return compare_codes(e, d, F32)


def _up(x: float, n: int) -> float:
    """x moved n float32 ULP up (n >= 0, x > 0)."""
    return float(np.array([x], np.float32).view(np.uint32).__add__(n).view(np.float32)[0])


def test_distribution_median_p99_max_and_relative_l2_in_eps() -> None:
    e = [1.0] * 100
    d = [1.0] * 98 + [_up(1.0, 3), _up(1.0, 8)]
    dist = distance(_cmp(e, d), F32)
    assert dist.median_ulp == 0 and dist.max_ulp == 8
    assert dist.p99_ulp == 3  # the smallest distance at least 99 of the 100 are within
    eps = 2.0**-23
    want = math.sqrt((3 * eps) ** 2 + (8 * eps) ** 2) / math.sqrt(100.0) / eps
    assert dist.rel_l2_eps == pytest.approx(want, rel=1e-12)
    assert dist.unbounded == 0 and "relative L2" in dist.describe()


def test_nan_against_nan_passes_and_nan_against_a_number_never_does() -> None:
    nan_a = np.array([0x7FC00000, 0x7FC00001, 0x3F800000], np.uint32)  # qNaN, other qNaN, 1.0
    nan_b = np.array([0x7FC00001, 0x7FC00001, 0x7FC00000], np.uint32)
    cmp = compare_codes(nan_a, nan_b, F32)
    loose = Tolerance(max_ulp=10**9, rtol=1.0, atol=1.0, why="given")
    for tol in (Tolerance(), loose):
        assert passing(cmp, F32, tol).tolist() == [True, True, False]
    dist = distance(cmp, F32)
    assert dist.unbounded == 1 and "1 NaN against a number" in dist.describe()


def test_rtol_atol_and_the_scaled_transcendental_tolerance() -> None:
    e = [100.0, 1e-3, 0.0]
    d = [100.01, 1.1e-3, 1e-6]
    cmp = _cmp(e, d)
    assert passing(cmp, F32, Tolerance(rtol=2e-4, why="given")).tolist() == [True, False, False]
    assert passing(cmp, F32, Tolerance(atol=2e-4, why="given")).tolist() == [False, True, True]
    # scaled: |d - e| <= s * max(|e|, rms); rms = sqrt((100^2 + 1e-6) / 3) ~ 57.7
    assert passing(cmp, F32, Tolerance(srtol=2e-4, why="t")).tolist() == [True, True, True]
    assert passing(cmp, F32, Tolerance(srtol=1e-9, why="t")).tolist() == [False, False, False]


def test_class_tolerance_exact_given_and_transcendental() -> None:
    assert class_tolerance([]).exact
    t = class_tolerance(["tanh"])
    assert t.srtol == 2.0**-16 and t.max_ulp == 2 and t.why == "transcendental (tanh)"
    assert class_tolerance(["tanh"], exact=True).exact
    assert class_tolerance(["tanh"], transcendental_rtol=0).exact
    assert class_tolerance([], rtol=1e-3).why == "given"


def test_output_classes_follow_the_graph_and_called_computations() -> None:
    text = """HloModule m

add_tanh {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  s = f32[] add(x, y)
  ROOT t = f32[] tanh(s)
}

ENTRY e {
  a = f32[4] parameter(0)
  ex = f32[4] exponential(a)
  z = f32[] constant(0)
  red = f32[] reduce(a, z), dimensions={0}, to_apply=add_tanh
  cp = f32[4] multiply(a, a)
  ROOT out = (f32[4], f32[], f32[4]) tuple(ex, red, cp)
}
"""
    assert output_classes(hlo.parse(text)) == [["exponential"], ["tanh"], []]


def _row(name: str, eps: float, unbounded: int = 0):
    from pyprecision.verify import FlagSet

    return Ranked(FlagSet((name,)), eps=eps, unbounded=unbounded, mismatches=5)


def test_ranking_by_distance_and_the_margin_over_the_next_distinct_set() -> None:
    diag = ProgramDiagnosis(requested=None)
    diag.add([_row("--a", 400.0), _row("--b", 10.0), _row("--c", 10.0), _row("--d", 1.0, 3)])
    assert [r.setting.flags[0] for r in diag.ranking] == ["--b", "--c", "--a", "--d"]
    assert diag.margin() == pytest.approx(40.0)
    assert [r.setting.flags[0] for r in diag.ties()] == ["--c"]
    text = diag.summary()
    assert "closest: --b" in text and "--b is 40× closer than --a" in text


@pytest.mark.parametrize(("argv", "message"), [
    (["--exact", "--rtol", "1e-3"], "--exact makes every output bit-exact; drop --rtol"),
    (["--atol", "-1"], "--atol must be a finite number >= 0"),
    (["--transcendental-rtol", "nan"], "--transcendental-rtol must be a finite number >= 0"),
])
def test_tolerance_flags_are_checked_in_one_line(tmp_path, capsys, argv, message) -> None:
    from pyprecision.tools.cli import main

    x = tmp_path / "x.npy"
    np.save(x, np.zeros(4, np.float32))
    assert main(["verify", "--program", "p.hlo", "--inputs", str(x), "--dump", str(x),
                 *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


def test_program_tolerances_are_refused_for_a_cast_check(tmp_path, capsys) -> None:
    from pyprecision.tools.cli import main

    x = tmp_path / "x.npy"
    np.save(x, np.zeros(4, np.float32))
    assert main(["verify", "--input", str(x), "--dump", str(x), "--format", "bf16",
                 "--rtol", "0.1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--rtol: program checks only" in err
