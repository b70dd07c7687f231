"""Small file helpers shared by the subcommands: safe .npy reading and atomic writing."""
from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import IO

import numpy as np

from pyprecision.errors import DumpError
from pyprecision.io import atomic_file


def load_npy(path: str | os.PathLike[str]) -> np.ndarray:
    """Read a .npy file (no pickles); a truncated or malformed file is a DumpError."""
    p = Path(path)
    if not p.is_file():
        raise DumpError(f"{p}: no such file")
    with open(p, "rb") as fh:
        if fh.read(6) != b"\x93NUMPY":
            raise DumpError(f"{p}: not a .npy file (it does not start with the .npy magic)")
    try:
        return np.load(p, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise DumpError(f"{p}: not a readable .npy file ({exc})") from exc


def is_ml_dtype(dt: np.dtype) -> bool:
    """bfloat16 and the fp8/fp4/fp6 types of ml_dtypes (whose numpy ``kind`` is not reliable:
    float8_e5m2 reports 'f', the others 'V')."""
    return dt.name == "bfloat16" or dt.name.startswith(("float8", "float6", "float4"))


def write_atomic(path: str | os.PathLike[str], write: Callable[[IO[bytes]], object],
                 inputs: tuple[str | os.PathLike[str], ...] = ()) -> None:
    """Call ``write(binary_file)`` through :func:`pyprecision.io.atomic_file` (temporary name,
    fsync, rename); an existing output is replaced, an input never is."""
    with atomic_file(path, inputs, overwrite=True) as fh:
        write(fh)


def save_npy_atomic(path: str | os.PathLike[str], array: np.ndarray,
                    inputs: tuple[str | os.PathLike[str], ...] = ()) -> None:
    """Write ``array`` to a temporary file beside ``path`` and rename it into place when complete.

    Refuses to write over any of ``inputs``.
    """
    write_atomic(path, lambda fh: np.save(fh, array, allow_pickle=False), inputs)
