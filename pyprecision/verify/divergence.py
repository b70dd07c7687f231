"""The first op where device and emulation part: given intermediate dumps keyed by HLO instruction
name, emulate once with a trace and walk the HLO instructions in program order; the first whose
dumped value is outside its op-class tolerance is named (decision V24)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from pyprecision.errors import DumpError
from pyprecision.verify.compare import code_space
from pyprecision.verify.distance import Tolerance, distance, passing
from pyprecision.verify.program_check import compare_outputs

__all__ = ["Divergence", "first_divergence", "hlo_values"]


@dataclass
class Divergence:
    """What the intermediate dumps say: how many named ops were compared (``checked``), which of
    the dump's names are no HLO value of the module (``unknown``), and the first op outside its
    tolerance (None: every compared op agrees) with its opcode, failing element count and
    distance."""

    checked: int
    unknown: list[str]
    name: str | None = None
    opcode: str | None = None
    failing: int = 0
    elements: int = 0
    distance: Any = None
    tolerance: Any = None

    def summary(self) -> str:
        """One sentence."""
        extra = f"; not HLO values of the module: {', '.join(self.unknown)}" if self.unknown else ""
        if self.name is None:
            return f"all {self.checked} dumped intermediates agree with the emulation{extra}"
        return (f"device and emulation part first at {self.name} ({self.opcode}): {self.failing} "
                f"of {self.elements} elements outside {self.tolerance.describe()}; "
                f"{self.distance.describe()}{extra}")

    def to_json(self) -> dict[str, Any]:
        """The divergence as JSON."""
        return {"checked": self.checked, "unknown": self.unknown, "first": None
                if self.name is None else {
                    "name": self.name, "opcode": self.opcode, "failing": self.failing,
                    "elements": self.elements, "distance": self.distance.to_json(),
                    "tolerance": self.tolerance.to_json()},
                "summary": self.summary()}


def hlo_values(compiled: Any, args: list[Any]) -> tuple[list[tuple[str, Any]], dict[str, Any]]:
    """Emulate ``compiled`` (an ``emulate.CompiledHlo``) once with a trace: the HLO instructions
    in program order as ``(path, instruction)``, and ``path → emulated value`` for every HLO
    value the loop IR computes (the last IR instruction tagged with that op as its value)."""
    from pyprecision.emulate import run_compiled

    trace: dict[int, np.ndarray] = {}
    run_compiled(compiled, args, trace=trace)
    values: dict[str, Any] = {}
    for inst in compiled.lowered.function.instructions():
        loc = getattr(inst, "dl", None)
        if loc is None or getattr(loc, "role", None) != "value" or id(inst) not in trace:
            continue
        values[loc.path] = trace[id(inst)]
    return list(compiled.lowered.rows), values


def _hlo_dtype(inst: Any) -> np.dtype | None:
    from pyprecision import hlo

    if inst.shape.is_tuple:
        return None
    try:
        return np.dtype(hlo.numpy_dtype(inst.shape.element_type))
    except ValueError:
        return None


def first_divergence(compiled: Any, args: list[Any], dumps: dict[str, np.ndarray],
                     tolerance_of: Any) -> Divergence:
    """Compare every dumped intermediate (``dumps``: HLO instruction name, or ``fusion/inner``
    path, → array) with the emulation of ``compiled`` on ``args``, in program order; stop at the
    first outside ``tolerance_of(instruction)`` (a ``Tolerance``)."""
    rows, values = hlo_values(compiled, args)
    by_name: dict[str, tuple[str, Any]] = {}
    for path, inst in rows:
        by_name.setdefault(path, (path, inst))
        by_name.setdefault(path.rsplit("/", 1)[-1], (path, inst))
    wanted = {k: v for k, v in dumps.items() if k != "__dtypes__"}
    unknown = sorted(k for k in wanted if k not in by_name)
    order = {path: i for i, (path, _) in enumerate(rows)}
    todo = sorted((order[by_name[k][0]], k) for k in wanted if k in by_name)
    checked = 0
    for _, key in todo:
        path, inst = by_name[key]
        want = _hlo_dtype(inst)
        if path not in values or want is None:
            unknown.append(key)  # computed inside another op's lowering: no value of its own
            continue
        got = np.asarray(values[path])
        dumped = np.asarray(wanted[key])
        if got.size != dumped.size:
            raise DumpError(f"intermediate '{key}' has {dumped.size} elements, the op "
                            f"{inst.shape.to_text(with_layout=False)} {got.size}")
        emulated = got.reshape(dumped.shape).astype(want)
        if dumped.dtype != want and dumped.dtype.kind in "ui" and dumped.dtype.itemsize == \
                want.itemsize and want.kind == "V":
            dumped = dumped.view(want)
        space = code_space(emulated.dtype)
        (_, rep), = compare_outputs({key: (emulated, space)}, {key: dumped}, 0)
        tol: Tolerance = tolerance_of(inst)
        ok = passing(rep.comparison, rep.space, tol)
        checked += 1
        if not ok.all():
            return Divergence(checked, sorted(unknown), key, inst.opcode,
                              int(np.count_nonzero(~ok)), int(ok.size),
                              distance(rep.comparison, rep.space), tol)
    return Divergence(checked, sorted(unknown))
