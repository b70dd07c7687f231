"""Both float32 tiles of the AVX-512 PE dot on every machine (docs/decisions/kernel.md K12): the
tile is chosen once per process (the tall 16 x 16 tile on AMD Zen 4, the 6 x 64 one elsewhere, or
``PYPRECISION_DOT_TILE``), so each choice runs the PE dot tests in its own process, after checking
that the choice took effect."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pyprecision.kernel.dot import tile_rows

from .isas import selected

HERE = Path(__file__).resolve().parent
pytestmark = pytest.mark.skipif("avx512" not in selected(),
                                reason="the AVX-512 set is not selected or not available here")


@pytest.mark.parametrize("tile,rows", [("tall", 16), ("wide", 6)])
def test_each_tile_is_the_k_loop(tile: str, rows: int) -> None:
    env = dict(os.environ, PYPRECISION_DOT_TILE=tile, KERNEL_TEST_ISAS="avx512")
    probe = ("from pyprecision.kernel.dot import tile_rows; import numpy as np; "
             "print(tile_rows(np.float32, 'avx512'), tile_rows(np.float64, 'avx512'))")
    got = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True,
                         check=True).stdout.split()
    assert got == [str(rows), "6"]  # the float64 tile is 6 rows either way
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          str(HERE / "test_pe_dot.py"), str(HERE / "test_pe_dot_fused.py")],
                         env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert " passed" in run.stdout and "failed" not in run.stdout


def test_tile_rows_of_the_reference_and_bad_type() -> None:
    assert tile_rows("float32", "reference") == 0
    with pytest.raises(Exception, match="float32 or float64"):
        tile_rows("int32", "reference")
