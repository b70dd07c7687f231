"""The evaluator against XLA:CPU, and the pipeline (``--auto-cast none``) against the evaluator,
bit for bit, on the opcode edge cases of tests/data/opcodes (made by scripts/gen_opcode_xla.py:
total order, shifts out of range, integer /0 and MIN/-1, round-nearest-afz / sign of -0, NaN of
both signs, ±inf, converts to bf16 / f16 / f8; decisions OP5–OP8)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pyprecision import emulate, frontend, hlo

DATA = Path(__file__).resolve().parents[1] / "data" / "opcodes" / "jax-0.10.2"
MANIFEST = json.loads((DATA / "manifest.json").read_text())["cases"]
NONE = frontend.parse_flags(["--auto-cast", "none"])


def _load(name: str) -> tuple[hlo.HloModule, list[np.ndarray], list[np.ndarray]]:
    import ml_dtypes

    with np.load(DATA / f"{name}.npz") as z:
        dtypes = json.loads(str(z["__dtypes__"]))
        arrays = {}
        for k, dt in dtypes.items():
            a = z[k]
            arrays[k] = a.view(getattr(ml_dtypes, dt)) if dt == "bfloat16" or dt.startswith(
                "float8") else a
    n_in, n_out = len(MANIFEST[name]["inputs"]), len(MANIFEST[name]["outputs"])
    m = hlo.parse((DATA / f"{name}.hlo.txt").read_text(), f"{name}.hlo.txt")
    return m, [arrays[f"in{i}"] for i in range(n_in)], [arrays[f"out{i}"] for i in range(n_out)]


def bits(a: np.ndarray) -> np.ndarray:
    """The raw bits (bool as 0/1), for an exact comparison that sees -0 and NaN payloads."""
    a = np.asarray(a)
    if a.dtype == bool:
        return a.astype(np.uint8)
    return a.view(f"u{a.dtype.itemsize}") if a.dtype.kind in "fV" or a.dtype.itemsize and \
        a.dtype.kind not in "iub" else a.view(f"u{a.dtype.itemsize}")


#: cases whose NaN results XLA:CPU gives with a sign the evaluator does not pin (decision OP9:
#: max(x, -NaN) is +NaN and min(x, +NaN) is -NaN there, an artifact of its x86 code): NaN ≡ NaN
NAN_SIGN_FREE = {"minmax_f32", "minmax_bf16", "minmax_f16"}


def _differ(got: np.ndarray, want: np.ndarray, ins: list[np.ndarray],
            nan_free: bool = False) -> list[str]:
    g, w = bits(got), bits(np.asarray(want).astype(np.asarray(got).dtype, copy=False))
    ne = g.reshape(-1) != w.reshape(-1)
    if nan_free:
        both = np.isnan(np.asarray(got, np.float32)) & np.isnan(np.asarray(want, np.float32))
        ne &= ~both.reshape(-1)
    bad = np.flatnonzero(ne)
    return [f"[{i}] in={[a.reshape(-1)[i] for a in ins]} got={got.reshape(-1)[i]!r} "
            f"(0x{int(g.reshape(-1)[i]):x}) want={want.reshape(-1)[i]!r} (0x{int(w.reshape(-1)[i]):x})"
            for i in bad[:6]]


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_the_evaluator_gives_xla_s_bits(name):
    m, ins, outs = _load(name)
    got = emulate.run_hlo(m, ins)
    assert len(got) == len(outs)
    for k, (g, w) in enumerate(zip(got, outs, strict=True)):
        assert g.dtype == w.dtype, f"out{k}: {g.dtype} != {w.dtype}"
        bad = _differ(g, w, ins, name in NAN_SIGN_FREE)
        assert not bad, f"out{k}: " + "; ".join(bad)


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_the_pipeline_under_auto_cast_none_gives_the_evaluator_s_bits(name):
    m, ins, _ = _load(name)
    want = emulate.run_hlo(m, ins)
    got = emulate.run_hlo(m, ins, NONE)
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        g = np.asarray(g)
        if w.dtype == bool:
            g = g.astype(bool)
        fp8 = want[k - k % 2].dtype  # converts_f32: (to fp8, back to f32) pairs
        if name == "converts_f32" and fp8.name.startswith("float8"):
            g, w = _saturated_overflow(g, w, ins[0], fp8)
        bad = _differ(g, w, ins)
        assert not bad, f"out{k}: " + "; ".join(bad)


def _saturated_overflow(got: np.ndarray, want: np.ndarray, x: np.ndarray, fp8: np.dtype):
    """The IR's fp8 cast is the device's, which saturates (decision HE2; the evaluator
    is XLA's convert, which overflows to inf / NaN): where x is ±inf or rounds past the format's
    largest finite value, the pipeline must give ±max and the evaluator ±inf / NaN; the rest
    must be equal. Returns the arrays with those places checked and masked."""
    import ml_dtypes

    big = float(ml_dtypes.finfo(fp8).max)
    over = ~np.isnan(x) & ~np.isfinite(np.asarray(want, np.float32))
    assert over.any(), "the case has overflowing inputs"
    assert np.array_equal(np.asarray(got[over], np.float32), np.copysign(big, x[over])), got[over]
    g, w = got.copy(), want.copy()
    g[over] = w[over] = 0
    return g, w
