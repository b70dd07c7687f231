"""Tools for testing your own cast code against pyprecision's formats (docs/testing.md).

Assertions (``assert_bits_equal``, ``assert_within_ulp``, ``ulp_distance``) need only NumPy.
The hypothesis strategies live in :mod:`pyprecision.testing.strategies` (float32 values aimed at
a format) and :mod:`pyprecision.testing.sources` (values of every source dtype: float64 a few ULPs
from a target tie, float16, bfloat16, fp8, integers), and ``assert_matches_pyprecision`` in
:mod:`pyprecision.testing.check`; all are reachable as ``pyprecision.testing.<name>`` and imported
on first use: they need hypothesis, which comes with the test extra
(``pip install 'pyprecision[test]'``). :mod:`pyprecision.testing.plugin` is the pytest plugin
(fixtures, a marker and the ``pyprecision-ci`` hypothesis profile).

Arrows: ``testing`` imports ``kernel``, ``formats`` and ``errors`` only.
"""

from __future__ import annotations

import importlib
from typing import Any

from pyprecision.testing.assertions import (
    NAN_MISMATCH,
    as_codes,
    assert_bits_equal,
    assert_within_ulp,
    ulp_distance,
)

_STRATEGIES = (
    "bit_patterns",
    "representable_values",
    "rounding_ties",
    "overflow_boundary",
    "subnormal_values",
    "nan_payloads",
    "float32_arrays",
    "cast_inputs",
)
_SOURCES = (
    "SOURCE_DTYPES",
    "near_ties",
    "source_overflow",
    "source_subnormals",
    "source_nans",
    "source_bit_patterns",
    "source_values",
    "source_arrays",
)
#: lazily imported name -> its module (each needs hypothesis)
_LAZY = {
    **{n: "strategies" for n in _STRATEGIES},
    **{n: "sources" for n in _SOURCES},
    "assert_matches_pyprecision": "check",
}

__all__ = [
    "assert_bits_equal",
    "assert_within_ulp",
    "ulp_distance",
    "as_codes",
    "NAN_MISMATCH",
    "strategies",
    "sources",
    "assert_matches_pyprecision",
    *_STRATEGIES,
    *_SOURCES,
]


def __getattr__(name: str) -> Any:
    if name in ("strategies", "sources") or name in _LAZY:
        try:
            mod = importlib.import_module(f"pyprecision.testing.{_LAZY.get(name, name)}")
        except ModuleNotFoundError as exc:
            if exc.name == "hypothesis":
                raise ImportError(
                    "pyprecision.testing strategies need hypothesis: "
                    "pip install 'pyprecision[test]'"
                ) from exc
            raise
        return mod if name in ("strategies", "sources") else getattr(mod, name)
    raise AttributeError(f"module 'pyprecision.testing' has no attribute {name!r}")
