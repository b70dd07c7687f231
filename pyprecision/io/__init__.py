"""Dump and checkpoint files: readers (raw binary, .npy, .npz, safetensors, sharded checkpoints,
torch .pt state dicts, directories) that memory-map and validate, and writers that write a
temporary file and publish it only when complete. See docs/io.md and docs/torch.md.

Arrows: ``io`` imports ``formats`` and ``errors``, and ``kernel``'s torch tensor views (for .pt
files only); ``reencode``, ``verify``, ``tools`` (and users) import ``io``.
"""

import importlib
from typing import TYPE_CHECKING, Any

from pyprecision.io.atomic import (
    TEMP_TAG,
    atomic_file,
    check_output_path,
    clean_stale_temporaries,
)
from pyprecision.io.dtypes import (
    SAFETENSORS_DTYPES,
    parse_dtype,
    safetensors_dtype,
    safetensors_name_of_format,
)
from pyprecision.io.outdir import INCOMPLETE_MARKER, OutputDirectory, check_complete, lock_marker
from pyprecision.io.remote import (
    CLOUD_EXTRA,
    as_local,
    exists,
    file_size,
    filesystem,
    find_files,
    is_dir,
    is_file,
    is_remote,
    is_url,
    join,
    list_names,
    open_binary,
    parent,
    read_bytes,
    remote_errors,
)
from pyprecision.io.safetensors import (
    DTYPES_METADATA_KEY,
    SafetensorsWriter,
    read_safetensors_header,
    save_safetensors,
)
from pyprecision.io.store import (
    INDEX_SUFFIX,
    TORCH_INDEX_SUFFIX,
    TensorStore,
    input_files,
    open_tensors,
)
from pyprecision.io.tensors import TensorInfo
from pyprecision.io.text import decode_text, read_input_bytes, read_text

if TYPE_CHECKING:  # loaded on first use (PEP 562): a safetensors re-encode never needs them
    from pyprecision.io.numpy_files import NPZ_METADATA_MEMBER, NpzWriter, npy_can_store
    from pyprecision.io.raw import load_dump, read_raw
    from pyprecision.io.torch_files import TorchWriter, is_torch_file, read_torch_file

#: name → the module of this room that defines it, imported when the name is first asked for.
_LAZY = {
    "NPZ_METADATA_MEMBER": "numpy_files",
    "NpzWriter": "numpy_files",
    "npy_can_store": "numpy_files",
    "load_dump": "raw",
    "read_raw": "raw",
    "TorchWriter": "torch_files",
    "is_torch_file": "torch_files",
    "read_torch_file": "torch_files",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pyprecision.io' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"pyprecision.io.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "INDEX_SUFFIX",
    "TORCH_INDEX_SUFFIX",
    "load_dump",
    "read_raw",
    "open_tensors",
    "TensorStore",
    "TensorInfo",
    "read_safetensors_header",
    "SafetensorsWriter",
    "save_safetensors",
    "NpzWriter",
    "atomic_file",
    "TEMP_TAG",
    "check_output_path",
    "parse_dtype",
    "safetensors_dtype",
    "safetensors_name_of_format",
    "SAFETENSORS_DTYPES",
    "DTYPES_METADATA_KEY",
    "NPZ_METADATA_MEMBER",
    "input_files",
    "read_text",
    "decode_text",
    "read_input_bytes",
    "clean_stale_temporaries",
    "OutputDirectory",
    "INCOMPLETE_MARKER",
    "check_complete",
    "lock_marker",
    "npy_can_store",
    "CLOUD_EXTRA",
    "is_url",
    "is_remote",
    "as_local",
    "exists",
    "find_files",
    "is_file",
    "is_dir",
    "file_size",
    "join",
    "parent",
    "list_names",
    "open_binary",
    "read_bytes",
    "filesystem",
    "remote_errors",
    "is_torch_file",
    "read_torch_file",
    "TorchWriter",
]
