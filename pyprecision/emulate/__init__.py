"""Execute loop-level IR functions and HLO modules on NumPy data, rounding every result to its dtype
through the cast core."""
from __future__ import annotations

from typing import Any

__all__ = ["run_ir", "run_hlo", "Limits"]


def __getattr__(name: str) -> Any:
    # Lazy: importing the IR evaluator must not pull in the HLO layer and vice versa.
    if name == "run_ir":
        from pyprecision.emulate.ir_eval import run_ir

        return run_ir
    if name == "run_hlo":
        from pyprecision.emulate.hlo_eval import run_hlo

        return run_hlo
    if name == "Limits":
        from pyprecision.emulate.hlo_limits import Limits

        return Limits
    raise AttributeError(name)
