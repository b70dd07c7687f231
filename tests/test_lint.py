"""ruff and mypy, with the settings in pyproject.toml, on the whole package; docstrings on public names.

Neither tool is a test dependency: each test skips when its tool is not on PATH (install them in a
venv, e.g. ``python -m venv v && v/bin/pip install ruff mypy`` and put ``v/bin`` on PATH).
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "pyprecision"

# Packages without public API of their own (package data); skipped by the docstring check only.
NO_DOCSTRING_CHECK = ["data"]


def _paths() -> list[str]:
    return [str(PKG.relative_to(ROOT))]


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
    skip = [str((PKG / d).relative_to(ROOT)) for d in NO_DOCSTRING_CHECK]
    cmd = [ruff, "check", "--no-cache", "--select", d1, "--output-format", "concise", *_paths()]
    r = _run([*cmd, *(f"--extend-exclude={d}" for d in skip)])
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.slow
def test_mypy_is_clean() -> None:
    mypy = shutil.which("mypy")
    if mypy is None:
        pytest.skip("mypy is not installed")
    # --python-executable: resolve numpy/ml_dtypes from the interpreter that runs the tests
    r = _run([mypy, "--python-executable", sys.executable, "--no-error-summary", *_paths()])
    assert r.returncode == 0, r.stdout + r.stderr
