"""Hypothesis strategies for random well-formed loop-IR programs (reused by the pass property tests).

    from ir.strategies import modules, inputs_for      # tests/ on sys.path (package test dirs)

or load this file by path. ``modules()`` draws a verified ``pyprecision.ir.Module`` whose ``@main`` uses
loads (affine, sb_atom with partition broadcast, generic gathers), unary ops, binary ops with value and
scalar operands, comparisons + select, casts between float dtypes, matmuls (including identity
transposes), stores into internal tensors that are loaded again later, and a store to every output.
``inputs_for(function)`` draws matching input arrays.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from pyprecision import ir

__all__ = ["FLOAT_NAMES", "inputs_for", "modules", "program_texts"]

FLOAT_NAMES = (
    "float32",
    "float32",
    "float32",
    "bfloat16",
    "float16",
    "float32r",
    "float8e4",
    "float8e4m3fn",
    "float8_e5m2",
)
_SHAPES = ((2, 3), (3, 2), (3, 3), (2, 2))
_UNARY = ("copy", "neg", "abs", "relu", "square", "tanh", "sigmoid", "exp")
_BINARY = ("add", "sub", "mul", "max", "min")
_SCALARS = (0.0, -0.0, 0.5, 1.0, -2.0, 0.1, 3.25, 1e-3)


@st.composite
def modules(draw: Any, max_instructions: int = 24, allow_narrow_inputs: bool = True) -> ir.Module:
    """A random verified module with one function ``@main``."""
    f = ir.Function("main")
    m = ir.Module([f])
    blk = f.add_block("bb0")
    b = ir.IRBuilder(f, block=blk)
    dt = st.sampled_from(FLOAT_NAMES if allow_narrow_inputs else ("float32",))
    vals: list[ir.Value] = []

    n_in = draw(st.integers(1, 3))
    for i in range(n_in):
        shape = draw(st.sampled_from(_SHAPES))
        t = f.add_tensor(ir.Tensor(f"in{i}", shape, draw(dt), "input"))
        vals.append(b.create_load(t, name=f"x{i}").result)
    if draw(st.booleans()):  # an integer index path: gather rows of the first input
        n = draw(st.sampled_from((2, 3)))
        src = f.get_tensor("in0")
        it = f.add_tensor(ir.Tensor("idx", (n,), "int32", "input"))
        idx = b.create_load(it, name="idx").result
        res = ir.Value(f.unique_name("gather"), src.dtype, (n,) + src.shape[1:])
        vals.append(b.insert(ir.GenericLoad(src, res, idx)).result)  # type: ignore[union-attr]
    if draw(st.booleans()):
        shape = draw(st.sampled_from(_SHAPES))
        w = np.asarray(
            draw(
                st.lists(
                    st.sampled_from((0.5, -1.0, 0.25, 2.0, 0.0, 1.5)),
                    min_size=shape[0] * shape[1],
                    max_size=shape[0] * shape[1],
                )
            ),
            dtype=np.float32,
        ).reshape(shape)
        t = f.add_tensor(ir.Tensor("w", shape, "float32", "const", w))
        vals.append(b.create_load(t, name="w", cls=ir.SBAtomLoad).result)
    if draw(st.booleans()):
        n = draw(st.sampled_from((2, 3)))
        t = f.add_tensor(
            ir.SingleValueTensor("bias", (1, n), "float32", draw(st.sampled_from(_SCALARS)))
        )
        rows = draw(st.sampled_from((2, 3)))
        vals.append(
            b.create_load(
                t, name="bias", cls=ir.SBAtomLoad, has_partition_broadcast=True, shape=(rows, n)
            ).result
        )

    n_ops = draw(st.integers(1, max_instructions))
    n_spill = 0
    for _ in range(n_ops):
        kind = draw(
            st.sampled_from(("unary", "binary", "scalar", "select", "cast", "matmul", "spill"))
        )
        v = draw(st.sampled_from(vals))
        same = [u for u in vals if u.shape == v.shape]
        if kind == "unary":
            out = draw(st.sampled_from(("float32", v.dtype.name)))
            vals.append(b.create_unary(draw(st.sampled_from(_UNARY)), v, out).result)
        elif kind == "binary":
            w = draw(st.sampled_from(same))
            out = draw(st.sampled_from(("float32", v.dtype.name, w.dtype.name)))
            vals.append(b.create_binary(draw(st.sampled_from(_BINARY)), v, w, out).result)
        elif kind == "scalar":
            s = ir.ScalarValue(draw(st.sampled_from(_SCALARS)), draw(dt))
            op = draw(st.sampled_from(_BINARY))
            args = (v, s) if draw(st.booleans()) else (s, v)
            vals.append(b.create_binary(op, *args, v.dtype).result)
        elif kind == "select":
            w = draw(st.sampled_from(same))
            p = b.create_binary(draw(st.sampled_from(ir.COMPARE_KINDS)), v, w).result
            other = w if draw(st.booleans()) else ir.ScalarValue(0.0, "float32")
            vals.append(b.create_select(p, v, other, draw(dt)).result)
        elif kind == "cast":
            vals.append(b.cast_to(v, draw(dt)).result)
        elif kind == "matmul":
            partners = [u for u in vals if u.shape[0] == v.shape[0]]
            w = draw(st.sampled_from(partners))
            vals.append(
                b.create_matmul(
                    v, w, draw(st.sampled_from(("float32", "float32", "bfloat16")))
                ).result
            )
        else:
            n_spill += 1
            t = f.add_tensor(
                ir.Tensor(
                    f"tmp{n_spill}",
                    v.shape,
                    draw(st.sampled_from(("float32", v.dtype.name))),
                    "internal",
                )
            )
            b.create_store(v, t)
            vals.append(b.create_load(t, name=f"r{n_spill}").result)

    n_out = draw(st.integers(1, 2))
    for k in range(n_out):
        v = vals[-1] if k == 0 else draw(st.sampled_from(vals))
        t = f.add_tensor(
            ir.Tensor(
                f"out{k}", v.shape, draw(st.sampled_from(("float32", v.dtype.name))), "output"
            )
        )
        b.create_store(v, t)
    ir.verify(m)
    return m


def program_texts(**kw: Any) -> st.SearchStrategy[str]:
    """Printed text of ``modules(**kw)``."""
    return modules(**kw).map(ir.to_text)


@st.composite
def inputs_for(
    draw: Any, function: ir.Function, lo: float = -4.0, hi: float = 4.0
) -> dict[str, np.ndarray]:
    """Input arrays for every input tensor of ``function``: float32 values in [lo, hi] for float tensors,
    integers in [0, 1] for integer tensors (valid row indices of every generated gather)."""
    out: dict[str, np.ndarray] = {}
    for t in function.inputs:
        n = int(np.prod(t.shape))
        if t.dtype.is_float:
            xs = draw(st.lists(st.floats(lo, hi, width=32), min_size=n, max_size=n))
            out[t.name] = np.asarray(xs, dtype=np.float32).reshape(t.shape)
        else:
            xs = draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))
            out[t.name] = np.asarray(xs, dtype=t.dtype.np_dtype).reshape(t.shape)
    return out
