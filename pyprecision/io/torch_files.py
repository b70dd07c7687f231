"""PyTorch state dicts (``.pt`` / ``.pth`` / ``.bin`` from ``torch.save``): read only through
``torch.load(weights_only=True, mmap=True)``, written through ``torch.save`` atomically.

A state dict here is a flat dict of tensor name → tensor. Nothing else is unpickled: a file that
needs full unpickling (a pickled model, an optimizer's objects) is refused with the global that
asked for it, and a nested dict or a non-tensor value is refused by key rather than dropped
(docs/torch.md, docs/decisions/torch.md). torch is imported only when such a file is opened.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import re
import zipfile
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from pyprecision.errors import CastError, DumpError
from pyprecision.formats import format as _format
from pyprecision.io.atomic import atomic_file, write_error
from pyprecision.io.dtypes import SAFETENSORS_DTYPES
from pyprecision.io.remote import is_remote
from pyprecision.io.safetensors import _formats_of
from pyprecision.io.tensors import TORCH_EXTS, TensorInfo, check_shape

__all__ = ["TORCH_EXTS", "is_torch_file", "read_torch_file", "TorchWriter", "METADATA_ENTRY",
           "MODULE_METADATA_KEY"]

#: Extensions that always mean a torch.save file (``.bin`` is one only when its bytes say so).
#: The ``state_dict._metadata`` entry that holds pyprecision's metadata (str → str) in a .pt file.
METADATA_ENTRY = "__pyprecision__"
#: The metadata key that carries a state dict's own ``_metadata`` (module versions) as JSON.
MODULE_METADATA_KEY = "torch.state_dict_metadata"
_LEGACY_MAGIC = b"\x80\x02\x8a\nl\xfc\x9cF\xf9 j\xa8P\x19."  # pickle of torch's legacy magic number
_INSTALL = "pip install pyprecision[torch]"


def _zip_is_torch(path: str) -> bool:
    try:
        with zipfile.ZipFile(path) as zf:
            return any(n.endswith("/data.pkl") or n == "data.pkl" for n in zf.namelist())
    except (zipfile.BadZipFile, OSError, ValueError):
        return False


def is_torch_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a torch.save file: by extension (.pt, .pth), else by its bytes (a zip
    archive holding ``data.pkl``, or the legacy format's magic number) — so a raw ``.bin`` dump
    is not mistaken for one. Never imports torch."""
    p = os.fspath(path)
    if p.lower().endswith(TORCH_EXTS):
        return True
    try:
        with open(p, "rb") as fh:
            head = fh.read(len(_LEGACY_MAGIC))
    except OSError:
        return False
    return head.startswith(_LEGACY_MAGIC) or (head.startswith(b"PK\x03\x04") and _zip_is_torch(p))


def _torch(path: str) -> Any:
    try:
        import importlib

        return importlib.import_module("torch")
    except ImportError:
        raise DumpError(f"{path}: a PyTorch file; reading it needs torch: {_INSTALL}") from None


def _load(torch: Any, path: str) -> Any:
    with open(path, "rb") as fh:
        head = fh.read(len(_LEGACY_MAGIC))
    legacy = head.startswith(_LEGACY_MAGIC)  # pre-1.6 torch.save: read, but not mappable
    if not legacy and not head.startswith(b"PK\x03\x04"):
        raise DumpError(f"{path}: not a PyTorch file: " + (
            "it is empty" if not head else "neither a torch.save zip archive nor the legacy format"))
    try:
        return torch.load(path, map_location="cpu", weights_only=True, mmap=not legacy)
    except pickle.UnpicklingError as exc:
        found = re.search(r"Unsupported global: GLOBAL ([\w.]+)|Unsupported operand \d+", str(exc))
        what = f" (it asks for {found.group(1) or found.group(0)})" if found else ""
        raise DumpError(
            f"{path}: needs full unpickling{what}, which can run any code; pyprecision reads only "
            "tensors (torch.load(weights_only=True)). Re-save just the tensors, e.g. "
            "torch.save(model.state_dict(), ...), where you trust the file"
        ) from None
    except (RuntimeError, OSError, EOFError, ValueError, zipfile.BadZipFile) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DumpError(f"{path}: not a readable PyTorch file (corrupt or truncated?): {first}") from None


def _flat_tensors(torch: Any, path: str, obj: Any) -> dict[str, Any]:
    if isinstance(obj, torch.Tensor):
        raise DumpError(f"{path}: holds one tensor, not a state dict; save it as {{'name': tensor}}")
    if not isinstance(obj, dict):
        raise DumpError(f"{path}: holds a {type(obj).__name__}, not a state dict (a dict of tensors)")
    for key, value in obj.items():
        if not isinstance(key, str):
            raise DumpError(f"{path}: key {key!r} is a {type(key).__name__}; state dict keys are names")
        if isinstance(value, dict):
            raise DumpError(
                f"{path}: {key!r} holds a nested dict; pyprecision reads flat state dicts (name → "
                f"tensor): save checkpoint[{key!r}] on its own")
        if not isinstance(value, torch.Tensor):
            raise DumpError(
                f"{path}: {key!r} holds a {type(value).__name__}, not a tensor; pyprecision reads "
                "state dicts whose every value is a tensor, so nothing is dropped unseen (for a "
                "training checkpoint, save its model state dict on its own)")
    return dict(obj)


def _metadata(path: str, obj: Any) -> dict[str, str]:
    extra = getattr(obj, "_metadata", None)
    if not isinstance(extra, dict):
        return {}
    ours = extra.get(METADATA_ENTRY)
    meta: dict[str, str] = {}
    if isinstance(ours, dict):
        meta = {str(k): v for k, v in ours.items() if isinstance(v, str)}
    rest = {k: v for k, v in extra.items() if k != METADATA_ENTRY}
    if rest:
        # torch's own module versions are JSON; anything else is not ours to carry
        with contextlib.suppress(TypeError, ValueError):
            meta[MODULE_METADATA_KEY] = json.dumps(rest, sort_keys=True)
    return meta


def _reader(arr: np.ndarray) -> Any:
    def read() -> np.ndarray:
        return arr

    return read


def read_torch_file(path: str | os.PathLike[str]) -> tuple[list[TensorInfo], dict[str, str]]:
    """The tensors (in the dict's order) and metadata of a torch.save state dict.

    Loaded with ``torch.load(map_location="cpu", weights_only=True, mmap=True)``: each tensor's
    bytes stay in the file's memory map (a legacy, pre-1.6 file cannot be mapped: its tensors are
    read into memory, through the same weights-only unpickler) and ``TensorInfo.reader`` returns
    a read-only numpy view of them (bf16 / fp8 as ml_dtypes types). DumpError, naming the file
    (and key), for anything that is not a flat dict of CPU-readable tensors, and for a file that
    needs full unpickling."""
    from pyprecision.kernel import tensor_as_array

    p = os.fspath(path)
    if is_remote(p):
        raise DumpError(f"{p}: torch.save files are read from local paths only (torch maps "
                        "the file); copy it to a local disk first, or convert it to safetensors")
    if not os.path.isfile(p):
        raise DumpError(f"{p}: no such file")
    torch = _torch(p)
    obj = _load(torch, p)
    tensors = _flat_tensors(torch, p, obj)
    meta = _metadata(p, obj)
    fmts = _formats_of(p, meta)
    infos = []
    for name, t in tensors.items():
        try:
            arr = tensor_as_array(t.detach(), repr(name))
        except CastError as exc:
            raise DumpError(f"{p}: tensor {exc}") from None
        arr = arr.view()
        arr.flags.writeable = False
        fmt = fmts.get(name)
        if fmt is not None:
            f = _format(fmt)
            if f.bits != arr.dtype.itemsize * 8:
                raise DumpError(f"{p}: tensor {name!r}: metadata says {f.name} but it is {t.dtype}")
            arr = arr.view(f.dtype)
        check_shape(f"{p}: tensor {name!r}", list(arr.shape), arr.dtype.itemsize)
        infos.append(TensorInfo(name=name, dtype=arr.dtype, shape=tuple(arr.shape), path=p,
                                kind="pt", offset=None, stored=str(t.dtype), format=fmt,
                                reader=_reader(arr)))
    return infos, meta


class TorchWriter:
    """Write a torch.save state dict, tensor by tensor, chunk by chunk, atomically.

    ``tensors`` lists ``(name, dtype, shape)`` like :class:`SafetensorsWriter` (a numpy dtype or
    safetensors name; raw codes of the same width are fine as chunks). torch.save cannot stream,
    so the tensors are held in memory until a clean exit saves them as a plain ``OrderedDict``
    (bf16 / fp16 / fp8e4m3fn / fp8e5 as torch's own dtypes, other formats as their codes) to a
    temporary file renamed to ``path``. ``metadata`` (str → str) goes into the dict's
    ``_metadata[METADATA_ENTRY]``, where ``load_state_dict`` does not look; ``metadata[
    MODULE_METADATA_KEY]`` (JSON) restores the source state dict's own ``_metadata``."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        tensors: Sequence[tuple[str, Any, Sequence[int]]],
        metadata: Mapping[str, str] | None = None,
        *,
        inputs: Iterable[Any] = (),
        overwrite: bool = False,
    ) -> None:
        self.path = os.fspath(path)
        self._torch = _torch(self.path)
        self._meta = dict(metadata or {})
        self._inputs, self._overwrite = list(inputs), overwrite
        self._arrays: dict[str, np.ndarray] = {}
        self._filled: dict[str, int] = {}
        for name, dtype, shape in tensors:
            dt = SAFETENSORS_DTYPES[dtype] if isinstance(dtype, str) else np.dtype(dtype)
            self._arrays[name] = np.empty(tuple(shape), dt)
            self._filled[name] = 0

    def __enter__(self) -> TorchWriter:
        return self

    def write(self, name: str, chunk: np.ndarray) -> None:
        """Append ``chunk``'s bytes to tensor ``name``."""
        flat = self._arrays[name].reshape(-1).view(np.uint8)
        data = np.ascontiguousarray(chunk).reshape(-1).view(np.uint8)
        start = self._filled[name]
        if start + data.size > flat.size:
            raise DumpError(f"{self.path}: tensor {name!r}: more data than its shape holds")
        flat[start : start + data.size] = data
        self._filled[name] = start + data.size

    def _state_dict(self) -> OrderedDict[str, Any]:
        from pyprecision.kernel import array_as_tensor

        fmts = _formats_of(self.path, self._meta)
        sd: OrderedDict[str, Any] = OrderedDict()
        for name, arr in self._arrays.items():
            want = arr.nbytes
            if self._filled[name] != want:
                raise DumpError(f"{self.path}: tensor {name!r} got {self._filled[name]} of its "
                                f"{want} bytes")
            fmt = fmts.get(name)
            sd[name] = array_as_tensor(arr.view(_format(fmt).dtype) if fmt else arr)
        extra: dict[str, Any] = {}
        module_meta = self._meta.pop(MODULE_METADATA_KEY, None)
        if module_meta:
            extra.update(json.loads(module_meta))
        extra[METADATA_ENTRY] = self._meta
        sd._metadata = extra  # type: ignore[attr-defined]  # as nn.Module.state_dict() does
        return sd

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is not None:
            return
        sd = self._state_dict()
        with atomic_file(self.path, self._inputs, overwrite=self._overwrite) as fh:
            try:
                self._torch.save(sd, fh)
            except OSError as exc:  # disk full ...: the temporary is removed, nothing published
                raise write_error(self.path, exc) from exc
            except RuntimeError as exc:  # torch's zip writer reports its write errors so
                raise DumpError(f"{self.path}: cannot write: {exc}") from exc
