"""Blocks (doubly linked instruction lists), functions (tensors + blocks + ids) and modules."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from pyprecision.ir.instructions import Instruction
from pyprecision.ir.memory import CallOpBase
from pyprecision.ir.tensors import Tensor
from pyprecision.ir.values import Value

__all__ = ["Block", "Function", "Module", "is_trivially_dead", "recursively_dce"]


class Block:
    """A straight-line sequence of instructions. Blocks of a function run one after the other."""

    def __init__(self, name: str):
        self.name = name
        self.parent: Function | None = None
        self.first: Instruction | None = None
        self.last: Instruction | None = None
        self._len = 0

    def __repr__(self) -> str:
        return f"^{self.name}"

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[Instruction]:
        """Iterate over a snapshot (safe while inserting or erasing)."""
        return iter(self.instructions)

    @property
    def instructions(self) -> list[Instruction]:
        """The instructions in order (a fresh list)."""
        out = []
        i = self.first
        while i is not None:
            out.append(i)
            i = i.next
        return out

    def _check_detached(self, inst: Instruction) -> None:
        if inst.parent is not None:
            raise ValueError("instruction is already in a block; remove_from_parent() it first")

    def append(self, inst: Instruction) -> Instruction:
        """Add ``inst`` at the end."""
        self._check_detached(inst)
        inst.parent, inst.prev, inst.next = self, self.last, None
        if self.last is None:
            self.first = inst
        else:
            self.last.next = inst
        self.last = inst
        self._len += 1
        return inst

    def push_front(self, inst: Instruction) -> Instruction:
        """Add ``inst`` at the front."""
        if self.first is None:
            return self.append(inst)
        return self._link_before(inst, self.first)

    def _link_before(self, inst: Instruction, anchor: Instruction) -> Instruction:
        self._check_detached(inst)
        inst.parent, inst.prev, inst.next = self, anchor.prev, anchor
        if anchor.prev is None:
            self.first = inst
        else:
            anchor.prev.next = inst
        anchor.prev = inst
        self._len += 1
        return inst

    def _link_after(self, inst: Instruction, anchor: Instruction) -> Instruction:
        if anchor.next is None:
            return self.append(inst)
        return self._link_before(inst, anchor.next)

    def _unlink(self, inst: Instruction) -> None:
        if inst.prev is None:
            self.first = inst.next
        else:
            inst.prev.next = inst.next
        if inst.next is None:
            self.last = inst.prev
        else:
            inst.next.prev = inst.prev
        inst.parent = inst.prev = inst.next = None
        self._len -= 1


class Function:
    """A function: its memory tensors (in declaration order), its blocks, an id counter and the set of
    value names in use."""

    def __init__(self, name: str):
        self.name = name
        self.module: Module | None = None
        self._tensors: dict[str, Tensor] = {}
        self.blocks: list[Block] = []
        self._next_id = 0
        self._names: set[str] = set()
        self._name_counter = 0
        self._suffix: dict[str, int] = {}

    def __repr__(self) -> str:
        return f"<Function @{self.name}>"

    # -- tensors --------------------------------------------------------------------------------
    @property
    def tensors(self) -> list[Tensor]:
        """The declared tensors, in declaration order."""
        return list(self._tensors.values())

    ordered_all_tensors = tensors

    @property
    def inputs(self) -> list[Tensor]:
        """Input tensors in declaration order (the calling convention of CallOp)."""
        return [t for t in self._tensors.values() if t.is_input]

    @property
    def outputs(self) -> list[Tensor]:
        """Output tensors in declaration order."""
        return [t for t in self._tensors.values() if t.is_output]

    def get_tensor(self, name: str) -> Tensor:
        """The tensor called ``name`` (KeyError if none)."""
        return self._tensors[name]

    def has_tensor(self, name: str) -> bool:
        """A tensor called ``name`` is declared."""
        return name in self._tensors

    def add_tensor(self, tensor: Tensor) -> Tensor:
        """Declare ``tensor`` (its name must be new; see unique_tensor_name)."""
        if tensor.name in self._tensors:
            raise ValueError(f"tensor @{tensor.name} already declared in @{self.name}")
        tensor.function = self
        self._tensors[tensor.name] = tensor
        return tensor

    def remove_tensor(self, tensor: Tensor) -> None:
        """Undeclare ``tensor`` (it must have no accesses)."""
        if tensor.accesses:
            raise ValueError(f"tensor @{tensor.name} is still accessed")
        del self._tensors[tensor.name]
        tensor.function = None

    def unique_tensor_name(self, base: str) -> str:
        """``base`` if free, else ``base_1``, ``base_2``, ..."""
        if base not in self._tensors:
            return base
        k = 1
        while f"{base}_{k}" in self._tensors:
            k += 1
        return f"{base}_{k}"

    def drop_dead_tensors(self) -> int:
        """Undeclare internal and const tensors that no instruction accesses; returns how many."""
        dead = [t for t in self._tensors.values() if t.kind in ("internal", "const") and not t._aps]
        for t in dead:
            self.remove_tensor(t)
        return len(dead)


    # -- blocks and instructions -------------------------------------------------------------------
    def add_block(self, name: str | None = None) -> Block:
        """Append a new empty block (default name ``bb<N>``)."""
        b = Block(name if name is not None else f"bb{len(self.blocks)}")
        b.parent = self
        self.blocks.append(b)
        return b

    @property
    def entry(self) -> Block:
        """The first block (created if the function has none)."""
        return self.blocks[0] if self.blocks else self.add_block()

    def instructions(self) -> Iterator[Instruction]:
        """Every instruction, block by block (snapshot per block)."""
        for b in list(self.blocks):
            yield from b.instructions

    def values(self) -> Iterator[Value]:
        """Every result value, in program order."""
        for i in self.instructions():
            if i.result is not None:
                yield i.result

    def allocate_id(self) -> int:
        """A fresh instruction id."""
        self._next_id += 1
        return self._next_id


    def reserve_name(self, name: str) -> None:
        """Record ``name`` as a used value name."""
        self._names.add(name)

    def unique_name(self, base: str | None = None) -> str:
        """A value name not yet used in this function (``base``, ``base.1``, ...; numbered if None)."""
        if base is None:
            while str(self._name_counter) in self._names:
                self._name_counter += 1
            name = str(self._name_counter)
        elif base not in self._names:
            name = base
        else:
            k = self._suffix.get(base, 1)
            while f"{base}.{k}" in self._names:
                k += 1
            self._suffix[base] = k + 1
            name = f"{base}.{k}"
        self._names.add(name)
        return name

    def dce(self) -> int:
        """Remove every dead instruction (unused pure results, stores into never-read internal tensors),
        recursively; then drop dead tensors. Returns the number of instructions removed."""
        n = recursively_dce(list(self.instructions()))
        self.drop_dead_tensors()
        return n


class Module:
    """An ordered collection of functions."""

    def __init__(self, functions: Iterable[Function] = ()):
        self._functions: dict[str, Function] = {}
        for f in functions:
            self.add_function(f)

    @property
    def functions(self) -> list[Function]:
        """The functions in order."""
        return list(self._functions.values())

    def add_function(self, f: Function) -> Function:
        """Add ``f`` (its name must be new)."""
        if f.name in self._functions:
            raise ValueError(f"function @{f.name} already defined")
        f.module = self
        self._functions[f.name] = f
        return f

    def get_function(self, name: str) -> Function:
        """The function called ``name`` (KeyError if none)."""
        return self._functions[name]

    def has_function(self, name: str) -> bool:
        """A function called ``name`` exists."""
        return name in self._functions

    @property
    def main(self) -> Function:
        """``@main`` if defined, else the first function."""
        if "main" in self._functions:
            return self._functions["main"]
        if not self._functions:
            raise ValueError("module has no functions")
        return next(iter(self._functions.values()))


def is_trivially_dead(inst: Instruction) -> bool:
    """Attached, and either a pure instruction with an unused result or a store-only instruction whose
    every written tensor is an internal tensor that nothing reads."""
    if inst.parent is None:
        return False
    if isinstance(inst, CallOpBase):
        return False
    if inst.has_side_effects:
        stores = [ap for ap in inst.aps if ap.role == "store"]
        return all(ap.tensor.kind == "internal" and ap.tensor.n_loads == 0 for ap in stores)
    return inst.result is not None and not inst.result._uses


def recursively_dce(insts: Iterable[Instruction]) -> int:
    """Erase each dead instruction in ``insts`` and, transitively, the producers that become dead.
    Returns the number erased."""
    work = list(insts)
    n = 0
    while work:
        inst = work.pop()
        if not is_trivially_dead(inst):
            continue
        feeders: list[Instruction] = [
            op.owner for op in inst.operands if isinstance(op, Value) and op.owner is not None
        ]
        read = [ap.tensor for ap in inst.aps if ap.role == "load"]
        inst.erase_from_parent()
        n += 1
        work.extend(feeders)
        for t in read:
            if t.kind == "internal" and t.n_loads == 0:
                work.extend(t.store_insts)
    return n


