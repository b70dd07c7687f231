"""Argument checking between NumPy and the C core: nothing reaches C unchecked."""
from __future__ import annotations

import mmap
import os
from typing import Any

import numpy as np

from pyprecision._core import ffi, lib
from pyprecision.errors import CastError, CoreError, FormatError
from pyprecision.formats import formats

ROUNDINGS = {"rne": lib.PP_RNE, "rtz": lib.PP_RTZ, "rna": lib.PP_RNA, "stochastic": lib.PP_STOCHASTIC}
NAN_POLICIES = {"ml_dtypes": lib.PP_NAN_MLDTYPES, "nvidia": lib.PP_NAN_NVIDIA}
ISAS = {
    "auto": lib.PP_ISA_AUTO,
    "reference": lib.PP_ISA_REFERENCE,
    "generic": lib.PP_ISA_PORTABLE,
    "portable": lib.PP_ISA_PORTABLE,
    "avx2": lib.PP_ISA_AVX2,
    "avx512": lib.PP_ISA_AVX512,
}

# Source element types the core reads directly: numpy's own, then each format's value dtype (from
# the format table's source_type column).
SOURCE_TYPES: dict[np.dtype, int] = {
    np.dtype(np.float32): lib.PP_T_F32,
    np.dtype(np.float64): lib.PP_T_F64,
    **{f.dtype: f.source_type for f in formats()},
    np.dtype(np.int8): lib.PP_T_I8,
    np.dtype(np.int16): lib.PP_T_I16,
    np.dtype(np.int32): lib.PP_T_I32,
    np.dtype(np.int64): lib.PP_T_I64,
    np.dtype(np.uint8): lib.PP_T_U8,
    np.dtype(np.uint16): lib.PP_T_U16,
    np.dtype(np.uint32): lib.PP_T_U32,
    np.dtype(np.uint64): lib.PP_T_U64,
}
INT_TYPES = {dt: code for dt, code in SOURCE_TYPES.items() if dt.kind in "iu"}

_STATUS = {
    lib.PP_EINVAL: "invalid argument",
    lib.PP_ENOMEM: "out of memory",
    lib.PP_ETHREAD: "could not start a worker thread",
    lib.PP_EUNSUPPORTED: "instruction set not supported by this CPU",
}


def choice(kind: str, value: Any, table: dict[str, int]) -> int:
    """The code of a named option; unknown names list the valid ones."""
    if isinstance(value, str) and value in table:
        return table[value]
    raise FormatError(f"unknown {kind} {value!r}; valid: {', '.join(table)}")


def _env_isa() -> str:
    name = os.environ.get("PYPRECISION_ISA", "auto").strip().lower() or "auto"
    return name


DEFAULT_ISA = _env_isa()


def isa_code(isa: str | None) -> int:
    """Code of an instruction-set name (None: PYPRECISION_ISA or auto), checked against the CPU."""
    name = DEFAULT_ISA if isa is None else isa
    code = choice("instruction set (PYPRECISION_ISA / isa=)", name, ISAS)
    if code != lib.PP_ISA_AUTO and not lib.pp_isa_supported(code):
        raise CastError(f"instruction set {name!r} is not supported by this CPU")
    return code


def threads_arg(threads: Any) -> int:
    """The worker count of one call: ``threads`` (>= 1), or for None the default of
    :mod:`pyprecision.kernel.threads` (a thread_limit, PYPRECISION_THREADS, the usable cores)."""
    from pyprecision.kernel.threads import resolve

    return resolve(threads)


def physical_memory() -> int:
    """Bytes of physical memory (a large default where the platform does not say)."""
    import os

    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 1 << 50


def refuse_huge(nbytes: int, what: str) -> None:
    """CastError, before anything is allocated, for an array larger than physical memory (a
    stride-0 broadcast of 2**40 elements is small until it is copied)."""
    if nbytes > physical_memory():
        raise CastError(f"{what} needs {nbytes:,} bytes as a contiguous array, more than this "
                        "machine's memory; cast it in pieces")  # fmt: skip


def native(a: np.ndarray, what: str = "x") -> np.ndarray:
    """A C-contiguous array in native byte order (a copy only when needed)."""
    if not a.flags.c_contiguous or a.dtype.byteorder not in ("=", "|"):
        refuse_huge(a.size * a.dtype.itemsize, what)
    if a.dtype.byteorder not in ("=", "|"):
        a = a.astype(a.dtype.newbyteorder("="))
    if not a.flags.c_contiguous:
        a = a.copy(order="C")  # (np.ascontiguousarray would turn 0-d into 1-d)
    return a


def as_source(x: Any, what: str = "x") -> tuple[np.ndarray, int]:
    """The source array (native, contiguous) and its core type code."""
    a = np.asarray(x)
    dt = a.dtype
    if dt.kind == "b":
        raise CastError(f"{what} has dtype bool; convert it with .astype(np.uint8) first")
    if dt.kind in "iufV":
        a = native(a, what)
        code = SOURCE_TYPES.get(a.dtype)
        if code is not None:
            return a, code
        # Other narrow ml_dtypes types (fnuz, e3m4, fp4, int4 ...) widen exactly.
        if dt.itemsize <= 2 and dt.name.startswith("float"):
            return native(a.astype(np.float32)), lib.PP_T_F32
        if dt.name in ("int4", "int2"):
            return native(a.astype(np.int8)), lib.PP_T_I8
        if dt.name in ("uint4", "uint2"):
            return native(a.astype(np.uint8)), lib.PP_T_U8
    raise CastError(
        f"{what} has dtype {dt}; supported: float32, float64, float16, bfloat16, float8_e4m3, "
        "float8_e4m3fn, float8_e5m2 and int8..int64 / uint8..uint64"
    )


def check_out(out: Any, shape: tuple[int, ...], dtype: np.dtype, what: str = "out") -> np.ndarray:
    """Validate a caller-supplied output array."""
    if not isinstance(out, np.ndarray):
        raise CastError(f"{what} must be a numpy.ndarray, got {type(out).__name__}")
    if out.dtype != dtype:
        raise CastError(f"{what} has dtype {out.dtype}; it must be {dtype}")
    if out.shape != shape:
        raise CastError(f"{what} has shape {out.shape}; it must be {shape}")
    if not out.flags.writeable:
        raise CastError(f"{what} is read-only")
    if not out.flags.c_contiguous:
        raise CastError(f"{what} must be C-contiguous")
    if out.dtype.byteorder not in ("=", "|"):
        raise CastError(f"{what} must be in native byte order")
    return out


def ptr(a: np.ndarray, ctype: str = "void *") -> Any:
    """A C pointer to a contiguous array's data (the array must outlive the call)."""
    return ffi.cast(ctype, a.ctypes.data)


def check_status(status: int, what: str) -> None:
    if status:
        raise CoreError(f"{what}: {_STATUS.get(status, f'status {status}')}")


# Outputs at least this large (where glibc stops reusing freed heap memory and maps fresh pages
# anyway) are allocated on fresh 2 MiB-aligned anonymous memory advised for
# transparent huge pages: the kernel then faults them in 2 MiB at a time instead of 4 KiB, which
# halves the cost of a cast() without out= on large arrays (docs/decisions/speed.md).
HUGE_OUTPUT_BYTES = 32 << 20
_HUGE = 2 << 20


def empty_output(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """An uninitialized C-contiguous output array (huge-page backed when large, where possible)."""
    dt = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    advice = getattr(mmap, "MADV_HUGEPAGE", None)
    if nbytes < HUGE_OUTPUT_BYTES or advice is None or not hasattr(mmap, "MAP_ANONYMOUS"):
        return np.empty(shape, dt)
    try:
        mm = mmap.mmap(-1, nbytes + _HUGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        raw = np.frombuffer(mm, np.uint8)
        off = -raw.ctypes.data % _HUGE
        mm.madvise(advice, off - off % mmap.PAGESIZE, nbytes + off % mmap.PAGESIZE)
    except (OSError, ValueError):
        return np.empty(shape, dt)
    return raw[off:off + nbytes].view(dt).reshape(shape)
