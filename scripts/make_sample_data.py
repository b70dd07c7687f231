"""Regenerate the bundled sample data in pyprecision/data/ (deterministic).

    python scripts/make_sample_data.py
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parent.parent / "pyprecision" / "data"


def sample_weights() -> np.ndarray:
    """A 64x64 float32 'weight matrix': Gaussian body, a few large outliers, a few tiny values,
    exact ties of the 8-bit formats, and the specials — the things casts get wrong."""
    rng = np.random.default_rng(20261130)
    w = rng.standard_normal((64, 64)).astype(np.float32) * np.float32(0.05)
    flat = w.reshape(-1)
    flat[:8] = [300.0, -500.0, 1e5, 70000.0, 3e-7, -2e-9, 1.0 + 2.0**-4, 1.0 + 3 * 2.0**-4]
    flat[8:12] = [np.inf, -np.inf, np.nan, -0.0]
    return w


if __name__ == "__main__":
    DATA.mkdir(parents=True, exist_ok=True)
    np.save(DATA / "sample_weights.npy", sample_weights(), allow_pickle=False)
    print(f"wrote {DATA / 'sample_weights.npy'}")
