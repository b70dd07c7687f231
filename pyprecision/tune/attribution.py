"""Per-op attribution under the recommendation: both programs run once more with a trace, and each
HLO op is charged the error its own output adds, measured (decision TU4): the rel-l2 of its output
against the same op's under ``--auto-cast none``, less the worst of its operands' errors. The two
runs take turns (decision TU13), so the ``none`` values are held only until the recommendation's
run reaches their op (at most ``max_bytes`` at a time, TU9), and the recommendation's are compared
as they are made, never held."""

from __future__ import annotations

import contextlib
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from pyprecision.emulate import CompiledHlo, SparseTrace, TraceComplete, run_compiled
from pyprecision.kernel import SQDIFF_CHUNK, default_threads, sq_sums, sqdiff_f32, thread_limit

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
    (``ref``: instruction id → the ``none`` values) as it is made (a fused run's block by block,
    TU20), the reference then freed."""

    def __init__(self, ref: dict[int, np.ndarray]):
        super().__init__(set(ref), 0, whole=True, stop=True)
        self.ref = ref
        self.errors: dict[int, float | None] = {}
        self.open = 0  # sinks handed out and not closed yet

    def record(self, key: int, value: np.ndarray) -> None:
        """The rel-l2 of ``value`` against ``key``'s reference, once per instruction."""
        ref = self.ref.pop(key, None)
        if ref is not None:
            self.errors[key] = _rel(value, ref)
            self._check()

    def stream(self, key: int, shape: tuple[int, ...], block: int) -> Any:
        """``key``'s value compared block by block (TU20)."""
        ref = self.ref.pop(key, None)
        if ref is None:
            return None
        self.open += 1
        rel = _BlockRel(ref, shape, block)

        def close() -> None:
            self.errors[key] = rel.result()
            self.open -= 1
            self._check()

        return _Sink(rel, close)

    def _check(self) -> None:
        if not self.ref and not self.open:
            raise TraceComplete


class _Sink:
    """A :class:`_BlockRel` as the evaluator's ``StreamSink``, with what closing it does."""

    def __init__(self, rel: _BlockRel | None, close: Any):
        self.rel, self.close = rel, close

    def __call__(self, start: int, stop: int, block: np.ndarray) -> None:
        if self.rel is not None:
            self.rel(start, stop, block)


def _rel(x: np.ndarray, r: np.ndarray) -> float | None:
    """‖x − r‖ / ‖r‖ in float64 (0 when x equals r, None when the shapes differ, either has a
    non-finite element, the sums pass float64's range or r is zero while x is not), from the C
    core's sums for two float32 arrays (the evaluator's storage of every float narrower than
    float64; decision TU12) and float64 blocks summed by NumPy's own reduction for the rest
    (TU11), never BLAS (``kernel.sq_sums``, decision TU23). A non-finite element of either array
    makes a sum non-finite (r² or (x − r)²), and so does a square past float64's range: both are
    None here, with no pass over the arrays of its own."""
    x, r = np.asarray(x), np.asarray(r)
    if x.shape != r.shape:
        return None
    return _from_sums(*sq_sums(x, r))


def _from_sums(sr: float, sd: float) -> float | None:
    """``_rel`` from (sum r², sum (x − r)²)."""
    if not (np.isfinite(sd) and np.isfinite(sr)):
        return None
    return 0.0 if sd == 0 else (float(np.sqrt(sd) / np.sqrt(sr)) if sr > 0 else None)


class _BlockRel:
    """``_rel`` of a value handed over block by block (a fused run's trace-only value, decision
    TU20) against its whole reference, with ``_rel``'s bits: two float32 values are summed a
    block at a time by ``sqdiff_f32``, whose chunks are the blocks (its sums over an array are
    the chunks' sums added in order from 0, which is what adding each block's sums in order
    does); any other pair (the dtype taken from the first block, as a run's whole output is
    made) is collected whole and measured by ``_rel`` at the end."""

    def __init__(self, ref: np.ndarray, shape: tuple[int, ...], block: int):
        self.ref, self.shape = ref, tuple(shape)
        self.fast = ref.shape == self.shape and ref.dtype == np.float32 and block == SQDIFF_CHUNK
        self.flat = np.ascontiguousarray(ref).reshape(-1) if self.fast else None
        self.sr = self.sd = 0.0
        self.whole: np.ndarray | None = None

    def __call__(self, start: int, stop: int, block: np.ndarray) -> None:
        v = np.asarray(block)
        if start == 0 and v.dtype != np.float32:
            self.fast = False
        if self.fast:
            assert self.flat is not None
            v = np.ascontiguousarray(np.broadcast_to(v, (stop - start,)), dtype=np.float32)
            sr, sd = sqdiff_f32(v, self.flat[start:stop], threads=1)
            self.sr += sr
            self.sd += sd
        else:
            if self.whole is None:
                self.whole = np.empty(int(np.prod(self.shape, dtype=np.int64)), v.dtype)
            self.whole[start:stop] = v

    def result(self) -> float | None:
        """The rel-l2, once every block is in."""
        if self.fast:
            return _from_sums(self.sr, self.sd)
        assert self.whole is not None
        return _rel(self.whole.reshape(self.shape), self.ref)


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
    comparable), for every float op both programs compute. The two programs run once each, in
    turn (decision TU13): ``rec`` runs until it makes a value whose reference ``baseline`` has
    not made yet, then ``baseline`` runs until it has, holding what it makes for ops ``rec``
    has not reached (at most ``max_bytes``), and so on. An op whose reference did not fit is
    measured afterwards in rounds (decision TU11: ``baseline`` keeping at most ``max_bytes`` of
    values, then ``rec`` comparing them, each run only as far as its round's last op)."""
    pb, pa = _producers(baseline), _producers(rec)
    paths = [p for p, _ in rec.lowered.rows if p in pa and p in pb and pa[p].dtype.is_float]
    by_rec = {id(pa[p]): p for p in paths}
    got, missed = _in_turn(baseline, rec, args, {id(pb[p]): id(pa[p]) for p in paths}, max_bytes)
    errors = {by_rec[k]: e for k, e in got.items()}
    return {**errors, **_in_rounds(baseline, rec, args, [by_rec[k] for k in missed], pb, pa,
                                   max_bytes)}  # fmt: skip


def _in_rounds(baseline: CompiledHlo, rec: CompiledHlo, args: list[np.ndarray], paths: list[str],
               pb: dict[str, Any], pa: dict[str, Any], max_bytes: int
               ) -> dict[str, float | None]:  # fmt: skip
    """``paths``' errors in rounds of at most ``max_bytes`` of ``baseline``'s values (TU11)."""
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


class _Turns:
    """The state two runs share while they take turns (decision TU13): whose turn it is, the
    reference ``rec`` waits for, the references held (keyed by ``rec``'s instruction ids)."""

    def __init__(self, max_bytes: int, concurrent: bool = False):
        self.cond = threading.Condition()
        #: both runs at once, each under half the threads (decision TU16)
        self.concurrent = concurrent
        self.turn = "rec"
        self.need: int | None = None
        self.refs: dict[int, np.ndarray] = {}
        self.held, self.max_bytes = 0, max_bytes
        self.made: set[int] = set()  # rec keys whose reference the baseline made (held or not)
        self.missed: set[int] = set()  # ... and could not hold
        self.base_done = self.stop = False
        self.error: BaseException | None = None


class _BaseTurn(SparseTrace):
    """The baseline's side: each wanted value held for ``rec`` (within the budget); on making the
    one ``rec`` waits for, it hands the turn back and waits for its own."""

    def __init__(self, t: _Turns, to_rec: dict[int, int]):
        super().__init__(set(to_rec), 0, whole=True)
        self.t, self.to_rec = t, to_rec

    def record(self, key: int, value: np.ndarray) -> None:
        k, t = self.to_rec.get(key), self.t
        if k is None or k in t.made:
            return
        with t.cond:
            # running alongside rec: wait for room while rec is not waiting for this run (TU16);
            # made only once held or missed, so rec never takes it for a value without reference
            while t.concurrent and t.held + value.nbytes > t.max_bytes and t.need is None \
                    and not t.stop:
                t.cond.wait()
            if t.stop:
                raise TraceComplete
            t.made.add(k)
            if t.held + value.nbytes <= t.max_bytes:
                t.refs[k] = value
                t.held += value.nbytes
            else:
                t.missed.add(k)
            if t.concurrent:
                t.cond.notify_all()  # rec may be waiting for this one
            elif k == t.need:
                t.turn = "rec"
                t.cond.notify_all()
                t.cond.wait_for(lambda: t.turn == "base")
                if t.stop:
                    raise TraceComplete


class _RecTurn(SparseTrace):
    """The recommendation's side: each wanted value compared with its reference as it is made,
    the baseline's turn taken first when the reference is not made yet. With ``pool`` (the runs
    going at once) the comparison is the pool's worker's, meanwhile (decision TU19); the
    reference is counted as held until it is compared."""

    def __init__(self, t: _Turns, wanted: set[int], start: Any,
                 pool: ThreadPoolExecutor | None = None):  # fmt: skip
        super().__init__(wanted, 0, whole=True)
        self.t, self.start, self.pool = t, start, pool
        self.errors: dict[int, float | None] = {}
        self.pending: dict[int, Future[float | None]] = {}
        self.seen: set[int] = set()
        self.done = 0  # wanted values compared or handed to the worker (or without reference)

    def _take(self, key: int) -> np.ndarray | None:
        """``key`` seen: its reference, taken once the baseline has made it (None: not held)."""
        t = self.t
        self.seen.add(key)
        with t.cond:
            if key not in t.made and not t.base_done:
                if t.concurrent:  # the baseline runs already: wait until it makes the value
                    t.need = key
                    t.cond.notify_all()
                    t.cond.wait_for(lambda: key in t.made or t.base_done)
                    t.need = None
                else:
                    t.need, t.turn = key, "base"
                    self.start()
                    t.cond.notify_all()
                    t.cond.wait_for(lambda: t.turn == "rec")
            if t.error is not None:
                raise t.error
            return t.refs.pop(key, None)

    def record(self, key: int, value: np.ndarray) -> None:
        if key not in self.wanted or key in self.seen:
            return
        ref = self._take(key)
        if ref is not None:
            if self.pool is None:
                self.errors[key] = self._compare(value, ref)
            else:
                self.pending[key] = self.pool.submit(self._compare, value, ref)
        self._finished()

    def stream(self, key: int, shape: tuple[int, ...], block: int) -> Any:
        """``key``'s value compared block by block as the run makes it (TU20), in this thread:
        each block is in cache then, and the value is never made whole."""
        if key not in self.wanted or key in self.seen:
            return None
        ref = self._take(key)
        rel = _BlockRel(ref, shape, block) if ref is not None else None

        def close() -> None:
            if rel is not None and ref is not None:
                try:
                    self.errors[key] = rel.result()
                finally:
                    self._release(ref)
            self._finished()

        return _Sink(rel, close)

    def _finished(self) -> None:
        self.done += 1
        if self.done == len(self.wanted):
            raise TraceComplete

    def _compare(self, value: np.ndarray, ref: np.ndarray) -> float | None:
        """``_rel`` on one thread (the worker's C calls stay within TU16's half), then the
        reference's room handed back to a baseline waiting for it."""
        try:
            with thread_limit(1):
                return _rel(value, ref)
        finally:
            self._release(ref)

    def _release(self, ref: np.ndarray) -> None:
        """The reference compared: its room handed back to a baseline waiting for it."""
        with self.t.cond:
            self.t.held -= ref.nbytes
            self.t.cond.notify_all()

    def results(self) -> dict[int, float | None]:
        """Every error, the worker's included (its exception raised here)."""
        for key, future in self.pending.items():
            self.errors[key] = future.result()
        self.pending.clear()
        return self.errors


def _in_turn(baseline: CompiledHlo, rec: CompiledHlo, args: list[np.ndarray],
             to_rec: dict[int, int], max_bytes: int) -> tuple[dict[int, float | None], set[int]]:
    """Both programs run once, taking turns (the baseline in a thread of its own, never at the
    same time as ``rec``): ``rec``'s key → error, and the keys whose reference did not fit."""
    threads = default_threads()
    t = _Turns(max_bytes, concurrent=threads > 1)
    half = max(1, threads // 2) if t.concurrent else None
    worker: list[threading.Thread] = []

    def base() -> None:
        try:
            with t.cond:
                t.cond.wait_for(lambda: t.turn == "base" or t.concurrent)
            if not t.stop:
                with thread_limit(half):
                    run_compiled(baseline, args, _BaseTurn(t, to_rec))
        except TraceComplete:
            pass
        except BaseException as exc:  # handed to rec's side, which raises it
            t.error = exc
        finally:
            with t.cond:
                t.base_done, t.turn = True, "rec"
                t.cond.notify_all()

    def start() -> None:
        if not worker:
            worker.append(threading.Thread(target=base, name="attribution-baseline", daemon=True))
            worker[0].start()

    # the comparisons in a third thread, meanwhile (TU19): its C calls release the GIL
    pool = ThreadPoolExecutor(1, thread_name_prefix="attribution-rel") if t.concurrent else None
    side = _RecTurn(t, set(to_rec.values()), start, pool)
    try:
        if t.concurrent:
            start()
        with thread_limit(half):
            _run_until_complete(rec, args, side)
    finally:
        with t.cond:
            t.stop, t.turn = True, "base"
            t.cond.notify_all()
        for w in worker:
            w.join()
        if pool is not None:
            pool.shutdown(wait=True)
    if t.error is not None:
        raise t.error
    return side.results(), t.missed & side.seen


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
