"""The loop-level IR of the Penguin passes: memory tensors, SSA values, instructions, blocks, functions,
modules; an IRBuilder; a verifier; a deterministic text printer and a parser that round-trips it.

API reference: docs/ir.md. Other rooms import the IR only through this module.
"""

from __future__ import annotations

from pyprecision.ir import dtypes
from pyprecision.ir.argreduce_ops import ARG_REDUCE_KINDS, ArgReduceOp
from pyprecision.ir.bit_ops import BIT_COUNT_KINDS, BitCountOp, ReducePrecisionOp
from pyprecision.ir.builder import IRBuilder, cast_name, make_cast
from pyprecision.ir.clone import clone_module
from pyprecision.ir.compute import BinaryOp, SelectOp, TensorContractOp, UnaryOp
from pyprecision.ir.core import (
    Block,
    Function,
    Module,
    is_trivially_dead,
    recursively_dce,
)
from pyprecision.ir.dtypes import (
    DTYPES,
    FLOAT_DTYPES,
    INTEGER_DTYPES,
    DType,
    as_dtype,
    bfloat16,
    dtype_from_name,
    float8_e5m2,
    float8e4,
    float8e4m3fn,
    float16,
    float32,
    float32r,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
)
from pyprecision.ir.gc_pause import freeze_made, frozen_gc, paused_gc
from pyprecision.ir.identity import is_identity_matrix
from pyprecision.ir.index_ops import SCATTER_KINDS, GatherOp, ScatterOp, SortPermOp
from pyprecision.ir.instructions import (
    BINARY_KINDS,
    COMPARE_KINDS,
    UNARY_KINDS,
    Instruction,
    NeuronInst,
)
from pyprecision.ir.memory import (
    AffineLoad,
    AffineStore,
    CallOp,
    CallOpBase,
    GenericLoad,
    GenericStore,
    LoadInst,
    OffloadedMemCpy,
    OpaqueOp,
    SBAtomLoad,
    StoreInst,
    TensorScalarGEPOp,
)
from pyprecision.ir.parser import Location, parse
from pyprecision.ir.printer import function_to_text, instruction_to_text, to_text
from pyprecision.ir.reduce_ops import IotaOp, ReduceOp, UpdateSliceOp
from pyprecision.ir.rewriter import Rewriter
from pyprecision.ir.shape_ops import (
    REDUCE_KINDS,
    BroadcastOp,
    ConcatenateOp,
    PadOp,
    ReshapeOp,
    ReverseOp,
    SliceOp,
    TransposeOp,
)
from pyprecision.ir.tensors import NeuronAP, SingleValueTensor, Tensor
from pyprecision.ir.values import ScalarValue, Use, Value
from pyprecision.ir.verifier import verify
from pyprecision.ir.window_ops import SELECT_KINDS, SelectAndScatterOp


class TensorUtils:
    """The spec's TensorUtils helpers."""

    @staticmethod
    def load_insts(tensor: Tensor) -> list[Instruction]:
        """Instructions reading ``tensor`` (loads, memcpy sources, call/opaque ins)."""
        return tensor.load_insts

    @staticmethod
    def store_insts(tensor: Tensor) -> list[Instruction]:
        """Instructions writing ``tensor`` (stores, GEPs, memcpy destinations, call/opaque outs)."""
        return tensor.store_insts


print_module = to_text

__all__ = [
    "ARG_REDUCE_KINDS",
    "ArgReduceOp",
    "BIT_COUNT_KINDS",
    "BitCountOp",
    "ReducePrecisionOp",
    "REDUCE_KINDS",
    "SCATTER_KINDS",
    "GatherOp",
    "ScatterOp",
    "SortPermOp",
    "SELECT_KINDS",
    "SelectAndScatterOp",
    "BroadcastOp",
    "ConcatenateOp",
    "IotaOp",
    "PadOp",
    "ReduceOp",
    "ReshapeOp",
    "SliceOp",
    "TransposeOp",
    "ReverseOp",
    "UpdateSliceOp",
    "BINARY_KINDS",
    "COMPARE_KINDS",
    "DTYPES",
    "FLOAT_DTYPES",
    "INTEGER_DTYPES",
    "UNARY_KINDS",
    "AffineLoad",
    "AffineStore",
    "BinaryOp",
    "Block",
    "CallOp",
    "CallOpBase",
    "DType",
    "Function",
    "GenericLoad",
    "GenericStore",
    "IRBuilder",
    "Rewriter",
    "Instruction",
    "LoadInst",
    "Location",
    "Module",
    "NeuronAP",
    "NeuronInst",
    "OffloadedMemCpy",
    "OpaqueOp",
    "SBAtomLoad",
    "ScalarValue",
    "SelectOp",
    "SingleValueTensor",
    "StoreInst",
    "Tensor",
    "TensorContractOp",
    "TensorScalarGEPOp",
    "TensorUtils",
    "UnaryOp",
    "Use",
    "Value",
    "as_dtype",
    "bfloat16",
    "cast_name",
    "clone_module",
    "dtype_from_name",
    "dtypes",
    "float8_e5m2",
    "float8e4",
    "float8e4m3fn",
    "float16",
    "float32",
    "float32r",
    "freeze_made",
    "frozen_gc",
    "function_to_text",
    "instruction_to_text",
    "int8",
    "int16",
    "int32",
    "int64",
    "is_identity_matrix",
    "is_trivially_dead",
    "make_cast",
    "parse",
    "paused_gc",
    "print_module",
    "recursively_dce",
    "to_text",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "verify",
]
