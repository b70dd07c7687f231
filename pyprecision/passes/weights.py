"""staticCastLoadTensor (spec 002 :54–:79): the compile-time weight cast, re-encoded by the C core."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from pyprecision.errors import PassError
from pyprecision.ir import DType, Function, Instruction, SingleValueTensor, Tensor


def static_cast_values(values: Any, dtype: DType) -> np.ndarray:
    """``dt.static_cast``: the weight's elements converted to ``dtype`` by the cast core (RNE,
    the Neuron default saturation), as an array of ``dtype.np_dtype``."""
    arr = np.asarray(values)
    if dtype.fmt is None:  # float32 / integers: numpy's RNE conversion
        return arr.astype(dtype.np_dtype)
    from pyprecision.kernel import round_to_format  # passes -> kernel (ARCHITECTURE)

    return round_to_format(arr, dtype.fmt).astype(dtype.np_dtype, copy=False)


def _splat_value(tensor: SingleValueTensor, dtype: DType) -> float | int:
    """The splat's element at its current dtype, re-encoded to ``dtype`` (so the stored number is
    exact at the new dtype and no second rounding from the original literal can happen)."""
    element = static_cast_values(np.array([tensor.value], dtype=np.float64), tensor.dtype)
    new = static_cast_values(element, dtype)[0]
    return float(new) if dtype.is_float else int(new)


def static_cast_load_tensor(
    load: Instruction, dtype: DType, f: Function, tensor_map: dict[Any, Tensor],
    single_load: Callable[[Tensor], bool] | None = None,
) -> tuple[str, int]:
    """Point ``load`` at a copy of its weight re-encoded to ``dtype``; returns how (``splat``: the
    single-reader splat re-encoded in place, :61; ``reuse``: a memo hit; ``clone``: a new casted
    copy) and the bytes newly cast (0 unless ``clone``).

    ``single_load(tensor)`` answers "is this load the tensor's only reader" (default: count the
    accesses; the pass passes a per-function precomputed answer so the walk stays linear).
    Raises PassError("Can only cast weight") when the tensor is not const (:56).
    """
    tensor: Tensor = load.tensor  # type: ignore[attr-defined]
    if not tensor.is_const:  # :56 THE GUARD (an assert in the seed; kept under python -O)
        raise PassError("Can only cast weight")
    load.mutate_dst_ty(dtype)  # :58 push the dst type onto the load
    only_reader = single_load if single_load is not None else (lambda t: t.n_loads == 1)
    if isinstance(tensor, SingleValueTensor) and only_reader(tensor):  # :61 (decision P12)
        tensor.value = _splat_value(tensor, dtype)  # type: ignore[assignment]
        tensor.mutate_tensor_ty(dtype)  # :62 a splat just flips its dtype in place
        return "splat", 0
    key = (tensor, dtype)  # the memo is keyed by (weight, dtype) (decision P12)
    how, added = "reuse", 0
    new_tensor = tensor_map.get(key)  # :63
    if new_tensor is None:  # :64 KeyError
        name = f.unique_tensor_name(f"{tensor.name}_{dtype.name}")  # :67-:69 uniquely named
        f.allocate_id()  # :70
        new_tensor = tensor.clone(name)  # :73
        if isinstance(new_tensor, SingleValueTensor) and isinstance(tensor, SingleValueTensor):
            new_tensor.value = _splat_value(tensor, dtype)  # type: ignore[assignment]
        else:
            new_tensor.value = static_cast_values(tensor.value, dtype)  # :73 compile-time cast
        new_tensor.mutate_tensor_ty(dtype)
        f.add_tensor(new_tensor)
        tensor_map[key] = new_tensor  # :74 MEMOIZE
        how, added = "clone", tensor.size_in_bytes  # :75 casted_weights += size_in_bytes
    load.dma_access.replace_tensor(new_tensor)  # type: ignore[attr-defined]  # :77
    return how, added
