"""NumPy <-> C plumbing of the cast core. Every argument is checked here before C sees a pointer."""
from pyprecision.kernel._args import ISAS, NAN_POLICIES, ROUNDINGS
from pyprecision.kernel.cast import (
    ReinterpretReport,
    cast,
    decode,
    encode,
    quantize,
    random_words,
    reinterpret,
)
from pyprecision.kernel.chain import KINDS as CHAIN_DTYPES
from pyprecision.kernel.chain import Program as ChainProgram
from pyprecision.kernel.dot import pe_dot
from pyprecision.kernel.fold import ROUNDINGS as FOLD_ROUNDINGS
from pyprecision.kernel.fold import SQ_BLOCK, SQDIFF_CHUNK, fold_f32, sq_sums, sqdiff_f32
from pyprecision.kernel.intops import IntDotReport, float_to_int, int_dot
from pyprecision.kernel.numerics import (
    as_float32,
    codes_of,
    is_nan_code,
    ordered_codes,
    pe_matmul,
    quantize_f32,
    round_to_format,
    wrap_int,
)
from pyprecision.kernel.stats import CastStats, cast_stats
from pyprecision.kernel.threads import default_threads, thread_limit
from pyprecision.kernel.torch_interop import (
    array_as_tensor,
    format_of_torch_dtype,
    tensor_as_array,
)


def isa_available() -> list[str]:
    """Instruction-set names usable on this CPU (for ``isa=`` and PYPRECISION_ISA)."""
    from pyprecision._core import lib

    return [n for n, c in ISAS.items() if n != "auto" and lib.pp_isa_supported(c)]


def isa_auto() -> str:
    """The instruction set ``auto`` picks on this CPU."""
    from pyprecision._core import lib

    code = lib.pp_isa_auto()
    return next(n for n, c in ISAS.items() if c == code and n != "generic")


__all__ = [
    "encode", "decode", "cast", "quantize", "reinterpret", "ReinterpretReport", "random_words",
    "float_to_int", "int_dot", "IntDotReport", "isa_available", "isa_auto",
    "ROUNDINGS", "NAN_POLICIES", "CastStats", "cast_stats",
    "round_to_format", "as_float32", "quantize_f32", "codes_of", "wrap_int", "ordered_codes", "is_nan_code",
    "pe_matmul", "pe_dot", "fold_f32", "FOLD_ROUNDINGS", "sqdiff_f32", "SQDIFF_CHUNK", "sq_sums", "SQ_BLOCK",
    "ChainProgram",
    "CHAIN_DTYPES",
    "default_threads", "thread_limit",
    "tensor_as_array", "array_as_tensor", "format_of_torch_dtype",
]
