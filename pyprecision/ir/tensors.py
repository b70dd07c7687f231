"""Memory data of the loop-level IR: tensors declared in a function (``Tensor``, the splat
``SingleValueTensor``) and the access views instructions hold on them (``NeuronAP``).

A memory tensor is read only by load-like instructions and written only by store-like instructions, all
through a ``NeuronAP``; a tensor keeps its attached views and the facts the passes ask about them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from pyprecision.ir.dtypes import DType, as_dtype
from pyprecision.ir.values import Value, _DTypeAttr, _exclusions

if TYPE_CHECKING:  # pragma: no cover
    from pyprecision.ir.core import Function
    from pyprecision.ir.instructions import Instruction

__all__ = ["TENSOR_KINDS", "NeuronAP", "SingleValueTensor", "Tensor"]

TENSOR_KINDS = ("input", "output", "const", "internal")


class Tensor:
    """A memory tensor declared in a function: name, shape, dtype and kind (input/output/const/internal).

    ``value`` holds a const tensor's elements as a numpy array of ``dtype.np_dtype``. Accesses are the
    NeuronAPs of attached instructions; ``load_insts`` / ``store_insts`` list their instructions.
    """

    dtype = _DTypeAttr()

    def __init__(
        self,
        name: str,
        shape: Iterable[int],
        dtype: Any,
        kind: str = "internal",
        value: np.ndarray | None = None,
    ):
        if kind not in TENSOR_KINDS:
            raise ValueError(f"tensor kind must be one of {TENSOR_KINDS}, got {kind!r}")
        self.name = name
        self.shape: tuple[int, ...] = tuple(int(s) for s in shape)
        self.dtype = dtype
        self.kind = kind
        self.value = value
        self.function: Function | None = None
        self._aps: dict[NeuronAP, None] = {}
        # Access facts kept up to date by NeuronAP._attach/_detach and the NeuronAP.reinterpret /
        # .index setters, so the passes' per-tensor questions are O(1) (see _access_changed).
        self._counts = {"load": 0, "store": 0}  # n_loads / n_stores
        self._n_reinterpreted = 0  # attached views with a reinterpret dtype
        self._n_indirect = 0  # attached views with a runtime row index (Generic*)
        self._version = 0  # bumped on every change to the attached views
        self._insts: tuple[int, list[Instruction], list[Instruction]] | None = None

    def __repr__(self) -> str:
        return f"@{self.name}"

    # -- kind -----------------------------------------------------------------------------------
    @property
    def is_input(self) -> bool:
        """Declared ``input``."""
        return self.kind == "input"

    @property
    def is_output(self) -> bool:
        """Declared ``output``."""
        return self.kind == "output"

    @property
    def is_input_or_output(self) -> bool:
        """Declared ``input`` or ``output`` (a boundary tensor)."""
        return self.kind in ("input", "output")

    @property
    def is_const(self) -> bool:
        """Declared ``const`` (a weight with compile-time bytes)."""
        return self.kind == "const"


    @property
    def parent_as_function(self) -> Function | None:
        """The function that declares this tensor."""
        return self.function

    @property
    def tensor(self) -> Tensor:
        """The tensor itself (so tensors and views answer ``.tensor`` alike)."""
        return self

    # -- accesses -------------------------------------------------------------------------------
    @property
    def accesses(self) -> list[NeuronAP]:
        """Every attached access view, in creation order."""
        return list(self._aps)

    def _access_changed(self) -> None:
        self._version += 1

    def _owners(self) -> tuple[list[Instruction], list[Instruction]]:
        """(loaders, storers): distinct owners per role in access order, cached until the views change."""
        cached = self._insts
        if cached is None or cached[0] != self._version:
            loads: dict[Instruction, None] = {}
            stores: dict[Instruction, None] = {}
            for ap in self._aps:
                (loads if ap.role == "load" else stores)[ap.owner] = None  # type: ignore[index]
            cached = self._insts = (self._version, list(loads), list(stores))
        return cached[1], cached[2]

    @property
    def load_insts(self) -> list[Instruction]:
        """Distinct instructions that read this tensor (TensorUtils.load_insts); a fresh list."""
        return list(self._owners()[0])

    @property
    def store_insts(self) -> list[Instruction]:
        """Distinct instructions that write this tensor (TensorUtils.store_insts); a fresh list."""
        return list(self._owners()[1])

    @property
    def n_loads(self) -> int:
        """Number of read accesses."""
        return self._counts["load"]

    @property
    def n_stores(self) -> int:
        """Number of write accesses."""
        return self._counts["store"]

    @property
    def single_def_single_use(self) -> bool:
        """Exactly one write access and exactly one read access."""
        return self.n_stores == 1 and self.n_loads == 1

    @property
    def is_reinterpreted(self) -> bool:
        """Some access views this tensor's bits as another dtype."""
        return self._n_reinterpreted > 0

    @property
    def are_all_dim_affine(self) -> bool:
        """No access is indirect (GenericLoad / GenericStore index a tensor by runtime values)."""
        return self._n_indirect == 0

    @property
    def size_in_bytes(self) -> int:
        """Elements × bytes per element at the declared dtype."""
        return math.prod(self.shape) * self.dtype.itemsize

    @property
    def num_elements(self) -> int:
        """Number of elements."""
        return math.prod(self.shape)

    def mutate_tensor_ty(self, dtype: Any) -> None:
        """Retype the tensor in place (a const's ``value`` is not converted; keep it consistent)."""
        self.dtype = as_dtype(dtype)


    def replace_all_uses_with(self, new: Tensor) -> int:
        """Point every access of this tensor at ``new``. Returns the count."""
        return self.replace_all_uses_with_except(new, None)

    def replace_all_uses_with_except(self, new: Tensor, except_: Any) -> int:
        """Point every access at ``new`` except accesses owned by instructions in ``except_``."""
        skip = _exclusions(except_)
        n = 0
        for ap in list(self._aps):
            if id(ap.owner) in skip:
                continue
            ap.replace_tensor(new)
            n += 1
        return n


    def clone(self, name: str | None = None) -> Tensor:
        """A detached copy (same kind, shape, dtype, a copy of the value); add it with Function.add_tensor."""
        val = None if self.value is None else np.array(self.value, copy=True)
        return Tensor(name or self.name, self.shape, self.dtype, self.kind, val)


class SingleValueTensor(Tensor):
    """A const tensor whose every element is one number (a splat). ``value`` is a Python float/int; the
    element is that number rounded to ``dtype``. Retyping needs no byte re-encoding."""

    def __init__(self, name: str, shape: Iterable[int], dtype: Any, value: float):
        super().__init__(name, shape, dtype, "const", None)
        self.value = float(value) if self.dtype.is_float else int(value)  # type: ignore[assignment]

    def clone(self, name: str | None = None) -> SingleValueTensor:
        """A detached copy."""
        return SingleValueTensor(name or self.name, self.shape, self.dtype, self.value)  # type: ignore[arg-type]


class NeuronAP:
    """An access view of a memory tensor owned by one instruction.

    ``role`` is "load" or "store"; ``reinterpret`` is None or a dtype of the same width through which the
    tensor's bits are viewed; ``index`` is the SSA row-index value of an indirect (generic) access.
    """

    def __init__(self, tensor: Tensor, reinterpret: Any = None, role: str = "load"):
        self.tensor = tensor
        self._reinterpret: DType | None = None if reinterpret is None else as_dtype(reinterpret)
        self.role = role
        self.owner: Instruction | None = None
        self._index: Value | None = None  # set by Generic* instructions

    @property
    def reinterpret(self) -> DType | None:
        """None, or the same-width dtype through which the tensor's bits are viewed."""
        return self._reinterpret

    @reinterpret.setter
    def reinterpret(self, dtype: Any) -> None:
        new = None if dtype is None else as_dtype(dtype)
        attached = self.is_attached
        if attached:
            self._detach()
        self._reinterpret = new
        if attached:
            self._attach()

    @property
    def index(self) -> Value | None:
        """The SSA row-index value of an indirect (generic) access, else None."""
        return self._index

    @index.setter
    def index(self, value: Value | None) -> None:
        attached = self.is_attached
        if attached:
            self._detach()
        self._index = value
        if attached:
            self._attach()

    @property
    def is_attached(self) -> bool:
        """The view is registered with its tensor (its instruction is built and not erased)."""
        return self in self.tensor._aps

    def __repr__(self) -> str:
        r = f" as {self.reinterpret}" if self.reinterpret is not None else ""
        return f"@{self.tensor.name}{r}"

    @property
    def dtype(self) -> DType:
        """The element type seen through this view."""
        r = self._reinterpret
        return r if r is not None else self.tensor.dtype

    @property
    def shape(self) -> tuple[int, ...]:
        """The viewed tensor's shape."""
        return self.tensor.shape

    @property
    def is_reinterpreted(self) -> bool:
        """The view reinterprets the tensor's bits."""
        return self._reinterpret is not None

    @property
    def is_input(self) -> bool:
        """The viewed tensor is an input."""
        return self.tensor.is_input

    @property
    def is_output(self) -> bool:
        """The viewed tensor is an output."""
        return self.tensor.is_output

    @property
    def is_input_or_output(self) -> bool:
        """The viewed tensor is an input or an output."""
        return self.tensor.is_input_or_output


    @property
    def allowed_dtypes(self) -> tuple[DType, ...]:
        """The legal dtypes of the tensor's sole producer (a TensorScalarGEPOp's ``allowed_dtypes``);
        every dtype when the producer is not a single instruction with such a set."""
        from pyprecision.ir.dtypes import DTYPES

        stores = self.tensor.store_insts
        if len(stores) == 1:
            return tuple(getattr(stores[0], "allowed_dtypes", tuple(DTYPES.values())))
        return tuple(DTYPES.values())

    def replace_tensor(self, new: Tensor) -> None:
        """Make this view access ``new`` instead (updating both tensors' access lists)."""
        attached = self.is_attached
        if attached:
            self._detach()
        self.tensor = new
        if attached:
            self._attach()


    def _attach(self) -> None:
        t = self.tensor
        if self not in t._aps:
            t._aps[self] = None
            self._count(t, 1)

    def _detach(self) -> None:
        t = self.tensor
        if t._aps.pop(self, 0) is None:
            self._count(t, -1)

    def _count(self, t: Tensor, step: int) -> None:
        t._counts[self.role] += step
        if self._reinterpret is not None:
            t._n_reinterpreted += step
        if self._index is not None:
            t._n_indirect += step
        t._access_changed()
