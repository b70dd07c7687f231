"""The benchmark scripts that new_family.sh runs on a CPU family's first visit still run (they are
not collected as tests; a broken one is found only on the one machine it was meant for). Nothing
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
