"""ruff and mypy, with the settings in pyproject.toml, on the rooms that are lint-clean.

Neither tool is a test dependency: each test skips when its tool is not on PATH (install them in a
venv, e.g. ``python -m venv v && v/bin/pip install ruff mypy`` and put ``v/bin`` on PATH). A room joins
``CHECKED`` once it passes both; the aim is the whole package.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "pyprecision"

CHECKED = [
    "ir",
    "passes",
    "frontend",
    "hlo",
    "emulate",
    "kernel",
    "formats.py",
    "errors.py",
    "tools/cli.py",
    "tools/cast_cmd.py",
    "tools/formats_cmd.py",
    "tools/demo.py",
    "tools/opt_cmd.py",
    "tools/flags_cmd.py",
    "tools/hlo_cmd.py",
    "tools/_files.py",
]


def _paths() -> list[str]:
    paths = [PKG / p for p in CHECKED]
    missing = [str(p) for p in paths if not p.exists()]
    assert not missing, f"CHECKED names paths that do not exist: {missing}"
    return [str(p.relative_to(ROOT)) for p in paths]


def _run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)


def test_ruff_check_is_clean() -> None:
    ruff = shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed")
    r = _run([ruff, "check", "--no-cache", "--output-format", "concise", *_paths()])
    assert r.returncode == 0, r.stdout + r.stderr


def test_every_public_name_has_a_docstring() -> None:
    """STYLE rule 10, checked by ruff's pydocstyle D1 rules (magic methods and __init__ exempt)."""
    ruff = shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed")
    d1 = "D100,D101,D102,D103,D104,D106"
    r = _run([ruff, "check", "--no-cache", "--select", d1, "--output-format", "concise", *_paths()])
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.slow
def test_mypy_is_clean() -> None:
    mypy = shutil.which("mypy")
    if mypy is None:
        pytest.skip("mypy is not installed")
    # --python-executable: resolve numpy/ml_dtypes from the interpreter that runs the tests
    r = _run([mypy, "--python-executable", sys.executable, "--no-error-summary", *_paths()])
    assert r.returncode == 0, r.stdout + r.stderr
