"""Small checkpoints for the reencode tests (written with the reference safetensors library)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import safetensors
import safetensors.numpy as stnp


def weights(seed: int = 0) -> dict[str, np.ndarray]:
    """A toy model: matrices with a wide range, a norm, a bias, an integer buffer, specials."""
    r = np.random.default_rng(seed)
    return {
        "layer.0.weight": (r.standard_normal((64, 48)) * 3).astype(np.float32),
        "layer.0.bias": r.standard_normal(48).astype(np.float32),
        "norm.weight": (1 + r.standard_normal(48) * 1e-3).astype(np.float32),
        "layer.1.weight": (r.standard_normal((48, 33)) * 1e3).astype(np.float32),
        "position_ids": np.arange(17, dtype=np.int64),
        "special": np.array(
            [0.0, -0.0, 1e30, -1e30, np.inf, -np.inf, np.nan, 1e-30, 3.0], np.float32
        ),
        "half": r.standard_normal(20).astype(np.float16),
        "double": r.standard_normal(9).astype(np.float64),
    }


def single(tmp: Path, seed: int = 0) -> tuple[Path, dict[str, np.ndarray]]:
    """One model.safetensors."""
    w = weights(seed)
    p = tmp / "model.safetensors"
    stnp.save_file(w, str(p), metadata={"format": "pt"})
    return p, w


def sharded(tmp: Path) -> tuple[Path, dict[str, np.ndarray]]:
    """Two shards and model.safetensors.index.json in ``tmp/ckpt``."""
    d = tmp / "ckpt"
    d.mkdir()
    w = weights()
    names = list(w)
    shards = {
        "model-00001-of-00002.safetensors": names[:4],
        "model-00002-of-00002.safetensors": names[4:],
    }
    wmap = {}
    for shard, keys in shards.items():
        stnp.save_file({k: w[k] for k in keys}, str(d / shard))
        wmap.update(dict.fromkeys(keys, shard))
    total = sum(v.nbytes for v in w.values())
    (d / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": total}, "weight_map": wmap})
    )
    return d, w


def raw_tensors(path: Path) -> dict[str, dict]:
    """name -> {dtype, shape, data(bytes)} parsed by the reference library."""
    return {
        k: {"dtype": v["dtype"], "shape": v["shape"], "data": bytes(v["data"])}
        for k, v in safetensors.deserialize(path.read_bytes())
    }


def metadata(path: Path) -> dict[str, str]:
    """``__metadata__`` as the reference library reads it."""
    with safetensors.safe_open(str(path), "numpy") as f:
        return f.metadata() or {}
