"""pyprecision — a bit-exact emulator of the numeric lowering in AWS Neuron's compiler.

The cast core (CAST_SEMANTICS.md) is importable from the top level; the IR, passes, HLO layer,
frontend flags and emulator live in their own rooms, reachable as attributes (``pyprecision.ir``,
``.passes``, ``.hlo``, ``.frontend``, ``.emulate``, ``.verify``, ``.io``, ``.testing``,
``.explain``, ``.kernel``, ``.tools``).

Everything but the error classes is loaded on first use (PEP 562), so ``import pyprecision`` does not
import numpy, ml_dtypes or the C core: a command line that only prints its help starts at once.
"""
from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

from pyprecision.errors import (
    CastError,
    DumpError,
    EmulationError,
    FlagError,
    FormatError,
    ParseError,
    PassError,
    PyPrecisionError,
    VerifyError,
)

if TYPE_CHECKING:  # the names __getattr__ provides, for type checkers
    from pyprecision import (  # noqa: F401 (the rooms)
        emulate,
        explain,
        frontend,
        hlo,
        io,
        ir,
        kernel,
        lower,
        passes,
        reencode,
        testing,
        tools,
        verify,
    )
    from pyprecision.formats import Format, format, formats
    from pyprecision.kernel import (
        IntDotReport,
        ReinterpretReport,
        cast,
        decode,
        encode,
        float_to_int,
        int_dot,
        quantize,
        reinterpret,
    )
    from pyprecision.tune import tune

__version__ = "0.1.0"

__all__ = [
    "Format", "format", "formats",
    "encode", "decode", "cast", "quantize", "reinterpret", "ReinterpretReport",
    "float_to_int", "int_dot", "IntDotReport",
    "PyPrecisionError", "FormatError", "CastError", "FlagError", "ParseError", "VerifyError", "PassError",
    "EmulationError", "DumpError", "tune",
]

#: Top-level names defined elsewhere, by the module that defines them.
_LAZY_NAMES = {
    **dict.fromkeys(("Format", "format", "formats"), "pyprecision.formats"),
    **dict.fromkeys(("encode", "decode", "cast", "quantize", "reinterpret", "ReinterpretReport",
                     "float_to_int", "int_dot", "IntDotReport"), "pyprecision.kernel"),
    "tune": "pyprecision.tune",  # the function; the room stays sys.modules["pyprecision.tune"]
}
#: The rooms, each a subpackage loaded when first named.
_ROOMS = ("emulate", "explain", "frontend", "hlo", "io", "ir", "kernel", "lower", "passes",
          "reencode", "testing", "tools", "tune", "verify")


def __getattr__(name: str) -> Any:
    """PEP 562: load a top-level name or a room on first use."""
    where = _LAZY_NAMES.get(name)
    if where is not None:
        value = getattr(importlib.import_module(where), name)
        globals()[name] = value
        return value
    if name in _ROOMS:
        return importlib.import_module(f"{__name__}.{name}")  # the import binds it here
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    """The module's names including those not loaded yet."""
    return sorted(set(globals()) | set(_LAZY_NAMES) | set(_ROOMS))


class _Package(types.ModuleType):
    """The package's module type: importing the submodule ``pyprecision.formats`` must not hide
    the function ``pyprecision.formats`` (the import system binds a loaded submodule as an
    attribute of its parent; the eager import used to rebind the name right after)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _LAZY_NAMES and isinstance(value, types.ModuleType):
            return  # the module stays reachable as sys.modules["pyprecision.formats"]
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
