"""PyTorch tensors in and out of ``encode`` / ``decode`` / ``cast`` / ``quantize``, zero-copy.

torch is optional and never imported here unless the caller hands over a tensor (then it is
already imported) or asks for one with ``like="torch"``. A CPU tensor becomes a numpy array over
the same memory through an integer view of its bytes (``t.view(torch.int16).numpy()`` viewed as
``ml_dtypes.bfloat16``), so the numpy path's checks and errors apply unchanged; results go back the
same way (docs/torch.md, docs/decisions/torch.md).
"""
from __future__ import annotations

import functools
import importlib
import inspect
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import ml_dtypes
import numpy as np

from pyprecision.errors import CastError, FormatError
from pyprecision.formats import format as _format
from pyprecision.formats import formats as _formats

__all__ = [
    "tensor_io", "is_tensor", "tensor_as_array", "array_as_tensor", "torch_module",
    "format_of_torch_dtype", "LIKES", "INSTALL_HINT",
]

#: What ``like=`` accepts: None (the result follows the input), "numpy" or "torch".
LIKES = (None, "numpy", "torch")
#: How to get torch, in every message that needs it.
INSTALL_HINT = "pip install pyprecision[torch]"

# torch dtypes read as memory, by name: the numpy / ml_dtypes dtype of the same name and width.
# (Every name here is also torch's own; torch's sub-byte placeholders, bits*, complex32, packed
# float4 and quantized dtypes have no numpy twin and are refused by name.)
_NUMPY_NAMES = (
    "float64", "float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2",
    "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu",
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "bool", "complex64", "complex128",
)
_UINT = {1: "uint8", 2: "uint16", 4: "uint32", 8: "uint64"}
_INT = {1: "int8", 2: "int16", 4: "int32", 8: "int64"}


def torch_module(why: str) -> Any:
    """The torch module (imported now if needed); CastError naming the install when absent."""
    mod = sys.modules.get("torch")
    if mod is not None:
        return mod
    try:
        return importlib.import_module("torch")
    except ImportError:
        raise CastError(f"{why} needs PyTorch, which is not installed: {INSTALL_HINT}") from None


def is_tensor(x: Any) -> bool:
    """Whether ``x`` is a torch.Tensor (False, and torch not imported, when torch is not loaded)."""
    mod = sys.modules.get("torch")
    return mod is not None and isinstance(x, mod.Tensor)


def _numpy_dtype(name: str) -> np.dtype:
    return np.dtype(getattr(ml_dtypes, name)) if hasattr(ml_dtypes, name) else np.dtype(name)


def _dtype_name(torch_dtype: Any) -> str:
    return str(torch_dtype).removeprefix("torch.")


def format_of_torch_dtype(torch_dtype: Any) -> str:
    """The pyprecision format a torch dtype names (torch.bfloat16 → bf16, torch.float8_e4m3fn →
    fp8e4m3fn ...); FormatError for a torch dtype that is not one of the formats."""
    name = _dtype_name(torch_dtype)
    for f in _formats():
        if f.dtype.name == name and f.name != "fp32r":  # float32 is a source, not the fp32r format
            return f.name
    raise FormatError(
        f"torch.{name} is not a pyprecision format; formats torch can name: "
        + ", ".join(f"torch.{f.dtype.name} ({f.name})" for f in _formats() if _has_torch_twin(f.name))
        + "; the others by name (fp8e4, fp32r)"
    )


def _has_torch_twin(fmt: str) -> bool:
    f = _format(fmt)
    return f.name != "fp32r" and f.dtype.name in _NUMPY_NAMES


def _refuse(t: Any, torch: Any, what: str, writing: bool) -> None:
    """CastError for a tensor whose memory the C core cannot read (or write) as it stands."""
    if t.device.type != "cpu":
        raise CastError(f"{what} is a torch tensor on {t.device}; pyprecision runs on the CPU: "
                        f"pass {what}.cpu()")
    if t.layout != torch.strided:
        raise CastError(f"{what} is a {t.layout} torch tensor; pass {what}.to_dense()")
    if t.is_quantized:
        raise CastError(f"{what} is a quantized torch tensor ({t.dtype}); pass {what}.dequantize() "
                        f"for its values or {what}.int_repr() for its integers")
    if t.requires_grad:
        raise CastError(f"{what} requires grad and pyprecision's casts are not differentiable; "
                        f"pass {what}.detach()")
    if writing and (t.is_neg() or t.is_conj()):
        raise CastError(f"{what} is a lazily negated/conjugated view; pass a plain tensor")


@functools.cache
def _reading(torch_dtype: Any) -> tuple[str, np.dtype] | None:
    """(torch integer dtype to view the bytes as, or "" for none; the numpy twin), or None."""
    name = _dtype_name(torch_dtype)
    if name not in _NUMPY_NAMES:
        return None
    dt = _numpy_dtype(name)
    return (_INT[dt.itemsize] if hasattr(ml_dtypes, name) else ""), dt


@functools.cache
def _handing(dt: np.dtype) -> tuple[str, str]:
    """(numpy dtype to view an array as, torch dtype to view the tensor as; "" for none)."""
    name = dt.name
    if not hasattr(ml_dtypes, name):  # numpy's own: torch.from_numpy takes it as it is
        return "", ""
    if name not in _NUMPY_NAMES:  # e.g. float8_e4m3, the IEEE-style e4m3 of fp8e4: its codes
        return _UINT[dt.itemsize], ""
    return _INT[dt.itemsize], name


def tensor_as_array(t: Any, what: str = "x", *, writing: bool = False) -> np.ndarray:
    """A numpy array over the same memory as CPU tensor ``t``, typed as its numpy / ml_dtypes twin
    (bfloat16, float8_e4m3fn ... through an integer view of the bytes; no copy, except a lazily
    negated view, which is resolved). CastError for a tensor the numpy path cannot take as it is."""
    torch = torch_module("a torch tensor")
    _refuse(t, torch, what, writing)
    how = _reading(t.dtype)
    if how is None:
        raise CastError(f"{what} has dtype {t.dtype}, which has no numpy equivalent; supported: "
                        + ", ".join(f"torch.{n}" for n in _NUMPY_NAMES[:-3]))
    if t.is_neg():
        t = t.resolve_neg()
    bits, dt = how
    try:
        if not bits:  # numpy's own dtypes
            return t.numpy()
        return t.view(getattr(torch, bits)).numpy().view(dt)
    except (RuntimeError, TypeError) as exc:  # subclasses (fake / functional tensors ...)
        raise CastError(f"{what} ({type(t).__name__}) cannot be read as memory: {exc}") from exc


def array_as_tensor(a: np.ndarray) -> Any:
    """A torch tensor over the same memory as ``a``: bfloat16 / float16 / fp8e4m3fn / fp8e5 as
    torch's own dtype, fp8e4 (which torch has no dtype for) as its uint8 codes, the rest as is."""
    torch = torch_module('like="torch"')
    view, torch_name = _handing(a.dtype)
    t = torch.from_numpy(a.view(view) if view else a)
    return t.view(getattr(torch, torch_name)) if torch_name else t


F = TypeVar("F", bound=Callable[..., Any])
_ARRAY_ARGS = ("out", "random_bits")


def tensor_io(fn: F) -> F:
    """Let a numpy-in / numpy-out kernel function take torch tensors and return one.

    Tensor arguments (the first positional one, ``out`` and ``random_bits``) become arrays over
    the same memory; a torch dtype as the format becomes the format's name. ``like``: None (the
    default) returns a tensor when the first argument was one, "torch" always, "numpy" never. A
    tensor ``out`` is returned itself. Without a tensor or ``like``, ``fn`` runs untouched.
    """

    first = next(iter(inspect.signature(fn).parameters))  # "x" or "bits", for messages

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        like = kwargs.pop("like", None)
        if like not in LIKES:
            raise CastError(f"like must be 'numpy', 'torch' or None, got {like!r}")
        torch = sys.modules.get("torch")
        if torch is None and like != "torch":
            return fn(*args, **kwargs)
        if torch is None:
            torch = torch_module('like="torch"')
        args_l = list(args)
        tensor_in = bool(args_l) and isinstance(args_l[0], torch.Tensor)
        if tensor_in:
            args_l[0] = tensor_as_array(args_l[0], first)
        elif isinstance(kwargs.get(first), torch.Tensor):  # encode(x=t, ...)
            tensor_in = True
            kwargs[first] = tensor_as_array(kwargs[first], first)
        for i, a in enumerate(args_l[1:], 1):
            if isinstance(a, torch.dtype):
                args_l[i] = format_of_torch_dtype(a)
        if isinstance(kwargs.get("fmt"), torch.dtype):
            kwargs["fmt"] = format_of_torch_dtype(kwargs["fmt"])
        out_t = kwargs.get("out")
        for key in _ARRAY_ARGS:
            if isinstance(kwargs.get(key), torch.Tensor):
                kwargs[key] = tensor_as_array(kwargs[key], key, writing=key == "out")
        result = fn(*args_l, **kwargs)
        if like == "numpy":
            return result
        if isinstance(out_t, torch.Tensor):
            return out_t
        if like == "torch" or tensor_in:
            return array_as_tensor(result)
        return result

    return wrapper  # type: ignore[return-value]
