"""`pyprecision demo` (the README's first command) runs and shows each part of the tour."""
from pathlib import Path

from pyprecision.tools.cli import main

ROOT = Path(__file__).resolve().parents[2]


def test_demo_runs_and_shows_every_part(capsys):
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    for part in ("== formats", "weight tensor cast to every format", "auto-cast pipeline",
                 "neuron-int-matmul-downcast", "verify: a device dump that matches",
                 "verify: a device dump with injected faults", "reencode: a small checkpoint"):
        assert part in out, part
    # the tour's claims are the library's: fp8e4 248 -> inf (0x78) / 240 (0x77) when saturating
    assert "248->0x78/0x77" in out
    # within 2^24 the F32 route is exact; beyond it, it is not
    assert "±2^7: 0 of 16" in out
    assert "±2^12: 0 of 16" not in out
    # the matching dump passes, the faulty one fails and is diagnosed as truncation
    assert "result: OK (bit-exact)\n(exit code 0)" in out
    assert "(rounding=rtz)" in out and "(exit code 1)" in out
    assert "verify (" in out and "every tensor matches a fresh encode" in out


def test_bundled_dumps_are_what_make_sample_data_says():
    import numpy as np

    import pyprecision as pp

    data = ROOT / "pyprecision" / "data"
    w = np.load(data / "sample_weights.npy")
    assert np.array_equal(np.load(data / "sample_dump_fp8e4m3fn.npy"), pp.encode(w, "fp8e4m3fn"))
    faulty = np.load(data / "sample_dump_fp8e4m3fn_faulty.npy")
    assert np.array_equal(faulty, pp.encode(w, "fp8e4m3fn", rounding="rtz"))
    assert not np.array_equal(faulty, pp.encode(w, "fp8e4m3fn"))


def test_bundled_program_is_the_example():
    data = ROOT / "pyprecision" / "data"
    assert (data / "mlp.pir").read_text() == (ROOT / "examples" / "mlp.pir").read_text()
    assert (data / "dot_s32.hlo.txt").read_text() == (
        ROOT / "tests" / "data" / "hlo" / "jax-0.10.2" / "dot_s32_big.hlo.txt").read_text()
