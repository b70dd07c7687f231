#!/usr/bin/env python3
"""Dump PyTorch/XLA HLO of a small MLP (f32 and bf16) with XLA:CPU's outputs, for issue 11.

PyTorch/XLA is a tool for making data here, never a dependency of pyprecision. It needs a torch
whose ABI matches torch-xla (torch-xla 2.9.0 fails to import against torch 2.13.0 with
``undefined symbol: _ZN5torch8autograd10deleteNodeEPNS0_4NodeE``)::

    python3 -m venv /work/txvenv
    /work/txvenv/bin/pip install torch==2.9.0 torch-xla==2.9.0 ml_dtypes==0.6.0
    /work/txvenv/bin/python scripts/gen_torch_xla_models.py --out tests/data/models

writes ``<out>/torch_xla-<version>/`` with ``<name>.hlo.txt`` (the pending graph's HLO,
``torch_xla._XLAC._get_xla_tensors_hlo``; ``%`` names and inline operand shapes), ``<name>.npz``
(``in<i>``: the ENTRY parameters in order, as ``_get_tensors_xla_device_data_node`` returns them;
``out<i>``: the tuple result computed by torch-xla on XLA:CPU; ``eager_out<i>``: plain PyTorch CPU)
and ``manifest.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                           + " --xla_allow_excess_precision=false").strip()
os.environ.setdefault("PJRT_DEVICE", "CPU")

import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch_xla  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hlo_npz import describe, instruction_count, opcodes, save_npz  # noqa: E402


def to_numpy(t: torch.Tensor) -> np.ndarray:
    """A CPU tensor as numpy (bf16 through its int16 bits)."""
    t = t.detach().cpu()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


def mlp(dtype: torch.dtype) -> torch.nn.Module:
    """16 -> 32 (tanh) -> 32 (relu) -> 8, seeded."""
    torch.manual_seed(1603)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 32),
                               torch.nn.ReLU(), torch.nn.Linear(32, 8)).to(dtype)


def run(name: str, dtype: torch.dtype, outdir: str) -> dict:
    """Trace the MLP on the XLA device, dump its HLO and parameters, run it; return its entry."""
    model = mlp(dtype)
    x = torch.randn(4, 16, generator=torch.Generator().manual_seed(1604)).to(dtype)
    eager = model(x)
    dev = torch_xla.device()
    y = model.to(dev)(x.to(dev))
    text = torch_xla._XLAC._get_xla_tensors_hlo([y])
    _, params = torch_xla._XLAC._get_tensors_xla_device_data_node([y])
    ins = [to_numpy(p) for p in params]
    outs = [to_numpy(y)]
    with open(os.path.join(outdir, f"{name}.hlo.txt"), "w") as fh:
        fh.write(text)
    arrays = {f"in{i}": a for i, a in enumerate(ins)}
    arrays.update(out0=outs[0], eager_out0=to_numpy(eager))
    save_npz(os.path.join(outdir, f"{name}.npz"), arrays)
    return {"description": f"torch.nn.Sequential MLP 16->32 (tanh) ->32 (relu) ->8 in {dtype}, "
                           "traced by torch-xla; out0 from XLA:CPU, eager_out0 from PyTorch CPU",
            "files": {"hlo": f"{name}.hlo.txt", "data": f"{name}.npz"},
            "instructions": instruction_count(text), "opcodes": opcodes(text),
            "hlo_bytes": len(text), "inputs": [describe(a) for a in ins],
            "outputs": [describe(a) for a in outs], "ref_bf16mm": False, "excess": False,
            "text_only": False, "notes": {"eager_out": True}}


def main(argv: list[str] | None = None) -> int:
    """Write the torch-xla models under ``--out``/torch_xla-<version>/."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="tests/data/models")
    ns = ap.parse_args(argv)
    outdir = os.path.join(ns.out, f"torch_xla-{torch_xla.__version__}")
    os.makedirs(outdir, exist_ok=True)
    manifest = {"generator": "scripts/gen_torch_xla_models.py",
                "versions": {"torch": torch.__version__, "torch_xla": torch_xla.__version__,
                             "numpy": np.__version__, "ml_dtypes": ml_dtypes.__version__,
                             "python": sys.version.split()[0]},
                "backend": "PJRT_DEVICE=CPU", "xla_flags": os.environ.get("XLA_FLAGS", ""),
                "modules": {"torch_mlp": run("torch_mlp", torch.float32, outdir),
                            "torch_mlp_bf16": run("torch_mlp_bf16", torch.bfloat16, outdir)}}
    with open(os.path.join(outdir, "manifest.json"), "w") as fh:
        json.dump(manifest, fh, indent=1, sort_keys=True)
        fh.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
