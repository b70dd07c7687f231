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


def sample_dumps(w: np.ndarray) -> dict[str, np.ndarray]:
    """Two 'device dumps' of w cast to fp8e4m3fn: one as the cast engine writes it (RNE,
    saturating), one from a device that truncates (RTZ) — the fault `pyprecision verify` diagnoses."""
    import pyprecision as pp

    return {
        "sample_dump_fp8e4m3fn.npy": pp.encode(w, "fp8e4m3fn"),
        "sample_dump_fp8e4m3fn_faulty.npy": pp.encode(w, "fp8e4m3fn", rounding="rtz"),
    }


if __name__ == "__main__":
    DATA.mkdir(parents=True, exist_ok=True)
    w = sample_weights()
    files = {"sample_weights.npy": w, **sample_dumps(w)}
    for name, array in files.items():
        np.save(DATA / name, array, allow_pickle=False)
        print(f"wrote {DATA / name}")
