"""pyprecision — a bit-exact emulator of the numeric lowering in AWS Neuron's compiler.

The cast core (CAST_SEMANTICS.md) is importable from the top level; the IR, passes, HLO layer,
frontend flags and emulator live in their own rooms (``pyprecision.ir``, ``.passes``, ``.hlo``,
``.frontend``, ``.emulate``).
"""
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

__version__ = "0.1.0"

__all__ = [
    "Format", "format", "formats",
    "encode", "decode", "cast", "quantize", "reinterpret", "ReinterpretReport",
    "float_to_int", "int_dot", "IntDotReport",
    "PyPrecisionError", "FormatError", "CastError", "FlagError", "ParseError", "VerifyError", "PassError",
    "EmulationError", "DumpError",
]
