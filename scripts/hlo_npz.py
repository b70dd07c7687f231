"""The npz convention of the real-XLA test data, shared by the data generators in scripts/.

``scripts/gen_hlo_data.py`` sets ``XLA_FLAGS`` and makes a temporary directory when it is imported,
so other generators cannot import its helpers; this module holds the side-effect-free part (numpy
and ml_dtypes only, no JAX).

Every array is stored under a key such as ``in<i>`` / ``out<i>``. Types numpy cannot store portably
are stored as their raw storage: bfloat16 as ``uint16`` bits, the float8 family as ``uint8`` bits,
int4/uint4 as ``int8``/``uint8`` values. The key ``__dtypes__`` holds a JSON object mapping each key
to its logical dtype name (a 0-d unicode array, so it loads with ``allow_pickle=False``).
"""
from __future__ import annotations

import json
import os
import re
import tempfile
from collections import Counter
from typing import Any

import numpy as np

XLA_NAME = {
    "bool": "pred", "int4": "s4", "int8": "s8", "int16": "s16", "int32": "s32", "int64": "s64",
    "uint4": "u4", "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "float16": "f16", "float32": "f32", "float64": "f64", "bfloat16": "bf16",
    "float8_e5m2": "f8e5m2", "float8_e4m3fn": "f8e4m3fn", "float8_e4m3": "f8e4m3",
    "float8_e4m3b11fnuz": "f8e4m3b11fnuz", "float8_e5m2fnuz": "f8e5m2fnuz",
    "float8_e4m3fnuz": "f8e4m3fnuz", "float8_e3m4": "f8e3m4",
}


def storage(a: np.ndarray) -> np.ndarray:
    """Return the npz-storable form of ``a`` (raw bits for ml_dtypes floats, ints for int4)."""
    name = a.dtype.name
    if name == "int4":
        return a.astype(np.int8)
    if name == "uint4":
        return a.astype(np.uint8)
    if name == "bfloat16":
        return a.view(np.uint16)
    if name.startswith("float8"):
        return a.view(np.uint8)
    return a


def describe(a: np.ndarray) -> dict[str, Any]:
    """The manifest entry of one array: logical dtype, XLA element type, shape, storage dtype."""
    return {"dtype": a.dtype.name, "xla": XLA_NAME.get(a.dtype.name, a.dtype.name),
            "shape": list(a.shape), "storage": storage(a).dtype.name}


def save_npz(path: str, arrays: dict[str, np.ndarray]) -> None:
    """Write ``arrays`` (logical dtypes) to ``path`` in the npz convention, atomically."""
    stored = {k: storage(np.asarray(v)) for k, v in arrays.items()}
    stored["__dtypes__"] = np.array(json.dumps({k: np.asarray(v).dtype.name
                                                for k, v in arrays.items()}))
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path) or ".", suffix=".npz")
    os.close(fd)
    try:
        np.savez_compressed(tmp, **stored)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def load_npz(path: str) -> dict[str, np.ndarray]:
    """Read an npz written by :func:`save_npz` back into logical dtypes (needs ml_dtypes)."""
    import ml_dtypes

    with np.load(path) as z:
        dtypes = json.loads(str(z["__dtypes__"]))
        out = {}
        for key, name in dtypes.items():
            a = z[key]
            if name == "bfloat16" or name.startswith("float8"):
                a = a.view(getattr(ml_dtypes, name))
            elif name in ("int4", "uint4"):
                a = a.astype(getattr(ml_dtypes, name))
            out[key] = a
    return out


_INST = re.compile(r"^\s+(?:ROOT )?%?[\w.\-]+ = \S", re.M)
_OPCODE = re.compile(r"^\s+(?:ROOT )?%?[\w.\-]+ = .*?\s([a-z][a-z0-9\-]*)\(", re.M)


def instruction_count(text: str) -> int:
    """Instructions in every computation of an HLO text (one ``name = ...`` line each)."""
    return len(_INST.findall(text))


def opcodes(text: str) -> dict[str, int]:
    """How often each opcode occurs in the text."""
    return dict(sorted(Counter(_OPCODE.findall(text)).items()))
