"""Run the pipeline one pass at a time and attribute every op's dtype to the pass (and rule or gate)
that decided it.

Ops are identified by their result name (``%mm``), stores by ``store @tensor`` (numbered when a
tensor is stored more than once). Each pass runs with its provenance log on
(``pyprecision.passes.provenance``): the rule or gate in a row is the one the pass recorded for that
op. After each pass the program is snapshotted too; a change the log does not cover (a pass without
a hook, such as fp8e4m3fn-as-fp8e4) is attributed to that pass from the snapshots and the row is
marked derived.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from pyprecision.ir import (
    DType,
    Function,
    Instruction,
    Module,
    StoreInst,
    Value,
    instruction_to_text,
    parse,
)
from pyprecision.passes import (
    Decision,
    Target,
    cascade_dtype,
    instruction_verdict,
    make_pass,
    pipeline_pass_names,
    run_passes,
)

__all__ = ["OpRow", "OpSnap", "Trace", "skip_reason", "snapshot_ops", "trace_pipeline"]


@dataclass(frozen=True)
class OpSnap:
    """One op in one snapshot: key, op kind, dtype name, printed text, operand keys."""

    key: str
    op: str
    dtype: str
    text: str
    operands: tuple[str, ...]
    users: int
    skip: str | None = None
    tensor: str | None = None
    feeds_store: bool = False
    ident: int = 0
    tensor_id: int = 0


@dataclass
class OpRow:
    """One row of the explanation: the op, its dtype before and after, and why."""

    key: str
    op: str
    before: str
    after: str
    reasons: list[str] = field(default_factory=list)
    derived: bool = False
    decisions: list[Decision] = field(default_factory=list)

    @property
    def decided_by(self) -> str:
        """The reasons, joined."""
        return "; ".join(self.reasons) if self.reasons else "-"


@dataclass
class Trace:
    """Rows in program order (ops of the final program, then removed ones where they were),
    the pass names run, and the transformed module."""

    rows: list[OpRow]
    passes: list[str]
    module: Module
    mode: str
    target: str


def _op_kind(text: str) -> str:
    body = text.split(" = ", 1)[1] if " = " in text else text
    return body.split()[0] if body.split() else body


def skip_reason(inst: Instruction, dtype: DType) -> str | None:
    """Why AutoCastFP32 (narrowing to ``dtype``) leaves ``inst`` alone — its own skip verdict
    (``passes.instruction_verdict``), in words — or None when it would rewrite it."""
    verdict = instruction_verdict(inst, dtype)
    if verdict.state != "skip" or not verdict.reason:
        return None
    head = f"AutoCastFP32 {verdict.rule}" if verdict.rule else "AutoCastFP32"
    return f"{head}: {verdict.reason}"


def snapshot_ops(module: Module, autocast_dtype: DType | None = None) -> dict[str, OpSnap]:
    """Every instruction of every function by key, in program order. Keys of ``@main`` (or the
    first function) are bare (``%mm``); other functions' are prefixed (``@scale:%s``).
    ``autocast_dtype``: the D AutoCastFP32 would narrow to (bfloat16 by default), for each op's
    skip reason."""
    out: dict[str, OpSnap] = {}
    main = module.main
    dtype = autocast_dtype if autocast_dtype is not None else cascade_dtype("all")
    for f in module.functions:
        prefix = "" if f is main else f"@{f.name}:"
        for key, snap in _snapshot_function(f, dtype).items():
            out[prefix + key] = snap if not prefix else OpSnap(
                prefix + key, snap.op, snap.dtype, snap.text,
                tuple(prefix + o for o in snap.operands), snap.users, snap.skip, snap.tensor,
                snap.feeds_store, snap.ident, snap.tensor_id)
    return out


def _snapshot_function(f: Function, autocast_dtype: DType) -> dict[str, OpSnap]:
    out: dict[str, OpSnap] = {}
    for inst in f.instructions():
        text = instruction_to_text(inst).strip()
        if inst.result is not None:
            key = f"%{inst.result.name}"
        else:
            tensor = getattr(getattr(inst, "dst", None), "tensor", None)
            base = f"{_op_kind(text)} @{tensor.name}" if tensor is not None else _op_kind(text)
            key, n = base, 1
            while key in out:
                n += 1
                key = f"{base} #{n}"
        dt = getattr(inst, "dtype", None)
        dtype = dt.name if dt is not None else "-"
        operands = tuple(f"%{o.name}" for o in inst.operands if isinstance(o, Value))
        users = len(inst.result.uses) if inst.result is not None else 0
        mem = getattr(inst, "tensor", None) or getattr(getattr(inst, "dst", None), "tensor", None)
        where = f"{mem.kind} @{mem.name}" if mem is not None and hasattr(mem, "kind") else None
        feeds_store = inst.result is not None and any(
            isinstance(u, StoreInst) for u in inst.result.users)
        out[key] = OpSnap(key, _op_kind(text), dtype, text, operands, users,
                          skip_reason(inst, autocast_dtype), where, feeds_store, id(inst),
                          id(mem) if mem is not None else 0)
    return out


def _appeared(p: str, snap: OpSnap, after: dict[str, OpSnap]) -> str:
    if snap.op == "cast":
        if p == "auto-cast-tc-inputs":
            return f"{p}: matmul operand cast to {snap.dtype} (getMatmultOperandType, spec 000 §4)"
        if snap.feeds_store:
            return f"{p}: inserted, the store casts its source to {snap.dtype} (spec 000 §5)"
        if snap.operands and after.get(snap.operands[0], snap).op.endswith("load"):
            return f"{p}: inserted, the load casts its result to {snap.dtype} (spec 000 §5)"
        return f"{p}: inserted, fp32 operand cast to {snap.dtype} (spec 000 §3)"
    if snap.op.endswith("load"):
        return f"{p}: insertInputCasts, the input is loaded as {snap.dtype} (spec 000 §2)"
    return f"{p}: inserted"


def _removed(p: str, snap: OpSnap, before: dict[str, OpSnap]) -> str:
    if p == "cast-elimination" and snap.op == "cast":
        src = before.get(snap.operands[0]) if snap.operands else None
        if src is not None and src.dtype == snap.dtype:
            return f"{p} rule 1: identity cast removed ({snap.dtype} → {snap.dtype})"
        if snap.users == 0:
            return f"{p} rule 3: dead cast erased"
        return f"{p} rule 2: cast-of-cast read through an exact inner cast"
    if snap.op == "cast":
        return f"{p}: redundant cast folded (transformUnaryOp, spec 000 §5 GOTCHA)"
    if snap.op.endswith("load"):
        return f"{p}: replaced by a narrowing load (insertInputCasts, spec 000 §2)"
    return f"{p}: removed"


def _retyped(p: str, snap: OpSnap, new: OpSnap) -> str:
    if p == "dtype-mutator":
        return f"{p}: retyped to {new.dtype}"
    if p == "auto-cast-tc-inputs":
        return f"{p}: shrinkTensor, the loaded tensor is stored {new.dtype} (spec 000 §6)"
    boundary = snap.tensor is not None and snap.tensor.split()[0] in ("input", "output")
    if snap.op.endswith("load"):
        if boundary:
            return (f"{p}: {snap.tensor} narrowed to {new.dtype} at the boundary (spec 000 §2); "
                    "the load follows it (decision P3)")
        return f"{p}: load of narrowed memory follows it (decision P3)"
    if snap.op.endswith("store"):
        if boundary:
            return f"{p}: {snap.tensor} narrowed to {new.dtype} at the boundary (spec 000 §2)"
        return f"{p}: store narrows its destination to {new.dtype} (spec 000 §5)"
    return f"{p}: fp32 result narrowed to {new.dtype} (spec 000 §3)"


def trace_pipeline(text: str, flags: list[str], target: str = "gen2",
                   filename: str = "<program>") -> Trace:
    """Run the pipeline for ``flags`` on the program ``text`` pass by pass, each pass with its
    provenance log on, and explain each op from the decisions the passes recorded."""
    from pyprecision.frontend import parse_flags

    config = parse_flags(flags)
    tgt = Target.from_config(config, target)
    module = parse(text, filename=filename)
    names = pipeline_pass_names(config)
    dtype = cascade_dtype(config.fp32_cast_mode)
    snaps = [snapshot_ops(module, dtype)]
    logs: list[list[Decision]] = []
    for name in names:
        log: list[Decision] = []
        run_passes(module, [make_pass(name, tgt, provenance=log)])
        logs.append(log)
        snaps.append(snapshot_ops(module, dtype))
    found = [_decisions_by_key(log, snaps[i], snaps[i + 1]) for i, log in enumerate(logs)]
    rows = _attribute(snaps, names, found, config.scope)
    return Trace(rows, names, module, config.fp32_cast_mode, target)


def _decisions_by_key(log: list[Decision], pre: dict[str, OpSnap],
                      post: dict[str, OpSnap]) -> dict[str, list[Decision]]:
    """Row key → the decisions recorded about it in one pass. An instruction (or its result value)
    maps to its own row; a tensor maps to the rows of the ops that access it, but only those whose
    dtype the pass changed (a failed shrinkTensor guard is no reason for an unchanged load)."""
    by_id = {s.ident: k for snap in (pre, post) for k, s in snap.items()}
    out: dict[str, list[Decision]] = {}
    for d in log:
        subject = d.subject
        owner = getattr(subject, "owner", None)
        ident = id(owner) if owner is not None else id(subject)
        if ident in by_id:
            out.setdefault(by_id[ident], []).append(d)
            continue
        if not hasattr(subject, "store_insts"):
            continue  # a scalar or a detached object: no row of its own
        for key, snap in post.items():
            if snap.tensor_id != id(subject):
                continue
            if key in pre and pre[key].dtype == snap.dtype:
                continue
            out.setdefault(key, []).append(d)
    return out


def _attribute(snaps: list[dict[str, OpSnap]], names: list[str],
               found: list[dict[str, list[Decision]]], scope: str) -> list[OpRow]:
    first, last = snaps[0], snaps[-1]
    order = list(dict.fromkeys([*last, *first, *(k for s in snaps[1:-1] for k in s)]))
    rows = []
    for key in order:
        ever = next(s[key] for s in snaps if key in s)
        row = OpRow(key, ever.op, first[key].dtype if key in first else "-",
                    last[key].dtype if key in last else "-")
        quiet: list[Decision] = []  # "left alone" decisions of passes that did not touch the op
        for i, name in enumerate(names):
            pre, post = snaps[i], snaps[i + 1]
            decisions = found[i].get(key, [])
            row.decisions += decisions
            touched = (key in pre) != (key in post) or (
                key in pre and key in post and pre[key].dtype != post[key].dtype)
            if decisions and (touched or name == "dtype-mutator"):
                row.reasons += list(dict.fromkeys(d.text() for d in decisions))
                continue
            quiet += decisions
            if not touched or decisions:
                continue
            # a change the pass's provenance log does not cover: re-derive it (E1)
            row.derived = True
            if key not in pre:
                row.reasons.append(_appeared(name, post[key], post))
            elif key not in post:
                row.reasons.append(_removed(name, pre[key], pre))
            else:
                row.reasons.append(_retyped(name, pre[key], post[key]))
        if not row.reasons and quiet:
            row.reasons += list(dict.fromkeys(d.text() for d in quiet))
        if not row.reasons:
            row.reasons.append(_unchanged_reason(ever, names, scope))
            row.derived = bool(names) and scope != "matmult" and ever.skip is not None
        rows.append(row)
    return rows


def _unchanged_reason(snap: OpSnap, names: list[str], scope: str) -> str:
    if not names:
        return "no passes run (--auto-cast none)"
    if scope == "matmult":
        if snap.op == "matmul":
            return ("auto-cast-tc-inputs: its operands are cast (spec 000 §4); the result stays "
                    f"{snap.dtype} (PSUM)")
        return "auto-cast-tc-inputs: only matmul operands are cast (spec 000 §4)"
    if snap.skip:
        return snap.skip
    return "unchanged by every pass"
