"""One real Dask LocalCluster (2 worker processes, 1 thread each) shared by the distributed tests,
and a small sharded checkpoint to re-encode."""
from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pyprecision.io import save_safetensors

distributed = pytest.importorskip("distributed")

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def cluster() -> Iterator[Any]:
    """A LocalCluster(n_workers=2, processes=True, threads_per_worker=1) for the whole session."""
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(  # the workers import this tree's pyprecision
        [str(ROOT), *filter(None, [old])])
    try:
        with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                      dashboard_address=None) as c:
            yield c
    finally:
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old


@pytest.fixture
def client(cluster: Any) -> Iterator[Any]:
    """A client of the shared cluster (workers restored to 2 afterwards)."""
    with distributed.Client(cluster) as c:
        yield c
        if len(c.scheduler_info()["workers"]) < 2:
            cluster.scale(2)
            c.wait_for_workers(2, timeout=30)


def make_checkpoint(d: Path, shards: int = 4, elements: int = 4096, seed: int = 0) -> Path:
    """A sharded float32 checkpoint (plus an int tensor and a float16 one) with an index."""
    rng = np.random.default_rng(seed)
    d.mkdir(parents=True, exist_ok=True)
    wmap: dict[str, str] = {}
    for i in range(shards):
        name = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        tensors = {
            f"layer{i}.weight": (rng.standard_normal((elements // 64, 64)) * 3).astype(np.float32),
            f"layer{i}.bias": rng.standard_normal(64).astype(np.float16),
            f"layer{i}.steps": np.arange(8, dtype=np.int64),
        }
        tensors[f"layer{i}.weight"].reshape(-1)[:4] = [np.inf, -np.inf, np.nan, 1e38]
        save_safetensors(d / name, tensors, {"format": "pt"})
        wmap.update({k: name for k in tensors})
    index = {"metadata": {"total_size": 0}, "weight_map": wmap}
    (d / "model.safetensors.index.json").write_text(json.dumps(index))
    return d


def tree_bytes(d: Path) -> dict[str, bytes]:
    """Every file under ``d`` (hidden ones too), by relative name."""
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}
