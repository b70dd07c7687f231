"""The streaming-store thresholds (dispatch.c, speed.md S16): pp_set_stream_threshold overrides
every kind and hands back the previous override, and the output never depends on the setting,
at sizes on both sides of every measured default (4, 8, 32 MiB)."""
from __future__ import annotations

import numpy as np
import pytest
from pyprecision._core import lib

import pyprecision

from .conftest import FAST_ISAS


def test_override_round_trip() -> None:
    prev = lib.pp_set_stream_threshold(123)
    try:
        assert lib.pp_set_stream_threshold(456) == 123
        assert lib.pp_set_stream_threshold(-1) == 456  # back to the measured defaults
        assert lib.pp_set_stream_threshold(-1) == -1
    finally:
        lib.pp_set_stream_threshold(prev)


@pytest.mark.parametrize("isa", FAST_ISAS)
@pytest.mark.parametrize("fmt", ["bf16", "fp8e4m3fn", "fp32r"])
def test_defaults_do_not_change_bits(isa: str, fmt: str) -> None:
    """Calls of ~3, ~6 and ~40 MiB (input + output) under the defaults, against the reference
    converter on the first and last 64 Ki elements and a strided sample, and decode back."""
    rng = np.random.default_rng(5)
    for mib in (3, 6, 40):
        n = (mib << 20) // (4 + pyprecision.format(fmt).bits // 8)
        x = (rng.standard_normal(n) * 8).astype(np.float32)
        got = pyprecision.encode(x, fmt, isa=isa)
        idx = np.concatenate([np.arange(65536), np.arange(n - 65536, n), np.arange(0, n, 997)])
        ref = pyprecision.encode(x[idx], fmt, isa="reference")
        assert np.array_equal(got[idx], ref), (mib, fmt, isa)
        back = pyprecision.decode(got, fmt, isa=isa)
        assert np.array_equal(back[idx].view(np.uint32),
                              pyprecision.decode(ref, fmt, isa="reference").view(np.uint32))
