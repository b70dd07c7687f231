"""Shared helpers for the HLO tests (a plain module, importable under any pytest import mode)."""
from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).parent
SAMPLES = sorted((HERE / "samples").glob("*.hlo.txt"))
REAL_DATA = sorted((HERE.parent / "data" / "hlo").glob("*/*.txt"))
ALL_TEXTS = SAMPLES + REAL_DATA


def data_file(version: str, name: str) -> Path:
    """tests/data/hlo/<version>/<name>."""
    return HERE.parent / "data" / "hlo" / version / name
