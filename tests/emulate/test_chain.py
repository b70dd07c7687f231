"""The C core's elementwise chains (decision EM-15): every operation is NumPy's float32 operation
bit for bit on every non-NaN input class, the roundings are ml_dtypes' on a stratified sweep of
float32, a NaN never reaches a returned lane, and both executors give with chains the bits they
give without them, on the real models of tests/data (also with NaN inputs forcing the fallback)
and on random programs (hypothesis)."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyprecision import hlo
from pyprecision.emulate import compile_hlo, run_compiled, run_hlo
from pyprecision.emulate.shared import blocks, chain
from pyprecision.errors import CastError, EmulationError, LoweringError, PassError, VerifyError
from pyprecision.frontend import parse_flags
from pyprecision.kernel import chain as kchain
from pyprecision.kernel.chain import OPS, Program
from tests.models_data import load_model, model_names

F32 = np.float32
BF16 = np.dtype(ml_dtypes.bfloat16)


def _bits(x):
    x = np.asarray(x)
    return x.view(np.uint8 if x.dtype.itemsize == 1 else f"u{x.dtype.itemsize}")


def _specials():
    """Float32 words of every class but NaN: ±0, the subnormal edges, the normal edges, ±inf,
    the bf16 / fp16 / fp8 rounding boundaries and ties, powers of two around fp16's range."""
    words = [0, 1, 2, 0x7FFFF, 0x400000, 0x7FFFFF, 0x800000, 0x800001, 0x7F7FFFFF, 0x7F800000,
             0x3F800000, 0x3F800001, 0x3F808000, 0x3F818000, 0x3F807FFF, 0x477FE000, 0x477FEFFF,
             0x477FF000, 0x477FF001, 0x47800000, 0x38800000, 0x387FFFFF, 0x387FF000, 0x33800000,
             0x33000000, 0x33000001, 0x337FFFFF, 0x32FFFFFF, 0x33C00000]
    for e in range(0, 255):
        for m in (0, 1, 0x1000, 0x1001, 0xFFF, 0x2000, 0x3000, 0x8000, 0x8001, 0x7FFF, 0x18000,
                  0x7FFFFF, 0x7FF000, 0x7FE000,
                  # fp8 ties and their neighbours (rounding bit 2^19 / 2^20), the fp8 maxima
                  # (1.75, 1.875 x 2^e) and the ties above them
                  0x80000, 0x80001, 0x7FFFF, 0x180000, 0x100000, 0x100001, 0xFFFFF, 0x300000,
                  0x600000, 0x67FFFF, 0x680000, 0x680001, 0x700000, 0x77FFFF, 0x780000,
                  0x780001):
            words.append((e << 23) | m)
    w = np.array(words, np.uint32)
    return np.concatenate([w, w | 0x80000000]).view(F32)


def _sweep(seed=0, n=1 << 18):
    """``_specials`` and random words of every exponent, NaN words removed."""
    rng = np.random.default_rng(seed)
    w = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    x = np.concatenate([_specials(), w.view(F32)])
    return x[~np.isnan(x)]


def _max(a, b):
    return np.where((a == b) & (a == 0), np.where(np.signbit(a), b, a), np.maximum(a, b))


def _min(a, b):
    return np.where((a == b) & (a == 0), np.where(np.signbit(a), a, b), np.minimum(a, b))


#: the NumPy operation each chain operation is (float32 in, float32 out)
REF = {
    "copy": lambda a: a, "add": np.add, "sub": np.subtract, "mul": np.multiply,
    "div": np.divide, "max": _max, "min": _min, "neg": np.negative, "abs": np.abs,
    "sqrt": np.sqrt, "square": lambda a: a * a, "recip": lambda a: F32(1) / a,
    "relu": lambda a: np.where(a > 0, a, F32(0)),
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
    "gt": np.greater, "ge": np.greater_equal,
    "select": lambda p, a, b: np.where(p != 0, a, b),
    "round_bf16": lambda a: a.astype(BF16).astype(F32),
    "round_fp16": lambda a: a.astype(np.float16).astype(F32),
    "satinf": lambda a, b: np.where(np.isinf(a), np.copysign(np.abs(b), a), a),
}
#: the fp8 roundings saturate (Neuron's default, CAST_SEMANTICS.md §3): ml_dtypes' RNE of the value
#: clipped to ±max (a value above max and ±inf give ±max; below it the clip changes nothing)
FP8 = {"fp8e4": ml_dtypes.float8_e4m3, "fp8e4m3fn": ml_dtypes.float8_e4m3fn,
       "fp8e5": ml_dtypes.float8_e5m2}


def _fp8_ref(dtype):
    top = F32(ml_dtypes.finfo(dtype).max)
    return lambda a: np.clip(a, -top, top).astype(dtype).astype(F32)


REF.update({f"round_{f}": _fp8_ref(d) for f, d in FP8.items()})


def _ref(name, *args):
    with np.errstate(all="ignore"):
        return np.asarray(REF[name](*args)).astype(F32)


def test_every_operation_has_a_reference():
    assert set(REF) == set(OPS)


@pytest.mark.parametrize("name", sorted(OPS))
def test_each_operation_is_numpys_float32_operation(name):
    """Every operation on the stratified sweep (operands paired with a shuffled copy, so every
    class meets every other): the bits NumPy's float32 loop gives, where no NaN arises."""
    x = _sweep()
    y = np.random.default_rng(1).permutation(x)
    arity = OPS[name][1]
    if name == "select":
        args = [(np.arange(x.size) % 3 == 0).astype(F32), x, y]
    else:
        args = [x, y][:arity]
    want = _ref(name, *args)
    ok = ~np.isnan(want)
    args = [a[ok] for a in args]
    want = want[ok]
    prog = Program([(name, arity, *range(arity))], arity + 1, arity, [(arity, F32)])
    (got,) = prog(args, want.size)
    np.testing.assert_array_equal(_bits(got), _bits(want))


def test_max_min_of_zeros_order_minus_zero_below_plus_zero():
    z = np.array([0.0, -0.0], F32)
    a, b = np.repeat(z, 2), np.tile(z, 2)
    for name in ("max", "min"):
        (got,) = Program([(name, 2, 0, 1)], 3, 2, [(2, F32)])([a, b], 4)
        want = np.array([0.0, 0.0, 0.0, -0.0] if name == "max" else [0.0, -0.0, -0.0, -0.0], F32)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("fmt,dtype", [("bf16", BF16), ("fp16", np.float16)])
def test_roundings_store_ml_dtypes_codes(fmt, dtype):
    """round_bf16 / round_fp16 then stored in the format: ml_dtypes' (NumPy's) RNE code of every
    swept float32, ±0, subnormals, overflow to ±inf and ties included."""
    x = _sweep(2)
    prog = Program([(f"round_{fmt}", 1, 0)], 2, 1, [(1, dtype), (1, F32)])
    with np.errstate(over="ignore"):
        want = x.astype(dtype)
    stored, value = prog([x], x.size)
    np.testing.assert_array_equal(_bits(stored), _bits(want))
    np.testing.assert_array_equal(_bits(value), _bits(want.astype(F32)))


@pytest.mark.parametrize("dtype", [BF16, np.dtype(np.float16)])
def test_every_16_bit_code_loads_as_its_float32_value(dtype):
    codes = np.arange(1 << 16, dtype=np.uint16).view(dtype)
    finite = codes[~np.isnan(codes.astype(F32))]
    prog = Program([("copy", 1, 0)], 2, 1, [(1, F32), (1, dtype)])
    value, back = prog([finite], finite.size)
    np.testing.assert_array_equal(_bits(value), _bits(finite.astype(F32)))
    np.testing.assert_array_equal(_bits(back), _bits(finite))
    for nan in codes[np.isnan(codes.astype(F32))][::97]:
        assert prog([np.array([nan])], 1) is None


def test_predicates_of_bool_uint8_and_int64():
    p = np.array([0, 1, 2, 255, 0], np.int64)
    a, b = np.arange(5, dtype=F32), -np.arange(5, dtype=F32)
    prog = Program([("select", 3, 0, 1, 2)], 4, 3, [(3, F32)])
    for dt in (np.int64, np.uint8, np.bool_):
        (got,) = prog([p.astype(dt), a, b], 5)
        np.testing.assert_array_equal(got, np.where(p != 0, a, b))


def test_one_value_for_every_lane():
    """A one-element input and a stride-0 broadcast are read as one value; a 0-d array too."""
    x = np.arange(1000, dtype=F32)
    prog = Program([("mul", 2, 0, 1)], 3, 2, [(2, F32)])
    for c in (np.array(F32(3)), np.array([3], F32), np.broadcast_to(F32(3), (1000,))):
        (got,) = prog([x, c], 1000)
        np.testing.assert_array_equal(got, x * F32(3))


def test_a_nan_never_reaches_a_returned_lane():
    """A NaN made (0/0, inf - inf) or loaded, then stored, or hidden by an operation whose
    result need not be NaN (max, relu, rounding), makes the call return None; a compare of a NaN
    or a select that drops it gives NumPy's lanes."""
    one = np.ones(300, F32)
    x = one.copy()
    x[257] = np.nan  # in the second tile
    cases = [
        [("add", 1, 0, 0)],
        [("max", 1, 0, 0)],
        [("min", 1, 0, 0)],
        [("relu", 1, 0)],
        [("round_bf16", 1, 0)],
        [("round_fp16", 1, 0)],
        [("mul", 1, 0, 0), ("max", 1, 1, 1)],
    ]
    for code in cases:
        prog = Program(code, 2, 1, [(1, F32)])
        assert prog([x], 300) is None, code
        assert prog([one], 300) is not None, code
    for name in ("eq", "ne", "lt", "ge"):
        (got,) = Program([(name, 1, 0, 0)], 2, 1, [(1, np.bool_)])([x], 300)
        np.testing.assert_array_equal(got, REF[name](x, x))
    p = (np.arange(300) != 257).astype(F32)
    (got,) = Program([("select", 2, 1, 0, 1)], 3, 2, [(2, F32)])([x, p], 300)
    np.testing.assert_array_equal(got, np.where(p != 0, x, p))
    made = Program([("sub", 1, 0, 0), ("div", 1, 1, 1)], 2, 1, [(1, F32)])  # 0 / 0
    assert made([one], 300) is None
    sig = np.array([0x7F800001], np.uint32).view(F32)  # a signalling NaN rounds to inf by bits
    assert Program([("round_bf16", 1, 0)], 2, 1, [(1, F32)])([sig], 1) is None


def test_bad_programs_and_inputs_are_refused():
    with pytest.raises(CastError, match="unknown operation"):
        Program([("fma", 1, 0, 0)], 2, 1, [(1, F32)])
    with pytest.raises(CastError, match="takes 2 operands"):
        Program([("add", 1, 0)], 2, 1, [(1, F32)])
    with pytest.raises(CastError, match="outside"):
        Program([("add", 5, 0, 0)], 2, 1, [(1, F32)])
    with pytest.raises(CastError, match="output register"):
        Program([("add", 1, 0, 0)], 2, 1, [(1, np.float64)])
    with pytest.raises(CastError, match="registers"):
        Program([], 0, 0, [])
    prog = Program([("add", 1, 0, 0)], 2, 1, [(1, F32)])
    with pytest.raises(CastError, match="dtype"):
        prog([np.ones(4)], 4)
    with pytest.raises(CastError, match="dtype"):
        prog([np.ones(4, ">f4")], 4)
    with pytest.raises(CastError, match="elements"):
        prog([np.ones(3, F32)], 4)
    with pytest.raises(CastError, match="inputs"):
        prog([], 4)
    (empty,) = prog([np.ones(0, F32)], 0)
    assert empty.shape == (0,)


# -- random programs against a NumPy interpreter of the same program --------------------------

_WORDS = st.one_of(
    st.sampled_from([0, 0x80000000, 0x7F800000, 0xFF800000, 1, 0x807FFFFF, 0x3F800000,
                     0x477FF000, 0x7F7FFFFF, 0x7FC00000, 0x7F800001, 0xFFC00001]),
    st.integers(0, 2**32 - 1))
_NAMES = sorted(OPS)


@st.composite
def programs(draw):
    n_in = draw(st.integers(1, 3))
    lanes = draw(st.integers(1, 600))
    inputs = [np.array(draw(st.lists(_WORDS, min_size=lanes, max_size=lanes)),
                       np.uint32).view(F32) for _ in range(n_in)]
    code, n_regs = [], n_in
    for _ in range(draw(st.integers(1, 12))):
        name = draw(st.sampled_from(_NAMES))
        arity = OPS[name][1]
        args = [draw(st.integers(0, n_regs - 1)) for _ in range(arity)]
        dst = draw(st.integers(0, n_regs)) if n_regs < 8 else draw(st.integers(0, n_regs - 1))
        n_regs = max(n_regs, dst + 1)
        code.append((name, dst, *args))
    outs = sorted(set(draw(st.lists(st.integers(0, n_regs - 1), min_size=1, max_size=3))))
    return inputs, code, n_regs, outs, lanes


@given(programs())
@settings(max_examples=300, deadline=None)
def test_random_programs_are_their_numpy_interpretation(case):
    _is_its_numpy_interpretation(case)


def _is_its_numpy_interpretation(case):
    inputs, code, n_regs, outs, lanes = case
    regs = [np.zeros(lanes, F32) for _ in range(n_regs)]
    regs[:len(inputs)] = [x.copy() for x in inputs]
    saw_nan = any(np.isnan(x).any() for x in inputs)
    for name, dst, *args in code:
        regs[dst] = _ref(name, *[regs[a] for a in args])
        saw_nan |= bool(np.isnan(regs[dst]).any())
    got = Program(code, n_regs, len(inputs), [(r, F32) for r in outs])(inputs, lanes)
    if got is None:
        assert saw_nan  # only a NaN (or the FP environment, default here) refuses
        return
    for r, g in zip(outs, got, strict=True):
        np.testing.assert_array_equal(_bits(g), _bits(regs[r]))


_ARITH = ["add", "sub", "mul", "div"]
_ROUNDS = sorted(n for n in OPS if n.startswith("round_"))


@st.composite
def rounded_programs(draw):
    """Programs of (operation, its rounding) pairs, which the core runs as one pass (decision
    EM-25), with every register aliasing there is: the rounding into the exact value's register,
    into an operand's, the operation into its own operand; and pairs the core must not fuse (the
    rounding reads another register)."""
    n_in = draw(st.integers(1, 3))
    lanes = draw(st.integers(1, 600))
    inputs = [np.array(draw(st.lists(_WORDS, min_size=lanes, max_size=lanes)),
                       np.uint32).view(F32) for _ in range(n_in)]
    if draw(st.integers(0, 3)):  # mostly no NaN, ±inf or 0 loaded (whose sums and quotients
        # make NaNs), so that most programs run to the end
        inputs = [np.where(np.isfinite(x) & (x != 0), x, F32(1.5)) for x in inputs]
    code, n_regs = [], n_in
    for _ in range(draw(st.integers(1, 6))):
        a, b = (draw(st.integers(0, n_regs - 1)) for _ in range(2))
        x = draw(st.integers(0, n_regs))
        n_regs = max(n_regs, x + 1)
        code.append((draw(st.sampled_from(_ARITH)), x, a, b))
        src = x if draw(st.integers(0, 4)) else draw(st.integers(0, n_regs - 1))  # a written one
        d = draw(st.integers(0, n_regs))
        n_regs = max(n_regs, d + 1)
        code.append((draw(st.sampled_from(_ROUNDS)), d, src))
    outs = sorted(set(draw(st.lists(st.integers(0, n_regs - 1), min_size=1, max_size=3))))
    return inputs, code, n_regs, outs, lanes


@given(rounded_programs())
@settings(max_examples=300, deadline=None)
def test_an_operation_and_its_rounding_are_their_numpy_interpretation(case):
    """EM-25's fused pass has the two steps' bits, and refuses only where a NaN was made."""
    _is_its_numpy_interpretation(case)
    _RAN.append(_ran(case))


_RAN: list[bool] = []


def _ran(case) -> bool:
    inputs, code, n_regs, outs, lanes = case
    return Program(code, n_regs, len(inputs), [(r, F32) for r in outs])(inputs, lanes) is not None


def test_most_rounded_programs_ran_to_the_end():
    """The property above is not vacuous: most of its programs were not refused."""
    if len(_RAN) < 50:
        pytest.skip("the property did not run in this session")
    assert sum(_RAN) > len(_RAN) // 3, (sum(_RAN), len(_RAN))


# -- both executors with and without chains ---------------------------------------------------

ERRORS = (EmulationError, LoweringError, PassError, VerifyError)
FLAGS = [None, ["--auto-cast", "none"], ["--auto-cast", "matmult"], ["--auto-cast", "all"],
         ["--auto-cast", "all", "--auto-cast-type", "fp16"],
         ["--auto-cast", "all", "--auto-cast-type", "fp8_e4m3"]]
MODELS = [(s, n) for s in ("jax-0.10.2", "torch_xla-2.9.0") for n in model_names(s)
          if n not in ("bert_base", "bert_base_per_head")]


@pytest.fixture
def small_blocks(monkeypatch):
    from pyprecision.emulate.hlo import fused as hfused
    from pyprecision.emulate.ir import fused as ifused

    monkeypatch.setattr(blocks, "BLOCK", 300)
    monkeypatch.setattr(blocks, "MIN_ELEMENTS", 8)
    monkeypatch.setattr(hfused, "MIN_RUN", 2)
    monkeypatch.setattr(ifused, "MIN_RUN", 2)


def _run(module, flags, inputs):
    if flags is None:
        return run_hlo(module, inputs)
    return run_compiled(compile_hlo(module, parse_flags(flags)), inputs)


def _counted(monkeypatch):
    calls = {"chain": 0, "nan": 0, "satinf": 0}
    orig = kchain.Program.__call__

    def call(self, inputs, n):
        r = orig(self, inputs, n)
        calls["chain"] += 1
        calls["nan"] += r is None
        calls["satinf"] += int((self._code[:, 0] == OPS["satinf"][0]).any())
        return r
    monkeypatch.setattr(kchain.Program, "__call__", call)
    return calls


def _with_specials(inputs, seed, specials):
    """The float inputs with ``specials`` (taken in turn) in about 2 % of the lanes."""
    rng = np.random.default_rng(seed)
    out = []
    for x in inputs:
        x = np.array(x)
        if x.dtype.kind == "f" or x.dtype == BF16:
            flat = x.reshape(-1)
            at = rng.integers(0, flat.size, max(len(specials), flat.size // 50))
            flat[at] = np.resize(np.array(specials, np.float32), at.size).astype(x.dtype)
        out.append(x)
    return out


def _with_nans(inputs, seed):
    return _with_specials(inputs, seed, [np.nan])


def _with_infs(inputs, seed):
    """±inf, what ``satinf`` clamps."""
    return _with_specials(inputs, seed, [np.inf, -np.inf])


SAT = "--enable-saturate-infinity"
#: saturate-infinity's ``satinf`` clamps (the chain's ``satinf``, EM-20), on values of every width
SAT_FLAGS = [["--auto-cast", "none", SAT], ["--auto-cast", "all", SAT],
             ["--auto-cast", "all", "--auto-cast-type", "fp16", SAT],
             ["--auto-cast", "all", "--auto-cast-type", "fp8_e4m3", SAT]]


@pytest.mark.parametrize("source,name", MODELS)
def test_real_models_with_and_without_chains(source, name, small_blocks, monkeypatch):
    data = load_model(name, source)
    if not data.inputs:
        pytest.skip("text-only module")
    module = hlo.parse(data.text)
    calls = _counted(monkeypatch)
    cases = [(data.inputs, FLAGS), (_with_nans(data.inputs, 0), FLAGS),
             (data.inputs, SAT_FLAGS), (_with_infs(data.inputs, 1), SAT_FLAGS)]
    for inputs, flag_sets in cases:
        for flags in flag_sets:
            try:
                got = _run(module, flags, inputs)
            except ERRORS:
                continue
            with monkeypatch.context() as m:
                m.setattr(chain, "MIN_SEGMENT", 10**9)
                want = _run(module, flags, inputs)
            for g, w in zip(got, want, strict=True):
                assert np.asarray(g).tobytes() == np.asarray(w).tobytes(), (flags, name)
    _CHAINED.append(calls["chain"])
    _BAILED.append(calls["nan"])
    _SATINF.append(calls["satinf"])


_CHAINED: list[int] = []
_BAILED: list[int] = []
_SATINF: list[int] = []


def test_the_chains_ran_and_fell_back():
    """The comparison above ran chains (``satinf`` among them), and the NaN inputs made some of
    them fall back."""
    if not _CHAINED:
        pytest.skip("run with test_real_models_with_and_without_chains")
    assert sum(_CHAINED) > 100
    assert sum(_BAILED) > 0
    assert sum(_SATINF) > 10


def _saturated(x, dtype):
    """``satinf`` on values of ``dtype``: ±inf to ±its largest finite value (decision L11)."""
    top = F32(ml_dtypes.finfo(dtype).max)
    return np.where(np.isinf(x), np.copysign(top, x), x).astype(F32)


@pytest.mark.parametrize("cast_type,dtype", [(None, F32), ("bf16", BF16), ("fp16", np.float16)])
def test_saturate_infinity_clamps_in_the_chain(cast_type, dtype, monkeypatch):
    """``(x + y) * y`` under saturate-infinity, every operand clamped first: ±inf, ±0, the
    largest finite values and sums that overflow, chained, equal to NumPy's float32 operations
    on the clamped values, each result rounded once to the op's dtype (EM-11), and to the
    unchained run."""
    monkeypatch.setattr(blocks, "MIN_ELEMENTS", 8)
    text = ("HloModule sat\n\nENTRY main {\n  x = f32[64] parameter(0)\n"
            "  y = f32[64] parameter(1)\n  s = f32[64] add(x, y)\n"
            "  ROOT m = f32[64] multiply(s, y)\n}\n")
    module = hlo.parse(text)
    top = float(ml_dtypes.finfo(dtype).max)
    edge = [np.inf, -np.inf, 0.0, -0.0, top, -top, 1.0, -2.5]
    rng = np.random.default_rng(3)
    x = np.array(edge * 8, F32)
    y = np.array(rng.permutation(edge * 8), F32)
    flags = ["--auto-cast", "none", SAT] if cast_type is None else \
        ["--auto-cast", "all", "--auto-cast-type", cast_type, SAT]
    calls = _counted(monkeypatch)
    (got,) = _run(module, flags, [x, y])
    assert calls["satinf"] > 0 and calls["nan"] == 0

    def r(v):
        return np.asarray(v, F32).astype(dtype).astype(F32)

    with np.errstate(all="ignore"):
        xs, ys = r(x), r(y)
        s = r(_saturated(xs, dtype) + _saturated(ys, dtype))
        want = r(_saturated(s, dtype) * _saturated(ys, dtype))
    np.testing.assert_array_equal(_bits(np.asarray(got, F32)), _bits(want))
    with monkeypatch.context() as m:
        m.setattr(chain, "MIN_SEGMENT", 10**9)
        (plain,) = _run(module, flags, [x, y])
    assert _bits(np.asarray(plain)).tobytes() == _bits(np.asarray(got)).tobytes()


def test_threads_split_the_lanes_and_any_share_declines():
    """Two workers give the one-thread bits; a NaN in either worker's share declines the call."""
    rng = np.random.default_rng(5)
    n = 5 * kchain.GRAIN + 17
    x, y = (rng.standard_normal(n).astype(F32) for _ in range(2))
    code = [("mul", 2, 0, 1), ("add", 2, 2, 0), ("round_bf16", 3, 2), ("lt", 4, 0, 1),
            ("select", 2, 4, 3, 1), ("div", 3, 2, 0)]
    prog = Program(code, 5, 2, [(2, F32), (3, F32), (4, np.bool_)])
    one = prog([x, y], n, threads=1)
    two = prog([x, y], n, threads=2)
    assert one is not None and two is not None
    for a, b in zip(one, two, strict=True):
        np.testing.assert_array_equal(_bits(a), _bits(b))
    for where in (3, n - 3):
        bad = x.copy()
        bad[where] = np.nan
        assert prog([bad, y], n, threads=2) is None


@pytest.mark.exhaustive
@pytest.mark.parametrize("fmt,dtype", [("bf16", BF16), ("fp16", np.float16)])
def test_roundings_of_every_float32(fmt, dtype):
    """round_bf16 / round_fp16 (decision EM-18: branch-free, vectorized) against ml_dtypes' /
    NumPy's RNE conversion on all 2^32 float32 words (NaN words: the chain gives the block back),
    both the float32 value and the stored code."""
    prog = Program([(f"round_{fmt}", 1, 0)], 2, 1, [(1, dtype), (1, F32)])
    step = 1 << 24
    for start in range(0, 1 << 32, step):
        x = np.arange(start, start + step, dtype=np.uint64).astype(np.uint32).view(F32)
        x = x[~np.isnan(x)]
        with np.errstate(over="ignore"):
            want = x.astype(dtype)
        stored, value = prog([x], x.size)
        np.testing.assert_array_equal(_bits(stored), _bits(want))
        np.testing.assert_array_equal(_bits(value), _bits(want.astype(F32)))


@pytest.mark.exhaustive
@pytest.mark.parametrize("fmt", sorted(FP8))
def test_fp8_roundings_of_every_float32(fmt):
    """round_fp8e4 / round_fp8e4m3fn / round_fp8e5 (decision EM-19) on all 2^32 float32 words
    (NaN words: the chain gives the block back): ml_dtypes' RNE of the value clipped to ±max, and
    the cast core's own saturating encode and decode (``quantize_f32``, what the IR evaluator's
    NumPy route rounds with)."""
    from pyprecision.kernel import quantize_f32

    prog = Program([(f"round_{fmt}", 1, 0)], 2, 1, [(1, F32)])
    ref = _fp8_ref(FP8[fmt])
    step = 1 << 24
    for start in range(0, 1 << 32, step):
        x = np.arange(start, start + step, dtype=np.uint64).astype(np.uint32).view(F32)
        x = x[~np.isnan(x)]
        (value,) = prog([x], x.size)
        np.testing.assert_array_equal(_bits(value), _bits(ref(x)))
        np.testing.assert_array_equal(_bits(value), _bits(quantize_f32(x, fmt)))
