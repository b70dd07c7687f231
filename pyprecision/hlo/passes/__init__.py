"""The three HLO precision passes of spec 004, registered by name."""
from __future__ import annotations

from pyprecision.errors import PassError, VerifyError, add_note
from pyprecision.hlo._gc import paused_gc
from pyprecision.hlo.model import HloModule
from pyprecision.hlo.passes.base import HloPass
from pyprecision.hlo.passes.batch_norm_training_upcast import BatchNormTrainingUpcast
from pyprecision.hlo.passes.neuron_int_matmul_downcast import NeuronIntMatmulDowncast
from pyprecision.hlo.passes.upcast_all_to_fp32 import UpcastAllToFP32, upcast_shape_to_fp32

#: Every HLO pass by its kebab-case name (registration order of the Neuron hilo registry:
#: #51 BNT < #60 UpcastAllToFP32 < #68 IntMatmulDowncast).
REGISTRY: dict[str, type[HloPass]] = {
    BatchNormTrainingUpcast.name: BatchNormTrainingUpcast,
    UpcastAllToFP32.name: UpcastAllToFP32,
    NeuronIntMatmulDowncast.name: NeuronIntMatmulDowncast,
}


def get_pass(name: str) -> HloPass:
    """An instance of the pass called ``name``; PassError lists the valid names otherwise."""
    cls = REGISTRY.get(name.strip())
    if cls is None:
        raise PassError(f"unknown HLO pass '{name}' (valid: {', '.join(REGISTRY)})")
    return cls()


def run_passes(module: HloModule, names: list[str] | tuple[str, ...] | str) -> bool:
    """Run the named passes in the given order (a list, or one comma-separated string); verify
    the module before and after each pass that changed it (a VerifyError carries the printed
    module as a note); return whether any pass changed it."""
    from pyprecision.hlo.verifier import verify

    if isinstance(names, str):
        names = [n for n in names.split(",") if n.strip()]
    passes = [get_pass(n) for n in names]
    changed = False
    with paused_gc():
        if passes:
            verify(module)
        for p in passes:
            if p.run(module):
                changed = True
                try:
                    verify(module, after=p.name)
                except VerifyError as exc:
                    from pyprecision.hlo.printer import to_text

                    add_note(exc, to_text(module))
                    raise
    return changed


__all__ = ["REGISTRY", "get_pass", "run_passes", "BatchNormTrainingUpcast",
           "NeuronIntMatmulDowncast", "UpcastAllToFP32", "upcast_shape_to_fp32"]
