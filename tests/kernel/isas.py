"""The core's code paths.  `encode` / `decode` accept ``isa=`` to force one (the default, None,
picks the fastest the CPU has); every bit-exactness check runs on each of them, so the SIMD fast
paths are proven equal to the reference model, not only the path this CPU happens to select."""
from __future__ import annotations

import functools
import os

import numpy as np

import pyprecision as pp
from pyprecision.errors import PyPrecisionError

CANDIDATES = ("reference", "generic", "portable", "avx2", "avx512")


@functools.lru_cache(maxsize=1)
def available() -> tuple[str | None, ...]:
    """None (the automatic choice) plus every forced path this machine can run.

    A name the core does not know fails loudly (the list above must follow the core); a path the
    CPU lacks is left out."""
    out: list[str | None] = [None]
    x = np.zeros(3, np.float32)
    for isa in CANDIDATES:
        try:
            pp.encode(x, "bf16", isa=isa)
        except PyPrecisionError as e:
            if "unknown" in str(e):
                raise
            continue
        out.append(isa)
    return tuple(out)


def selected() -> tuple[str | None, ...]:
    """The paths to run: all of `available()`, or the comma list in $KERNEL_TEST_ISAS
    ("auto" meaning the automatic choice), e.g. KERNEL_TEST_ISAS=auto for a quick sweep."""
    env = os.environ.get("KERNEL_TEST_ISAS", "").strip()
    if not env:
        return available()
    names = [n.strip() for n in env.split(",") if n.strip()]
    chosen = tuple(None if n == "auto" else n for n in names)
    unknown = [n for n in chosen if n not in available()]
    assert not unknown, f"KERNEL_TEST_ISAS names unavailable paths {unknown}; have {available()}"
    return chosen
