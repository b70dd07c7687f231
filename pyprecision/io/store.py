"""TensorStore: the tensors of a checkpoint or dump — files, sharded indexes, directories."""

from __future__ import annotations

import contextlib
import json
import mmap
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pyprecision.errors import DumpError
from pyprecision.io.outdir import check_complete
from pyprecision.io.remote import (
    as_local,
    is_dir,
    is_file,
    is_remote,
    join,
    list_names,
    open_binary,
    parent,
    read_bytes,
)
from pyprecision.io.safetensors import read_safetensors_header
from pyprecision.io.tensors import TORCH_EXTS, TensorInfo, map_bytes

__all__ = ["TensorStore", "open_tensors", "INDEX_SUFFIX", "TORCH_INDEX_SUFFIX"]

INDEX_SUFFIX = ".safetensors.index.json"
#: A sharded torch.save checkpoint's index (transformers' ``pytorch_model.bin.index.json``): the
#: same JSON as a safetensors index, naming ``.bin`` shards (docs/decisions/torch.md PT11).
TORCH_INDEX_SUFFIX = ".bin.index.json"
_EXTS = (".safetensors", ".npz", ".npy", *TORCH_EXTS)


class TensorStore(Mapping[str, TensorInfo]):
    """Name → TensorInfo over one or more files; ``load(name)`` maps the tensor read-only.

    ``files`` lists the data files in order, ``metadata[file]`` their metadata, ``index`` the
    parsed ``*.safetensors.index.json`` when the store came from one (else None).
    """

    def __init__(
        self,
        infos: Iterable[TensorInfo],
        files: Sequence[str],
        metadata: Mapping[str, Mapping[str, Any]],
        index: dict[str, Any] | None = None,
        index_path: str | None = None,
    ) -> None:
        self._infos: dict[str, TensorInfo] = {}
        for t in infos:
            if t.name in self._infos:
                raise DumpError(
                    f"tensor {t.name!r} appears in both {self._infos[t.name].path} and {t.path}"
                )
            self._infos[t.name] = t
        self.files = list(files)
        self.metadata = {k: dict(v) for k, v in metadata.items()}
        self.index = index
        self.index_path = index_path
        self._maps: dict[str, mmap.mmap | None] = {}

    def __getitem__(self, name: str) -> TensorInfo:
        try:
            return self._infos[name]
        except KeyError:
            raise KeyError(
                f"no tensor {name!r}; have {', '.join(list(self._infos)[:10])}"
            ) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._infos)

    def __len__(self) -> int:
        return len(self._infos)

    def in_file(self, path: str) -> list[TensorInfo]:
        """The tensors of one data file, in the file's order."""
        return [t for t in self._infos.values() if t.path == path]

    def load(self, name: str) -> np.ndarray:
        """The tensor as a read-only array: a memory map unless the member is compressed; for a
        remote file (a URL), the bytes of one ranged read."""
        t = self[name]
        if t.reader is not None:  # a torch.save file: torch maps it (io/torch_files.py)
            return t.reader()
        if t.offset is None:
            from pyprecision.io.numpy_files import read_npz_compressed

            return read_npz_compressed(t)
        return map_bytes(
            t.path, t.offset, t.dtype, t.shape, fortran_order=t.fortran_order, cache=self._maps
        )

    def done(self, name: str) -> None:
        """Say tensor ``name`` is no longer needed: its pages leave this process's resident set
        (they stay in the page cache), so streaming a checkpoint keeps memory at one tensor."""
        t = self[name]
        mm = self._maps.get(t.path)
        if mm is None or t.offset is None or not t.nbytes or not hasattr(mmap, "MADV_DONTNEED"):
            return
        start = t.offset - t.offset % mmap.PAGESIZE
        with contextlib.suppress(OSError, ValueError):
            mm.madvise(mmap.MADV_DONTNEED, start, t.offset + t.nbytes - start)

    def close(self) -> None:
        """Drop this store's maps (arrays already returned keep theirs alive)."""
        self._maps.clear()


def file_kind(path: str) -> str | None:
    """safetensors | npz | npy | pt by extension, else by the first bytes; None if none."""
    for ext, kind in ((".safetensors", "safetensors"), (".npz", "npz"), (".npy", "npy")):
        if path.endswith(ext):
            return kind
    from pyprecision.io.torch_files import is_torch_file  # .npz/.npy/.pt readers load on first use

    if is_torch_file(path):  # .pt / .pth, or a .bin whose bytes are torch.save's
        return "pt"
    with open_binary(path) as fh:
        head = fh.read(9)
    if head.startswith(b"PK\x03\x04"):
        return "npz"
    if head.startswith(b"\x93NUMPY"):
        return "npy"
    if len(head) == 9 and head[8:9] == b"{":
        return "safetensors"
    return None


def _read_file(path: str) -> tuple[list[TensorInfo], dict[str, Any]]:
    if not is_file(path):
        raise DumpError(f"{path}: no such file")
    kind = file_kind(path)
    if kind == "safetensors":
        return read_safetensors_header(path)
    if kind == "npz":
        from pyprecision.io.numpy_files import read_npz_members

        return read_npz_members(path)
    if kind == "npy":
        from pyprecision.io.numpy_files import read_npy_header

        return [read_npy_header(path)], {}
    if kind == "pt":
        from pyprecision.io.torch_files import read_torch_file

        return read_torch_file(path)
    raise DumpError(
        f"{path}: unknown checkpoint file type; expected .safetensors, "
        f"{INDEX_SUFFIX}, .npz, .npy or a torch .pt (raw binary dumps: use read_raw)"
    )


def _index_kind(path: str) -> str:
    return "torch shard index" if path.endswith(TORCH_INDEX_SUFFIX) else "safetensors index"


def _read_shard(index_path: str, f: str) -> tuple[list[TensorInfo], dict[str, Any]]:
    """A shard's tensors: safetensors for a safetensors index; for a torch index, a file whose
    bytes are torch.save's (a raw dump named .bin is refused, never guessed at)."""
    if not index_path.endswith(TORCH_INDEX_SUFFIX):
        return read_safetensors_header(f)
    from pyprecision.io.torch_files import is_torch_file, read_torch_file

    if is_remote(f):
        return read_torch_file(f)  # its error: torch files are read from local paths only
    if not is_torch_file(f):
        raise DumpError(
            f"{index_path}: shard {os.path.basename(f)!r} is not a torch.save file (or is truncated)"
        )
    return read_torch_file(f)


def _load_index(path: str) -> dict[str, Any]:
    if not is_file(path):
        raise DumpError(f"{path}: no such file")
    try:
        index = json.loads(read_bytes(path).decode("utf-8"))
    except OSError as exc:
        raise DumpError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except (ValueError, RecursionError) as exc:  # bad UTF-8 or JSON, or nested too deep
        raise DumpError(f"{path}: not a valid {_index_kind(path)} (malformed JSON: {exc})") from exc
    if not isinstance(index, dict) or not isinstance(index.get("weight_map"), dict):
        raise DumpError(f"{path}: not a valid {_index_kind(path)} (needs a weight_map object)")
    weight_map = index["weight_map"]
    if not weight_map:
        raise DumpError(f"{path}: the weight_map is empty: an index must name its tensors' shards")
    for name, shard in weight_map.items():
        if not isinstance(shard, str):
            raise DumpError(
                f"{path}: weight_map[{name!r}] is {shard!r}; expected a shard file name (a string)"
            )
    return index


def _plain_name(index_path: str, shard: str) -> None:
    """A shard must be a plain file name: no directory part, not '.', '..', empty or absolute."""
    seps = {os.sep, "/"} | ({os.altsep} if os.altsep else set())
    if (
        not shard
        or shard in (".", "..")
        or "\0" in shard
        or any(sep in shard for sep in seps)
        or os.path.isabs(shard)
    ):
        raise DumpError(
            f"{index_path}: shard name {shard!r} is not a plain file name in the index's "
            "directory; refusing to read outside the checkpoint"
        )


def _inside(base: str, f: str, allow_symlinks: bool, what: str) -> None:
    """Refuse ``f`` (in directory ``base``) when it is a symbolic link leading out of ``base``."""
    if allow_symlinks or is_remote(f) or not os.path.islink(f):  # object stores have no links
        return
    real, root = os.path.realpath(f), os.path.realpath(base or ".")
    if os.path.commonpath([real, root]) != root:
        raise DumpError(
            f"{what}: {os.path.basename(f)!r} is a symbolic link leading out of {base or '.'} "
            f"(to {real}); refusing it (allow_symlinks=True / --allow-symlinks accepts it)"
        )


def _from_index(path: str, allow_symlinks: bool = False) -> TensorStore:
    base = parent(path)
    check_complete(base)
    index = _load_index(path)
    weight_map = index["weight_map"]
    shards = list(dict.fromkeys(weight_map.values()))
    for shard in shards:  # every name checked before any file is opened
        _plain_name(path, shard)
    for shard in shards:
        _inside(base, join(base, shard), allow_symlinks, path)
    infos: list[TensorInfo] = []
    meta: dict[str, Any] = {}
    files = []
    for shard in shards:
        f = join(base, shard)
        if not is_file(f):
            raise DumpError(f"{path}: missing shard {shard!r} (named in the weight_map)")
        got, meta[f] = _read_shard(path, f)
        names = {t.name for t in got}
        for name, s in weight_map.items():
            if s == shard and name not in names:
                raise DumpError(f"{path}: weight_map puts {name!r} in {shard}, which lacks it")
        infos += [t for t in got if weight_map.get(t.name) == shard]
        extra = [t.name for t in got if weight_map.get(t.name) != shard]
        if extra:
            raise DumpError(f"{f}: tensors not in the index's weight_map: {extra[:5]}")
        files.append(f)
    return TensorStore(infos, files, meta, index=index, index_path=path)


#: The one-file torch checkpoint a Hugging Face folder holds (transformers' WEIGHTS_NAME): taken
#: from a directory when its bytes are torch.save's; other .bin files may be raw dumps.
TORCH_WEIGHTS = "pytorch_model.bin"


def _is_torch_bin(f: str) -> bool:
    if is_remote(f):
        return False
    from pyprecision.io.torch_files import is_torch_file

    return is_torch_file(f)


def _dir_files(d: str, allow_symlinks: bool) -> tuple[list[str], str | None]:
    check_complete(d)
    names = sorted(list_names(d))
    indexes = [n for n in names if n.endswith(INDEX_SUFFIX)]
    if len(indexes) > 1:
        raise DumpError(f"{d}: several safetensors indexes ({', '.join(indexes)}); name one")
    if indexes:
        return [], join(d, indexes[0])
    files = [join(d, n) for n in names if n.endswith(_EXTS) and not n.startswith(".")]
    if not files:  # an older Hugging Face folder: torch weights, sharded with an index or one file
        torch_indexes = [n for n in names if n.endswith(TORCH_INDEX_SUFFIX)]
        if len(torch_indexes) > 1:
            raise DumpError(
                f"{d}: several torch shard indexes ({', '.join(torch_indexes)}); name one"
            )
        if torch_indexes:
            return [], join(d, torch_indexes[0])
        if TORCH_WEIGHTS in names and _is_torch_bin(join(d, TORCH_WEIGHTS)):
            files = [join(d, TORCH_WEIGHTS)]
    if not files:
        bins = [n for n in names if n.endswith(".bin") and not n.startswith(".")]
        if bins:  # an older Hugging Face folder: torch weights, read when named one by one
            raise DumpError(
                f"{d}: no .safetensors, .npz, .npy, .pt or .pth files; it holds {', '.join(bins[:3])}: "
                f"name such a file itself (e.g. {join(d, bins[0])} -o OUT/model.safetensors)"
            )
        raise DumpError(f"{d}: no .safetensors, .npz, .npy, .pt or .pth files")
    for f in files:
        _inside(d, f, allow_symlinks, d)
    return files, None


def open_tensors(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    allow_symlinks: bool = False,
) -> TensorStore:
    """Open checkpoint or dump files for reading: a .safetensors / .npz / .npy / torch .pt file,
    a ``*.safetensors.index.json`` or ``*.bin.index.json`` (sharded checkpoint), a directory (its
    index if it has one, else all its .safetensors / .npz / .npy / .pt / .pth files, else its
    torch shard index or its ``pytorch_model.bin``), or a list of these. Only headers are read;
    tensor names must be unique across files.

    Shards named by an index must be plain file names in the index's directory, and a shard (or a
    file of a directory) that is a symbolic link leading out of that directory is refused unless
    ``allow_symlinks``. A directory an interrupted run left incomplete is refused."""
    items = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    if not items:
        raise DumpError("no input files")
    stores: list[TensorStore] = []
    for item in items:
        p = as_local(item)  # a file:// URL is a plain path; other URLs go through fsspec
        if is_dir(p):
            files, index = _dir_files(p, allow_symlinks)
            if index is not None:
                stores.append(_from_index(index, allow_symlinks))
                continue
        elif p.endswith(".json"):  # a safetensors or torch shard index
            stores.append(_from_index(p, allow_symlinks))
            continue
        else:
            files = [p]
        infos, meta, fl = [], {}, []
        for f in files:
            got, meta[f] = _read_file(f)
            infos += got
            fl.append(f)
        stores.append(TensorStore(infos, fl, meta))
    if len(stores) == 1:
        return stores[0]
    return TensorStore(
        [t for s in stores for t in s.values()],
        [f for s in stores for f in s.files],
        {k: v for s in stores for k, v in s.metadata.items()},
    )


def input_files(store: TensorStore) -> list[Path | str]:
    """Every file the store reads (data files and the index), for output-overwrite checks: a
    Path for a local file, the URL (a string) for a remote one."""
    names = [*store.files, *([store.index_path] if store.index_path else [])]
    return [f if is_remote(f) else Path(f) for f in names]
