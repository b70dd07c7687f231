""".npy and .npz: headers parsed exactly, stored members memory-mapped, compressed ones read."""

from __future__ import annotations

import ast
import contextlib
import json
import os
import re
import struct
import zipfile
import zlib
from collections.abc import Iterable, Mapping
from contextlib import ExitStack
from math import prod
from typing import IO, Any

import numpy as np

from pyprecision.errors import DumpError
from pyprecision.formats import format as _format
from pyprecision.io.atomic import EarlyWriteback, atomic_file, write_error
from pyprecision.io.remote import as_local, file_size, is_remote, open_binary
from pyprecision.io.tensors import TensorInfo, check_shape

__all__ = [
    "npy_can_store",
    "read_npy_header",
    "read_npz_members",
    "NpzWriter",
    "NPZ_METADATA_MEMBER",
]

#: The .npz member (plain JSON, not an array) that holds what safetensors keeps in __metadata__.
NPZ_METADATA_MEMBER = "__metadata__.json"
_MAGIC = b"\x93NUMPY"
#: Longest .npy header read (numpy itself refuses more than 10 000 bytes by default).
MAX_NPY_HEADER = 1 << 20


def _descr_dtype(descr: Any) -> np.dtype:
    """The dtype of a .npy descr; a float descr numpy cannot name (``<f1``: numpy's spelling of
    ml_dtypes' float8_e5m2) is read as raw bytes (``V1``); ``load_dump(dtype=...)`` relabels it."""
    try:
        return np.lib.format.descr_to_dtype(descr)
    except TypeError:
        m = re.fullmatch(r"[<>|=]?f(\d+)", descr) if isinstance(descr, str) else None
        if m is None:
            raise
        return np.dtype(f"V{m.group(1)}")


def _parse_header(
    path: str, fh: IO[bytes], where: str
) -> tuple[np.dtype, tuple[int, ...], bool, int]:
    """(dtype, shape, fortran_order, header bytes) of the .npy stream at ``fh``'s position."""
    head = fh.read(10)
    if len(head) < 10 or not head.startswith(_MAGIC):
        raise DumpError(f"{path}{where}: not a .npy array (bad magic)")
    major = head[6]
    if major == 1:
        (n,), pre = struct.unpack("<H", head[8:10]), 10
    elif major in (2, 3):
        more = fh.read(2)
        if len(more) < 2:
            raise DumpError(f"{path}{where}: truncated .npy header")
        (n,), pre = struct.unpack("<I", head[8:10] + more), 12
    else:
        raise DumpError(f"{path}{where}: unsupported .npy version {major}")
    if n > MAX_NPY_HEADER:
        raise DumpError(f"{path}{where}: .npy header of {n} bytes is implausible (limit "
                        f"{MAX_NPY_HEADER})")
    text = fh.read(n)
    if len(text) < n:
        raise DumpError(f"{path}{where}: truncated .npy header")
    try:
        d = ast.literal_eval(text.decode("utf-8" if major == 3 else "latin1"))
        descr, fortran, shape = d["descr"], bool(d["fortran_order"]), tuple(d["shape"])
        dtype = _descr_dtype(descr)
    except Exception as exc:  # noqa: BLE001 - any failure is a malformed header
        raise DumpError(f"{path}{where}: malformed .npy header: {exc}") from exc
    if dtype.hasobject:
        raise DumpError(f"{path}{where}: object arrays are not supported (they need pickle)")
    shape = check_shape(f"{path}{where}: malformed .npy header", shape, dtype.itemsize)
    return dtype, shape, fortran, pre + n


def npy_can_store(dtype: Any) -> bool:
    """Whether a .npy header can name ``dtype`` so that numpy reads it back as the same dtype
    (not so for bfloat16 and the fp8 types of ml_dtypes)."""
    dt = np.dtype(dtype)
    try:
        return bool(np.lib.format.descr_to_dtype(np.lib.format.dtype_to_descr(dt)) == dt)
    except (TypeError, ValueError):
        return False


def read_npy_header(path: str | os.PathLike[str], name: str | None = None) -> TensorInfo:
    """The single tensor of a .npy file; its size must match the file exactly."""
    p = as_local(path)
    size = file_size(p)
    with open_binary(p, size) as fh:
        dtype, shape, fortran, hlen = _parse_header(p, fh, "")
    want = prod(shape) * dtype.itemsize
    if size - hlen != want:
        what = "truncated" if size - hlen < want else "trailing bytes"
        raise DumpError(
            f"{p}: {what}: {dtype}{list(shape)} needs {want} bytes of data, "
            f"the file has {size - hlen}"
        )
    stem = os.path.basename(p)[: -len(".npy")] if p.endswith(".npy") else os.path.basename(p)
    return TensorInfo(
        name=name or stem,
        dtype=dtype,
        shape=shape,
        path=p,
        kind="npy",
        offset=hlen,
        stored=str(np.lib.format.dtype_to_descr(dtype)),
        fortran_order=fortran,
    )


def _local_data_offset(fh: IO[bytes], info: zipfile.ZipInfo, path: str) -> int:
    fh.seek(info.header_offset)
    local = fh.read(30)
    if len(local) < 30 or local[:4] != b"PK\x03\x04":
        raise DumpError(f"{path}: member {info.filename}: bad local zip header")
    n, e = struct.unpack("<HH", local[26:30])
    return info.header_offset + 30 + n + e


def _npz_metadata(zf: zipfile.ZipFile, path: str) -> dict[str, Any]:
    if NPZ_METADATA_MEMBER not in zf.namelist():
        return {}
    try:
        meta = json.loads(zf.read(NPZ_METADATA_MEMBER).decode())
        if not isinstance(meta, dict):
            raise ValueError("not a JSON object")
        return meta
    except Exception as exc:  # noqa: BLE001
        raise DumpError(f"{path}: malformed {NPZ_METADATA_MEMBER}: {exc}") from exc


def _npz_formats(path: str, raw: Any) -> dict[str, str]:
    """The ``pyprecision.dtypes`` entry (a JSON string or an object) as {member: format name}."""
    if raw is None:
        return {}
    try:
        table = json.loads(raw) if isinstance(raw, str) else raw
        if not isinstance(table, dict) or not all(isinstance(v, str) for v in table.values()):
            raise ValueError("expected a JSON object of format names")
        return {str(k): _format(v).name for k, v in table.items()}
    except Exception as exc:  # noqa: BLE001 - any malformation is the file's fault
        raise DumpError(f"{path}: malformed pyprecision.dtypes metadata: {exc}") from exc


def _retype(path: str, name: str, dtype: np.dtype, fmt: str | None) -> np.dtype:
    if fmt is None:
        return dtype
    f = _format(fmt)
    if f.bits // 8 != dtype.itemsize:
        raise DumpError(
            f"{path}: member {name!r}: metadata says {f.name} but it is stored as {dtype}"
        )
    return f.dtype


#: What a corrupt zip can make zipfile raise (besides BadZipFile): a seek to a negative offset,
#: a bad struct, an unknown compression method, a short read.
_ZIP_ERRORS = (zipfile.BadZipFile, zlib.error, OSError, EOFError, struct.error,
               NotImplementedError, ValueError, OverflowError, RuntimeError)


def read_npz_members(path: str | os.PathLike[str]) -> tuple[list[TensorInfo], dict[str, Any]]:
    """The arrays of a .npz (stored members mapped, deflated ones read on demand), its metadata.
    A corrupt archive is a DumpError naming the file."""
    p = as_local(path)
    try:
        return _npz_members(p)
    except DumpError:
        raise
    except _ZIP_ERRORS as exc:
        raise DumpError(f"{p}: not a readable .npz (zip) file: {exc}") from exc


def _npz_members(p: str) -> tuple[list[TensorInfo], dict[str, Any]]:
    # a URL: ranged reads of the central directory and of each member's headers
    zf = zipfile.ZipFile(open_binary(p) if is_remote(p) else p)
    infos = []
    with zf, open_binary(p) as fh:
        size = file_size(p)
        meta = _npz_metadata(zf, p)
        fmts = _npz_formats(p, meta.get("pyprecision.dtypes"))
        for zi in zf.infolist():
            if not zi.filename.endswith(".npy"):
                continue
            name = zi.filename[:-4]
            where = f" member {zi.filename}"
            if zi.compress_type == zipfile.ZIP_STORED:
                start = _local_data_offset(fh, zi, p)
                fh.seek(start)
                dtype, shape, fortran, hlen = _parse_header(p, fh, where)
                avail = zi.file_size - hlen
                offset: int | None = start + hlen
            else:
                try:
                    with zf.open(zi) as mf:
                        dtype, shape, fortran, hlen = _parse_header(p, mf, where)
                except DumpError:
                    raise
                except _ZIP_ERRORS as exc:
                    raise DumpError(f"{p}{where}: corrupt: {exc}") from exc
                avail, offset = zi.file_size - hlen, None
            want = prod(shape) * dtype.itemsize
            if avail != want:
                raise DumpError(
                    f"{p}{where}: {dtype}{list(shape)} needs {want} bytes, the member holds {avail}"
                )
            if offset is not None and offset + want > size:
                raise DumpError(f"{p}{where}: truncated file")
            fmt = fmts.get(name)
            infos.append(
                TensorInfo(
                    name=name,
                    dtype=_retype(p, name, dtype, fmt),
                    shape=shape,
                    path=p,
                    kind="npz",
                    offset=offset,
                    stored=str(np.lib.format.dtype_to_descr(dtype)),
                    fortran_order=fortran,
                    format=_format(fmt).name if fmt else None,
                )
            )
    return infos, meta


def read_npz_compressed(info: TensorInfo) -> np.ndarray:
    """Read a deflated .npz member (the whole tensor, into memory)."""
    try:
        src = open_binary(info.path) if is_remote(info.path) else info.path
        with zipfile.ZipFile(src) as zf, zf.open(info.name + ".npy") as mf:
            arr = np.lib.format.read_array(mf, allow_pickle=False)
    except _ZIP_ERRORS as exc:
        raise DumpError(f"{info.path}: member {info.name}.npy: corrupt: {exc}") from exc
    return arr.view(info.dtype) if arr.dtype != info.dtype else arr


class NpzWriter:
    """Write a .npz (uncompressed, zip64) member by member, chunk by chunk, atomically.

    ``begin(name, dtype, shape)`` starts a member; ``write(chunk)`` appends to it; members are
    written one after another. dtypes numpy cannot name in a .npy header (bfloat16, fp8) must be
    written as their raw codes (uint8/uint16) and named in ``metadata["pyprecision.dtypes"]``.
    ``metadata`` is stored as the JSON member ``__metadata__.json``.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        metadata: Mapping[str, Any] | None = None,
        *,
        inputs: Iterable[Any] = (),
        overwrite: bool = False,
        fsync: bool = True,
    ) -> None:
        self.path = os.fspath(path)
        self._meta = dict(metadata or {})
        self._args = (list(inputs), overwrite, fsync)
        self._stack = ExitStack()
        self._zf: zipfile.ZipFile | None = None
        self._member: Any = None
        self._fh: Any = None
        self._early = EarlyWriteback(-1)
        self._left = 0
        self._name = ""

    def __enter__(self) -> NpzWriter:
        inputs, overwrite, fsync = self._args
        fh = self._stack.enter_context(
            atomic_file(self.path, inputs, overwrite=overwrite, fsync=fsync)
        )
        self._zf = self._stack.enter_context(
            zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED, allowZip64=True)
        )
        self._fh, self._early = fh, EarlyWriteback(fh.fileno())
        return self

    def begin(self, name: str, dtype: Any, shape: tuple[int, ...]) -> None:
        """Start member ``name`` holding ``dtype[shape]`` (C order)."""
        self._finish()
        assert self._zf is not None, "use NpzWriter as a context manager"
        dt = np.dtype(dtype)
        if not npy_can_store(dt):
            raise DumpError(f"{self.path}: {name!r}: write {dt} as raw codes (uint) plus metadata")
        self._member = self._zf.open(name + ".npy", "w", force_zip64=True)
        np.lib.format.write_array_header_2_0(
            self._member,
            {
                "descr": np.lib.format.dtype_to_descr(dt),
                "fortran_order": False,
                "shape": tuple(shape),
            },
        )
        self._left, self._name = prod(shape) * dt.itemsize, name

    def write(self, chunk: np.ndarray) -> None:
        """Append a chunk to the current member."""
        a = np.asarray(chunk)
        if a.dtype.byteorder == ">":
            a = a.astype(a.dtype.newbyteorder("<"))
        buf = np.ascontiguousarray(a).reshape(-1).view(np.uint8)
        if self._member is None or buf.size > self._left:
            raise DumpError(f"{self.path}: {self._name!r}: more bytes than declared")
        at = self._fh.tell()
        try:
            self._member.write(buf.data)
            self._fh.flush()
        except OSError as exc:
            raise write_error(self.path, exc) from exc
        self._left -= buf.size
        self._early.wrote(at, self._fh.tell() - at)

    def add(self, name: str, array: np.ndarray) -> None:
        """Write a whole array as member ``name``."""
        self.begin(name, array.dtype, array.shape)
        self.write(array)

    def _finish(self) -> None:
        if self._member is not None:
            if self._left:
                raise DumpError(f"{self.path}: {self._name!r}: {self._left} bytes missing")
            self._member.close()
            self._member = None

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        err: BaseException | None = None
        self._early.close()
        if exc_type is None:
            try:
                self._finish()
                assert self._zf is not None
                self._zf.writestr(NPZ_METADATA_MEMBER, json.dumps(self._meta, indent=1))
            except OSError as e:
                err = write_error(self.path, e)
            except BaseException as e:  # noqa: BLE001 - abort the file, then re-raise
                err = e
        if self._member is not None:
            with contextlib.suppress(Exception):  # the file is being discarded anyway
                self._member.close()
            self._member = None
        if err is not None:
            self._stack.__exit__(type(err), err, err.__traceback__)
            raise err
        try:
            self._stack.__exit__(exc_type, exc, tb)
        except DumpError:
            raise
        except OSError as e:  # the zip's central directory did not fit (disk full ...)
            raise write_error(self.path, e) from e
