"""Structural checks on an HLO module (run after every pass that changed it)."""
from __future__ import annotations

from pyprecision.errors import VerifyError
from pyprecision.hlo.model import HloModule


def verify(module: HloModule, after: str | None = None) -> None:
    """Names unique per computation, operands inside their computation, at most one ROOT,
    parameter numbers distinct. Raises VerifyError."""
    where = f" after pass '{after}'" if after else ""
    for comp in module.computations:
        members = {id(i) for i in comp.instructions}
        names: set[str] = set()
        roots = 0
        params: set[int] = set()
        for inst in comp.instructions:
            if inst.name in names:
                raise VerifyError(f"{comp.name}: duplicate instruction name '{inst.name}'{where}")
            names.add(inst.name)
            roots += inst.is_root
            if inst.opcode == "parameter":
                if inst.parameter_number in params:
                    raise VerifyError(f"{comp.name}: parameter({inst.parameter_number}) twice{where}")
                params.add(inst.parameter_number or 0)
            for op in inst.operands:
                if id(op) not in members:
                    raise VerifyError(f"{comp.name}: '{inst.name}' uses '{op.name}', which is not "
                                      f"in the computation{where}")
        if roots > 1:
            raise VerifyError(f"{comp.name}: {roots} ROOT instructions{where}")
