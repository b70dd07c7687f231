"""Windows, convolution dimension labels and gather/scatter dimension numbers: read from the
attribute text once, used by the verifier's shape rules and by the evaluator.

``window={size=3x3 stride=2x2 pad=1_1x0_1 lhs_dilate=1x1 rhs_dilate=2x2 rhs_reversal=0x1}``,
``dim_labels=b01f_01io->b01f`` and the gather/scatter ``*_dims=`` lists follow XLA's
``window_util`` / ``ConvolutionDimensionNumbers`` text forms. Every reader raises ValueError with a
message naming the attribute; the verifier turns it into a located error.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from pyprecision.hlo import attrs as A

_WINDOW_KEYS = ("size", "stride", "pad", "lhs_dilate", "rhs_dilate", "rhs_reversal")
_PAD = re.compile(r"(-?\d{1,18})_(-?\d{1,18})$")
_INT = re.compile(r"-?\d{1,18}$")


@dataclass(frozen=True)
class WindowDim:
    """One window dimension (XLA's WindowDimension)."""

    size: int = 1
    stride: int = 1
    pad_lo: int = 0
    pad_hi: int = 0
    lhs_dilation: int = 1
    rhs_dilation: int = 1
    reversal: bool = False

    def output_size(self, base: int) -> int:
        """Result size along this dimension for an input of size ``base`` (XLA's
        ``window_util::StridedBound`` of the dilated, padded base and the dilated window)."""
        dilated_base = 0 if base == 0 else (base - 1) * self.lhs_dilation + 1
        padded = dilated_base + self.pad_lo + self.pad_hi
        window = (self.size - 1) * self.rhs_dilation + 1
        if padded < window:
            return 0
        return (padded - window) // self.stride + 1


def _int(tok: str, what: str) -> int:
    if not _INT.match(tok):
        raise ValueError(f"window {what} '{tok}' is not an integer")
    return int(tok)


def parse_window(raw: str | None, rank: int) -> list[WindowDim]:
    """The ``window={...}`` value as ``rank`` dimensions (absent or ``{}``: all defaults)."""
    if raw is None or raw.strip() in ("{}", ""):
        if rank:
            raise ValueError(f"window= is missing but {rank} window dimension(s) are needed")
        return []
    fields: dict[str, list[str]] = {}
    for key, value in A.parse_kv_block(raw, " \t"):
        if key not in _WINDOW_KEYS:
            raise ValueError(f"unknown window field '{key or value}'")
        fields[key] = value.split("x")
    n = len(fields.get("size", []))
    for key, vals in fields.items():
        if len(vals) != n:
            raise ValueError(f"window {key} has {len(vals)} dimension(s), size has {n}")
    if n != rank:
        raise ValueError(f"window has {n} dimension(s), {rank} needed")
    dims = []
    for d in range(n):
        size = _int(fields["size"][d], "size")
        stride = _int(fields["stride"][d], "stride") if "stride" in fields else 1
        lo = hi = 0
        if "pad" in fields:
            m = _PAD.match(fields["pad"][d])
            if not m:
                raise ValueError(f"window pad '{fields['pad'][d]}' is not lo_hi")
            lo, hi = int(m.group(1)), int(m.group(2))
        lhs = _int(fields["lhs_dilate"][d], "lhs_dilate") if "lhs_dilate" in fields else 1
        rhs = _int(fields["rhs_dilate"][d], "rhs_dilate") if "rhs_dilate" in fields else 1
        rev = _int(fields["rhs_reversal"][d], "rhs_reversal") if "rhs_reversal" in fields else 0
        if size < 1 or stride < 1 or lhs < 1 or rhs < 1:
            raise ValueError("window size, stride and dilations must be >= 1")
        if rev not in (0, 1):
            raise ValueError("window rhs_reversal must be 0 or 1")
        dims.append(WindowDim(size, stride, lo, hi, lhs, rhs, bool(rev)))
    return dims


@dataclass(frozen=True)
class ConvDims:
    """``dim_labels=b01f_01io->b01f``: which dimension of input, kernel and output is what."""

    in_batch: int
    in_feature: int
    in_spatial: tuple[int, ...]
    k_in: int
    k_out: int
    k_spatial: tuple[int, ...]
    out_batch: int
    out_feature: int
    out_spatial: tuple[int, ...]


def _labels(part: str, special: str, what: str) -> tuple[dict[str, int], tuple[int, ...]]:
    pos: dict[str, int] = {}
    spatial: dict[int, int] = {}
    for i, c in enumerate(part):
        if c in special and c not in pos:
            pos[c] = i
        elif c.isdigit() and int(c) not in spatial:
            spatial[int(c)] = i
        else:
            raise ValueError(f"dim_labels {what} '{part}' has a bad or repeated label '{c}'")
    if set(pos) != set(special) or sorted(spatial) != list(range(len(spatial))):
        raise ValueError(f"dim_labels {what} '{part}' needs {', '.join(special)} and spatial "
                         "dimensions 0..n-1")
    return pos, tuple(spatial[k] for k in range(len(spatial)))


def parse_dim_labels(raw: str | None, rank: int) -> ConvDims:
    """Read ``dim_labels`` (absent: XLA's default ``b0..f_0..io->b0..f``-style for ``rank``)."""
    if raw is None:
        sp = "".join(str(i) for i in range(rank - 2))
        raw = f"b{sp}f_{sp}io->b{sp}f"
    m = re.fullmatch(r"([\w]+)_([\w]+)->([\w]+)", raw.strip())
    if not m:
        raise ValueError(f"dim_labels '{raw}' is not lhs_rhs->out")
    lhs, rhs, out = m.groups()
    if not len(lhs) == len(rhs) == len(out) == rank:
        raise ValueError(f"dim_labels '{raw}' do not have rank {rank}")
    li, ls = _labels(lhs, "bf", "input")
    ki, ks = _labels(rhs, "io", "kernel")
    oi, os_ = _labels(out, "bf", "output")
    return ConvDims(li["b"], li["f"], ls, ki["i"], ki["o"], ks, oi["b"], oi["f"], os_)


def conv_output_dims(lhs: tuple[int, ...], rhs: tuple[int, ...], dn: ConvDims,
                     window: list[WindowDim], fgc: int, bgc: int) -> tuple[int, ...]:
    """XLA's InferConvolveShape (dimensions only); ValueError naming the violated rule."""
    if fgc < 1 or bgc < 1:
        raise ValueError("feature_group_count and batch_group_count must be >= 1")
    batch, in_f = lhs[dn.in_batch], lhs[dn.in_feature]
    k_in, k_out = rhs[dn.k_in], rhs[dn.k_out]
    if in_f % fgc or k_out % fgc:
        raise ValueError(f"feature_group_count {fgc} does not divide the input features {in_f} "
                         f"and the kernel output features {k_out}")
    if in_f != k_in * fgc:
        raise ValueError(f"input features {in_f} != kernel input features {k_in} x "
                         f"feature_group_count {fgc}")
    if batch % bgc or k_out % bgc:
        raise ValueError(f"batch_group_count {bgc} does not divide the batch {batch} and the "
                         f"kernel output features {k_out}")
    if fgc > 1 and bgc > 1:
        raise ValueError("feature_group_count and batch_group_count cannot both exceed 1")
    for d, w in enumerate(window):
        if w.size != rhs[dn.k_spatial[d]]:
            raise ValueError(f"window size {w.size} != kernel spatial dimension "
                             f"{rhs[dn.k_spatial[d]]}")
    out = [0] * len(lhs)
    out[dn.out_batch] = batch // bgc
    out[dn.out_feature] = k_out
    for d, w in enumerate(window):
        out[dn.out_spatial[d]] = w.output_size(lhs[dn.in_spatial[d]])
    return tuple(out)


# -- gather / scatter -----------------------------------------------------------------------
def _ints(inst: object, key: str) -> list[int]:
    v = inst.attr(key)  # type: ignore[attr-defined]
    return [] if v is None else A.parse_int_list(v)


@dataclass(frozen=True)
class GatherDims:
    """XLA's GatherDimensionNumbers plus ``slice_sizes``."""

    offset_dims: tuple[int, ...]
    collapsed_slice_dims: tuple[int, ...]
    start_index_map: tuple[int, ...]
    index_vector_dim: int
    slice_sizes: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    start_indices_batching_dims: tuple[int, ...] = ()


def gather_dims(inst: object) -> GatherDims:
    """The gather attributes of ``inst``."""
    ivd = _ints(inst, "index_vector_dim")
    return GatherDims(tuple(_ints(inst, "offset_dims")), tuple(_ints(inst, "collapsed_slice_dims")),
                      tuple(_ints(inst, "start_index_map")), ivd[0] if ivd else 0,
                      tuple(_ints(inst, "slice_sizes")), tuple(_ints(inst, "operand_batching_dims")),
                      tuple(_ints(inst, "start_indices_batching_dims")))


@dataclass(frozen=True)
class ScatterDims:
    """XLA's ScatterDimensionNumbers."""

    update_window_dims: tuple[int, ...]
    inserted_window_dims: tuple[int, ...]
    scatter_dims_to_operand_dims: tuple[int, ...]
    index_vector_dim: int
    input_batching_dims: tuple[int, ...] = ()
    scatter_indices_batching_dims: tuple[int, ...] = ()


def scatter_dims(inst: object) -> ScatterDims:
    """The scatter attributes of ``inst``."""
    ivd = _ints(inst, "index_vector_dim")
    return ScatterDims(tuple(_ints(inst, "update_window_dims")),
                       tuple(_ints(inst, "inserted_window_dims")),
                       tuple(_ints(inst, "scatter_dims_to_operand_dims")), ivd[0] if ivd else 0,
                       tuple(_ints(inst, "input_batching_dims")),
                       tuple(_ints(inst, "scatter_indices_batching_dims")))


def _check_dims(dims: tuple[int, ...], rank: int, what: str) -> None:
    if len(set(dims)) != len(dims) or any(not 0 <= d < rank for d in dims):
        raise ValueError(f"{what}={{{','.join(map(str, dims))}}} must be distinct dimensions "
                         f"below {rank}")


def gather_output_dims(operand: tuple[int, ...], indices: tuple[int, ...],
                       g: GatherDims) -> tuple[int, ...]:
    """XLA's InferGatherShape (dimensions only)."""
    ivd = g.index_vector_dim
    if not 0 <= ivd <= len(indices):
        raise ValueError(f"index_vector_dim {ivd} is out of range for indices of rank "
                         f"{len(indices)}")
    idx = list(indices) + ([1] if ivd == len(indices) else [])
    n_index = idx[ivd]
    if n_index != len(g.start_index_map):
        raise ValueError(f"index vector has {n_index} element(s), start_index_map has "
                         f"{len(g.start_index_map)}")
    if len(g.slice_sizes) != len(operand):
        raise ValueError(f"slice_sizes has {len(g.slice_sizes)} entries, operand rank is "
                         f"{len(operand)}")
    _check_dims(g.start_index_map, len(operand), "start_index_map")
    _check_dims(g.collapsed_slice_dims + g.operand_batching_dims, len(operand),
                "collapsed_slice_dims+operand_batching_dims")
    for d, s in enumerate(g.slice_sizes):
        if not 0 <= s <= operand[d]:
            raise ValueError(f"slice size {s} exceeds operand dimension {d} ({operand[d]})")
    for d in g.collapsed_slice_dims + g.operand_batching_dims:
        if g.slice_sizes[d] > 1:
            raise ValueError(f"collapsed dimension {d} has slice size {g.slice_sizes[d]} > 1")
    batch = [s for d, s in enumerate(idx) if d != ivd]
    offsets = [s for d, s in enumerate(g.slice_sizes)
               if d not in g.collapsed_slice_dims and d not in g.operand_batching_dims]
    rank = len(batch) + len(offsets)
    if len(g.offset_dims) != len(offsets):
        raise ValueError(f"offset_dims has {len(g.offset_dims)} entries, {len(offsets)} "
                         "slice dimensions remain")
    _check_dims(g.offset_dims, rank, "offset_dims")
    if list(g.offset_dims) != sorted(g.offset_dims):
        raise ValueError("offset_dims must be sorted")
    out, bi, oi = [], 0, 0
    for d in range(rank):
        if d in g.offset_dims:
            out.append(offsets[oi])
            oi += 1
        else:
            out.append(batch[bi])
            bi += 1
    return tuple(out)


def check_scatter(operand: tuple[int, ...], indices: tuple[int, ...],
                  updates: tuple[int, ...], s: ScatterDims) -> None:
    """XLA's scatter shape rules (ValueError when the updates cannot fit the operand)."""
    ivd = s.index_vector_dim
    if not 0 <= ivd <= len(indices):
        raise ValueError(f"index_vector_dim {ivd} is out of range for indices of rank "
                         f"{len(indices)}")
    idx = list(indices) + ([1] if ivd == len(indices) else [])
    if idx[ivd] != len(s.scatter_dims_to_operand_dims):
        raise ValueError(f"index vector has {idx[ivd]} element(s), scatter_dims_to_operand_dims "
                         f"has {len(s.scatter_dims_to_operand_dims)}")
    _check_dims(s.scatter_dims_to_operand_dims, len(operand), "scatter_dims_to_operand_dims")
    _check_dims(s.inserted_window_dims + s.input_batching_dims, len(operand),
                "inserted_window_dims+input_batching_dims")
    n_batch = len(idx) - 1
    if len(updates) != n_batch + len(s.update_window_dims):
        raise ValueError(f"updates rank {len(updates)} != {n_batch} scatter dimension(s) + "
                         f"{len(s.update_window_dims)} update_window_dims")
    _check_dims(s.update_window_dims, len(updates), "update_window_dims")
    if len(s.update_window_dims) + len(s.inserted_window_dims) + len(s.input_batching_dims) \
            != len(operand):
        raise ValueError("update_window_dims + inserted_window_dims + input_batching_dims must "
                         f"cover the operand rank {len(operand)}")
    window_operand_dims = [d for d in range(len(operand))
                           if d not in s.inserted_window_dims and d not in s.input_batching_dims]
    for uw, od in zip(sorted(s.update_window_dims), window_operand_dims, strict=True):
        if updates[uw] > operand[od]:
            raise ValueError(f"update window dimension {uw} ({updates[uw]}) exceeds operand "
                             f"dimension {od} ({operand[od]})")
    batch_upd = [u for d, u in enumerate(updates) if d not in s.update_window_dims]
    batch_idx = [x for d, x in enumerate(idx) if d != ivd]
    if batch_upd != batch_idx:
        raise ValueError(f"updates scatter dimensions {batch_upd} != indices batch dimensions "
                         f"{batch_idx}")
