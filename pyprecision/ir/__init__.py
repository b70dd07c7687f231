"""The loop-level IR of the Penguin passes: memory tensors, SSA values, instructions, blocks, functions,
modules; an IRBuilder; a verifier; a deterministic text printer and a parser that round-trips it.

API reference: docs/ir.md. Other rooms import the IR only through this module.
"""
from __future__ import annotations

from pyprecision.ir import dtypes
from pyprecision.ir.builder import IRBuilder, cast_name, make_cast
from pyprecision.ir.core import Block, Function, Module, is_trivially_dead, recursively_dce, recursivelyDCE
from pyprecision.ir.dtypes import (
    DTYPES, FLOAT_DTYPES, INTEGER_DTYPES, DType, as_dtype, bfloat16, dtype_from_name, float8_e5m2, float8e4,
    float8e4m3fn, float16, float32, float32r, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
)
from pyprecision.ir.compute import BinaryOp, SelectOp, TensorContractOp, UnaryOp
from pyprecision.ir.instructions import BINARY_KINDS, COMPARE_KINDS, UNARY_KINDS, Instruction, NeuronInst
from pyprecision.ir.memory import (
    AffineLoad, AffineStore, CallOp, CallOpBase, GenericLoad, GenericStore, LoadInst, OffloadedMemCpy,
    OpaqueOp, SBAtomLoad, StoreInst, TensorScalarGEPOp,
)
from pyprecision.ir.parser import Location, parse
from pyprecision.ir.printer import function_to_text, instruction_to_text, to_text
from pyprecision.ir.values import NeuronAP, ScalarValue, SingleValueTensor, Tensor, Use, Value
from pyprecision.ir.verifier import verify


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
    "dtypes", "DType", "DTYPES", "FLOAT_DTYPES", "INTEGER_DTYPES", "as_dtype", "dtype_from_name",
    "float32", "float32r", "bfloat16", "float16", "float8e4", "float8e4m3fn", "float8_e5m2",
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "Value", "ScalarValue", "Tensor", "SingleValueTensor", "NeuronAP", "Use",
    "Instruction", "NeuronInst", "UnaryOp", "BinaryOp", "SelectOp", "TensorContractOp",
    "LoadInst", "AffineLoad", "GenericLoad", "SBAtomLoad", "StoreInst", "AffineStore", "GenericStore",
    "TensorScalarGEPOp", "OffloadedMemCpy", "CallOpBase", "CallOp", "OpaqueOp",
    "UNARY_KINDS", "BINARY_KINDS", "COMPARE_KINDS",
    "Block", "Function", "Module", "IRBuilder", "make_cast", "cast_name", "TensorUtils",
    "is_trivially_dead", "recursively_dce", "recursivelyDCE",
    "parse", "to_text", "print_module", "function_to_text", "instruction_to_text", "verify", "Location",
]
