"""Emulation and re-encode benchmarks (pytest-benchmark; bench/conftest.py has the commands): an
HLO module (a 256 x 256 bf16 dot and an add) evaluated as written and through the whole neuronx-cc
pipeline, and `reencode` of a 4-tensor float32 safetensors checkpoint (64 MiB) to bf16 and
fp8e4m3fn in a temporary directory. Asserts nothing about speed."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

HLO = """HloModule m, entry_computation_layout={(bf16[256,256]{1,0}, bf16[256,256]{1,0})->bf16[256,256]{1,0}}

ENTRY main {
  a = bf16[256,256]{1,0} parameter(0)
  b = bf16[256,256]{1,0} parameter(1)
  d = bf16[256,256]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT s = bf16[256,256]{1,0} add(d, a)
}
"""


@pytest.mark.parametrize("pipeline", [False, True], ids=["as-written", "neuronx-cc-pipeline"])
def test_run_hlo(benchmark: Any, pipeline: bool) -> None:
    from pyprecision import hlo
    from pyprecision.emulate import run_hlo
    from pyprecision.frontend import parse_flags

    module = hlo.parse(HLO)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((256, 256)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((256, 256)).astype(ml_dtypes.bfloat16)
    config = parse_flags([]) if pipeline else None
    out = benchmark.pedantic(lambda: run_hlo(module, [a, b], config), rounds=5, iterations=1,
                             warmup_rounds=1)
    assert out[0].shape == (256, 256) and out[0].dtype == ml_dtypes.bfloat16


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: Any) -> Path:
    from safetensors.numpy import save_file

    d = tmp_path_factory.mktemp("ckpt")
    rng = np.random.default_rng(0)
    save_file({f"layers.{i}.weight": (rng.standard_normal((1024, 4096)) * 0.05).astype(np.float32)
               for i in range(4)}, str(d / "model.safetensors"))
    return d / "model.safetensors"


@pytest.mark.parametrize("fmt", ["bf16", "fp8e4m3fn"])
def test_reencode(benchmark: Any, checkpoint: Path, tmp_path: Path, fmt: str) -> None:
    from pyprecision.reencode import reencode

    out = tmp_path / "out.safetensors"

    def run() -> None:
        out.unlink(missing_ok=True)
        reencode(str(checkpoint), str(out), fmt, threads=1)

    benchmark.extra_info["input_bytes"] = checkpoint.stat().st_size
    benchmark.pedantic(run, rounds=5, iterations=1, warmup_rounds=1)
    assert out.stat().st_size > 0
