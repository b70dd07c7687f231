"""Tools for testing your own cast code against pyprecision's formats (docs/testing.md).

Assertions (``assert_bits_equal``, ``assert_within_ulp``, ``ulp_distance``) need only NumPy.
The hypothesis strategies live in :mod:`pyprecision.testing.strategies` (also reachable as
``pyprecision.testing.bit_patterns`` etc.) and are imported on first use: they need hypothesis,
which comes with the test extra (``pip install 'pyprecision[test]'``).

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

__all__ = [
    "assert_bits_equal",
    "assert_within_ulp",
    "ulp_distance",
    "as_codes",
    "NAN_MISMATCH",
    "strategies",
    *_STRATEGIES,
]


def __getattr__(name: str) -> Any:
    if name == "strategies" or name in _STRATEGIES:
        try:
            mod = importlib.import_module("pyprecision.testing.strategies")
        except ModuleNotFoundError as exc:
            if exc.name == "hypothesis":
                raise ImportError(
                    "pyprecision.testing strategies need hypothesis: "
                    "pip install 'pyprecision[test]'"
                ) from exc
            raise
        return mod if name == "strategies" else getattr(mod, name)
    raise AttributeError(f"module 'pyprecision.testing' has no attribute {name!r}")
