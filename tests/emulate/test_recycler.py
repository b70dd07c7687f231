"""Decision EM-22: a whole sparse trace's runs write their outputs into buffers the evaluation
hands out again once nothing refers to them. A buffer still referred to (by the array handed out,
a reshape or slice of it, a trace) is never handed out again; the values recorded are the full
trace's bits; the recycler keeps no more than its cap."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyprecision import hlo
from pyprecision.emulate import bind_arguments, compile_hlo, run_compiled
from pyprecision.emulate.shared.blocks import Recycler
from pyprecision.frontend import parse_flags
from tests.models_data import load_model

DTYPES = [np.float32, np.float64, np.int64, np.uint8, np.float16]


def _address(a: np.ndarray) -> int:
    return int(a.__array_interface__["data"][0])


def test_a_free_buffer_is_handed_out_again_and_a_held_one_is_not() -> None:
    r = Recycler()
    a = r.empty(1000, np.float32)
    first = _address(a)
    b = r.empty(1000, np.float32)  # a is alive: another buffer
    assert _address(b) != first and not np.shares_memory(a, b)
    view = a.reshape(10, 100)[2:5]
    del a
    c = r.empty(4000, np.uint8)  # a's bytes, but a reshape of a still refers to them
    assert not np.shares_memory(c, view)
    del view, c
    d = r.empty(500, np.float64)  # the same 4000 bytes, free now: handed out again
    assert _address(d) == first and d.dtype == np.float64 and d.shape == (500,)


def test_an_object_array_is_a_plain_one() -> None:
    """An array of references (the evaluator's integers beyond int64) is not bytes to recycle."""
    r = Recycler()
    free = r.empty(4, np.float64)  # 32 bytes, as 4 references are
    del free
    a = r.empty(4, np.dtype(object))
    assert a.dtype == object and a.shape == (4,) and r.held == 32


def test_the_cap_bounds_what_it_keeps() -> None:
    r = Recycler(cap=10_000)
    kept = [r.empty(1000, np.float32) for _ in range(2)]  # 8000 bytes kept
    beyond = r.empty(1000, np.float32)  # over the cap: a plain array, not kept
    assert r.held == 8000
    del beyond
    again = r.empty(1000, np.float32)  # the plain one was not kept: a new array again
    assert r.held == 8000 and all(not np.shares_memory(again, k) for k in kept)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["new", "drop", "view", "base"]),
                          st.integers(0, 7), st.sampled_from(DTYPES), st.integers(1, 6)),
                max_size=60))
def test_no_live_array_shares_a_buffer_with_another(ops) -> None:
    """Arrays are made, dropped, viewed (a view kept, its array dropped) in any order: every
    array alive holds the pattern written into it when it was made, so no buffer was handed out
    twice while referred to."""
    r = Recycler(cap=1 << 20)
    live: list[tuple[np.ndarray, int]] = []  # (array or a view of it, its pattern)
    for serial, (op, k, dt, n) in enumerate(ops):
        if op == "new" or not live:
            a = r.empty(n * 8 // np.dtype(dt).itemsize, dt)
            a.view(np.uint8)[...] = serial % 251
            live.append((a, serial % 251))
        elif op == "drop":
            live.pop(k % len(live))
        elif op == "view":
            a, p = live.pop(k % len(live))
            live.append((a.view(np.uint8)[1:], p))
        else:  # keep only the buffer the array was made from
            a, p = live.pop(k % len(live))
            live.append((a.base if a.base is not None else a, p))
    for a, p in live:
        assert (np.asarray(a).view(np.uint8) == p).all()


@pytest.fixture
def fused_small(monkeypatch):
    """Fused runs on the small real models too: blocks of 7 elements from 8 elements on."""
    from pyprecision.emulate.shared import blocks

    monkeypatch.setattr(blocks, "BLOCK", 7)
    monkeypatch.setattr(blocks, "MIN_ELEMENTS", 8)


@pytest.mark.parametrize("flags", [["--auto-cast", "matmult"], ["--auto-cast", "all"]])
@pytest.mark.parametrize("name", ["encoder_block", "scan_rnn"])
def test_a_whole_trace_that_drops_its_values_reuses_buffers_with_the_full_traces_bits(
        name: str, flags: list[str], fused_small: None, monkeypatch) -> None:
    """A whole trace that checks each value as it is made and keeps one in three (as the
    attribution does with the references it holds): every value is the full trace's, those kept
    are still the full trace's at the end, and the run's buffers were handed out again."""
    from pyprecision.emulate.ir import eval as ir_eval
    from pyprecision.emulate.ir.eval import SparseTrace

    data = load_model(name)
    compiled = compile_hlo(hlo.parse(data.text), parse_flags(flags))
    args = bind_arguments(compiled.hlo_module, data.inputs, widen=True).args
    full: dict[int, np.ndarray] = {}
    want = run_compiled(compiled, args, full)
    made: list[Recycler] = []
    handed: list[int] = []

    class Spy(Recycler):
        def __init__(self) -> None:
            super().__init__()
            made.append(self)

        def empty(self, size: int, dtype: np.dtype) -> np.ndarray:
            out = super().empty(size, dtype)
            handed.append(_address(out))
            return out

    monkeypatch.setattr(ir_eval, "Recycler", Spy)

    class Checking(SparseTrace):
        def record(self, key: int, value: np.ndarray) -> None:
            if key in self.wanted:
                assert value.tobytes() == full[key].tobytes()
                if len(self) % 3 == 0:
                    super().record(key, value)
                else:
                    self.wanted.discard(key)

    every = [i for i in compiled.lowered.module.main.instructions() if i.result is not None]
    trace = Checking({id(i) for i in every}, 1 << 40, whole=True)
    got = run_compiled(compiled, args, trace)
    assert [np.asarray(o).tobytes() for o in got] == [np.asarray(o).tobytes() for o in want]
    assert trace and all(v.tobytes() == full[k].tobytes() for k, v in trace.items())
    assert len(made) == 1 and len(handed) > len(set(handed))  # some buffer used again
