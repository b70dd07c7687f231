"""The evaluator's opcodes that apply a called computation elementwise: reduce-window,
select-and-scatter, scatter, sort, map (mixed into :class:`hlo_eval.Evaluator`).

A called computation made only of elementwise opcodes runs once on whole arrays (its scalar
parameters bound to arrays of equal shape); any other runs element by element (see
:meth:`CallingOps.fold`).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from pyprecision.emulate.hlo.ops import ELEMENTWISE
from pyprecision.emulate.shared import scatter as hlo_scatter
from pyprecision.emulate.shared import sort as hlo_sort
from pyprecision.emulate.shared import window_ops as hlo_window_ops
from pyprecision.emulate.shared.window_ops import Fold
from pyprecision.errors import EmulationError
from pyprecision.hlo import opcodes

#: opcodes that only look at their operands elementwise (a reducer built from them can be
#: evaluated on whole arrays at once).
VECTORIZABLE = (set(ELEMENTWISE) & opcodes.names_with(elementwise=True)) | {
    "parameter", "constant", "tuple", "get-tuple-element"}


class CallingOps:
    """Handlers that need :meth:`call`; expects ``self.call(comp, args)``."""

    def call(self, comp: Any, args: list[Any]) -> Any:  # pragma: no cover - Evaluator's
        """Evaluate ``comp`` on ``args`` (provided by the Evaluator)."""
        raise NotImplementedError

    def evaluate(self, inst: Any, operands: list[Any]) -> Any:  # pragma: no cover - Evaluator's
        """The value of one instruction (provided by the Evaluator)."""
        raise NotImplementedError

    def _called(self, inst: Any, key: str) -> Any:
        comp = inst.called(key)
        if comp is None:
            raise EmulationError(f"{inst.name}: {inst.opcode} has no {key}= computation")
        return comp

    def fold(self, comp: Any) -> Fold:
        """``comp`` as a function of (accumulators, elements) lists of equal-shaped arrays."""
        vector = all(i.opcode in VECTORIZABLE for i in comp.instructions)

        def apply(accs: list[np.ndarray], elems: list[np.ndarray]) -> list[np.ndarray]:
            if vector:
                r = self.call(comp, [*accs, *elems])
                rs = list(r) if isinstance(r, tuple) else [r]
                shape = np.broadcast_shapes(*(np.shape(a) for a in [*accs, *elems]))
                return [np.broadcast_to(v, shape) for v in rs]
            out: list[np.ndarray] | None = None
            shape = np.broadcast_shapes(*(np.shape(a) for a in [*accs, *elems]))
            xs = [np.broadcast_to(a, shape) for a in [*accs, *elems]]
            for idx in np.ndindex(*shape):
                r = self.call(comp, [np.asarray(x[idx]) for x in xs])
                rs = list(r) if isinstance(r, tuple) else [r]
                if out is None:
                    out = [np.empty(shape, dtype=np.asarray(v).dtype) for v in rs]
                for o, v in zip(out, rs, strict=True):
                    o[idx] = v
            return out if out is not None else [np.empty(shape, dtype=a.dtype) for a in accs]
        return apply

    def _reduce_window(self, inst: Any, args: list[Any]) -> Any:
        return hlo_window_ops.reduce_window(inst, args, self.fold(self._called(inst, "to_apply")))

    def _select_and_scatter(self, inst: Any, args: list[Any]) -> Any:
        return hlo_window_ops.select_and_scatter(inst, args,
                                                 self.fold(self._called(inst, "select")),
                                                 self.fold(self._called(inst, "scatter")))

    def _scatter(self, inst: Any, args: list[Any]) -> Any:
        return hlo_scatter.scatter(inst, args, self.fold(self._called(inst, "to_apply")))

    def _sort(self, inst: Any, args: list[Any]) -> Any:
        comp = self._called(inst, "to_apply")
        return hlo_sort.sort(inst, args, comp, self.fold(comp), self.evaluate)

    def _map(self, inst: Any, args: list[Any]) -> Any:
        (r,) = self.fold(self._called(inst, "to_apply"))(list(args[:1]), list(args[1:]))
        return np.ascontiguousarray(r)

    def calling_handlers(self) -> dict[str, Any]:
        """opcode → handler for the opcodes above."""
        return {"reduce-window": self._reduce_window,
                "select-and-scatter": self._select_and_scatter,
                "scatter": self._scatter, "sort": self._sort, "map": self._map,
                "gather": hlo_scatter.gather}
