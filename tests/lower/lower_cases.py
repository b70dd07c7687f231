"""Real XLA modules (tests/data/hlo, written by JAX) and their inputs, for the lowering tests."""

from __future__ import annotations

import json
from pathlib import Path

import ml_dtypes
import numpy as np

from pyprecision import hlo

DATA = Path(__file__).resolve().parent.parent / "data" / "hlo" / "jax-0.10.2"
MANIFEST = json.loads((DATA / "manifest.json").read_text())["modules"]


def load_array(z: np.lib.npyio.NpzFile, key: str) -> np.ndarray:
    """Raw bits → ml_dtypes floats (the npz convention of tests/data/hlo/README.md)."""
    name = json.loads(str(z["__dtypes__"]))[key]
    a = z[key]
    if name == "bfloat16" or name.startswith("float8"):
        return a.view(getattr(ml_dtypes, name))
    return a.astype(bool) if name == "bool" else a


def case(name: str) -> tuple[hlo.HloModule, str, str, list[np.ndarray], list[np.ndarray]]:
    """(module, its text, its path, inputs, XLA's outputs) of one real module."""
    entry = MANIFEST[name]
    path = DATA / entry["files"]["hlo"]
    text = path.read_text()
    z = np.load(DATA / entry["files"]["data"])
    ins = [load_array(z, f"in{i}") for i in range(len(entry["inputs"]))]
    outs = [load_array(z, f"out{i}") for i in range(len(entry["outputs"]))]
    return hlo.parse(text, str(path)), text, str(path), ins, outs


def bits_equal(a: np.ndarray, b: np.ndarray) -> bool:
    """Same dtype, shape and values (NaN equal to NaN, +0 equal to -0)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind in "iub":
        return bool(np.array_equal(a, b))
    x, y = a.astype(np.float64), b.astype(np.float64)
    return bool(np.all((x == y) | (np.isnan(x) & np.isnan(y))))
