"""What FlagSetRunner shares between flag sets changes no bit (decisions P21, V25): a copy of one
lowering (``ir.clone_module``) taken through a flag set's passes prints exactly what a fresh
lowering does, for every flag set of verify's diagnosis on every real model of tests/data; and
the outputs with shared lowerings and the value memo are the bits of independent runs."""
from __future__ import annotations

import numpy as np
import pytest

from pyprecision import hlo, ir, lower
from pyprecision.emulate import (
    DEFAULT_HLO_PASSES,
    FlagSetRunner,
    bind_arguments,
    compile_hlo,
    run_compiled,
)
from pyprecision.errors import EmulationError, LoweringError, PassError, VerifyError
from pyprecision.frontend import parse_flags
from pyprecision.passes import run_pipeline
from pyprecision.verify.hlo_check import diagnosis_flag_sets
from tests.models_data import load_model, model_names

CONFIGS = [c for _, c in diagnosis_flag_sets(parse_flags(["--auto-cast", "matmult"]))]
ERRORS = (EmulationError, LoweringError, PassError, VerifyError)


def _prepared(name: str) -> hlo.HloModule:
    m = hlo.parse(load_model(name).text)
    hlo.run_passes(m, list(DEFAULT_HLO_PASSES))
    return m


def _zeros(m: hlo.HloModule) -> list[object]:
    """Inputs of the right shapes for every ENTRY parameter (programs need no real values)."""
    def leaf(shape: object) -> object:
        if shape.is_tuple:  # type: ignore[attr-defined]
            return tuple(leaf(s) for s in shape.tuple_shapes)  # type: ignore[attr-defined]
        return np.zeros(tuple(shape.dimensions),  # type: ignore[attr-defined]
                        hlo.numpy_dtype(shape.element_type))  # type: ignore[attr-defined]
    params = sorted(m.entry.parameters, key=lambda p: p.parameter_number or 0)
    return [leaf(p.shape) for p in params]


@pytest.mark.parametrize("name", model_names())
def test_a_cloned_lowering_through_the_passes_prints_as_a_fresh_one(name: str) -> None:
    """Also the proof of the program key (decision P22): the program ``FlagSetRunner`` makes once
    per ``program_key`` and shares prints, for every flag set, as that set's own fresh lowering
    after its own passes (and fails as it does)."""
    m = _prepared(name)
    runner = FlagSetRunner(hlo.parse(load_model(name).text), _zeros(m))
    bases: dict[object, ir.Module] = {}
    for config in CONFIGS:
        try:
            fresh = lower.lower(m, config=config)
        except LoweringError:
            with pytest.raises(LoweringError):
                runner.program(config)
            continue
        key = lower.lowering_key(config)
        base = bases.setdefault(key, lower.lower(m, config=config).module)
        assert ir.to_text(base) == ir.to_text(fresh.module)  # the key is all the lowering reads
        copy = ir.clone_module(base)
        assert ir.to_text(copy) == ir.to_text(base)
        try:
            run_pipeline(fresh.module, config)
        except ERRORS as exc:
            with pytest.raises(type(exc)):
                run_pipeline(copy, config)
            with pytest.raises(type(exc)):
                runner.program(config)
            continue
        run_pipeline(copy, config)
        want = ir.to_text(fresh.module)
        assert ir.to_text(copy) == want, config
        ir.verify(copy)
        shared = runner.program(config)  # made once per program key, shared by equal keys
        assert shared.compiled.config is config
        assert ir.to_text(shared.compiled.lowered.module) == want, config
    assert len(runner._programs) < len(CONFIGS)  # some sets did share
    for key, base in bases.items():  # the passes rewrote the copies only
        config = next(c for c in CONFIGS if lower.lowering_key(c) == key)
        assert ir.to_text(base) == ir.to_text(lower.lower(m, config=config).module)


def test_clone_keeps_dtype_identity_and_shares_constants() -> None:
    m = _prepared("encoder_block")
    base = lower.lower(m, config=CONFIGS[0]).module
    copy = ir.clone_module(base)
    pairs = list(zip(base.main.instructions(), copy.main.instructions(), strict=True))
    assert pairs and all(a is not b for a, b in pairs)
    for a, b in pairs:
        if a.result is not None:
            assert b.result is not a.result and b.result.dtype is a.result.dtype
            assert [u.index for u in b.result.uses] == [u.index for u in a.result.uses]
    for t, u in zip(base.main.tensors, copy.main.tensors, strict=True):
        assert u is not t and u.dtype is t.dtype and u.value is t.value
        assert [ap.owner.id for ap in u.accesses] == [ap.owner.id for ap in t.accesses]


@pytest.mark.parametrize("name", ["encoder_block", "scan_rnn", "bf16_mlp", "cnn"])
def test_shared_runs_with_the_value_memo_give_the_bits_of_independent_runs(name: str) -> None:
    data = load_model(name)
    if not data.inputs:
        pytest.skip("no inputs")
    runner = FlagSetRunner(hlo.parse(data.text), data.inputs, share_values=True)
    shared = runner.run(CONFIGS)
    assert runner.memo is not None and runner.memo.computed > 0
    for config, run in zip(CONFIGS, shared.runs, strict=True):
        try:
            compiled = compile_hlo(hlo.parse(data.text), config)
            alone = run_compiled(compiled, bind_arguments(compiled.hlo_module, data.inputs,
                                                          widen=True).args)  # fmt: skip
        except ERRORS:
            assert run.outputs is None and run.error
            continue
        assert run.error is None and run.outputs is not None
        for a, b in zip(run.outputs, alone, strict=True):
            a, b = np.asarray(a), np.asarray(b)
            assert a.dtype == b.dtype and a.shape == b.shape
            assert a.tobytes() == b.tobytes(), config


def test_the_value_memo_is_opt_in() -> None:
    """Decision V29: the default runner (and ``run_flag_sets``) keeps no memo and still shares
    identical programs; ``share_values=True`` gives one."""
    data = load_model("encoder_block")
    plain = FlagSetRunner(hlo.parse(data.text), data.inputs)
    assert plain.memo is None
    shared = plain.run(CONFIGS)
    assert shared.emulations < len(CONFIGS)  # identical programs still emulated once
    assert FlagSetRunner(hlo.parse(data.text), data.inputs, share_values=True).memo is not None


@pytest.mark.parametrize("name", ["encoder_block", "scan_rnn"])
def test_a_planned_run_records_only_what_a_later_program_has(name: str) -> None:
    """Decision V28: within ``run``, a program's values are recorded only when a program still
    to come has their signature (so the memo holds nothing no later program can take), the
    values later programs share are still taken from the memo, and the last program runs
    untraced; the bits are those of runs that record everything (V25)."""
    data = load_model(name)
    planned = FlagSetRunner(hlo.parse(data.text), data.inputs, share_values=True)
    recorded: list[set[int]] = []
    later_seen: list[frozenset[int] | None] = []
    memo_run = planned.memo.run  # type: ignore[union-attr]

    def spy(module, run, texts=None, sigs=None, later=None):  # noqa: ANN001, ANN202
        before = set(planned.memo.values)  # type: ignore[union-attr]
        later_seen.append(None if later is None else frozenset(later))
        out = memo_run(module, run, texts, sigs, later)
        recorded.append(set(planned.memo.values) - before)  # type: ignore[union-attr]
        return out

    planned.memo.run = spy  # type: ignore[union-attr, method-assign]
    shared = planned.run(CONFIGS)
    assert len(recorded) == shared.emulations > 1
    assert all(later is not None for later in later_seen)
    for new, later in zip(recorded, later_seen, strict=True):
        assert new <= later  # type: ignore[operator]
    assert later_seen[-1] == frozenset() and recorded[-1] == set()
    assert planned.memo.reused > 0  # type: ignore[union-attr]
    everything = FlagSetRunner(hlo.parse(data.text), data.inputs, share_values=True)
    everything._plan = lambda configs: None  # type: ignore[method-assign]  # V25/V26: record all
    full = everything.run(CONFIGS)
    assert len(everything.memo.values) > len(planned.memo.values)  # type: ignore[union-attr]
    for a, b in zip(shared.runs, full.runs, strict=True):
        assert (a.outputs is None) == (b.outputs is None)
        for x, y in zip(a.outputs or [], b.outputs or [], strict=True):
            assert np.asarray(x).tobytes() == np.asarray(y).tobytes()


@pytest.mark.parametrize("name", ["mlp_param", "encoder_block", "embed_mlp", "cond_model"])
def test_lowering_text_is_equal_exactly_when_the_printed_lowerings_are(name: str) -> None:
    """``lowering_text`` (tune's proof that an axis of the lowering is inert) tells two lowering
    settings apart exactly when ``ir.to_text`` of fresh lowerings does."""
    m = _prepared(name)
    runner = FlagSetRunner(hlo.parse(load_model(name).text), load_model(name).inputs)
    flags = [[], ["--disable-mixed-precision-accumulation"], ["--enable-saturate-infinity"],
             ["--disable-mixed-precision-accumulation", "--enable-saturate-infinity"]]
    configs = [parse_flags(f) for f in flags]
    texts = [runner.lowering_text(c) for c in configs]
    printed = [ir.to_text(lower.lower(m, config=c).module) for c in configs]
    assert runner.lowered == 4
    for i in range(4):
        for j in range(4):
            assert (texts[i] == texts[j]) == (printed[i] == printed[j]), (flags[i], flags[j])


@pytest.mark.parametrize("cast_type", ["bf16", "fp16", "fp8_e4m3"])
def test_programs_with_narrowed_constants_are_digested_and_run(cast_type: str) -> None:
    """A pass that narrows a constant makes an array of an ml_dtypes type, which has no buffer
    format (bfloat16's 'E'): the program digest reads its bytes all the same, and the outputs are
    an independent run's."""
    data = load_model("mlp_param")
    config = parse_flags(["--auto-cast", "all", "--auto-cast-type", cast_type])
    runner = FlagSetRunner(hlo.parse(data.text), data.inputs)
    prog = runner.program(config)
    assert any(t.is_const and t.dtype is not ir.float32 and isinstance(t.value, np.ndarray)
               for t in prog.compiled.lowered.function.tensors)
    alone = run_compiled(compile_hlo(hlo.parse(data.text), config), data.inputs)
    for a, b in zip(runner.outputs(prog), alone, strict=True):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    assert runner.program(config).digest == prog.digest


@pytest.mark.parametrize("name", ["encoder_block", "scan_rnn", "maxpool_cnn_grad"])
def test_a_programs_texts_are_what_its_instructions_print(name: str) -> None:
    """``Program.texts`` (what the digest printed, reused by the value memo's signatures) holds
    every instruction's printed text but those whose inert ``narrow_acc`` the digest left out."""
    data = load_model(name)
    runner = FlagSetRunner(hlo.parse(data.text), data.inputs)
    for config in CONFIGS:
        try:
            prog = runner.program(config)
        except ERRORS:
            continue
        insts = [i for f in prog.compiled.lowered.module.functions for i in f.instructions()]
        assert prog.texts
        for inst in insts:
            got = prog.texts.get(id(inst))
            if got is None:
                assert getattr(inst, "narrow_acc", False), ir.instruction_to_text(inst)
            else:
                assert got == ir.instruction_to_text(inst)


@pytest.fixture
def fused_small(monkeypatch):
    """Fused runs on the small real models too: blocks of 7 elements from 8 elements on."""
    from pyprecision.emulate.shared import blocks

    monkeypatch.setattr(blocks, "BLOCK", 7)
    monkeypatch.setattr(blocks, "MIN_ELEMENTS", 8)


@pytest.mark.parametrize("flags", [["--auto-cast", "matmult"], ["--auto-cast", "all"]])
@pytest.mark.parametrize("name", ["encoder_block", "scan_rnn", "bf16_mlp", "cnn"])
def test_a_sparse_trace_records_what_a_full_trace_does_where_the_run_made_it(
        name: str, flags: list[str], fused_small: None) -> None:
    """Decision V26: with fused runs, batched dots and early frees on, every value a SparseTrace
    records is bit for bit the full trace's value of that instruction; it records only the
    instructions it was asked for, no more bytes than its budget, and the outputs are the
    untraced run's."""
    from pyprecision.emulate.ir.eval import SparseTrace

    data = load_model(name)
    if not data.inputs:
        pytest.skip("no inputs")
    compiled = compile_hlo(hlo.parse(data.text), parse_flags(flags))
    args = bind_arguments(compiled.hlo_module, data.inputs, widen=True).args
    full: dict[int, np.ndarray] = {}
    want = run_compiled(compiled, args, full)
    insts = [i for i in compiled.lowered.module.main.instructions() if i.result is not None]
    wanted = {id(i) for i in insts[::2]}
    sparse = SparseTrace(wanted, 1 << 40)
    got = run_compiled(compiled, args, sparse)
    assert [np.asarray(o).tobytes() for o in got] == [np.asarray(o).tobytes() for o in want]
    assert sparse and set(sparse) <= wanted
    for k, v in sparse.items():
        assert v.dtype == full[k].dtype and v.tobytes() == full[k].tobytes()
    small = SparseTrace(wanted, 64)
    run_compiled(compiled, args, small)
    assert sum(v.nbytes for v in small.values()) <= 64


@pytest.mark.parametrize("flags", [["--auto-cast", "matmult"], ["--auto-cast", "all"],
                                   ["--auto-cast", "all", "--auto-cast-type", "fp8_e4m3"]])
@pytest.mark.parametrize("name", ["encoder_block", "scan_rnn", "cnn"])
def test_a_whole_sparse_trace_records_every_wanted_value_with_the_runs_fused(
        name: str, flags: list[str], fused_small: None, monkeypatch) -> None:
    """Decision TU10: a ``whole`` SparseTrace keeps the fused runs (their chains still run) and
    records every wanted instruction, inside a run or not, with the full trace's bits."""
    from pyprecision.emulate.ir import fused
    from pyprecision.emulate.ir.eval import SparseTrace
    from pyprecision.kernel import chain as kchain

    data = load_model(name)
    if not data.inputs:
        pytest.skip("no inputs")
    compiled = compile_hlo(hlo.parse(data.text), parse_flags(flags))
    args = bind_arguments(compiled.hlo_module, data.inputs, widen=True).args
    full: dict[int, np.ndarray] = {}
    want = run_compiled(compiled, args, full)
    every = list(compiled.lowered.module.main.instructions())
    insts = [i for i in every if i.result is not None]
    wanted = {id(i) for i in insts[::3]}
    inside = {id(every[k]) for r in fused.plan_runs(every).values() for k in r.body}
    calls = [0]
    orig = kchain.Program.__call__

    def counted(self, inputs, n, threads=None):
        calls[0] += 1
        return orig(self, inputs, n) if threads is None else orig(self, inputs, n, threads)
    monkeypatch.setattr(kchain.Program, "__call__", counted)
    sparse = SparseTrace(wanted, 1 << 40, whole=True)
    got = run_compiled(compiled, args, sparse)
    assert [np.asarray(o).tobytes() for o in got] == [np.asarray(o).tobytes() for o in want]
    assert set(sparse) == wanted
    for k, v in sparse.items():
        assert v.dtype == full[k].dtype and v.tobytes() == full[k].tobytes()
    if name == "encoder_block":  # wanted values inside runs, and the runs fused, chains run
        assert wanted & inside and calls[0] > 0


@pytest.mark.parametrize("name", ["encoder_block", "scan_rnn", "cnn"])
def test_a_stopping_trace_ends_the_run_once_it_holds_what_it_wants(
        name: str, fused_small: None, monkeypatch) -> None:
    """Decision TU11: a SparseTrace made with ``stop`` raises TraceComplete as soon as it holds
    every wanted value: the values are the full trace's, the instructions after the last wanted
    one are not evaluated, and wanting what is never made runs to the end."""
    from pyprecision.emulate import TraceComplete
    from pyprecision.emulate.ir.eval import SparseTrace

    data = load_model(name)
    if not data.inputs:
        pytest.skip("no inputs")
    compiled = compile_hlo(hlo.parse(data.text), parse_flags(["--auto-cast", "all"]))
    args = bind_arguments(compiled.hlo_module, data.inputs, widen=True).args
    full: dict[int, np.ndarray] = {}
    run_compiled(compiled, args, full)
    insts = [i for i in compiled.lowered.module.main.instructions() if i.result is not None]
    head = insts[: len(insts) // 3]
    wanted = {id(i) for i in head[::2]}
    evaluated: set[int] = set()
    for cls in {type(i) for i in insts}:  # which instructions are evaluated on their own
        def spy(inst, frame, _ev=cls.evaluate):
            evaluated.add(id(inst))
            return _ev(inst, frame)
        monkeypatch.setattr(cls, "evaluate", spy)
    sparse = SparseTrace(wanted, 1 << 40, whole=True, stop=True)
    with pytest.raises(TraceComplete):
        run_compiled(compiled, args, sparse)
    assert set(sparse) == wanted
    for k, v in sparse.items():
        assert v.tobytes() == full[k].tobytes()
    tail = {id(i) for i in insts[2 * len(insts) // 3:]}
    assert evaluated and not evaluated & tail
    never = SparseTrace(wanted | {-1}, 1 << 40, whole=True, stop=True)
    evaluated.clear()
    outs = run_compiled(compiled, args, never)  # no exception: -1 is never recorded
    assert len(outs) == len(compiled.lowered.outputs) and set(never) == wanted
    assert evaluated & tail


@pytest.mark.parametrize("name", ["encoder_block", "scan_rnn"])
def test_the_value_memo_with_fused_runs_gives_the_bits_of_independent_runs(
        name: str, fused_small: None) -> None:
    data = load_model(name)
    runner = FlagSetRunner(hlo.parse(data.text), data.inputs, share_values=True)
    shared = runner.run(CONFIGS)
    assert runner.memo is not None and runner.memo.reused > 0
    for config, run in zip(CONFIGS, shared.runs, strict=True):
        compiled = compile_hlo(hlo.parse(data.text), config)
        alone = run_compiled(compiled, bind_arguments(compiled.hlo_module, data.inputs,
                                                      widen=True).args)  # fmt: skip
        assert run.outputs is not None
        assert [np.asarray(o).tobytes() for o in run.outputs] == \
            [np.asarray(o).tobytes() for o in alone], config


@pytest.mark.parametrize("name", ["encoder_block", "scan_rnn", "bf16_mlp", "cnn", "mlp_param"])
def test_a_program_without_mixed_precision_accumulation_is_its_twins_with_the_flags(
        name: str) -> None:
    """Decision P25: a set with mixed-precision accumulation off takes its program from the same
    set with it on (no second run of the passes): it prints as its own fresh compile (the
    ``narrow_acc`` flags where its lowering put them), with the same statistics, and its digest is
    that of the fresh program."""
    import dataclasses

    from pyprecision.emulate.pipeline.many import _ir_key

    data = load_model(name)
    m = _prepared(name)
    runner = FlagSetRunner(hlo.parse(data.text), _zeros(m))
    narrow = [c for c in CONFIGS if not c.enable_mixed_precision_accumulation]
    assert narrow
    made = 0
    for config in narrow:
        try:
            compiled = compile_hlo(hlo.parse(data.text), config)
        except ERRORS:
            continue
        before = runner.derived
        prog = runner.program(config)
        made += runner.derived - before
        assert ir.to_text(prog.compiled.lowered.module) == ir.to_text(compiled.lowered.module)
        assert dict(prog.compiled.statistics) == dict(compiled.statistics)
        assert prog.changed == [n for n, c in compiled.statistics.changed.items() if c]
        assert prog.digest == _ir_key(compiled.lowered.module)
        twin = dataclasses.replace(config, enable_mixed_precision_accumulation=True)
        assert prog.compiled.lowered.module is not runner.program(twin).compiled.lowered.module
    assert made > 0  # the derivation ran, not the fallback


@pytest.mark.parametrize("name", ["encoder_block", "cnn"])
def test_a_derived_program_is_made_when_first_read(name: str) -> None:
    """Decision P26: a program derived from its accumulation twin (P25) has its digest at once,
    its module only when something reads it, and ``twin`` names a program with the same
    instructions but for ``narrow_acc``: what reads no flag (tune's cost estimate) may read the
    twin's. Made, it is the fresh compile, runs to its bits, and its digest is its own."""
    import dataclasses

    from pyprecision.emulate.pipeline.many import _ir_key
    from pyprecision.tune.cost import COST_TABLE, estimate_cost

    data = load_model(name)
    runner = FlagSetRunner(hlo.parse(data.text), data.inputs)
    seen = 0
    for config in CONFIGS:
        if config.enable_mixed_precision_accumulation:
            continue
        try:
            prog = runner.program(config)
        except ERRORS:
            continue
        if prog.twin is None:
            continue
        lowered = prog.compiled.lowered
        first = not lowered.made  # a config with an equal program key shares the lowered
        twin = runner.program(dataclasses.replace(config, enable_mixed_precision_accumulation=True))
        assert prog.twin.compiled.lowered is twin.compiled.lowered  # the same program
        fresh = compile_hlo(hlo.parse(data.text), config)
        assert ir.to_text(lowered.module) == ir.to_text(fresh.lowered.module)
        texts: dict[int, str] = {}
        assert lowered.made and prog.digest == _ir_key(lowered.module, {}, texts)
        assert prog.texts == texts  # each line as the digest prints it (P27, P33)
        assert estimate_cost(twin.compiled.lowered.function, "gen2", COST_TABLE) == \
            estimate_cost(lowered.function, "gen2", COST_TABLE)
        alone = run_compiled(fresh, data.inputs)
        for a, b in zip(runner.outputs(prog), alone, strict=True):
            assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
        seen += first
    assert seen > 0
