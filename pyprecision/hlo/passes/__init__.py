"""The three HLO precision passes of spec 004, registered by name."""
from __future__ import annotations

from pyprecision.errors import PassError
from pyprecision.hlo._gc import paused_gc
from pyprecision.hlo.model import HloModule
from pyprecision.hlo.passes.base import HloPass, OpExpanderPass
from pyprecision.hlo.passes.batch_norm_training_upcast import BatchNormTrainingUpcast
from pyprecision.hlo.passes.neuron_int_matmul_downcast import NeuronIntMatmulDowncast
from pyprecision.hlo.passes.upcast_all_to_fp32 import UpcastAllToFP32, upcast_shape_to_fp32
from pyprecision.pass_manager import run_pass_sequence

#: Every HLO pass by its kebab-case name (registration order of the Neuron hilo registry:
#: #51 BNT < #60 UpcastAllToFP32 < #68 IntMatmulDowncast).
PASSES: dict[str, type[HloPass]] = {
    BatchNormTrainingUpcast.name: BatchNormTrainingUpcast,
    UpcastAllToFP32.name: UpcastAllToFP32,
    NeuronIntMatmulDowncast.name: NeuronIntMatmulDowncast,
}
#: the old name of :data:`PASSES` (kept while callers move; it holds passes, not statistics)
REGISTRY = PASSES


def get_pass(name: str) -> HloPass:
    """An instance of the pass called ``name``; PassError lists the valid names otherwise."""
    cls = PASSES.get(name.strip())
    if cls is None:
        raise PassError(f"unknown HLO pass '{name}' (valid: {', '.join(PASSES)})")
    return cls()


def run_passes(module: HloModule, names: list[str] | tuple[str, ...] | str) -> bool:
    """Run the named passes in the given order (a list, or one comma-separated string) through
    the shared pass manager (:func:`pyprecision.pass_manager.run_pass_sequence`): the module is
    verified before the first pass and after each, and a failure carries the printed module as a
    note; return whether any pass changed it."""
    from pyprecision.hlo.printer import to_text
    from pyprecision.hlo.verifier import verify

    if isinstance(names, str):
        names = [n for n in names.split(",") if n.strip()]
    passes = [get_pass(n) for n in names]
    if not passes:
        return False
    with paused_gc():
        changed = run_pass_sequence(module, passes, verify=verify, to_text=to_text,
                                    label="HLO module")
    return any(changed.values())


__all__ = ["PASSES", "REGISTRY", "OpExpanderPass", "get_pass", "run_passes", "BatchNormTrainingUpcast",
           "NeuronIntMatmulDowncast", "UpcastAllToFP32", "upcast_shape_to_fp32"]
