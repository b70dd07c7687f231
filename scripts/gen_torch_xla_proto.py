#!/usr/bin/env python3
"""Write the PyTorch/XLA MLPs of ``gen_torch_xla_models.py`` as the HloModuleProto torch-xla hands
its compiler (``torch_xla._XLAC._get_xla_tensors_hlo_proto``), beside the text of the same graph,
for the loader's tests (issue 23). Same seeds, so the committed
``tests/data/models/torch_xla-2.9.0/<name>.npz`` holds their inputs and XLA:CPU's outputs::

    python3 -m venv /work/txvenv
    /work/txvenv/bin/pip install torch==2.9.0 torch-xla==2.9.0 ml_dtypes==0.6.0
    /work/txvenv/bin/python scripts/gen_torch_xla_proto.py --out tests/data/load/torch_xla-2.9.0

writes ``<out>/torch_mlp.hlo.pb``, ``torch_mlp_bf16.hlo.pb`` and, as torch-xla prints the same
pending graph, ``<name>.torch_xla.hlo.txt``.
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_torch_xla_models as gen  # noqa: E402  (sets XLA_FLAGS and PJRT_DEVICE first)
import torch  # noqa: E402
import torch_xla  # noqa: E402


def write(name: str, dtype: torch.dtype, outdir: str) -> None:
    """Trace the MLP as gen_torch_xla_models does and write its proto and text."""
    model = gen.mlp(dtype)
    x = torch.randn(4, 16, generator=torch.Generator().manual_seed(1604)).to(dtype)
    dev = torch_xla.device()
    y = model.to(dev)(x.to(dev))
    proto = torch_xla._XLAC._get_xla_tensors_hlo_proto([y])
    text = torch_xla._XLAC._get_xla_tensors_hlo([y])
    with open(os.path.join(outdir, f"{name}.hlo.pb"), "wb") as fh:
        fh.write(proto)
    with open(os.path.join(outdir, f"{name}.torch_xla.hlo.txt"), "w") as fh:
        fh.write(text)


def main(argv: list[str] | None = None) -> int:
    """Write both MLPs under ``--out``."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="tests/data/load/torch_xla-2.9.0")
    ns = ap.parse_args(argv)
    os.makedirs(ns.out, exist_ok=True)
    write("torch_mlp", torch.float32, ns.out)
    write("torch_mlp_bf16", torch.bfloat16, ns.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
