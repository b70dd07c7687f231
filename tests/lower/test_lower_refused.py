"""rng-bit-generator stays refused (decision L24): one located error that says why (the device's
generator is not the emulation's) and what to do; the plain evaluator still runs XLA's."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from pyprecision import emulate, frontend, hlo
from pyprecision.errors import LoweringError

PATH = Path(__file__).resolve().parents[1] / "data" / "hlo-eval" / "jax-0.10.2" / "rng_bit_generator.hlo.txt"


@pytest.mark.parametrize("flags", [[], ["--auto-cast", "none"], ["--auto-cast", "all"]])
def test_rng_bit_generator_is_one_located_error_that_says_why(flags):
    text = PATH.read_text()
    with pytest.raises(LoweringError) as e:
        emulate.compile_hlo(hlo.parse(text, str(PATH)), frontend.parse_flags(flags),
                            filename=str(PATH), text=text)
    msg = str(e.value)
    line = next(n for n, ln in enumerate(text.splitlines(), 1) if "rng-bit-generator(" in ln)
    assert re.match(rf"{re.escape(str(PATH))}:{line}:\d+: rng_bit_generator\.\d+ \(rng-bit-generator\)", msg)
    assert "device" in msg and "jax.random" in msg and "hlo-run" in msg


def test_the_plain_evaluator_still_runs_xla_s_generator():
    z = np.load(PATH.with_suffix("").with_suffix(".npz"))
    ins = [z[f"in{i}"] for i in range(2)]
    got = emulate.run_hlo(hlo.parse(PATH.read_text(), str(PATH)), ins)
    assert np.array_equal(got[1], z["out1"])
