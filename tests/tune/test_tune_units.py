"""The pieces of tune: the flag space, the metrics (against numpy / ml_dtypes written out here), the
cost estimate and its table, and the facts the search's sharing rests on."""
from __future__ import annotations

import json
import re
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from pyprecision import hlo
from pyprecision.emulate import FlagSetRunner, compile_hlo
from pyprecision.frontend import FP32_CAST_MODES, config_to_argv, parse_flags
from pyprecision.tune import (
    COST_TABLE,
    METRICS,
    TuneError,
    error_of,
    estimate_cost,
    flag_sets,
    load_cost_table,
    tune,
)

PKG = Path(__file__).resolve().parents[2] / "pyprecision"
MLP = (Path(__file__).resolve().parents[1] / "data" / "models" / "jax-0.10.2" / "mlp_param.hlo.txt")


def _runner() -> FlagSetRunner:
    module = hlo.parse(MLP.read_text())
    with np.load(MLP.with_suffix("").with_suffix(".npz")) as z:
        return FlagSetRunner(module, [z[f"in{i}"] for i in range(7)], share_values=False)


def test_the_space_reaches_every_mode_and_every_set_parses_back():
    sets = flag_sets()
    assert {fs.mode for fs in sets} == set(FP32_CAST_MODES)
    assert len({fs.argv for fs in sets}) == len(sets) == (1 + 9 * 4) * 2**3  # every combination
    assert sets[0].argv == ("--auto-cast", "none")
    for fs in sets:
        again = parse_flags(fs.cli.split())
        assert again == fs.config and config_to_argv(again) is not None


def test_one_flag_set_per_program_key_the_shortest_kept():
    """tune keeps one flag set per ``FlagSetRunner.program_key`` (no copy of the rule in tune):
    every set of the space has a kept one with its key and flags no longer than its own, the
    first of the shortest; ``--fast-math fp32-cast-matmult <token>`` stands for the longer
    ``--auto-cast matmult --auto-cast-type bf16`` with that token (decision P32)."""
    runner = _runner()
    every = flag_sets()
    kept = flag_sets(key=runner.program_key)
    keys = {runner.program_key(fs.config): fs for fs in kept}
    assert len(keys) == len(kept) < len(every)
    for fs in every:
        rep = keys[runner.program_key(fs.config)]
        assert len(rep.argv) < len(fs.argv) or (len(rep.argv) == len(fs.argv)
                                                and every.index(rep) <= every.index(fs))
    for token in ("no-fast-relayout", "fast-relayout-fp32r", "fast-relayout-fp8e4"):
        pair = parse_flags(["--auto-cast", "matmult", "--auto-cast-type", "bf16", "--fast-math",
                            token])  # fmt: skip
        assert keys[runner.program_key(pair)].argv == ("--fast-math", "fp32-cast-matmult", token)
    # the relayout token of an all-* mode is read by no pass: one set per all-* mode and flags
    alls = [fs for fs in kept if fs.mode == "all" and not fs.config.enable_saturate_infinity
            and fs.config.enable_mixed_precision_accumulation
            and not fs.config.internal_experimental_unsafe_fp8e4m3fn_as_fp8e4m3]
    assert [fs.argv for fs in alls] == [("--auto-cast", "all", "--auto-cast-type", "bf16")]


def test_an_axis_turned_off_stays_at_its_default():
    sets = flag_sets(accumulation=False, saturate=False, fp8=False, key=_runner().program_key)
    assert all(fs.config.enable_mixed_precision_accumulation and not fs.config.enable_saturate_infinity
               and not fs.config.internal_experimental_unsafe_fp8e4m3fn_as_fp8e4m3 for fs in sets)
    # mode none takes no relayout; a matmult-* mode: its own transpose dtype, fp32, fp32r, fp8e4
    # (a token repeating the mode's own transpose dtype is the same program, kept once; mode
    # ``matmult`` with a token is ``matmult-bf16`` with it, P32: only its own set stays); an all-*
    # mode: one (no pass of scope all reads the transpose dtype)
    matmult = [m for m in FP32_CAST_MODES if m.startswith("matmult")]
    assert len(sets) == 1 + sum(4 - (m in ("matmult-fp32r", "matmult-fp8e4")) - 3 * (m == "matmult")
                                for m in matmult) \
        + sum(m.startswith(("all", "experimental-all")) for m in FP32_CAST_MODES)


def test_the_sharing_rests_on_what_the_lowering_and_passes_read():
    """search._space proves accumulation and saturation inert by comparing lowerings: that holds only
    while the precision passes never read those fields and the lowering reads nothing else."""
    reads: dict[str, set[str]] = {}
    for room in ("passes", "lower"):
        for path in (PKG / room).rglob("*.py"):
            for field in re.findall(r"config\.([a-z_0-9]+)", path.read_text()):
                reads.setdefault(room, set()).add(field)
    assert reads["lower"] == {"enable_mixed_precision_accumulation", "enable_saturate_infinity"}
    assert reads["passes"] <= {"fp32_cast_mode", "fast_math",
                               "internal_experimental_unsafe_fp8e4m3fn_as_fp8e4m3"}


finite = hnp.arrays(np.float32, st.integers(1, 20),
                    elements=st.floats(-1e6, 1e6, width=32, allow_subnormal=False))


@settings(max_examples=60, deadline=None)
@given(finite, finite)
def test_rel_l2_and_max_abs_are_the_textbook_formulas(a, b):
    b = np.resize(b, a.shape)
    num, den = np.linalg.norm(a.astype(float) - b.astype(float)), np.linalg.norm(b.astype(float))
    want = 0.0 if num == 0 else (num / den if den else float("inf"))
    assert METRICS["rel-l2"](a, b) == pytest.approx(want, rel=1e-12)
    assert METRICS["max-abs"](a, b) == np.max(np.abs(a.astype(float) - b.astype(float)))


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16])
def test_ulp_counts_steps_of_the_outputs_own_format(dtype):
    x = np.array([1.0, -2.5, 0.0, 3.0e-3], dtype)
    y = x.copy()
    for _ in range(3):  # three steps up, by numpy's / ml_dtypes' nextafter
        y = np.nextafter(y, np.array(np.inf, dtype)).astype(dtype)
    assert METRICS["ulp"](y, x) == 3
    assert METRICS["ulp"](np.array([0.0], dtype), np.array([-0.0], dtype)) == 0
    assert METRICS["ulp"](np.array([np.nan], dtype), np.array([1.0], dtype)) == float("inf")


def test_top1_and_the_worst_output_counts():
    ref = [np.array([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7], [0.6, 0.4]], np.float32),
           np.array([1.0, 2.0], np.float32)]
    got = [np.array([[0.2, 0.8], [0.3, 0.7], [0.3, 0.7], [0.6, 0.4]], np.float32),
           np.array([1.0, 2.0], np.float32)]
    assert error_of("top1", got, ref) == 0.25  # one row of four changes its argmax
    assert error_of("rel-l2", [ref[1], ref[1] * 2], [ref[1], ref[1]]) == pytest.approx(1.0)
    assert METRICS["rel-l2"](np.array([np.nan, 1.0]), np.array([np.nan, 1.0])) == 0.0
    assert METRICS["rel-l2"](np.array([np.inf, 1.0]), np.array([2.0, 1.0])) == float("inf")


def test_the_cost_of_narrowing_matmuls_follows_the_peak_table():
    module = hlo.parse(MLP.read_text())
    none = compile_hlo(module, parse_flags([])).lowered.function
    bf16 = compile_hlo(module, parse_flags(["--auto-cast", "matmult"])).lowered.function
    c0, c1 = estimate_cost(none, "gen2", COST_TABLE), estimate_cost(bf16, "gen2", COST_TABLE)
    dots = 4 * 16 * 32 + 4 * 32 * 32 + 4 * 32 * 8  # the three HLO dots' multiply-adds
    assert c0.macs >= dots and c0.macs == c1.macs
    assert c0.pe_s == pytest.approx(2 * c0.macs / 47.5e12)
    assert c1.pe_s == pytest.approx(c0.pe_s * 47.5 / 190.0)
    assert c1.cast_s > 0 and c0.cast_s == 0  # the passes inserted casts
    for row in COST_TABLE.values():
        assert row["source"].startswith("https://awsdocs-neuron.readthedocs-hosted.com/")


def test_a_cost_table_missing_a_dtype_or_malformed_is_one_error(tmp_path):
    module = hlo.parse(MLP.read_text())
    p = tmp_path / "t.json"
    p.write_text(json.dumps({"gen2": {"peak_tflops": {"float32": 50.0}, "memory_gbps": 800}}))
    table = load_cost_table(str(p))
    with pytest.raises(TuneError, match="no peak_tflops for bfloat16 on gen2"):
        tune(module, [np.zeros((4, 16), np.float32)] + [np.zeros(s, np.float32) for s in
             [(16, 32), (32,), (32, 32), (32,), (32, 8), (8,)]], 0.1, cost_table=table)
    for bad in ("[]", "{", json.dumps({"gen2": {"peak_tflops": {"float32": -1}, "memory_gbps": 1}}),
                json.dumps({"gen2": {"peak_tflops": {}}})):
        p.write_text(bad)
        with pytest.raises(TuneError):
            load_cost_table(str(p))


@pytest.mark.parametrize("kw,match", [({"budget": -1.0}, "budget"), ({"budget": float("nan")}, "budget"),
                                      ({"metric": "l3"}, "unknown metric"),
                                      ({"target": "gen9"}, "unknown target")])
def test_bad_options_are_tune_errors(kw, match):
    module = hlo.parse(MLP.read_text())
    opts = {"budget": 0.1, **kw}
    with pytest.raises(TuneError, match=match):
        tune(module, [], **opts)


def test_none_recommended_when_what_meets_the_budget_costs_more():
    """A table where every narrow PE dtype is slow: the narrowing sets meet a loose budget but
    none is cheaper than --auto-cast none, and the note says that, not that none met the budget."""
    module = hlo.parse(MLP.read_text())
    slow = {"float32": 47.5, **dict.fromkeys(("float32r", "bfloat16", "float16", "float8e4"), 1e-6)}
    table = {"gen2": {"peak_tflops": slow, "memory_gbps": 820.0}}
    with np.load(MLP.with_suffix("").with_suffix(".npz")) as z:
        args = [z[f"in{i}"] for i in range(7)]
    r = tune(module, args, 1.0, cost_table=table, attribution=0, exhaustive=True)
    assert r.recommended is r.baseline and r.budget_met and not r.not_emulated
    assert any("cost no less than --auto-cast none" in n for n in r.notes)
    # cheapest first, nothing costing more than none is emulated, and the note says only that
    early = tune(module, args, 1.0, cost_table=table, attribution=0)
    assert early.recommended.flags == r.recommended.flags and not early.budget_met
    assert all(t.cost.total_s > early.baseline.cost.total_s for t in early.not_emulated)
    assert len(early.trials) + len(early.not_emulated) == len(r.trials)
    assert any("no flag set that narrows and costs no more than --auto-cast none meets" in n
               for n in early.notes)
    assert any(f"{len(early.not_emulated)} of {len(r.trials)} programs not emulated" in n
               for n in early.notes)


def test_progress_bars_on_request(capsys):
    module = hlo.parse(MLP.read_text())
    with np.load(MLP.with_suffix("").with_suffix(".npz")) as z:
        args = [z[f"in{i}"] for i in range(7)]
    tune(module, args, 0.1, attribution=0, progress=True)
    err = capsys.readouterr().err
    assert "compile" in err and "emulate" in err
    tune(module, args, 0.1, attribution=0, progress=False)
    assert capsys.readouterr().err == ""


@settings(max_examples=80, deadline=None)
@given(st.data(), st.integers(0, 3 * (1 << 15) + 7), st.sampled_from([np.float32, np.int32]))
def test_the_attribution_rel_l2_in_blocks_is_the_float64_norm(data, n, dtype):
    """``_rel`` (decision TU11) sums in float64 blocks held in cache: within a few ulps of
    ``‖x − r‖ / ‖r‖`` by ``np.linalg.norm`` in float64 on the whole arrays, 0 on equal arrays,
    None on a non-finite element of either side (placed anywhere, past a block boundary too), on
    shapes that differ, and on a zero reference under a nonzero value."""
    from pyprecision.tune.attribution import _rel

    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    if dtype is np.int32:
        r = rng.integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32)
        x = r.copy()
        x[rng.random(n) < 0.3] += 1
    else:
        scale = data.draw(st.sampled_from([1e-40, 1e-3, 1.0, 1e30, 3e38]))
        with np.errstate(over="ignore"):  # 3e38 × a normal sample: some ±inf, answered None
            r = (rng.standard_normal(n) * scale).astype(np.float32)
            x = (r * (1 + rng.standard_normal(n).astype(np.float32) * 1e-3)).astype(np.float32)
        for _ in range(data.draw(st.integers(0, 3)) if n else 0):
            side = data.draw(st.sampled_from([x, r]))
            side[data.draw(st.integers(0, n - 1))] = data.draw(st.one_of(
                st.sampled_from([np.nan, np.inf, -np.inf]), st.floats(width=32)))
    xd, rd = x.astype(np.float64), r.astype(np.float64)
    finite = bool(np.all(np.isfinite(xd)) and np.all(np.isfinite(rd)))
    with np.errstate(invalid="ignore"):
        num, den = np.linalg.norm(xd - rd), np.linalg.norm(rd)
    got = _rel(x, r)
    if not finite:
        assert got is None
    elif num == 0:
        assert got == 0.0
    elif den == 0:
        assert got is None
    else:
        assert got == pytest.approx(num / den, rel=1e-12, abs=0)
    assert _rel(r, r) == (0.0 if np.all(np.isfinite(rd)) else None)
    if n > 1:
        assert _rel(x[:-1], r[1:].reshape(1, -1)) is None
    assert _rel(np.ones(3, np.float32), np.zeros(3, np.float32)) is None


@pytest.mark.parametrize("name", ["encoder_block", "mlp_param", "cnn"])
@pytest.mark.parametrize("mode", ["matmult", "all"])
@pytest.mark.parametrize("threads", [1, 2])
def test_attribution_in_rounds_is_the_full_traces(name, mode, threads):
    """op_errors holds at most ``max_bytes`` of ``none`` values and compares the recommendation's
    as they are made (decision TU9): taking turns (TU13, one thread) or at once (TU16, two), with
    references that do not fit measured in rounds, its errors are those of the two programs' full
    traces, op by op, and the rows attribute ranks do not depend on the budget."""
    from pyprecision.kernel import thread_limit

    with thread_limit(threads):
        _attribution_in_rounds_is_the_full_traces(name, mode)


def _attribution_in_rounds_is_the_full_traces(name, mode):
    from pyprecision.emulate import bind_arguments, run_compiled
    from pyprecision.tune import attribution
    from tests.models_data import load_model

    data = load_model(name)
    base = compile_hlo(hlo.parse(data.text), parse_flags(["--auto-cast", "none"]))
    rec = compile_hlo(hlo.parse(data.text), parse_flags(["--auto-cast", mode]))
    args = bind_arguments(base.hlo_module, data.inputs, widen=True).args
    tb: dict[int, np.ndarray] = {}
    ta: dict[int, np.ndarray] = {}
    run_compiled(base, args, tb)
    run_compiled(rec, args, ta)
    pb, pa = attribution._producers(base), attribution._producers(rec)
    want = {}
    for path, _ in rec.lowered.rows:
        if path in pa and path in pb and pa[path].dtype.is_float and id(pa[path]) in ta:
            want[path] = attribution._rel(ta[id(pa[path])], tb[id(pb[path])])
    assert any(e for e in want.values())
    total = sum(attribution._nbytes(pb[p]) for p in want)
    one = attribution.op_errors(base, rec, args)
    rounds = attribution.op_errors(base, rec, args, max_bytes=total // 3)
    assert len(attribution._chunks(list(want), pb, total // 3)) >= 3
    assert one == want and rounds == want
    # the two runs in turn (TU13): what they measure alone, and with no reference held
    # (every op then measured in rounds, one op a round)
    to_rec = {id(pb[p]): id(pa[p]) for p in want}
    errs, missed = attribution._in_turn(base, rec, args, to_rec, total)
    assert not missed and {k: errs[id(pa[k])] for k in want if id(pa[k]) in errs} == want
    assert len(errs) == len(want)
    errs, missed = attribution._in_turn(base, rec, args, to_rec, 0)
    assert not errs and missed == set(to_rec.values())
    assert attribution.op_errors(base, rec, args, max_bytes=0) == want
    assert attribution.attribute(base, rec, args, top=50) == \
        attribution.attribute(base, rec, args, top=50, max_bytes=total // 3)


def test_attribution_rows_name_the_op_as_the_user_wrote_it():
    """On HLO with metadata (JAX's debug print) every row carries the frontend's op_name, a small
    constant its literal (layer norm's epsilon, say), and the report and JSON show it."""
    from pyprecision.emulate import bind_arguments
    from pyprecision.tune import attribution
    from pyprecision.tune.report import result_lines
    from tests.models_data import load_model

    data = load_model("encoder_block")
    text = (MLP.parent / "encoder_block.debug.hlo.txt").read_text()
    base = compile_hlo(hlo.parse(text), parse_flags(["--auto-cast", "none"]))
    rec = compile_hlo(hlo.parse(text), parse_flags(["--auto-cast", "all", "--auto-cast-type", "fp16"]))
    args = bind_arguments(base.hlo_module, data.inputs, widen=True).args
    rows = attribution.attribute(base, rec, args, top=50)
    by_path = dict(rec.lowered.rows)
    assert rows and all(r.source for r in rows)
    for r in rows:
        h = by_path[r.path]
        if h.opcode == "constant" and h.shape.rank == 0:
            assert r.source.endswith("= " + h.literal_text)
        else:
            assert r.source == h.metadata["op_name"]
        assert r.to_json()["source"] == r.source
    assert any(r.opcode == "constant" for r in rows)
    result = tune(hlo.parse(text), data.inputs, 1e-2, attribution=3)
    lines = "\n".join(result_lines(result))
    assert result.attribution and all(f"[{a.source}]" in lines for a in result.attribution)


@pytest.mark.parametrize("fails", ["baseline", "rec"])
@pytest.mark.parametrize("threads", [1, 2])
def test_attribution_in_turn_raises_either_runs_error_and_ends_both(fails, threads, monkeypatch):
    """An error in either run of the turn-taking (TU13, one thread) or concurrent (TU16, two)
    attribution is raised to the caller, and the baseline's thread has ended (nothing left
    waiting for a turn or for room)."""
    import threading

    from pyprecision.kernel import thread_limit

    from pyprecision.emulate import bind_arguments
    from pyprecision.errors import EmulationError
    from pyprecision.tune import attribution
    from tests.models_data import load_model

    data = load_model("encoder_block")
    base = compile_hlo(hlo.parse(data.text), parse_flags(["--auto-cast", "none"]))
    rec = compile_hlo(hlo.parse(data.text), parse_flags(["--auto-cast", "all"]))
    args = bind_arguments(base.hlo_module, data.inputs, widen=True).args
    real = attribution.run_compiled
    calls = []

    def run(compiled, a, trace):
        calls.append(compiled)

        class Boom(type(trace)):
            def record(self, key, value):
                super().record(key, value)
                raise EmulationError(f"{fails} failed")

        if (compiled is base) == (fails == "baseline"):
            trace.__class__ = Boom
        return real(compiled, a, trace)

    monkeypatch.setattr(attribution, "run_compiled", run)
    with thread_limit(threads), pytest.raises(EmulationError, match=f"{fails} failed"):
        attribution.op_errors(base, rec, args)
    assert not [t for t in threading.enumerate() if t.name == "attribution-baseline"]
    if threads == 1:
        assert calls[0] is rec  # in turns rec starts (at once, either may call first)


def test_attribution_compares_in_a_worker_within_the_budget_and_raises_its_error(monkeypatch):
    """At two threads the comparisons run in a worker thread meanwhile (decision TU19): each
    reference stays counted as held until it is compared (the held bytes never pass the budget),
    the errors are the inline ones, and an error in a comparison is raised to the caller with no
    thread left behind."""
    import threading

    from pyprecision.emulate import bind_arguments
    from pyprecision.kernel import thread_limit
    from pyprecision.tune import attribution
    from tests.models_data import load_model

    data = load_model("encoder_block")
    base = compile_hlo(hlo.parse(data.text), parse_flags(["--auto-cast", "none"]))
    rec = compile_hlo(hlo.parse(data.text), parse_flags(["--auto-cast", "all"]))
    args = bind_arguments(base.hlo_module, data.inputs, widen=True).args
    with thread_limit(1):
        inline = attribution.op_errors(base, rec, args)
    turns: list[attribution._Turns] = []
    real_turns, real_rel = attribution._Turns, attribution._rel

    def make_turns(*a, **k):
        turns.append(real_turns(*a, **k))
        return turns[-1]

    seen: list[tuple[str, bool]] = []

    def rel(x, r):
        t = turns[-1]
        seen.append((threading.current_thread().name, t.held <= t.max_bytes))
        return real_rel(x, r)

    monkeypatch.setattr(attribution, "_Turns", make_turns)
    monkeypatch.setattr(attribution, "_rel", rel)
    budget = 1 << 16  # a few values at a time
    with thread_limit(2):
        assert attribution.op_errors(base, rec, args, max_bytes=budget) == inline
    assert seen and all(ok for _, ok in seen)
    assert any(name.startswith("attribution-rel") for name, _ in seen)
    assert turns[0].held == 0

    def boom(x, r):
        if len(seen) > 3:
            raise FloatingPointError("compare failed")
        return rel(x, r)

    monkeypatch.setattr(attribution, "_rel", boom)
    with thread_limit(2), pytest.raises(FloatingPointError, match="compare failed"):
        attribution.op_errors(base, rec, args)
    assert not [t for t in threading.enumerate() if t.name.startswith("attribution-")]


@settings(max_examples=60, deadline=None)
@given(st.data(), st.integers(0, 3), st.integers(1, (1 << 16) - 1),
       st.sampled_from([np.float32, np.float64, np.int64]))  # fmt: skip
def test_a_value_compared_block_by_block_has_the_whole_values_bits(data, whole_blocks, rest, dtype):
    """``_BlockRel`` (decision TU20): a value handed over in the evaluator's blocks (the last one
    short), float32 against a float32 reference, gives ``_rel``'s bits on the whole arrays (the
    C sums' chunks are the blocks), NaN / ±inf / zero reference included; a value of another
    dtype is collected and measured by ``_rel`` itself; a reference of another shape gives None."""
    from pyprecision.emulate.shared import blocks
    from pyprecision.kernel import SQDIFF_CHUNK
    from pyprecision.tune.attribution import _BlockRel, _rel

    assert blocks.BLOCK == SQDIFF_CHUNK  # else every value would be collected (still exact)
    n = whole_blocks * blocks.BLOCK + data.draw(st.sampled_from([rest, 0])) or rest
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    r = (rng.standard_normal(n) * data.draw(st.sampled_from([0.0, 1e-30, 1.0, 1e30]))).astype(np.float32)
    with np.errstate(invalid="ignore", over="ignore"):  # inf to int64: any value, measured alike
        x = (r + rng.standard_normal(n).astype(np.float32) * 1e-3).astype(dtype)
    for _ in range(data.draw(st.integers(0, 2))):
        side = data.draw(st.sampled_from([x, r]))
        if side.dtype.kind == "f":
            side[data.draw(st.integers(0, n - 1))] = data.draw(st.sampled_from([np.nan, np.inf, -np.inf]))
    shape = data.draw(st.sampled_from([(n,), (1, n)]))
    rel = _BlockRel(r.reshape(shape), shape, blocks.BLOCK)
    for s in range(0, n, blocks.BLOCK):
        rel(s, min(n, s + blocks.BLOCK), x[s:s + blocks.BLOCK])
    want = _rel(x.reshape(shape), r.reshape(shape))
    got = rel.result()
    assert (got is None and want is None) or (got is not None and want is not None
                                              and np.float64(got).tobytes() == np.float64(want).tobytes())
    assert rel.fast == (dtype is np.float32)
    other = _BlockRel(r.reshape(shape), (n + 1,), blocks.BLOCK)
    assert not _BlockRel(r.reshape(shape), shape, blocks.BLOCK // 2).fast
    other(0, 1, x[:1])
    assert other.result() is None


@pytest.mark.parametrize("name", ["encoder_block", "embed_mlp"])
@pytest.mark.parametrize("threads", [1, 2])
def test_attribution_compares_fused_values_block_by_block_as_the_full_traces(name, threads,
                                                                            monkeypatch):  # fmt: skip
    """With runs formed on these small real models (``MIN_ELEMENTS`` lowered to 64 elements),
    the recommendation's trace-only values of fused runs are compared block by block, never made
    whole (decision TU20), in turns, at once and in rounds: the errors are still the full traces',
    op by op, and streams did happen (one block each: values under 64 Ki elements), and with the
    block size off the C sums' chunk (1 Ki) every value is collected, many blocks each, alike."""
    from pyprecision.emulate.shared import blocks
    from pyprecision.kernel import thread_limit
    from pyprecision.tune import attribution

    streams = {"turns": 0, "rounds": 0}
    for cls, key in ((attribution._RecTurn, "turns"), (attribution._Against, "rounds")):
        def counted(self, k, shape, block, _real=cls.stream, _key=key):
            sink = _real(self, k, shape, block)
            streams[_key] += sink is not None
            return sink

        monkeypatch.setattr(cls, "stream", counted)
    monkeypatch.setattr(blocks, "MIN_ELEMENTS", 64)
    with thread_limit(threads):
        _attribution_in_rounds_is_the_full_traces(name, "all")
        assert streams["turns"] and streams["rounds"]
        monkeypatch.setattr(blocks, "BLOCK", 1 << 10)
        _attribution_in_rounds_is_the_full_traces(name, "matmult")


_BITS = """
import numpy as np
from pyprecision.tune.attribution import _rel
from pyprecision.tune.metrics import rel_l2
rng = np.random.default_rng(7)
out = []
for n in (1000, 100_003, 1_000_003):
    r = rng.standard_normal(n).astype(np.float32)
    y = (r * (1 + 1e-3 * rng.standard_normal(n))).astype(np.float32)
    y64, r64 = y.astype(np.float64) * 1.1, r.astype(np.float64)
    out += [rel_l2(y, r), rel_l2(y64, r64), _rel(y64, r64), _rel(y, r)]
print(" ".join(float(v).hex() for v in out))
"""


def test_rel_l2_has_the_same_bits_whatever_the_threads_and_the_blas() -> None:
    """tune's rel-l2 and the attribution's are sums in an order fixed by the size (decision TU23):
    the same bits under one or two OpenBLAS threads and one or two of pyprecision's, where
    ``np.linalg.norm`` (BLAS's dot) changes its last bits with OpenBLAS' thread count."""
    import os
    import subprocess
    import sys

    got = set()
    for blas in ("1", "2"):
        for ours in ("1", "2"):
            env = dict(os.environ, OPENBLAS_NUM_THREADS=blas, PYPRECISION_THREADS=ours)
            got.add(subprocess.run([sys.executable, "-c", _BITS], env=env, capture_output=True,
                                   text=True, check=True).stdout)  # fmt: skip
    assert len(got) == 1, got
