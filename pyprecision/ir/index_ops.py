"""Indexed data movement the HLO lowering builds: ``gather`` and ``scatter.KIND`` (XLA's ops with
every dimension-number form) and ``sort_perm`` (a sort's permutation); one declaration each, see
:mod:`pyprecision.ir.opdef`.

The dimension numbers are XLA's, on the operands' HLO ranks: an IR ``[1]`` stands for an HLO
scalar (decision L3), so a ``[1]`` operand, update or result whose dimension numbers say rank 0
is read as rank 0. The data operand and the result are of one class (float stays float, an
integer keeps its dtype) and the result may be retyped like any movement op; the indices are an
integer operand that no pass casts (only fp32 operands are cast, decision P5). ``ir`` cannot
import ``hlo`` (docs/architecture.md), so the shape rule is written here and a test checks it
against ``hlo``'s (tests/lower/test_lower_gather_ir.py); the index arithmetic itself is the HLO
evaluator's, reached through ``ev.num`` (decision L15)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from pyprecision.ir.dtypes import INTEGER_DTYPES, float32
from pyprecision.ir.instructions import Instruction, Operand
from pyprecision.ir.opdef import Flag, Int, Ints, Opnds, Punct, Val, register
from pyprecision.ir.rules import RuleViolation, need, same_class, shape_text
from pyprecision.ir.shape_ops import _Movement
from pyprecision.ir.values import Value

if TYPE_CHECKING:  # pragma: no cover
    from pyprecision.ir.core import Function

__all__ = ["SCATTER_KINDS", "GatherOp", "ScatterOp", "SortPermOp", "gather_shape", "hlo_view"]

#: the combiners of ``scatter.KIND`` (``assign``: the update replaces the element, HLO's
#: ``to_apply`` that returns its second parameter)
SCATTER_KINDS = ("add", "mul", "max", "min", "and", "or", "assign")


def hlo_view(shape: tuple[int, ...], rank: int) -> tuple[int, ...]:
    """An IR shape as the HLO shape its dimension numbers mean: a ``[1]`` of HLO rank 0 is ``()``."""
    return () if rank == 0 and shape == (1,) else shape


def _distinct(dims: tuple[int, ...], rank: int, what: str) -> None:
    if len(set(dims)) != len(dims) or any(not 0 <= d < rank for d in dims):
        raise RuleViolation(f"{what} {list(dims)} must be distinct dimensions below {rank}")


def _index_batch(indices: tuple[int, ...], ivd: int, k: int) -> list[int]:
    """The batch dimensions of the indices (all but index_vector_dim), checking the vector has
    ``k`` elements (an index_vector_dim equal to the rank is an implicit trailing 1)."""
    if not 0 <= ivd <= len(indices):
        raise RuleViolation(f"index_vector_dim {ivd} is out of range for indices of rank "
                            f"{len(indices)}")
    idx = list(indices) + ([1] if ivd == len(indices) else [])
    if idx[ivd] != k:
        raise RuleViolation(f"the index vector has {idx[ivd]} element(s), the map has {k}")
    return [s for d, s in enumerate(idx) if d != ivd]


def gather_shape(op: GatherOp, operand: tuple[int, ...], indices: tuple[int, ...]) -> tuple[int, ...]:
    """XLA's gather shape rule on HLO shapes (RuleViolation when the numbers do not fit)."""
    batch = _index_batch(indices, op.index_vector_dim, len(op.start_index_map))
    need(len(op.slice_sizes) == len(operand), "slice_sizes must have one entry per operand dimension")
    _distinct(op.start_index_map, len(operand), "start_index_map")
    squeezed = op.collapsed_slice_dims + op.operand_batching_dims
    _distinct(squeezed, len(operand), "collapsed_slice_dims + operand_batching_dims")
    need(len(op.operand_batching_dims) == len(op.start_indices_batching_dims),
         "operand_batching_dims and start_indices_batching_dims must pair up")
    for d, s in enumerate(op.slice_sizes):
        if not 0 <= s <= operand[d] or (d in squeezed and s > 1):
            raise RuleViolation(f"slice size {s} does not fit operand dimension {d} ({operand[d]})")
    offsets = [s for d, s in enumerate(op.slice_sizes) if d not in squeezed]
    rank = len(batch) + len(offsets)
    if len(op.offset_dims) != len(offsets) or list(op.offset_dims) != sorted(op.offset_dims):
        raise RuleViolation(f"offset_dims {list(op.offset_dims)} must be {len(offsets)} "
                            "increasing result dimensions")
    _distinct(op.offset_dims, rank, "offset_dims")
    it_off, it_batch = iter(offsets), iter(batch)
    return tuple(next(it_off) if d in op.offset_dims else next(it_batch) for d in range(rank))


@register
class GatherOp(_Movement):
    """``%r = gather %x, %idx offset_dims=[..] collapsed_slice_dims=[..] start_index_map=[..]
    index_vector_dim=N slice_sizes=[..] operand_batching_dims=[..]
    start_indices_batching_dims=[..] : T`` — XLA gather: each window start is clamped into the
    operand (an indirect DMA reading rows of ``x``)."""

    opname = "gather"
    WORDS = {"gather": {}}
    SYNTAX = (Val("data"), Punct(","), Val("indices"), Ints("offset_dims", "offset_dims"),
              Ints("collapsed_slice_dims", "collapsed_slice_dims"),
              Ints("start_index_map", "start_index_map"),
              Int("index_vector_dim", "index_vector_dim"), Ints("slice_sizes", "slice_sizes"),
              Ints("operand_batching_dims", "operand_batching_dims"),
              Ints("start_indices_batching_dims", "start_indices_batching_dims"))

    def __init__(self, data: Value, indices: Value, offset_dims: Any, collapsed_slice_dims: Any,
                 start_index_map: Any, index_vector_dim: int, slice_sizes: Any,
                 operand_batching_dims: Any, start_indices_batching_dims: Any, result: Value):
        self.offset_dims = tuple(int(v) for v in offset_dims)
        self.collapsed_slice_dims = tuple(int(v) for v in collapsed_slice_dims)
        self.start_index_map = tuple(int(v) for v in start_index_map)
        self.index_vector_dim = int(index_vector_dim)
        self.slice_sizes = tuple(int(v) for v in slice_sizes)
        self.operand_batching_dims = tuple(int(v) for v in operand_batching_dims)
        self.start_indices_batching_dims = tuple(int(v) for v in start_indices_batching_dims)
        Instruction.__init__(self, [data, indices], result)

    @property
    def indices(self) -> Operand:
        """The start indices (an integer value)."""
        return self._operands[1]

    def check(self, f: Function) -> None:
        """The data keeps its class, the indices are integers, and the result has XLA's gather
        shape."""
        self._check_class()
        idx, r = self.indices, self.result
        assert r is not None
        need(isinstance(idx, Value) and idx.dtype.is_integer, "the indices must be an integer value")
        want = gather_shape(self, hlo_view(self.data.shape, len(self.slice_sizes)), idx.shape)
        if r.shape != (want or (1,)):
            raise RuleViolation(f"result shape {shape_text(r)} != gathered shape {list(want)}")

    def evaluate(self, ev: Any) -> Any:
        """The HLO evaluator's gather on the operand's values, then the result dtype."""
        x = ev.operand(self.data)
        x = x.reshape(hlo_view(x.shape, len(self.slice_sizes)))
        out = ev.num.gather(self, x, ev.operand(self.indices))
        return self._finish(ev, np.asarray(out).reshape(self.result.shape))  # type: ignore[union-attr]


@register
class ScatterOp(Instruction):
    """``%r = scatter.KIND %x, %idx, %u update_window_dims=[..] inserted_window_dims=[..]
    scatter_dims_to_operand_dims=[..] index_vector_dim=N input_batching_dims=[..]
    scatter_indices_batching_dims=[..] [narrow_acc] : T`` — XLA scatter with the combiner KIND
    (add, mul, max, min, and, or, assign): the updates are combined into a copy of ``x`` in
    index order; an update window that does not fit the operand is skipped. Float sums and
    products accumulate in fp32 (``narrow_acc``: in the result dtype), like ``reduce``."""

    opname = "scatter"
    WORDS = {f"scatter.{k}": {"kind": k} for k in SCATTER_KINDS}
    WORD_PREFIX = "scatter."
    SYNTAX = (Val("data"), Punct(","), Val("indices"), Punct(","), Val("updates"),
              Ints("update_window_dims", "update_window_dims"),
              Ints("inserted_window_dims", "inserted_window_dims"),
              Ints("scatter_dims_to_operand_dims", "scatter_dims_to_operand_dims"),
              Int("index_vector_dim", "index_vector_dim"),
              Ints("input_batching_dims", "input_batching_dims"),
              Ints("scatter_indices_batching_dims", "scatter_indices_batching_dims"),
              Flag("narrow_acc", "narrow_acc"))

    def __init__(self, kind: str, data: Value, indices: Value, updates: Value,
                 update_window_dims: Any, inserted_window_dims: Any,
                 scatter_dims_to_operand_dims: Any, index_vector_dim: int,
                 input_batching_dims: Any, scatter_indices_batching_dims: Any, result: Value,
                 narrow_acc: bool = False):
        if kind not in SCATTER_KINDS:
            raise ValueError(f"unknown scatter kind {kind!r}")
        self.kind, self.narrow_acc = kind, bool(narrow_acc)
        self.update_window_dims = tuple(int(v) for v in update_window_dims)
        self.inserted_window_dims = tuple(int(v) for v in inserted_window_dims)
        self.scatter_dims_to_operand_dims = tuple(int(v) for v in scatter_dims_to_operand_dims)
        self.index_vector_dim = int(index_vector_dim)
        self.input_batching_dims = tuple(int(v) for v in input_batching_dims)
        self.scatter_indices_batching_dims = tuple(int(v) for v in scatter_indices_batching_dims)
        super().__init__([data, indices, updates], result)

    def word(self) -> str:
        """``scatter.KIND``."""
        return f"scatter.{self.kind}"

    @property
    def data(self) -> Operand:
        """The value scattered into."""
        return self._operands[0]

    @property
    def indices(self) -> Operand:
        """The scatter indices (an integer value)."""
        return self._operands[1]

    @property
    def updates(self) -> Operand:
        """The values combined in."""
        return self._operands[2]

    allowed_dtypes = _Movement.allowed_dtypes
    can_mutate_dst_ty = _Movement.can_mutate_dst_ty

    @property
    def operand_rank(self) -> int:
        """The HLO rank of the data operand (window + inserted + batching dimensions)."""
        return (len(self.update_window_dims) + len(self.inserted_window_dims)
                + len(self.input_batching_dims))

    def _updates_rank(self, indices: tuple[int, ...]) -> int:
        n_batch = len(indices) - (self.index_vector_dim < len(indices))
        return n_batch + len(self.update_window_dims)

    def check(self, f: Function) -> None:
        """Data, updates and result of one class; integer indices; XLA's scatter shape rules."""
        d, idx, u, r = self.data, self.indices, self.updates, self.result
        assert r is not None
        need(isinstance(d, Value) and isinstance(u, Value) and isinstance(idx, Value),
             "scatter operands must be values")
        need(idx.dtype.is_integer, "the indices must be an integer value")
        need(same_class(d.dtype, r.dtype) and same_class(u.dtype, r.dtype),
             "scatter keeps the dtype class")
        if self.kind in ("and", "or"):
            need(r.dtype.is_integer, f"scatter.{self.kind} needs integers")
        if r.shape != d.shape:
            raise RuleViolation(f"result shape {shape_text(r)} != operand shape {shape_text(d)}")
        x = hlo_view(d.shape, self.operand_rank)
        ushape = hlo_view(u.shape, self._updates_rank(idx.shape))
        need(len(x) == self.operand_rank, "update_window_dims + inserted_window_dims + "
             "input_batching_dims must cover the operand rank")
        batch = _index_batch(idx.shape, self.index_vector_dim, len(self.scatter_dims_to_operand_dims))
        _distinct(self.scatter_dims_to_operand_dims, len(x), "scatter_dims_to_operand_dims")
        _distinct(self.inserted_window_dims + self.input_batching_dims, len(x),
                  "inserted_window_dims + input_batching_dims")
        need(len(self.input_batching_dims) == len(self.scatter_indices_batching_dims),
             "input_batching_dims and scatter_indices_batching_dims must pair up")
        if len(ushape) != len(batch) + len(self.update_window_dims):
            raise RuleViolation(f"updates {shape_text(u)} must have {len(batch)} scatter and "
                                f"{len(self.update_window_dims)} window dimensions")
        _distinct(self.update_window_dims, len(ushape), "update_window_dims")
        window = [k for k in range(len(x))
                  if k not in self.inserted_window_dims and k not in self.input_batching_dims]
        for uw, od in zip(sorted(self.update_window_dims), window, strict=True):
            if ushape[uw] > x[od]:
                raise RuleViolation(f"update window dimension {uw} ({ushape[uw]}) exceeds "
                                    f"operand dimension {od} ({x[od]})")
        scat = [s for k, s in enumerate(ushape) if k not in self.update_window_dims]
        if scat != batch:
            raise RuleViolation(f"update scatter dimensions {scat} != index batch dimensions {batch}")

    def evaluate(self, ev: Any) -> Any:
        """The HLO evaluator's scatter: combines in index order in the accumulation dtype (fp32
        for float add/mul unless ``narrow_acc``, else the result dtype), then the result dtype."""
        num, rdt = ev.num, self.result.dtype  # type: ignore[union-attr]
        acc_dt = float32 if rdt.is_float and self.kind in ("add", "mul") and not self.narrow_acc \
            else rdt
        x = num.convert(ev.operand(self.data), self.data.dtype, acc_dt)
        u = num.convert(ev.operand(self.updates), self.updates.dtype, acc_dt)
        idx = ev.operand(self.indices)
        x = np.asarray(x).reshape(hlo_view(x.shape, self.operand_rank))
        u = np.asarray(u).reshape(hlo_view(u.shape, self._updates_rank(idx.shape)))
        kind = self.kind

        def fold(accs: list[np.ndarray], vals: list[np.ndarray]) -> list[np.ndarray]:
            if kind == "assign":
                return [vals[0]]
            out = num.binary_values(kind, accs[0], vals[0], rdt.is_float)
            return [num.round_to(out, acc_dt).astype(accs[0].dtype)]

        out = num.scatter(self, x, idx, u, fold)
        return num.convert(np.asarray(out).reshape(self.result.shape), acc_dt, rdt)  # type: ignore[union-attr]


@register
class SortPermOp(Instruction):
    """``%p = sort_perm %k0, %k1, ... dim=N descending=[..] total=[..] canonical=[..] : T`` — the
    stable sorting permutation along ``dim`` of the keys, compared lexicographically (key 0
    first): per key ascending or ``descending``, in XLA's ``total`` order or plain float order,
    after JAX's ``canonical`` NaN / -0 canonicalisation. The result (an integer index array
    shaped like the keys) is what the lowering gathers every sorted operand with."""

    opname = "sort_perm"
    WORDS = {"sort_perm": {}}
    SYNTAX = (Opnds("keys"), Int("dim", "dim"), Ints("descending", "descending"),
              Ints("total", "total"), Ints("canonical", "canonical"))

    def __init__(self, keys: Any, dim: int, descending: Any, total: Any, canonical: Any,
                 result: Value):
        self.dim = int(dim)
        self.descending = tuple(int(bool(v)) for v in descending)
        self.total = tuple(int(bool(v)) for v in total)
        self.canonical = tuple(int(bool(v)) for v in canonical)
        super().__init__(list(keys), result)

    @property
    def keys(self) -> list[Operand]:
        """The sort keys, most significant first."""
        return list(self._operands)

    allowed_dtypes = INTEGER_DTYPES
    can_mutate_dst_ty = False

    def check(self, f: Function) -> None:
        """Keys are values of one shape; one flag of each list per key; an integer result shaped
        like the keys; ``dim`` a dimension of theirs."""
        r = self.result
        assert r is not None
        need(bool(self._operands), "sort_perm needs a key")
        need(r.dtype.is_integer, "the permutation must be an integer value")
        n = len(self._operands)
        need(len(self.descending) == len(self.total) == len(self.canonical) == n,
             "descending, total and canonical need one entry per key")
        for k in self._operands:
            need(isinstance(k, Value), "sort keys must be values")
            if k.shape != r.shape:
                raise RuleViolation(f"key {shape_text(k)} is not shaped like the result {shape_text(r)}")
        need(0 <= self.dim < len(r.shape), "dim must be a dimension of the keys")

    def evaluate(self, ev: Any) -> Any:
        """The HLO evaluator's stable sort of the keys' values (``ev.num.sort_perm``)."""
        perm = ev.num.sort_perm(self, [ev.operand(k) for k in self._operands])
        return ev.num.round_to(perm, self.result.dtype)  # type: ignore[union-attr]
