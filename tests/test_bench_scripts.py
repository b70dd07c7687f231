"""The benchmark scripts that new_family.sh runs on a CPU family's first visit still run (they are
not collected as tests; a broken one is found only on the one machine it was meant for), and
bench_diagnosis.py's ``--floor`` (decision V32) counts the programs the diagnosis runs. Nothing
here reads a figure: the output's shape is checked, never its speed."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench"


def _run(tmp_path: Path, script: str, *args: str) -> str:
    """The script's standard output; it must exit 0 (its stderr in the failure)."""
    r = subprocess.run([sys.executable, str(BENCH / script), *args],
                       capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_probe_f64_prints_a_ratio_to_the_floor_per_format(tmp_path):
    out = _run(tmp_path, "probe_f64.py", "fp8e5", "bf16", "--n", "65536")
    rows = re.findall(r"^f64 -> (\S+)\s+rne: +[\d.]+ GB/s of input, floor +[\d.]+, [\d.]+ of the floor$",
                      out, re.M)
    assert rows == ["fp8e5", "bf16"], out


def test_probe_fp8_prints_both_ways_for_every_fp8_format_and_rounding(tmp_path):
    out = _run(tmp_path, "probe_fp8.py", "--n", "65536", "--rounds", "2")
    rows = re.findall(r"^(\S+ \S+) +back to back +[\d.]+ +[\d.]+ +with the floor +[\d.]+ +[\d.]+$",
                      out, re.M)
    assert rows == [f"{f} {r}" for f in ("fp8e4", "fp8e4m3fn", "fp8e5") for r in ("rne", "rtz")], out


def test_probe_fp32r_prints_decode_and_encode_against_their_own_and_the_runs_floor(tmp_path):
    out = _run(tmp_path, "probe_fp32r.py", "--n", "65536", "--rounds", "2")
    rows = re.findall(r"^round (\d)  (decode|encode rne) +back to back +[\d.]+ +with the floor +[\d.]+"
                      r" +its floor +[\d.]+ +/ its floor +[\d.]+ +/ the run's best floor \([\d.]+\)"
                      r" +[\d.]+$", out, re.M)
    assert rows == [(r, c) for r in "01" for c in ("decode", "encode rne")], out


def test_bench_diagnosis_floor_measures_the_programs_the_diagnosis_emulates(tmp_path):
    """``bench_diagnosis.py --floor`` (decision V32): it finds as many distinct programs as the
    diagnosis emulates, no more distinct results than programs, and prints the three sums."""
    out = _run(tmp_path, "bench_diagnosis.py", "--models", "encoder_block", "--runs", "1", "--floor")
    ran = re.search(r"^encoder_block: one emulation [\d.]+ s \(load [\d.]+\); diagnosis of (\d+) sets "
                    r"[\d.]+ s = [\d.]+x one, (\d+) emulations", out, re.M)
    floor = re.search(r"^  floor, one thread each: (\d+) distinct programs, (\d+) distinct results; "
                      r"their compiles [\d.]+ s \(\d+ lowerings\); emulations [\d.]+-[\d.]+ s, sum "
                      r"[\d.]+ s, the cheapest of each result [\d.]+ s", out, re.M)
    over = re.search(r"^  over \d+ cores: compiles and every emulation [\d.]+ s = [\d.]+x one; every "
                     r"emulation alone [\d.]+ s = [\d.]+x one; one emulation per result alone "
                     r"[\d.]+ s = [\d.]+x one$", out, re.M)
    assert ran and floor and over, out
    assert int(ran.group(1)) == 54
    assert int(floor.group(1)) == int(ran.group(2))  # the same programs
    assert 1 <= int(floor.group(2)) <= int(floor.group(1))
