"""Programs of float32 elementwise operations run by the C core (csrc/chain.c, decision EM-15).

A :class:`Program` is a short list of register operations (``OPS``); calling it on arrays of
``n`` lanes runs it a tile of lanes at a time in C and returns the output registers as arrays, or
``None`` when a loaded or computed value is a NaN (or the floating-point environment is not the
default one): the caller then computes those lanes its own way. Every lane it returns is the
IEEE single result NumPy's float32 loops give (the C file says why). The executors compile their
runs of elementwise instructions into these programs (``emulate/shared/chain.py``).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import ml_dtypes
import numpy as np

from pyprecision._core import ffi, lib
from pyprecision.errors import CastError
from pyprecision.kernel._args import threads_arg

#: operation name -> (code, number of register operands)
OPS: dict[str, tuple[int, int]] = {
    "copy": (lib.PP_CHAIN_COPY, 1), "add": (lib.PP_CHAIN_ADD, 2), "sub": (lib.PP_CHAIN_SUB, 2),
    "mul": (lib.PP_CHAIN_MUL, 2), "div": (lib.PP_CHAIN_DIV, 2), "max": (lib.PP_CHAIN_MAX, 2),
    "min": (lib.PP_CHAIN_MIN, 2), "neg": (lib.PP_CHAIN_NEG, 1), "abs": (lib.PP_CHAIN_ABS, 1),
    "sqrt": (lib.PP_CHAIN_SQRT, 1), "square": (lib.PP_CHAIN_SQUARE, 1),
    "recip": (lib.PP_CHAIN_RECIP, 1), "relu": (lib.PP_CHAIN_RELU, 1),
    "eq": (lib.PP_CHAIN_EQ, 2), "ne": (lib.PP_CHAIN_NE, 2), "lt": (lib.PP_CHAIN_LT, 2),
    "le": (lib.PP_CHAIN_LE, 2), "gt": (lib.PP_CHAIN_GT, 2), "ge": (lib.PP_CHAIN_GE, 2),
    "select": (lib.PP_CHAIN_SELECT, 3), "round_bf16": (lib.PP_CHAIN_BF16_ROUND, 1),
    "round_fp16": (lib.PP_CHAIN_F16_ROUND, 1),
    # RNE, saturating (finite overflow and ±inf give ±max): the fp8 formats' Neuron default
    "round_fp8e4": (lib.PP_CHAIN_FP8E4_ROUND, 1),
    "round_fp8e4m3fn": (lib.PP_CHAIN_FP8E4M3FN_ROUND, 1),
    "round_fp8e5": (lib.PP_CHAIN_FP8E5_ROUND, 1),
    # ±inf -> ±|operand 2| (the ``satinf`` clamp, its bound a register); a NaN stays itself
    "satinf": (lib.PP_CHAIN_SATINF, 2),
}
assert len(OPS) == lib.PP_CHAIN_NOPS

#: the array dtypes a register is loaded from / stored to; bool and uint8 load as 1.0 where
#: nonzero (predicates), as does int64 (the IR's 0/1 comparisons)
KINDS: dict[np.dtype, int] = {
    np.dtype(np.float32): lib.PP_CHAIN_F32,
    np.dtype(ml_dtypes.bfloat16): lib.PP_CHAIN_BF16,
    np.dtype(np.float16): lib.PP_CHAIN_F16,
    np.dtype(np.bool_): lib.PP_CHAIN_U8,
    np.dtype(np.uint8): lib.PP_CHAIN_U8,
    np.dtype(np.int64): lib.PP_CHAIN_I64,
}

MAX_REGS = 4096
#: csrc/chain.c's CHAIN_GRAIN: the fewest lanes one worker takes
GRAIN = 16384


class Program:
    """``code``: (op, dst, operand registers...) in order; registers ``0 .. n_in - 1`` are the
    inputs, loaded per tile; ``outputs``: (register, dtype) stored after the program. A register
    stored as bf16 or float16 must hold values of that format (the program rounds them)."""

    def __init__(self, code: Sequence[tuple[Any, ...]], n_regs: int, n_in: int,
                 outputs: Sequence[tuple[int, Any]]):
        if not 0 < n_regs <= MAX_REGS or not 0 <= n_in <= n_regs:
            raise CastError(f"chain program: {n_regs} registers, {n_in} inputs")
        rows = []
        for insn in code:
            name, dst, *args = insn
            spec = OPS.get(name)
            if spec is None:
                raise CastError(f"chain program: unknown operation {name!r}; valid: "
                                f"{', '.join(OPS)}")
            if len(args) != spec[1]:
                raise CastError(f"chain program: {name} takes {spec[1]} operands, not {len(args)}")
            regs = [dst, *args, *([0] * (3 - len(args)))]
            if any(not 0 <= r < n_regs for r in regs):
                raise CastError(f"chain program: {insn} names a register outside 0..{n_regs - 1}")
            rows.append([spec[0], *regs])
        self.n_insn, self.n_regs, self.n_in = len(rows), n_regs, n_in
        self._code = np.array(rows, dtype=np.int32).reshape(-1, 5)
        self.out_dtypes = [np.dtype(dt) for _, dt in outputs]
        for r, dt in zip((r for r, _ in outputs), self.out_dtypes, strict=True):
            if dt not in KINDS or not 0 <= r < n_regs:
                raise CastError(f"chain program: output register {r} of dtype {dt}")
        self._out_reg = np.array([r for r, _ in outputs], dtype=np.int32)
        self._out_kind = np.array([KINDS[dt] for dt in self.out_dtypes], dtype=np.int32)
        self._code_p = ffi.cast("int32_t *", self._code.ctypes.data)
        self._out_reg_p = ffi.cast("int32_t *", self._out_reg.ctypes.data)
        self._out_kind_p = ffi.cast("int32_t *", self._out_kind.ctypes.data)

    def __call__(self, inputs: Sequence[np.ndarray], n: int,
                 threads: int | None = None) -> list[np.ndarray] | None:
        """The output registers over ``n`` lanes, or None (a NaN, or a non-default FP
        environment). Each input: ``n`` elements, or one element for every lane (any shape of
        that size); its dtype one of ``KINDS``, in native byte order. ``threads``: as every
        parallel part of the core (None: ``kernel.thread_limit`` / PYPRECISION_THREADS / the
        usable cores); fewer than ``2 * GRAIN`` lanes stay on the calling thread."""
        if len(inputs) != self.n_in:
            raise CastError(f"chain program: {len(inputs)} inputs for {self.n_in}")
        arrays, kinds, strides = [], [], []
        for i, x in enumerate(inputs):
            x = np.asarray(x)
            kind = KINDS.get(x.dtype) if x.dtype.isnative else None
            if kind is None:
                raise CastError(f"chain program: input {i} has dtype {x.dtype.str}; valid: "
                                f"{', '.join(str(d) for d in KINDS)} (native byte order)")
            if x.size == 1 or (x.size == n and x.ndim == 1 and x.strides == (0,)):
                x, stride = np.ascontiguousarray(x.reshape(-1)[:1]), 0
            elif x.size == n:
                x, stride = np.ascontiguousarray(x.reshape(-1)), 1
            else:
                raise CastError(f"chain program: input {i} has {x.size} elements, not {n} or 1")
            kinds.append(kind)
            strides.append(stride)
            arrays.append(x)
        outs = [np.empty(n, dt) for dt in self.out_dtypes]
        # ffi.from_buffer: the arrays' own memory (contiguous, alive until the call returns)
        in_p = ffi.new("void *[]", [ffi.from_buffer(a) for a in arrays] or 1)
        out_p = ffi.new("void *[]", [ffi.from_buffer(a) for a in outs] or 1)
        status = lib.pp_chain(self._code_p, self.n_insn, self.n_regs, self.n_in, in_p,
                              ffi.new("int32_t[]", kinds or 1), ffi.new("int64_t[]", strides or 1),
                              len(outs), out_p, self._out_kind_p, self._out_reg_p, n,
                              threads_arg(threads) if n >= 2 * GRAIN else 1)
        if status == lib.PP_CHAIN_NAN:
            return None
        if status:
            raise CastError(f"chain program: the core refused it (status {status})")
        return outs
