"""The real-model test data of tests/data/models/ (written by scripts/gen_lower_models.py and
scripts/gen_torch_xla_models.py): a plain module, importable under any pytest import mode.

    >>> from models_data import load_model
    >>> m = load_model("encoder_block")            # jax-0.10.2 unless a source is given
    >>> m.text, m.inputs, m.outputs, m.ref_bf16mm   # HLO text, XLA's inputs and outputs, ...
"""
from __future__ import annotations

import gzip
import json
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

MODELS_DIR = Path(__file__).parent / "data" / "models"
DEFAULT_SOURCE = "jax-0.10.2"


def sources() -> list[str]:
    """The generator directories: ``jax-0.10.2``, ``jax-0.4.30``, ``torch_xla-2.9.0``..."""
    return sorted(p.name for p in MODELS_DIR.iterdir() if (p / "manifest.json").is_file())


@cache
def manifest(source: str = DEFAULT_SOURCE) -> dict[str, Any]:
    """The parsed manifest.json of one source directory."""
    return json.loads((MODELS_DIR / source / "manifest.json").read_text())


def model_names(source: str = DEFAULT_SOURCE) -> list[str]:
    """Every model of a source, in manifest order (sorted)."""
    return sorted(manifest(source)["modules"])


def read_text(path: Path) -> str:
    """An HLO text file, gunzipped when its name ends in ``.gz``."""
    if path.suffix == ".gz":
        return gzip.decompress(path.read_bytes()).decode()
    return path.read_text()


def logical(a: np.ndarray, name: str) -> np.ndarray:
    """Undo the npz convention: raw bits -> bfloat16 / float8, int8 values -> int4."""
    if name == "bfloat16" or name.startswith("float8"):
        return a.view(getattr(ml_dtypes, name))
    if name in ("int4", "uint4"):
        return a.astype(getattr(ml_dtypes, name))
    return a


def load_npz(path: Path) -> dict[str, np.ndarray]:
    """Every array of an npz in the convention, in its logical dtype."""
    with np.load(path) as z:
        dtypes = json.loads(str(z["__dtypes__"]))
        return {k: logical(z[k], name) for k, name in dtypes.items()}


def _series(arrays: dict[str, np.ndarray], prefix: str) -> list[np.ndarray]:
    out = []
    while f"{prefix}{len(out)}" in arrays:
        out.append(arrays[f"{prefix}{len(out)}"])
    return out


@dataclass
class ModelData:
    """One model: its manifest entry, HLO text(s), inputs and XLA's outputs."""

    name: str
    source: str
    entry: dict[str, Any]
    hlo_path: Path
    debug_path: Path | None
    inputs: list[np.ndarray] = field(default_factory=list)
    outputs: list[np.ndarray] = field(default_factory=list)
    ref_bf16mm: list[np.ndarray] = field(default_factory=list)   # ref_bf16mm_out<i>
    excess_outputs: list[np.ndarray] = field(default_factory=list)  # excess_out<i>
    eager_outputs: list[np.ndarray] = field(default_factory=list)   # torch eager_out<i>

    @property
    def text(self) -> str:
        """The unoptimized HLO text."""
        return read_text(self.hlo_path)

    @property
    def debug_text(self) -> str | None:
        """The same with metadata (newer JAX only)."""
        return None if self.debug_path is None else read_text(self.debug_path)


def load_model(name: str, source: str = DEFAULT_SOURCE) -> ModelData:
    """Load one model's files (arrays empty for the text-only benchmark modules)."""
    entry = manifest(source)["modules"][name]
    d = MODELS_DIR / source
    files = entry["files"]
    m = ModelData(name, source, entry, d / files["hlo"],
                  d / files["debug"] if "debug" in files else None)
    if "data" in files:
        arrays = load_npz(d / files["data"])
        m.inputs, m.outputs = _series(arrays, "in"), _series(arrays, "out")
        m.ref_bf16mm = _series(arrays, "ref_bf16mm_out")
        m.excess_outputs = _series(arrays, "excess_out")
        m.eager_outputs = _series(arrays, "eager_out")
    return m


def bf16_copy(name: str, source: str = DEFAULT_SOURCE) -> tuple[str, list[np.ndarray]]:
    """The model's HLO text with every f32 written bf16, and its inputs rounded to bf16 (others
    unchanged): what mode `all` with narrow accumulation should equal under the HLO evaluator."""
    m = load_model(name, source)
    text = re.sub(r"\bf32\b", "bf16", m.text)
    return text, [a.astype(ml_dtypes.bfloat16) if a.dtype == np.float32 else a for a in m.inputs]
