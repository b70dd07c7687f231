"""encode / decode / cast / quantize / reinterpret: NumPy in, the C core's bits out."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from pyprecision._core import ffi, lib
from pyprecision.errors import CastError
from pyprecision.formats import Format, format
from pyprecision.kernel import _args
from pyprecision.kernel.torch_interop import tensor_io

__all__ = ["encode", "decode", "cast", "quantize", "reinterpret", "ReinterpretReport",
           "random_words"]

_U64 = 1 << 64


def _seed(seed: Any) -> int:
    if seed is None:
        import secrets  # only when a seed is drawn (hmac, hashlib: ~5 ms at start-up)

        return secrets.randbits(64)
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise CastError(f"seed must be an integer in [0, 2**64), got {seed!r}")
    if not 0 <= int(seed) < _U64:
        raise CastError(f"seed must be in [0, 2**64), got {seed}")
    return int(seed)


def _random_bits(random_bits: Any, shape: tuple[int, ...]) -> np.ndarray:
    r = np.asarray(random_bits)
    if r.dtype.newbyteorder("=") != np.dtype(np.uint32):
        raise CastError(f"random_bits must be uint32 (one word per element), got {r.dtype}")
    if r.shape != shape:
        raise CastError(f"random_bits has shape {r.shape}; it must match x's shape {shape}")
    return _args.native(r)


@tensor_io
def encode(
    x: Any,
    fmt: Any,
    *,
    rounding: str = "rne",
    saturate: bool | None = None,
    nan: str = "ml_dtypes",
    seed: int | None = None,
    random_bits: Any = None,
    threads: int | None = None,
    out: np.ndarray | None = None,
    isa: str | None = None,
    like: str | None = None,
) -> np.ndarray:
    """Round every element of ``x`` once into ``fmt`` and return the raw codes.

    ``rounding``: rne | rtz | rna | stochastic. ``saturate``: None for the Neuron default (fp8
    formats saturate), or a bool. ``nan``: ml_dtypes | nvidia. Stochastic rounding takes one uint32
    per element from ``random_bits`` or, when absent, from the SplitMix64 generator keyed by
    ``seed`` and the element's flat C-order index (a fresh random seed when None). ``threads``:
    None for all cores. ``isa`` forces a code path (reference, portable, avx2, avx512).
    Returns uint8 / uint16 / uint32 codes of ``x``'s shape (``out`` when given).
    ``x``, ``out`` and ``random_bits`` may be CPU torch tensors and ``fmt`` a torch dtype; ``like``
    (None: a tensor when ``x`` is one, "torch", "numpy") picks the result's kind (docs/torch.md).
    """
    f = format(fmt)
    opts = ffi.new("pp_cast_options *")
    opts.format = f.index
    opts.rounding = _args.choice("rounding", rounding, _args.ROUNDINGS)
    opts.nan_policy = _args.choice("nan policy", nan, _args.NAN_POLICIES)
    if saturate is None:
        saturate = f.default_saturate
    if not isinstance(saturate, (bool, np.bool_)):
        raise CastError(f"saturate must be True, False or None, got {saturate!r}")
    opts.saturate = int(bool(saturate))
    opts.threads = _args.threads_arg(threads)
    opts.isa = _args.isa_code(isa)
    src, src_type = _args.as_source(x)
    stochastic = rounding == "stochastic"
    if not stochastic and (seed is not None or random_bits is not None):
        raise CastError("seed and random_bits are only used with rounding='stochastic'")
    keep = None
    if stochastic:
        if random_bits is not None:
            if seed is not None:
                raise CastError("pass either seed or random_bits, not both")
            keep = _random_bits(random_bits, src.shape)
            opts.random_bits = _args.ptr(keep, "const uint32_t *")
        else:
            opts.seed = _seed(seed)
            opts.random_bits = ffi.NULL
    if out is None:
        out = _args.empty_output(src.shape, f.storage_dtype)
    else:
        _args.check_out(out, src.shape, f.storage_dtype)
        if np.may_share_memory(out, src):
            src = src.copy()
    status = lib.pp_encode(_args.ptr(src), src_type, src.size, _args.ptr(out), opts)
    _args.check_status(status, "encode")
    del keep
    return out


def _as_codes(bits: Any, f: Format) -> np.ndarray:
    b = np.asarray(bits)
    if b.dtype.kind not in "uif" and b.dtype != f.dtype:
        raise CastError(f"codes of {f.name} must be {f.storage_dtype} (or {f.dtype}), got {b.dtype}")
    if b.dtype.itemsize * 8 != f.bits or (b.dtype.kind == "f" and b.dtype != f.dtype):
        raise CastError(
            f"codes of {f.name} are {f.bits}-bit ({f.storage_dtype} or {f.dtype}); got {b.dtype}"
        )
    b = _args.native(b)
    return b.view(f.storage_dtype)


@tensor_io
def decode(bits: Any, fmt: Any, *, out: np.ndarray | None = None, threads: int | None = None,
           isa: str | None = None, like: str | None = None) -> np.ndarray:
    """Decode raw codes (or an array of the format's value dtype) exactly into float32 (§6).

    Tensors and ``like`` as in :func:`encode`."""
    f = format(fmt)
    codes = _as_codes(bits, f)
    if out is None:
        out = _args.empty_output(codes.shape, np.float32)
    else:
        _args.check_out(out, codes.shape, np.dtype(np.float32))
        if np.may_share_memory(out, codes):
            codes = codes.copy()
    status = lib.pp_decode(_args.ptr(codes), codes.size, f.index, _args.ptr(out, "float *"),
                           _args.threads_arg(threads), _args.isa_code(isa))
    _args.check_status(status, "decode")
    return out


@tensor_io
def cast(x: Any, fmt: Any, **options: Any) -> np.ndarray:
    """``encode`` viewed as the format's numpy dtype (ml_dtypes types, float16, float32 for fp32r).

    As a torch tensor (``like``, as in :func:`encode`): torch.bfloat16 / float16 / float8_e4m3fn /
    float8_e5m2 / float32 for fp32r, and the uint8 codes for fp8e4 (torch has no such dtype)."""
    f = format(fmt)
    return encode(x, f, **options).view(f.dtype)


@tensor_io
def quantize(x: Any, fmt: Any, **options: Any) -> np.ndarray:
    """The float32 values of ``x`` after the round trip through ``fmt`` (tensors: as ``encode``)."""
    threads = options.get("threads")
    return decode(encode(x, fmt, **options), fmt, threads=threads)


@dataclass(frozen=True)
class ReinterpretReport:
    """What a bit view changed (§7): counts over all elements, and the first changed index."""

    elements: int
    became_inf: int
    became_nan: int
    changed: int
    first_changed: tuple[int, ...] | None

    def __str__(self) -> str:
        return (f"{self.changed} of {self.elements} elements change value "
                f"({self.became_inf} become inf, {self.became_nan} become NaN)")


def reinterpret(bits: Any, src: Any, dst: Any) -> tuple[np.ndarray, ReinterpretReport]:
    """The same codes typed as ``dst`` (e.g. fp8e4m3fn data relabelled fp8e4), with a report.

    The value-preserving alternative is ``cast(decode(bits, src), dst)``.
    """
    fs, fd = format(src), format(dst)
    if fs.bits != fd.bits:
        raise CastError(f"cannot reinterpret {fs.bits}-bit {fs.name} as {fd.bits}-bit {fd.name}")
    codes = _as_codes(bits, fs)
    before, after = decode(codes, fs), decode(codes, fd)
    inf_a, nan_a = np.isinf(after), np.isnan(after)
    same = (before == after) | (np.isnan(before) & nan_a)
    changed = ~same
    idx = np.flatnonzero(changed)
    first = tuple(int(i) for i in np.unravel_index(idx[0], codes.shape)) if idx.size else None
    report = ReinterpretReport(
        elements=int(codes.size),
        became_inf=int(np.count_nonzero(inf_a & ~np.isinf(before))),
        became_nan=int(np.count_nonzero(nan_a & ~np.isnan(before))),
        changed=int(idx.size),
        first_changed=first,
    )
    return codes.copy().view(fd.dtype), report


def random_words(seed: int, n: int, first: int = 0) -> np.ndarray:
    """The generator's words for flat element indices [first, first + n) under ``seed``."""
    for name, v in (("n", n), ("first", first)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
            raise CastError(f"{name} must be a non-negative integer, got {v!r}")
    if int(first) + int(n) > 1 << 64:
        raise CastError(f"element indices end at 2**64: first + n = {int(first) + int(n)}")
    out = np.empty(int(n), np.uint32)
    words = lib.pp_random_words(_seed(seed), int(first), int(n), _args.ptr(out, "uint32_t *"))
    _args.check_status(words, "random_words")
    return out
