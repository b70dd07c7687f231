"""``ir.clone_module`` (decisions P21, P23) on every real model of tests/data, as lowered and after
the precision passes (what the value memo copies): the copy prints as the original, shares no
mutable object with it (no IR object, list, dict or set; only dtypes, strings, numbers, tuples,
locations and constant arrays), and rewriting the copy leaves the original's text unchanged."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from pyprecision import hlo, ir, lower
from pyprecision.emulate import DEFAULT_HLO_PASSES
from pyprecision.errors import LoweringError, PassError, VerifyError
from pyprecision.frontend import parse_flags
from pyprecision.ir.clone import _COPIED
from pyprecision.passes import run_pipeline
from tests.ir.test_clone import TEXT
from tests.models_data import load_model, model_names

MUTABLE = (list, dict, set, *_COPIED)
FLAGS = [[], ["--auto-cast", "matmult"], ["--auto-cast", "all", "--auto-cast-type", "fp8_e4m3"]]


def _mutable_ids(module: ir.Module) -> dict[int, Any]:
    """Every mutable object reachable from ``module`` through attributes and containers."""
    seen: dict[int, Any] = {}
    todo: list[Any] = [module]
    while todo:
        x = todo.pop()
        if isinstance(x, (str, bytes, int, float, np.ndarray)) or x is None or id(x) in seen:
            continue
        if isinstance(x, MUTABLE):
            seen[id(x)] = x
        if isinstance(x, dict):
            todo.extend(x.keys())
            todo.extend(x.values())
        elif isinstance(x, (list, set, tuple, frozenset)):
            todo.extend(x)
        elif isinstance(x, _COPIED):  # a tensor's _insts is a cache the copy rebuilds
            todo.extend(v for k, v in vars(x).items() if k != "_insts")
    return seen


def _check(module: ir.Module) -> None:
    text = ir.to_text(module)
    copy = ir.clone_module(module)
    assert ir.to_text(copy) == text
    ir.verify(copy)
    mine, theirs = _mutable_ids(module), _mutable_ids(copy)
    shared = [type(x).__name__ for i, x in theirs.items() if i in mine]
    assert not shared, shared[:10]
    assert len(theirs) == len(mine)  # the same structure, object for object
    for f, g in zip(module.functions, copy.functions, strict=True):
        for a, b in zip(f.instructions(), g.instructions(), strict=True):
            assert type(a) is type(b) and a.id == b.id
            if a.result is not None:
                assert b.result is not None and b.result.dtype is a.result.dtype
                assert [(type(u.user), u.index) for u in a.result.uses] == \
                    [(type(u.user), u.index) for u in b.result.uses]
        for t, u in zip(f.tensors, g.tensors, strict=True):
            assert u.dtype is t.dtype and u.value is t.value
            assert [ap.owner.id for ap in t.accesses] == [ap.owner.id for ap in u.accesses]
            assert [i.id for i in t.load_insts] == [i.id for i in u.load_insts]
    _mutate(copy)
    assert ir.to_text(module) == text  # the original is untouched


def _mutate(copy: ir.Module) -> None:
    """Rewrite the copy everywhere a pass could: retype every value, rename, add and drop
    tensors and instructions, change counters and access views."""
    for f in copy.functions:
        for inst in list(f.instructions()):
            if inst.result is not None and inst.result.dtype is ir.float32:
                inst.result.dtype = ir.bfloat16
            for op in inst.operands:
                if isinstance(op, ir.ScalarValue) and op.dtype is ir.float32:
                    op.dtype = ir.bfloat16
        for t in f.tensors:
            for ap in list(t.accesses):
                if ap.reinterpret is None and t.dtype is ir.float32:
                    ap.reinterpret = ir.int32
        f.add_tensor(ir.Tensor(f.unique_tensor_name("extra"), (1,), "float32", "internal"))
        f.unique_name("fresh")
        insts = list(f.instructions())
        for inst in insts[len(insts) // 2:]:  # the second half, stores and calls included
            if inst.result is None or not inst.result.uses:
                inst.erase_from_parent()
        f.dce()


@pytest.mark.parametrize("name", model_names())
def test_a_clone_prints_alike_shares_nothing_mutable_and_leaves_the_original(name: str) -> None:
    m = hlo.parse(load_model(name).text)
    hlo.run_passes(m, list(DEFAULT_HLO_PASSES))
    for flags in FLAGS:
        config = parse_flags(flags)
        try:
            lowered = lower.lower(m, config=config)
        except LoweringError:
            return
        if not flags:
            _check(lowered.module)
            continue
        try:
            run_pipeline(lowered.module, config)
        except (PassError, VerifyError):
            continue
        _check(lowered.module)  # after the passes: casts, narrowed constants, retyped views


def test_a_clone_of_every_instruction_kind() -> None:
    _check(ir.parse(TEXT))
