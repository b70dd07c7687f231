"""``assert_matches_pyprecision``: run a user's cast function against pyprecision over the
source strategies (property-based, with hypothesis) and fail with the assertion table."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import Phase, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from pyprecision.formats import format as _format
from pyprecision.kernel import encode
from pyprecision.testing import assertions as _assertions
from pyprecision.testing.assertions import assert_bits_equal, assert_within_ulp
from pyprecision.testing.sources import _dtype, source_arrays, source_values

__all__ = ["assert_matches_pyprecision"]

_ASSERTIONS_FILE = _assertions.__file__


def assert_matches_pyprecision(
    fn: Callable[[np.ndarray], Any],
    src: Any,
    fmt: Any,
    *,
    elements: st.SearchStrategy[Any] | None = None,
    ulp: int = 0,
    max_size: int = 64,
    max_examples: int | None = None,
    **options: Any,
) -> None:
    """Assert ``fn(x)`` equals ``pyprecision.encode(x, fmt, **options)`` for hypothesis-drawn 1-D
    arrays ``x`` of dtype ``src``: bit for bit, or within ``ulp`` steps of ``fmt`` when ``ulp`` > 0.

    ``fn`` returns codes (any integer dtype) or values of ``fmt``'s own dtype. The arrays hold
    :func:`~pyprecision.testing.sources.source_values` (ties a few source ULPs away — double
    rounding —, the overflow boundary, subnormals, NaN payloads, any value) unless ``elements``
    gives another strategy. ``options`` are ``encode``'s (rounding, saturate, nan, ...).
    Hypothesis' active profile applies (see ``pyprecision-ci``), with no deadline, and
    ``max_examples`` when given. Raises the assertion's AssertionError for the shrunk example.
    """
    __tracebackhide__ = True
    f, dt = _format(fmt), _dtype(src)
    if elements is None:
        elements = source_values(f, dt)
    strategy = source_arrays(elements, dt, max_size=max_size)
    # No "explain" phase: the lines it would list are pyprecision's own, not the user's.
    phases = tuple(p for p in hsettings().phases if p != Phase.explain)
    run = hsettings(deadline=None, phases=phases)
    if max_examples is not None:
        run = hsettings(run, max_examples=max_examples)

    @run
    @given(strategy)
    def check(x: np.ndarray) -> None:
        __tracebackhide__ = True
        expected = encode(x, f, **options)
        actual = fn(x.copy())
        if ulp:
            assert_within_ulp(actual, expected, f, ulp, inputs=x)
        else:
            assert_bits_equal(actual, expected, f, inputs=x)

    try:
        check()
    except AssertionError as exc:
        if not _raised_by_assertions(exc):
            raise
        # The mismatch table (and hypothesis' notes) say it all: drop the frames of this module
        # and of hypothesis' wrapper, which pytest would show although they are not the user's.
        raise exc.with_traceback(None) from None


def _raised_by_assertions(exc: BaseException) -> bool:
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and tb.tb_frame.f_code.co_filename == _ASSERTIONS_FILE
