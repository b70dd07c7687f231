"""The HLO layer: XLA HLO text in and out, the module model, and spec 004's three passes.

    >>> from pyprecision import hlo
    >>> m = hlo.parse(text)                       # ParseError "file:line:col: message"
    >>> m = hlo.load("model.hlo.pb")              # text, proto, gzip, StableHLO: by content
    >>> hlo.run_passes(m, ["neuron-int-matmul-downcast"])
    True
    >>> hlo.to_text(m)

Never imports ``pyprecision.ir`` or ``pyprecision.passes``.
"""
from __future__ import annotations

from pyprecision.hlo import opcodes, typed_attrs
from pyprecision.hlo.load import from_jax, load, load_text, module_text
from pyprecision.hlo.model import HloComputation, HloInstruction, HloModule, TextStyle
from pyprecision.hlo.parser import parse, parse_program_shape, parse_shape
from pyprecision.hlo.passes import PASSES, REGISTRY, get_pass, run_passes
from pyprecision.hlo.printer import to_text
from pyprecision.hlo.shape import Layout, ProgramShape, Shape
from pyprecision.hlo.types import (
    PrimitiveType,
    bit_width,
    is_float,
    is_integer,
    numpy_dtype,
    type_name,
)
from pyprecision.hlo.verifier import verify
from pyprecision.hlo.window import (
    ConvDims,
    GatherDims,
    ScatterDims,
    WindowDim,
    conv_output_dims,
    gather_dims,
    gather_output_dims,
    parse_dim_labels,
    parse_window,
    scatter_dims,
)

__all__ = [
    "HloComputation", "HloInstruction", "HloModule", "TextStyle", "Layout", "ProgramShape",
    "Shape", "PrimitiveType", "PASSES", "REGISTRY", "bit_width", "get_pass", "is_float",
    "is_integer", "numpy_dtype",
    "from_jax", "load", "load_text", "module_text",
    "parse", "parse_program_shape", "parse_shape", "run_passes", "to_text", "type_name", "verify",
    "ConvDims", "GatherDims", "ScatterDims", "WindowDim", "conv_output_dims", "gather_dims",
    "gather_output_dims", "parse_dim_labels", "parse_window", "scatter_dims", "opcodes", "typed_attrs",
]
