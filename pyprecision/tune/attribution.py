"""Per-op attribution under the recommendation: both programs run once more with a trace, and each
HLO op is charged the error its own output adds, measured (decision TU4): the rel-l2 of its output
against the same op's under ``--auto-cast none``, less the worst of its operands' errors. The
``none`` values are held for at most ``max_bytes`` at a time and the recommendation's are compared
as they are made, never held (decision TU9)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from pyprecision.emulate import CompiledHlo, SparseTrace, TraceComplete, run_compiled

__all__ = ["DEFAULT_ATTRIBUTION_BYTES", "OpShare", "attribute", "op_errors"]

#: the ``none`` values held at a time by :func:`op_errors` (decision TU9)
DEFAULT_ATTRIBUTION_BYTES = 1 << 30


@dataclass(frozen=True)
class OpShare:
    """One HLO op: its path (``fusion.3/dot.1`` inside a fusion), opcode, the dtype it runs in
    under the recommendation, its output's error and the part of it the op adds; ``source``
    names it in the user's terms: the frontend's ``op_name`` from its metadata, or a small
    constant's literal ("" when the HLO has neither)."""

    path: str
    opcode: str
    dtype: str
    error: float
    added: float
    source: str = ""

    def to_json(self) -> dict[str, Any]:
        """The row as JSON."""
        return {"op": self.path, "opcode": self.opcode, "dtype": self.dtype,
                "error": self.error, "added": self.added, "source": self.source}  # fmt: skip


def _source_of(hinst: Any) -> str:
    """The op in the user's terms: its metadata's ``op_name``; for a constant of at most 8
    elements, its literal as the HLO text writes it."""
    name = hinst.metadata.get("op_name", "")
    text = getattr(hinst, "literal_text", None)
    if hinst.opcode == "constant" and text is not None and not hinst.shape.is_tuple \
            and int(np.prod(hinst.shape.dimensions, dtype=np.int64)) <= 8:  # fmt: skip
        return f"{name} = {text}" if name else f"= {text}"
    return name


def _producers(compiled: CompiledHlo) -> dict[str, Any]:
    """HLO path → the IR instruction that produces the op's value."""
    groups: dict[str, list[Any]] = {}
    for inst in compiled.lowered.function.instructions():
        path = getattr(inst.dl, "path", None)
        if path is not None and getattr(inst.dl, "role", "") != "store" and inst.result is not None:
            groups.setdefault(path, []).append(inst)
    out = {}
    for path, insts in groups.items():
        vals = [i for i in insts if i.dl.role in ("value", "pe-matmul")] or insts
        out[path] = vals[-1]
    return out


class _Against(SparseTrace):
    """A whole sparse trace that keeps nothing: each wanted value is compared with its reference
    (``ref``: instruction id → the ``none`` values) as it is made, the reference then freed."""

    def __init__(self, ref: dict[int, np.ndarray]):
        super().__init__(set(ref), 0, whole=True, stop=True)
        self.ref = ref
        self.errors: dict[int, float | None] = {}

    def record(self, key: int, value: np.ndarray) -> None:
        """The rel-l2 of ``value`` against ``key``'s reference, once per instruction."""
        ref = self.ref.pop(key, None)
        if ref is not None:
            self.errors[key] = _rel(value, ref)
            if not self.ref:
                raise TraceComplete


#: elements of ``_rel``'s float64 blocks: 32 Ki doubles are 256 KiB, two blocks sit in L2
_REL_BLOCK = 1 << 15


def _rel(x: np.ndarray, r: np.ndarray) -> float | None:
    """‖x − r‖ / ‖r‖ in float64 (0 when x equals r, None when the shapes differ, either has a
    non-finite element or r is zero while x is not). Arrays of at most 4-byte floats or integers
    go in blocks of float64 held in cache (decision TU11): their squares cannot overflow a
    float64 sum, so the sums of r² and (x − r)² are finite exactly when every element of both
    is."""
    x, r = np.asarray(x), np.asarray(r)
    if x.shape != r.shape:
        return None
    if x.dtype.itemsize > 4 or r.dtype.itemsize > 4 or x.dtype.kind not in "fiu" \
            or r.dtype.kind not in "fiu":
        xd, rd = x.astype(np.float64), r.astype(np.float64)
        if not (np.all(np.isfinite(xd)) and np.all(np.isfinite(rd))):
            return None
        num, den = float(np.linalg.norm(xd - rd)), float(np.linalg.norm(rd))
        return 0.0 if num == 0 else (num / den if den > 0 else None)
    xf, rf = x.reshape(-1), r.reshape(-1)
    xb = np.empty(min(_REL_BLOCK, xf.size), np.float64)
    rb = np.empty_like(xb)
    sr = sd = 0.0
    with np.errstate(invalid="ignore"):  # inf - inf: a NaN sum, answered below
        for s in range(0, xf.size, _REL_BLOCK):
            n = min(_REL_BLOCK, xf.size - s)
            xs, rs = xb[:n], rb[:n]
            xs[...] = xf[s:s + n]
            rs[...] = rf[s:s + n]
            sr += float(np.dot(rs, rs))
            np.subtract(xs, rs, out=xs)
            sd += float(np.dot(xs, xs))
    if not (np.isfinite(sd) and np.isfinite(sr)):
        return None
    return 0.0 if sd == 0 else (float(np.sqrt(sd) / np.sqrt(sr)) if sr > 0 else None)


def _operand_paths(path: str, inst: Any, by_path: dict[str, Any]) -> list[str]:
    """The paths of the ops whose values ``inst`` reads: a parameter of a called computation
    (``call.2/x``) stands for the caller's operand it binds (followed up through nested calls)."""
    head = path.rsplit("/", 1)[0] + "/" if "/" in path else ""
    return [_source(head + op.name, op, by_path) for op in inst.operands]


def _source(path: str, op: Any, by_path: dict[str, Any]) -> str:
    while op.opcode == "parameter" and "/" in path:
        caller_path = path.rsplit("/", 1)[0]
        caller = by_path.get(caller_path)
        n = op.parameter_number
        if caller is None or n is None or n >= len(caller.operands):
            break
        op = caller.operands[n]
        head = caller_path.rsplit("/", 1)[0] + "/" if "/" in caller_path else ""
        path = head + op.name
    return path


def _nbytes(inst: Any) -> int:
    """The bytes a trace holds for float ``inst``'s value: float64 for float64, float32 for the
    narrower floats (the evaluator's storage)."""
    return (8 if inst.result.dtype.bits > 32 else 4) * int(np.prod(inst.result.shape, dtype=np.int64))


def _chunks(paths: list[str], producers: dict[str, Any], max_bytes: int) -> list[list[str]]:
    """``paths`` in order, cut where the next op's value would take a chunk over ``max_bytes``
    (an op larger than that alone is a chunk)."""
    out: list[list[str]] = [[]]
    size = 0
    for p in paths:
        n = _nbytes(producers[p])
        if out[-1] and size + n > max_bytes:
            out.append([])
            size = 0
        out[-1].append(p)
        size += n
    return [c for c in out if c]


def op_errors(baseline: CompiledHlo, rec: CompiledHlo, args: list[np.ndarray],
              max_bytes: int = DEFAULT_ATTRIBUTION_BYTES) -> dict[str, float | None]:
    """HLO path → the rel-l2 of the op's output under ``rec`` against ``baseline``'s (None: not
    comparable), for every float op both programs compute. Each round runs ``baseline`` keeping
    the values of at most ``max_bytes`` of ops, then ``rec`` comparing them as they are made, each
    run only as far as its round's last op (decision TU11): the peak is one run's plus
    ``max_bytes``, the time at most two runs per round."""
    pb, pa = _producers(baseline), _producers(rec)
    paths = [p for p, _ in rec.lowered.rows if p in pa and p in pb and pa[p].dtype.is_float]
    errors: dict[str, float | None] = {}
    for chunk in _chunks(paths, pb, max_bytes):
        keep = SparseTrace({id(pb[p]) for p in chunk}, 1 << 62, whole=True, stop=True)
        _run_until_complete(baseline, args, keep)
        ref = {id(pa[p]): keep.pop(id(pb[p])) for p in chunk if id(pb[p]) in keep}
        del keep
        against = _Against(ref)
        del ref
        _run_until_complete(rec, args, against)
        for p in chunk:
            if id(pa[p]) in against.errors:
                errors[p] = against.errors[id(pa[p])]
    return errors


def _run_until_complete(compiled: CompiledHlo, args: list[np.ndarray], trace: SparseTrace) -> None:
    """Run ``compiled`` until ``trace`` (made with ``stop``) holds all it wants, or to the end."""
    with contextlib.suppress(TraceComplete):
        run_compiled(compiled, args, trace)


def attribute(baseline: CompiledHlo, rec: CompiledHlo, args: list[np.ndarray],
              top: int = 5, max_bytes: int = DEFAULT_ATTRIBUTION_BYTES) -> list[OpShare]:
    """The ``top`` float ops that add most error under ``rec``, largest first (``max_bytes``:
    see :func:`op_errors`)."""
    measured = op_errors(baseline, rec, args, max_bytes)
    pa = _producers(rec)
    errors: dict[str, float] = {}
    by_path = dict(rec.lowered.rows)
    rows = []
    for path, hinst in rec.lowered.rows:
        e = measured.get(path)
        if e is None:
            continue
        errors[path] = e
        before = max((errors.get(p, 0.0) for p in _operand_paths(path, hinst, by_path)), default=0.0)
        rows.append(OpShare(path, hinst.opcode, pa[path].dtype.name, e, max(0.0, e - before),
                            _source_of(hinst)))  # fmt: skip
    rows.sort(key=lambda r: (-r.added, -r.error, r.path))
    return [r for r in rows[:top] if r.added > 0]
