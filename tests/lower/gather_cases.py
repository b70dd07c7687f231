"""Hypothesis strategies for the gather / scatter lowering tests: random valid dimension numbers
(offset / collapsed / batching dimensions, any index_vector_dim, indices of several integer
types) written as small HLO modules, with inputs that include out-of-range indices."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

INDEX_TYPES = {"s32": np.int32, "s64": np.int64, "u32": np.uint32, "s8": np.int8, "u8": np.uint8}
COMBINERS = {"add": "add", "max": "maximum", "min": "minimum", "mul": "multiply", "set": None}


@dataclass
class GatherCase:
    """One random gather (and the scatter that is its transpose)."""

    operand: tuple[int, ...]
    indices: tuple[int, ...]
    out: tuple[int, ...]
    offset_dims: list[int]
    collapsed: list[int]
    start_index_map: list[int]
    index_vector_dim: int
    slice_sizes: list[int]
    operand_batching: list[int]
    indices_batching: list[int]
    index_type: str

    def _attrs(self, gather: bool) -> str:
        def ints(v: list[int]) -> str:
            return "{" + ",".join(map(str, v)) + "}"
        if gather:
            a = (f"offset_dims={ints(self.offset_dims)}, collapsed_slice_dims={ints(self.collapsed)}, "
                 f"start_index_map={ints(self.start_index_map)}")
            if self.operand_batching:
                a += (f", operand_batching_dims={ints(self.operand_batching)}, "
                      f"start_indices_batching_dims={ints(self.indices_batching)}")
            return a + f", index_vector_dim={self.index_vector_dim}, slice_sizes={ints(self.slice_sizes)}"
        a = (f"update_window_dims={ints(self.offset_dims)}, inserted_window_dims={ints(self.collapsed)}, "
             f"scatter_dims_to_operand_dims={ints(self.start_index_map)}")
        if self.operand_batching:
            a += (f", input_batching_dims={ints(self.operand_batching)}, "
                  f"scatter_indices_batching_dims={ints(self.indices_batching)}")
        return a + f", index_vector_dim={self.index_vector_dim}"

    def gather_text(self, dtype: str = "f32") -> str:
        """An HLO module computing the gather of parameter 0 at parameter 1."""
        x, i, o = _shape(dtype, self.operand), _shape(self.index_type, self.indices), _shape(dtype, self.out)
        return (f"HloModule g, entry_computation_layout={{({x}, {i})->{o}}}\n\nENTRY main {{\n"
                f"  x = {x} parameter(0)\n  i = {i} parameter(1)\n"
                f"  ROOT g = {o} gather(x, i), {self._attrs(True)}\n}}\n")

    def scatter_text(self, combiner: str, dtype: str = "f32") -> str:
        """An HLO module scattering parameter 2 into parameter 0 at parameter 1."""
        x, i, u = _shape(dtype, self.operand), _shape(self.index_type, self.indices), _shape(dtype, self.out)
        op = COMBINERS[combiner]
        body = (f"  b = {dtype}[] parameter(1)\n  ROOT r = {dtype}[] {op}(a, b)" if op
                else f"  ROOT b = {dtype}[] parameter(1)")  # set: the update replaces
        return (f"HloModule s, entry_computation_layout={{({x}, {i}, {u})->{x}}}\n\n"
                f"comb {{\n  a = {dtype}[] parameter(0)\n{body}\n}}\n\n"
                f"ENTRY main {{\n  x = {x} parameter(0)\n  i = {i} parameter(1)\n  u = {u} parameter(2)\n"
                f"  ROOT s = {x} scatter(x, i, u), {self._attrs(False)}, to_apply=comb\n}}\n")


def _shape(dtype: str, dims: tuple[int, ...]) -> str:
    return f"{dtype}[{','.join(map(str, dims))}]"


@st.composite
def gather_cases(draw: st.DrawFn) -> GatherCase:
    """A valid gather: XLA's rules by construction."""
    rank = draw(st.integers(1, 3))
    operand = tuple(draw(st.lists(st.integers(1, 5), min_size=rank, max_size=rank)))
    dims = list(range(rank))
    n_batching = draw(st.integers(0, min(1, rank - 1)))
    operand_batching = sorted(draw(st.permutations(dims)).__getitem__(slice(n_batching)))
    rest = [d for d in dims if d not in operand_batching]
    # at least one indexed dimension and no zero-size slice: the loop IR has no empty arrays
    start_index_map = list(draw(st.permutations(rest)))[: draw(st.integers(1, len(rest)))]
    collapsed = sorted(d for d in start_index_map if draw(st.booleans()))
    slice_sizes = [1 if d in collapsed or d in operand_batching else draw(st.integers(1, operand[d]))
                   for d in dims]
    k = len(start_index_map)
    n_index_batch = draw(st.integers(n_batching, n_batching + 2))
    batch_sizes = [draw(st.integers(1, 3)) for _ in range(n_index_batch)]
    batch_pos = list(draw(st.permutations(range(n_index_batch))))[:n_batching]
    for p, d in zip(batch_pos, operand_batching, strict=True):
        batch_sizes[p] = operand[d]
    implicit = k == 1 and draw(st.booleans())
    ivd = n_index_batch if implicit else draw(st.integers(0, n_index_batch))
    indices = list(batch_sizes)
    if not implicit:
        indices.insert(ivd, k)
    indices_batching = [p if p < ivd else p + 1 for p in batch_pos]
    offsets = [slice_sizes[d] for d in dims if d not in collapsed and d not in operand_batching]
    out_rank = n_index_batch + len(offsets)
    offset_dims = sorted(list(draw(st.permutations(range(out_rank))))[: len(offsets)])
    it_o, it_b = iter(offsets), iter(batch_sizes)
    out = tuple(next(it_o) if d in offset_dims else next(it_b) for d in range(out_rank))
    return GatherCase(operand, tuple(indices), out, offset_dims, collapsed, start_index_map, ivd,
                      slice_sizes, operand_batching, indices_batching,
                      draw(st.sampled_from(sorted(INDEX_TYPES))))


def index_values(case: GatherCase, seed: int) -> np.ndarray:
    """Indices past both ends of every operand dimension (clamped by gather, dropped by scatter)."""
    r = np.random.RandomState(seed)
    top = max(case.operand) + 3
    dt = INDEX_TYPES[case.index_type]
    lo = 0 if np.dtype(dt).kind == "u" else -3
    return r.randint(lo, top + 1, size=case.indices).astype(dt)
