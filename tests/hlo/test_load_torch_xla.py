"""A real PyTorch/XLA module as the HloModuleProto torch-xla hands its compiler
(tests/data/load/torch_xla-2.9.0/, ``scripts/gen_torch_xla_proto.py``, torch 2.9.0 + torch-xla 2.9.0):
the loader reads it as jaxlib prints it, and it computes what torch-xla's own text of the same graph
computes and what XLA:CPU computed (the committed tests/data/models/torch_xla-2.9.0/<name>.npz,
written by torch-xla, not by this code), under the evaluator and the pipeline."""
from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from pyprecision import emulate, frontend, hlo
from pyprecision.hlo.proto_text import proto_to_text

DATA = Path(__file__).parent.parent / "data"
PROTOS = DATA / "load" / "torch_xla-2.9.0"
MODELS = DATA / "models" / "torch_xla-2.9.0"
NAMES = ["torch_mlp", "torch_mlp_bf16"]


def _inputs(name: str) -> tuple[list[np.ndarray], np.ndarray]:
    z = np.load(MODELS / f"{name}.npz")
    ins = [z[f"in{i}"] for i in range(sum(1 for k in z.files if k.startswith("in")))]
    # tests/data/models' convention (scripts/hlo_npz.py): bfloat16 stored as its uint16 bits
    ins = [a.view(ml_dtypes.bfloat16) if a.dtype == np.uint16 else a for a in ins]
    return ins, z["out0"]


def _bits(x: np.ndarray) -> np.ndarray:
    x = np.ascontiguousarray(x)
    return x.view(np.uint16 if x.dtype.itemsize == 2 else np.uint32)


@pytest.mark.parametrize("name", NAMES)
def test_the_proto_is_the_graph_torch_xla_prints(name: str) -> None:
    # torch-xla's own print of the pending graph is what tests/data/models holds
    assert (PROTOS / f"{name}.torch_xla.hlo.txt").read_text() == (MODELS / f"{name}.hlo.txt").read_text()


@pytest.mark.parametrize("name", NAMES)
def test_reader_prints_the_torch_xla_proto_as_jaxlib_does(name: str) -> None:
    xla_hlo = pytest.importorskip("jax._src.lib").hlo  # jaxlib's printer, as test_load_jaxlib.py
    proto = (PROTOS / f"{name}.hlo.pb").read_bytes()
    opts = xla_hlo.HloPrintOptions.short_parsable()
    want = xla_hlo.XlaComputation(proto).as_hlo_module().to_string(opts)
    assert proto_to_text(proto) == want


@pytest.mark.parametrize("flags", [None, ["--auto-cast", "none"], ["--auto-cast", "matmult"]])
@pytest.mark.parametrize("name", NAMES)
def test_proto_and_torch_xla_text_compute_the_same_bits(name: str, flags: list[str] | None) -> None:
    ins, _ = _inputs(name)
    config = None if flags is None else frontend.parse_flags(flags)
    from_proto = emulate.run_hlo(hlo.load(PROTOS / f"{name}.hlo.pb"), ins, config)
    from_text = emulate.run_hlo(hlo.parse((MODELS / f"{name}.hlo.txt").read_text()), ins, config)
    for p, t in zip(from_proto, from_text, strict=True):
        assert np.array_equal(_bits(np.asarray(p)), _bits(np.asarray(t)))


def test_the_f32_proto_evaluates_to_xla_cpus_output() -> None:
    ins, out = _inputs("torch_mlp")
    (got,) = emulate.run_hlo(hlo.load(PROTOS / "torch_mlp.hlo.pb"), ins)
    np.testing.assert_allclose(np.asarray(got), out, rtol=2e-6, atol=1e-6)
