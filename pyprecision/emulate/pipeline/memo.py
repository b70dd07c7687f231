"""Values shared between the programs of one :class:`~pyprecision.emulate.FlagSetRunner` (issue
27: "sub-results shared where the dtype assignment of everything upstream is the same"; decision
V25).

Every instruction of a program gets a *signature*: its printed text without its result's name
(the op, its attributes, its operands' names, its result dtype and shape), the signatures of the
instructions that produce its operands, and for each tensor it accesses the tensor's identity —
an input by name and dtype, a constant by dtype, shape and its value (the NumPy array itself:
clones of one lowering share it; the memo keeps it alive so its ``id`` is never reused), any other
tensor (memory a program writes) by a token of its own program, so nothing that reads written
memory is ever shared. Equal signatures are the same computation on the same data: the same
values, bit for bit.

Before a program runs, every instruction whose signature has a value in the memo and whose result
a not-memoized instruction reads is replaced by a load of that value from a new constant tensor,
and what becomes dead is removed; the program runs with a sparse trace (decision V26: its fused
runs, batched dots and early frees stay on, so only the values they make anyway are seen), and
those values of what it computed are added to the memo (until ``max_bytes``; within
:meth:`FlagSetRunner.run` only the values a later program has, decision V28). The program
given is not changed: the work is done on a copy (``ir.clone_module``), made only when a memoized
value is used.
"""

from __future__ import annotations

import itertools
from collections.abc import Set as AbstractSet
from typing import Any

import numpy as np

from pyprecision import ir
from pyprecision.emulate.ir.eval import SparseTrace

__all__ = ["DEFAULT_MEMO_BYTES", "ValueMemo"]

#: the default cap on the values a memo holds (the memo stops growing there; it still serves)
DEFAULT_MEMO_BYTES = 1 << 30

#: instruction classes whose results are never shared: their meaning is not in their own text
_NEVER = (ir.CallOpBase, ir.OpaqueOp)
#: instructions whose values are never recorded, so never spliced in (decision V26): they move or
#: relabel data (a load, with at most one rounding, a broadcast, a view), which costs about what
#: loading a spliced constant costs; memoizing them held the memo's gigabyte and sped up nothing
_MOVES = (ir.LoadInst, ir.BroadcastOp, ir.ReshapeOp, ir.TransposeOp, ir.SliceOp, ir.ReverseOp,
          ir.ConcatenateOp, ir.PadOp, ir.IotaOp)


class ValueMemo:
    """Signature → (value, dtype) across programs; see the module docstring."""

    def __init__(self, max_bytes: int = DEFAULT_MEMO_BYTES) -> None:
        self.max_bytes = int(max_bytes)
        self.bytes = 0
        self.values: dict[int, np.ndarray] = {}
        self._intern: dict[tuple[Any, ...], int] = {}
        self._alive: dict[int, Any] = {}  # id → a constant array a signature names
        self._programs = itertools.count()
        #: instructions replaced by a memoized value / computed, over every program so far
        self.reused = 0
        self.computed = 0

    def _sig(self, key: tuple[Any, ...]) -> int:
        s = self._intern.get(key)
        if s is None:
            s = self._intern[key] = len(self._intern)
        return s

    def _tensor(self, t: Any, program: int) -> tuple[Any, ...]:
        if t.kind == "input":
            return ("in", t.name, t.dtype.name, t.shape)
        if t.kind == "const":
            v = t.value
            if isinstance(v, np.ndarray):
                self._alive[id(v)] = v
                return ("const", t.dtype.name, t.shape, id(v))
            return ("splat", t.dtype.name, t.shape, repr(v))
        return ("mem", program, t.name)

    def signatures(self, f: ir.Function, texts: dict[int, str] | None = None) -> dict[int, int]:
        """``id(instruction) → signature`` for every instruction of ``f`` with a result;
        ``texts`` (``id`` → the instruction's printed text, as ``ir.instruction_to_text`` prints it
        now) saves printing the instructions it holds."""
        texts = texts or {}
        program = next(self._programs)
        sigs: dict[int, int] = {}
        by_value: dict[int, int] = {}
        for inst in f.instructions():
            res = inst.result
            if res is None:
                continue
            if isinstance(inst, _NEVER):
                key: tuple[Any, ...] = ("never", program, res.name)
            else:
                text = texts.get(id(inst)) or ir.instruction_to_text(inst)
                text = text.split(" = ", 1)[1]
                ops = tuple(by_value.get(id(op), -1) if isinstance(op, ir.Value) else None
                            for op in inst.operands)  # fmt: skip
                if -1 in ops:  # an operand from outside the function's blocks: do not share
                    key = ("never", program, res.name)
                else:
                    aps = tuple((ap.role, self._tensor(ap.tensor, program))
                                + ((by_value.get(id(ap.index), -1),) if ap.index is not None
                                   else ())  # fmt: skip
                                for ap in inst.aps)  # fmt: skip
                    key = (type(inst).__name__, text, ops, aps)
            by_value[id(res)] = sigs[id(inst)] = self._sig(key)
        return sigs

    def _splice(self, module: ir.Module, sigs: dict[int, int]) -> tuple[ir.Module, dict[int, int]]:
        """``module``, or a copy of it in which every memoized value a computed instruction reads
        is loaded from a new constant (what becomes dead removed), with ``sigs`` keyed by the
        copy's instructions."""
        hit = {i for i, s in sigs.items() if s in self.values}
        work = module  # nothing memoized is read: run the program itself (running changes nothing)
        if hit:
            work = ir.clone_module(module)
            pairs = zip(module.main.instructions(), work.main.instructions(), strict=True)
            moved = {id(a): id(b) for a, b in pairs}
            sigs = {moved[i]: s for i, s in sigs.items()}
            hit = {moved[i] for i in hit}
        f = work.main
        for inst in list(f.instructions()):
            if id(inst) not in hit:
                continue
            res = inst.result
            assert res is not None  # signatures() keys only instructions with a result
            if not any(id(u.user) not in hit for u in res.uses):
                continue
            value = self.values[sigs[id(inst)]]
            t = ir.Tensor(f.unique_tensor_name(f"memo.{res.name}"), res.shape, res.dtype,
                          "const", _to_storage(value, res.dtype))  # fmt: skip
            f.add_tensor(t)
            load = ir.AffineLoad(t, ir.Value(f.unique_name(f"{res.name}.memo"), res.dtype,
                                             res.shape))  # fmt: skip
            load.insert_before(inst)
            res.replace_all_uses_with(load)
            self.reused += 1
        if hit:
            f.dce()
        return work, sigs

    def run(self, module: ir.Module, run: Any, texts: dict[int, str] | None = None,
            sigs: dict[int, int] | None = None, later: AbstractSet[int] | None = None) -> Any:
        """``run(reduced_module, trace)`` on a copy of ``module`` with every memoized value that
        is read by a computed instruction loaded from a constant instead (on ``module`` itself
        when no memoized value is read); its result is returned and what it computed is
        memoized. ``texts``: see :meth:`signatures`; ``sigs``: ``module``'s signatures when
        already made (:meth:`signatures` of ``module.main``). ``later``: the signatures of the
        programs still to run, when known: only those values are recorded (decision V28), and
        the run is untraced when none is; None records every value (up to ``max_bytes``)."""
        with ir.paused_gc():  # decision P24
            if sigs is None:
                sigs = self.signatures(module.main, texts)
            work, sigs = self._splice(module, sigs)
        f = work.main
        trace: SparseTrace | None = None
        if self.bytes < self.max_bytes:  # record what is not memoized yet (decision V26)
            moves = {id(i) for i in f.instructions() if isinstance(i, _MOVES)}
            wanted = {i for i, s in sigs.items() if s not in self.values and i not in moves
                      and (later is None or s in later)}  # fmt: skip
            if wanted:
                trace = SparseTrace(wanted, self.max_bytes - self.bytes)
        out = run(work, trace)
        for inst in f.instructions():
            s = sigs.get(id(inst))
            if s is None:
                continue
            self.computed += 1
            if trace is None or s in self.values or id(inst) not in trace:
                continue
            v = trace[id(inst)]
            if self.bytes + v.nbytes > self.max_bytes:
                continue
            self.values[s] = v
            self.bytes += v.nbytes
        return out


def _to_storage(values: np.ndarray, dtype: ir.DType) -> np.ndarray:
    from pyprecision.emulate.ir.numbers import to_storage

    return np.ascontiguousarray(to_storage(values, dtype))
