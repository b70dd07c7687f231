"""One loader for every form a module comes in: ``hlo.load(source)`` → HloModule.

Recognised by content, never by file name: HLO text; an HloModuleProto binary (``.hlo.pb``,
``.hlo_module.pb``; also inside an HloProto or HloSnapshot, the wrappers XLA's dumps write), read
by pyprecision's own wire-format reader; any of these gzip-compressed; StableHLO / MHLO as MLIR
text or bytecode, converted by jaxlib when it is installed (``pip install 'pyprecision[jax]'``).
Every form becomes HLO text (a proto: the text XLA prints for it), which the one HLO parser reads,
so a module prints byte for byte the same whichever form it came in. Bad input is one
:class:`~pyprecision.errors.DumpError` line naming the source and what it is.
"""
from __future__ import annotations

import os
import zlib
from collections.abc import Callable
from typing import Any

from pyprecision.errors import DumpError
from pyprecision.hlo.model import HloModule
from pyprecision.hlo.proto_schema import WRAPPER
from pyprecision.hlo.proto_text import proto_to_text
from pyprecision.hlo.proto_wire import ProtoError, ProtoUnsupported, decode

__all__ = ["load", "load_text", "module_text", "from_jax", "JAX_EXTRA", "MAX_UNPACKED"]

JAX_EXTRA = "pip install 'pyprecision[jax]'"
#: The most bytes a gzip may unpack to (a larger one is refused, not read into memory).
MAX_UNPACKED = 1 << 31
_GZIP = b"\x1f\x8b"
_CONTROL = frozenset(chr(c) for c in range(32) if chr(c) not in "\t\n\r")
_MLIR_BYTECODE = b"ML\xefR"
_BINARY_KINDS = ((b"\x93NUMPY", "a .npy array"), (b"PK\x03\x04", "a zip archive (.npz?)"),
                 (b"\x7fELF", "an executable"))


def load(source: str | bytes | os.PathLike[str], *, name: str | None = None) -> HloModule:
    """The module in ``source``: a path, the file's ``bytes``, or its text as a ``str``.

    A ``str`` is text when it contains a newline or starts like a module (``HloModule``,
    ``module``, ``#loc``, ``func.func``), a path otherwise. ``name`` names the source in error
    messages and locations (default: the path, or ``<bytes>``/``<string>``). Errors: DumpError
    (what the bytes are, and why they are not a module), ParseError (``file:line:col``) for
    malformed HLO text.
    """
    from pyprecision.hlo.parser import parse

    text, label = load_text(source, name=name)
    return parse(text, filename=label)


def load_text(source: str | bytes | os.PathLike[str], *,
              name: str | None = None) -> tuple[str, str]:
    """(HLO text, name) of ``source``, as :func:`load` reads it (the text is not parsed)."""
    if isinstance(source, bytes):
        return module_text(source, name or "<bytes>"), name or "<bytes>"
    if isinstance(source, str) and _looks_like_text(source):
        label = name or "<string>"
        return module_text(source.encode("utf-8"), label), label
    path = os.fspath(source)
    label = name or path
    if os.path.isdir(path):
        raise DumpError(f"{label}: is a directory, not an HLO module")
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        raise DumpError(f"{label}: no such file") from None
    except OSError as exc:
        raise DumpError(f"{label}: cannot read: {exc.strerror or exc}") from None
    return module_text(data, label), label


def _looks_like_text(s: str) -> bool:
    head = s.lstrip()
    return "\n" in s or head.startswith(("HloModule", "module", "#loc", "func.func"))


def module_text(data: bytes, name: str) -> str:
    """The HLO text of a module given as bytes of any form (see the module docstring).

    Text that is neither MLIR nor binary is returned as it is: the parser then says where it is
    wrong (a ``.pir`` loop-IR program passes through unchanged, for the commands that take both).
    """
    if not data.strip():
        raise DumpError(f"{name}: empty, not an HLO module")
    if data.startswith(_GZIP):
        data = _gunzip(data, name)
        if data.startswith(_GZIP):
            raise DumpError(f"{name}: a gzip inside a gzip; unpack it once first")
    if data.startswith(_MLIR_BYTECODE):
        return _from_mlir(data, name, "MLIR bytecode")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return _binary(data, name)
    if _is_mlir(text):
        return _from_mlir(text, name, "MLIR text")
    if any(c in _CONTROL for c in text[:4096]):
        return _binary(data, name)  # a proto can be valid UTF-8; module text holds no controls
    return text


def _gunzip(data: bytes, name: str) -> bytes:
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = d.decompress(data, MAX_UNPACKED)
        if d.unconsumed_tail:
            raise DumpError(f"{name}: a gzip that unpacks to more than {MAX_UNPACKED} bytes")
        if not d.eof:
            raise DumpError(f"{name}: a gzip that does not unpack: it is truncated")
    except zlib.error as exc:
        raise DumpError(f"{name}: a gzip that does not unpack: {exc}") from None
    return out


def _binary(data: bytes, name: str) -> str:
    kind = next((k for magic, k in _BINARY_KINDS if data.startswith(magic)), None)
    if kind is None and name.lower().endswith(".neff"):
        raise DumpError(f"{name}: a NEFF, neuronx-cc's compiled output, not an HLO module; give "
                        "the .hlo.pb it was compiled from (neuronx-cc's input, beside it in the "
                        "compile cache as model.hlo_module.pb)")
    if kind is None and len(data) > 262 and data[257:262] == b"ustar":
        kind = "a tar archive"
    if kind is not None:
        raise DumpError(f"{name}: not an HLO module: it looks like {kind}")
    try:
        return _proto_text(data)
    except ProtoUnsupported as exc:
        raise DumpError(f"{name}: an HloModuleProto that pyprecision's proto reader does not "
                        f"read: it uses {exc}; give the module's HLO text instead") from None
    except ProtoError as exc:
        raise DumpError(f"{name}: not an HLO module: binary, and not an HloModuleProto "
                        f"({exc})") from None
    except RecursionError:
        raise DumpError(f"{name}: not an HLO module: binary, and not an HloModuleProto "
                        "(nested too deeply)") from None


def _proto_text(data: bytes) -> str:
    """An HloModuleProto, or one inside an HloProto (field 1) or HloSnapshot (field 1 of 1)."""
    try:
        return proto_to_text(data)
    except ProtoUnsupported:
        raise
    except ProtoError as first:
        inner = data
        for _ in range(2):
            try:
                wrapped = decode(inner, WRAPPER).get("first")
            except ProtoError:
                raise first from None
            if not isinstance(wrapped, bytes) or not wrapped:
                raise first from None
            try:
                return proto_to_text(wrapped)
            except ProtoUnsupported:
                raise
            except ProtoError:
                inner = wrapped
        raise first from None


def _is_mlir(text: str) -> bool:
    for line in text.splitlines():
        s = line.strip()
        if not s or s.startswith("//"):
            continue
        return s.startswith(("module", "#loc", "func.func", "#")) and not s.startswith("#!")
    return False


def _mlir_converter() -> Callable[..., Any]:
    try:
        from jaxlib import _jax as ext  # the converter jax itself uses; needs no jax import
    except ImportError:
        try:  # jaxlib before 0.6: the same module under its old name
            from jaxlib import xla_extension as ext  # type: ignore[attr-defined,no-redef,unused-ignore]
        except ImportError:
            return _missing
    return ext.mlir.mlir_module_to_xla_computation


def _missing(*_: Any, **__: Any) -> Any:
    raise ImportError


def _from_mlir(module: str | bytes, name: str, what: str) -> str:
    convert = _mlir_converter()
    try:
        comp = convert(module, use_tuple_args=False, return_tuple=False)
    except ImportError:
        raise DumpError(f"{name}: StableHLO/MHLO ({what}); reading it needs jaxlib: "
                        f"{JAX_EXTRA}") from None
    except Exception as exc:  # noqa: BLE001 — jaxlib raises its own XlaRuntimeError/ValueError
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DumpError(f"{name}: {what} that jaxlib cannot convert to HLO: {first}") from None
    return proto_to_text(comp.as_serialized_hlo_module_proto())


def from_jax(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> HloModule:
    """The HloModule of ``jax.jit(fn).lower(*args, **kwargs)`` (``fn`` may already be jitted),
    with its source locations; needs jax (``pip install 'pyprecision[jax]'``)."""
    try:
        import jax
    except ImportError:
        raise DumpError(f"from_jax needs jax: {JAX_EXTRA}") from None
    try:  # keep pyprecision's own frames out of the module's stack-frame tables
        from jax._src import source_info_util
        source_info_util.register_exclusion(os.path.dirname(os.path.abspath(__file__)))
    except (ImportError, AttributeError):
        pass
    jitted = fn if hasattr(fn, "lower") else jax.jit(fn)
    lowered = jitted.lower(*args, **kwargs)
    proto = lowered.compiler_ir("hlo").as_serialized_hlo_module_proto()
    label = f"<jax:{getattr(fn, '__name__', type(fn).__name__)}>"
    return load(proto, name=label)
