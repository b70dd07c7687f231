"""The AVX-512 emulation's own shims (csrc/emu512.h), the oracle's weak point: each intrinsic
SIMDe lacks, written there from Intel's documented semantics, checked against hand-derived cases
and, where this CPU has an equivalent (F16C's 256-bit conversions, scalar FMA / multiply /
float64 -> float32 under each rounding with fesetround, ml_dtypes' bfloat16 cast, numpy), against
that on random and edge inputs. The shims are compiled here with gcc against SIMDe
(tests/fastpaths/emu512_shims.c, loaded with ctypes); skipped without gcc or SIMDe
($SIMDE_INCLUDE, or the cache scripts/emulate_avx512.sh fills)."""
from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
from fractions import Fraction
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
CSRC = HERE.parents[1] / "csrc"
_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "pyprecision/simde"
SIMDE = Path(os.environ.get("SIMDE_INCLUDE", _CACHE / "usr/include"))
RN, RD, RU, RZ, CUR = 0, 1, 2, 3, 4  # the C wrappers' rounding numbers (4: MXCSR's)
DAZ, FTZ = 0x40, 0x8000
# the inputs deliberately hold NaNs, infinities and out-of-range values, which numpy's casts warn of
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning",
                                        "ignore:overflow encountered:RuntimeWarning")


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    """The shims and the native equivalents, built once."""
    if not (SIMDE / "simde/x86/avx512.h").is_file():
        pytest.skip(f"SIMDe not found at {SIMDE} (set SIMDE_INCLUDE or run scripts/emulate_avx512.sh)")
    if shutil.which("gcc") is None:
        pytest.skip("no gcc")
    so = tmp_path_factory.mktemp("emu512") / "shims.so"
    cmd = ["gcc", "-std=c11", "-O1", "-Wall", "-Wextra", "-Werror", "-Wno-psabi", "-fno-fast-math",
           "-ffp-contract=off", "-D_GNU_SOURCE", "-fPIC", "-shared", f"-I{CSRC}", f"-I{SIMDE}",
           str(HERE / "emu512_shims.c"), "-o", str(so), "-lm"]
    subprocess.run(cmd, check=True, capture_output=True)
    dll = ctypes.CDLL(str(so))
    dll.get_csr.restype = ctypes.c_uint
    for name in ("emu_cmp", "emu_kunpack"):
        getattr(dll, name).restype = ctypes.c_uint64
    dll.emu_cmp.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
    dll.emu_kunpack.argtypes = [ctypes.c_int, ctypes.c_uint64, ctypes.c_uint64]
    dll.emu_mask_store.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p]
    dll.emu_mask_load_edge.argtypes = [ctypes.c_int, ctypes.c_uint64, ctypes.c_size_t, ctypes.c_void_p]
    return dll


def P(a: np.ndarray) -> ctypes.c_void_p:
    """The array's data pointer (C-contiguous arrays only)."""
    assert a.flags.c_contiguous
    return ctypes.c_void_p(a.ctypes.data)


class _Csr:
    """MXCSR set to `value` for the block (restored after), and unchanged by every shim call."""

    def __init__(self, lib: ctypes.CDLL, value: int) -> None:
        self.lib, self.value = lib, value

    def __enter__(self) -> _Csr:
        self.old = self.lib.get_csr()
        self.lib.set_csr(self.value)
        return self

    def check(self, flags: bool = True) -> None:
        """Unchanged; flags=False: the control bits only (a form without {sae} may raise)."""
        mask = 0xFFFFFFFF if flags else ~0x3F & 0xFFFFFFFF
        assert self.lib.get_csr() & mask == self.value & mask, "a shim changed MXCSR"

    def __exit__(self, *exc: object) -> None:
        self.lib.set_csr(self.old)


DEFAULT_CSR = 0x1F80
CSRS = [DEFAULT_CSR, DEFAULT_CSR | DAZ | FTZ, DEFAULT_CSR | (RD << 13), DEFAULT_CSR | (RU << 13),
        DEFAULT_CSR | (RZ << 13)]


def f32(bits: list[int] | np.ndarray) -> np.ndarray:
    """float32 array from bit patterns."""
    return np.asarray(bits, dtype=np.uint64).astype(np.uint32).view(np.float32)


EDGE_BITS = [0, 0x80000000, 1, 0x007FFFFF, 0x00800000, 0x3F800000, 0x3F800001, 0x3F7FFFFF,
             0x7F7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0xFFBFFFFF, 0x7FFFFFFF,
             0x477FE000, 0x477FEFFF, 0x477FF000, 0x477FF001, 0x33800000, 0x33000000, 0x33000001,
             0x33400000, 0x38800000, 0x387FE000, 0x387FF000, 0x38801000, 0x3F808000, 0x3F818000,
             0x4F800000, 0x4F7FFFFF, 0x5F800000, 0x5F7FFFFF, 0xBF800000, 0xBF7FFFFF, 0x3F000000,
             0x3FC00000, 0x40200000, 0x40600000, 0xC0200000, 0x4B000000, 0x4B7FFFFF, 0xCB000001]


def edge_and_random_f32(n: int, seed: int) -> np.ndarray:
    """Edge values (both signs), then random bit patterns (all classes) and random values in the
    half / bf16 ranges; length a multiple of 16."""
    rng = np.random.default_rng(seed)
    e = np.array(EDGE_BITS, np.uint32)
    parts = [e, e ^ np.uint32(0x80000000), rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)]
    ex = rng.integers(100, 145, n).astype(np.uint32) << 23
    sign = rng.integers(0, 2, n).astype(np.uint32) << 31
    parts.append(ex | rng.integers(0, 1 << 23, n).astype(np.uint32) | sign)
    b = np.concatenate(parts)
    b = np.concatenate([b, np.zeros(-b.size % 16, np.uint32)])
    return b.view(np.float32)


def same_bits(got: np.ndarray, want: np.ndarray, inputs: np.ndarray, what: str) -> None:
    """Bitwise equality, naming the first differing inputs."""
    g = got.view(np.dtype(f"u{got.itemsize}"))
    w = want.view(np.dtype(f"u{want.itemsize}"))
    bad = np.flatnonzero(g != w)
    if bad.size:
        raw = inputs.view(np.dtype(f"u{inputs.itemsize}"))
        show = ", ".join(f"in={int(raw[i]):#x} got={int(g[i]):#x} want={int(w[i]):#x}" for i in bad[:6])
        pytest.fail(f"{what}: {bad.size} of {g.size} differ: {show}")


# ---- half precision: against F16C, then hand-derived cases ----

@pytest.mark.parametrize("csr", CSRS)
@pytest.mark.parametrize("imm", [0, 1, 2, 3, 4, 8, 9, 10, 11, 12])
def test_cvtps_ph_equals_f16c(lib: ctypes.CDLL, imm: int, csr: int) -> None:
    x = edge_and_random_f32(1 << 16, 1)
    got, want = np.zeros(x.size, np.uint16), np.zeros(x.size, np.uint16)
    with _Csr(lib, csr) as c:
        lib.emu_cvtps_ph(P(x), P(got), ctypes.c_size_t(x.size), imm)
        c.check()
        lib.nat_cvtps_ph(P(x), P(want), ctypes.c_size_t(x.size), imm)
    same_bits(got, want, x, f"cvtps_ph imm={imm} csr={csr:#x}")


# (float32 bits, imm, half bits), derived by hand from IEEE 754 binary16
CVTPS_PH_CASES = [
    (0x3F800000, 0, 0x3C00), (0x477FE000, 0, 0x7BFF), (0x477FF000, 0, 0x7C00),  # 65520 ties to inf
    (0x477FF000, 3, 0x7BFF), (0x477FF000, 1, 0x7BFF), (0x477FF000, 2, 0x7C00),
    (0xC77FF000, 2, 0xFBFF), (0xC77FF000, 1, 0xFC00), (0x7F7FFFFF, 3, 0x7BFF),
    (0x33000000, 0, 0x0000),  # 2^-25: the tie between 0 and 2^-24 goes to even 0
    (0x33400000, 0, 0x0001),  # 1.5 * 2^-25 rounds up
    (0x33000000, 2, 0x0001), (0xB3000000, 1, 0x8001), (0xB3000000, 2, 0x8000),
    (0x00000001, 2, 0x0001), (0x00000001, 0, 0x0000), (0x80000001, 1, 0x8001),
    (0x387FE000, 0, 0x0400),  # just below 2^-14 rounds up to the min normal
    (0x7F800000, 3, 0x7C00), (0xFF800000, 0, 0xFC00),
    (0x7F800001, 0, 0x7E00), (0xFFC00000, 0, 0xFE00), (0x7FFFFFFF, 3, 0x7FFF),
    (0x3F808000, 0, 0x3C04), (0x3F801000, 0, 0x3C00), (0x3F803000, 0, 0x3C02),  # 1 + 1.5 ulp -> 2 ulp
]


def test_cvtps_ph_hand_cases(lib: ctypes.CDLL) -> None:
    for bits, imm, want in CVTPS_PH_CASES:
        x = f32([bits] * 16)
        got = np.zeros(16, np.uint16)
        lib.emu_cvtps_ph(P(x), P(got), ctypes.c_size_t(16), imm | 8)
        assert int(got[0]) == want, f"cvtps_ph({bits:#x}, {imm}) = {int(got[0]):#x}, want {want:#x}"


@pytest.mark.parametrize("csr", CSRS[:2])
def test_cvtph_ps_equals_f16c_on_every_half(lib: ctypes.CDLL, csr: int) -> None:
    h = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    got, want = np.zeros(h.size, np.float32), np.zeros(h.size, np.float32)
    with _Csr(lib, csr) as c:
        lib.emu_cvtph_ps(P(h), P(got), ctypes.c_size_t(h.size))
        c.check(flags=False)  # a signaling NaN half may raise invalid, as VCVTPH2PS does
        lib.nat_cvtph_ps(P(h), P(want), ctypes.c_size_t(h.size))
    same_bits(got, want, h, f"cvtph_ps csr={csr:#x}")
    # by hand: the subnormal 0x0001 is 2^-24, NaN payloads move up 13 bits and are quieted
    for hb, fb in [(0x0001, 0x33800000), (0x8001, 0xB3800000), (0x03FF, 0x387FC000),
                   (0x3C00, 0x3F800000), (0x7C00, 0x7F800000), (0x7C01, 0x7FC02000),
                   (0xFE00, 0xFFC00000), (0x0400, 0x38800000)]:
        assert int(got.view(np.uint32)[hb]) == fb, hex(hb)


# ---- bf16 (AVX512_BF16: nothing native here; hand cases and ml_dtypes) ----

BF16_CASES = [(0x3F800000, 0x3F80), (0x3F808000, 0x3F80), (0x3F818000, 0x3F82),
              (0x3F808001, 0x3F81), (0x3F80FFFF, 0x3F81), (0x7F7FFFFF, 0x7F80),
              (0xFF7FFFFF, 0xFF80), (0x7F800000, 0x7F80), (0xFF800000, 0xFF80),
              (0x00000001, 0x0000), (0x80400000, 0x8000), (0x007FFFFF, 0x0000),  # DAZ always
              (0x00800000, 0x0080), (0x7F800001, 0x7FC0), (0xFFC12345, 0xFFC1),
              (0x7F810000, 0x7FC1), (0x80000000, 0x8000)]


def test_cvtneps_pbh(lib: ctypes.CDLL) -> None:
    x = f32([b for b, _ in BF16_CASES] + [0] * (-len(BF16_CASES) % 16))
    got = np.zeros(x.size, np.uint16)
    with _Csr(lib, DEFAULT_CSR | (RZ << 13)) as c:  # MXCSR is not consulted
        lib.emu_cvtneps_pbh(P(x), P(got), ctypes.c_size_t(x.size))
        c.check()
    for i, (b, want) in enumerate(BF16_CASES):
        assert int(got[i]) == want, f"cvtneps_pbh({b:#x}) = {int(got[i]):#x}, want {want:#x}"
    # every normal and infinite input: nearest even, as ml_dtypes' cast
    y = edge_and_random_f32(1 << 16, 2)
    out = np.zeros(y.size, np.uint16)
    lib.emu_cvtneps_pbh(P(y), P(out), ctypes.c_size_t(y.size))
    a = y.view(np.uint32) & 0x7FFFFFFF
    normal = (a >= 0x00800000) & (a <= 0x7F800000)
    same_bits(out[normal], y[normal].astype(ml_dtypes.bfloat16).view(np.uint16), y[normal], "bf16")
    sub = a < 0x00800000
    assert np.array_equal(out[sub], (y[sub].view(np.uint32) >> 16).astype(np.uint16) & 0x8000)
    nan = a > 0x7F800000
    assert np.array_equal(out[nan], (y[nan].view(np.uint32) >> 16).astype(np.uint16) | 0x40)


# ---- arithmetic with embedded rounding: against the scalar hardware under fesetround ----

def _triples(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = edge_and_random_f32(n, seed)
    b = np.concatenate([a[1:], a[:1]])
    c = rng.permutation(a)
    # products near c's magnitude (cancellation) and exact ties
    k = a.size // 4
    c[:k] = (-(a[:k].astype(np.float64) * b[:k])).astype(np.float32)
    return a, b, c


@pytest.mark.parametrize("csr", CSRS)
@pytest.mark.parametrize("r", [RN, RD, RU, RZ, CUR])
def test_fmadd_round_ps(lib: ctypes.CDLL, r: int, csr: int) -> None:
    a, b, c = _triples(1 << 14, 3)
    got, want = np.zeros(a.size, np.float32), np.zeros(a.size, np.float32)
    with _Csr(lib, csr) as cs:
        lib.emu_fmadd(P(a), P(b), P(c), P(got), ctypes.c_size_t(a.size), r)
        cs.check(flags=r != CUR)
        # the hardware under the same rounding; DAZ / FTZ stay as csr has them
        if r != CUR:
            lib.set_csr((csr & ~0x6000) | (r << 13))
        lib.nat_fmadd(P(a), P(b), P(c), P(want), ctypes.c_size_t(a.size), CUR)
    same_bits(got, want, a, f"fmadd_round r={r} csr={csr:#x}")


def test_fmadd_round_hand_cases(lib: ctypes.CDLL) -> None:
    e = 2.0 ** -24
    cases = [  # (a, b, c) -> rn, rd, ru, rz
        ((1.0, 1.0, e), (1.0, 1.0, 1 + 2 * e, 1.0)),
        ((-1.0, 1.0, -e), (-1.0, -1 - 2 * e, -1.0, -1.0)),
        # (1 + 2^-23)^2 - 1 = 2^-22 + 2^-46: a tie at 2^-22's ulp (2^-45), seen by the FMA only
        ((1 + 2 * e, 1 + 2 * e, -1.0), (4 * e, 4 * e, 4 * e + 2.0 ** -45, 4 * e)),
        ((3.0, 1.0, -3.0), (0.0, -0.0, 0.0, 0.0)),  # exact zero: -0 only rounding down
    ]
    for (a, b, c), wants in cases:
        for r, want in zip((RN, RD, RU, RZ), wants, strict=True):
            x, y, z = (np.full(16, v, np.float32) for v in (a, b, c))
            got = np.zeros(16, np.float32)
            lib.emu_fmadd(P(x), P(y), P(z), P(got), ctypes.c_size_t(16), r)
            w = np.float32(want)
            assert got[0].view(np.uint32) == w.view(np.uint32), (a, b, c, r, got[0], w)


@pytest.mark.parametrize("r", [RN, RD, RU, RZ])
def test_maskz_mul_round(lib: ctypes.CDLL, r: int) -> None:
    a, b, _ = _triples(1 << 14, 4)
    k = 0xA5C3
    for csr in CSRS[:2]:
        got, want = np.zeros(a.size, np.float32), np.zeros(a.size, np.float32)
        with _Csr(lib, csr) as cs:
            lib.emu_mul_ps(P(a), P(b), P(got), ctypes.c_size_t(a.size), r, k)
            cs.check()
            lib.set_csr((csr & ~0x6000) | (r << 13))
            lib.nat_mul_ps(P(a), P(b), P(want), ctypes.c_size_t(a.size), CUR)
        lanes = np.tile(np.array([(k >> j) & 1 for j in range(16)], bool), a.size // 16)
        want[~lanes] = 0
        same_bits(got, want, a, f"maskz_mul_round_ps r={r} csr={csr:#x}")
        ad, bd = a.astype(np.float64) * 1.7, b.astype(np.float64) * 3.3e-100
        gd, wd = np.zeros(a.size), np.zeros(a.size)
        with _Csr(lib, csr) as cs:
            lib.emu_mul_pd(P(ad), P(bd), P(gd), ctypes.c_size_t(a.size), r, k & 0xFF)
            cs.check()
            lib.set_csr((csr & ~0x6000) | (r << 13))
            lib.nat_mul_pd(P(ad), P(bd), P(wd), ctypes.c_size_t(a.size), CUR)
        wd[~np.tile(lanes[:8], a.size // 8)] = 0
        same_bits(gd, wd, ad, f"maskz_mul_round_pd r={r} csr={csr:#x}")


@pytest.mark.parametrize("r", [RN, RD, RU, RZ, CUR, 5])
def test_cvt_roundpd_ps(lib: ctypes.CDLL, r: int) -> None:
    rng = np.random.default_rng(5)
    d = np.concatenate([rng.integers(0, 1 << 64, 1 << 14, dtype=np.uint64).view(np.float64),
                        edge_and_random_f32(1 << 12, 6).astype(np.float64) * (1 + 2.0 ** -30),
                        np.array([2.0 ** -150, 2.0 ** -149 * 1.5, 3.4028235677973366e38, 1e39])])
    d = np.concatenate([d, np.zeros(-d.size % 8)])
    for csr in CSRS:
        got, want = np.zeros(d.size, np.float32), np.zeros(d.size, np.float32)
        with _Csr(lib, csr) as cs:
            lib.emu_cvtpd_ps(P(d), P(got), ctypes.c_size_t(d.size), r)
            cs.check(flags=r < 4)
            if r < 4:
                lib.set_csr((csr & ~0x6000) | (r << 13))
            lib.nat_cvtpd_ps(P(d), P(want), ctypes.c_size_t(d.size), CUR)
        same_bits(got, want, d, f"cvt_roundpd_ps r={r} csr={csr:#x}")


def test_cvtps_pd(lib: ctypes.CDLL) -> None:
    """float32 -> float64 is exact (numpy's widening) under the default MXCSR, and under every
    MXCSR what this CPU's scalar conversion gives (DAZ zeroes a subnormal input)."""
    f = edge_and_random_f32(1 << 14, 8)
    f = np.concatenate([f, np.zeros(-f.size % 8, np.float32)])
    for csr in CSRS:
        got, want = np.zeros(f.size), np.zeros(f.size)
        with _Csr(lib, csr):
            lib.emu_cvtps_pd(P(f), P(got), ctypes.c_size_t(f.size))
            lib.nat_cvtps_pd(P(f), P(want), ctypes.c_size_t(f.size))
        same_bits(got, want, f, f"cvtps_pd csr={csr:#x}")
        if not csr & 0x40:  # DAZ off
            same_bits(got, f.astype(np.float64), f, f"cvtps_pd exact csr={csr:#x}")


# ---- vreduceps / vreducepd: an exact model (Fraction), then hand cases ----

def _round_int(q: Fraction, rc: int) -> int:
    fl = q.numerator // q.denominator
    fr = q - fl
    if rc == RD or fr == 0:
        return fl
    if rc == RU:
        return fl + 1
    if rc == RZ:
        return fl if q > 0 else fl + 1
    return fl + 1 if fr > Fraction(1, 2) or (fr == Fraction(1, 2) and fl % 2) else fl


def _to_binary(q: Fraction, p: int, emin: int, rc: int) -> float:
    """q rounded to p bits (exponent >= emin, subnormals kept), as a Python float."""
    if q == 0:
        return 0.0
    s, a = (-1, -q) if q < 0 else (1, q)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    quantum = Fraction(2) ** (max(e, emin) - (p - 1))
    mode = {RU: RD, RD: RU}.get(rc, rc) if s < 0 else rc  # rounding |q|: directions swap
    return s * float(_round_int(a / quantum, mode) * quantum)


def reduce_model(x: float, imm: int, dbl: bool) -> float:
    """VREDUCE: x - ROUND(2^M x) 2^-M, the subtraction rounded; NaN quieted; inf -> +0; an exact
    zero is -0 rounding down and +0 otherwise."""
    m, rc = imm >> 4, imm & 3
    if np.isnan(x):
        return x
    if np.isinf(x):
        return 0.0
    q = Fraction(x)
    t = Fraction(_round_int(q * 2 ** m, rc), 2 ** m)
    res = q - t
    if res == 0:
        return -0.0 if rc == RD else 0.0
    return _to_binary(res, 53, -1022, rc) if dbl else _to_binary(res, 24, -126, rc)


REDUCE_IMMS = [0x08, 0x09, 0x0A, 0x0B, 0x18, 0x1B, 0x29, 0x3A, 0xF8, 0xFB]


@pytest.mark.parametrize("imm", REDUCE_IMMS)
def test_reduce_round_against_exact_model(lib: ctypes.CDLL, imm: int) -> None:
    rng = np.random.default_rng(imm)
    x = edge_and_random_f32(1 << 11, imm)
    x = np.concatenate([x, (rng.integers(-4000, 4000, 1 << 11) / 64).astype(np.float32)])
    k = 0xFFFF
    got = np.zeros(x.size, np.float32)
    with _Csr(lib, DEFAULT_CSR) as cs:
        lib.emu_reduce_ps(P(x), P(got), ctypes.c_size_t(x.size), imm, k)
        cs.check()
    want = np.array([reduce_model(float(v), imm, False) for v in x], np.float32)
    nan = np.isnan(x)
    same_bits(got[~nan], want[~nan], x[~nan], f"reduce_ps imm={imm:#x}")
    assert np.array_equal(got[nan].view(np.uint32), x[nan].view(np.uint32) | 0x400000)
    more = np.array([1e300, -1e308, 2.0 ** -1074, 2.0 ** 60 + 0.5, 0.0])
    xd = np.concatenate([x.astype(np.float64) * (1 + 2.0 ** -40), more])
    xd = np.concatenate([xd, np.zeros(-xd.size % 8)])
    gd = np.zeros(xd.size)
    lib.emu_reduce_pd(P(xd), P(gd), ctypes.c_size_t(xd.size), imm, k & 0xFF)
    wd = np.array([reduce_model(float(v), imm, True) for v in xd])
    nd = np.isnan(xd)
    same_bits(gd[~nd], wd[~nd], xd[~nd], f"reduce_pd imm={imm:#x}")


def test_reduce_hand_cases_and_mask(lib: ctypes.CDLL) -> None:
    cases = [  # (x, imm, result): M = imm >> 4, rounding imm & 3
        (1.75, 0x0B, 0.75), (-1.75, 0x0B, -0.75), (1.75, 0x08, -0.25), (2.5, 0x08, 0.5),
        (3.5, 0x08, -0.5), (1.75, 0x09, 0.75), (1.25, 0x0A, -0.75), (1.375, 0x1B, 0.375),
        (-0.0, 0x08, 0.0), (-0.0, 0x09, -0.0), (5.0, 0x08, 0.0), (5.0, 0x09, -0.0),
        (2.0 ** 30, 0x0B, 0.0), (float("inf"), 0x08, 0.0), (float("-inf"), 0x09, 0.0),
        (0.25, 0x08, 0.25), (-0.25, 0x0B, -0.25), (0.75, 0x1B, 0.25),
    ]
    for x, imm, want in cases:
        xs = np.full(16, x, np.float32)
        got = np.zeros(16, np.float32)
        lib.emu_reduce_ps(P(xs), P(got), ctypes.c_size_t(16), imm, 0xFFFF)
        assert got[0].view(np.uint32) == np.float32(want).view(np.uint32), (x, imm, got[0], want)
    s = f32([0x7F800001] * 16)  # a signaling NaN comes back quiet
    got = np.zeros(16, np.float32)
    lib.emu_reduce_ps(P(s), P(got), ctypes.c_size_t(16), 0x0B, 0x00FF)
    assert list(got.view(np.uint32)) == [0x7FC00001] * 8 + [0] * 8  # maskz: the rest zero
    with _Csr(lib, DEFAULT_CSR | DAZ):  # DAZ: a subnormal input is a zero
        d = f32([0x00400000] * 16)
        lib.emu_reduce_ps(P(d), P(got), ctypes.c_size_t(16), 0x08, 0xFFFF)
    assert got[0].view(np.uint32) == 0


# ---- truncating conversions to unsigned ----

def _cvtt_model(x: float, bits: int) -> int:
    if np.isnan(x) or x <= -1 or x >= 2.0 ** bits:
        return (1 << bits) - 1
    return int(np.trunc(x)) if x >= 1 else 0


def test_cvtt_to_unsigned(lib: ctypes.CDLL) -> None:
    x = edge_and_random_f32(1 << 12, 7)
    x = np.concatenate([x, np.array([-0.99, -1.0, 4294967040.0, 4294967296.0, 0.5, 1.99, 2.0 ** 31,
                                     -0.0, 1e-40, 3.0, 7.5, 123456.7, 1e10, -1e10, 0.0, 1.0], np.float32)])
    src = np.full(x.size, 0xDEADBEEF, np.uint32)
    k = 0xFEFF
    got = np.zeros(x.size, np.uint32)
    lib.emu_cvtt_ps_u32(P(x), P(src), P(got), ctypes.c_size_t(x.size), k)
    lanes = np.tile(np.array([(k >> j) & 1 for j in range(16)], bool), x.size // 16)
    want = np.array([_cvtt_model(float(v), 32) for v in x], np.uint64).astype(np.uint32)
    want[~lanes] = 0xDEADBEEF
    same_bits(got, want, x, "cvtt_roundps_epu32")
    limits = [2.0 ** 64, 2.0 ** 64 - 2048, 2.0 ** 63, 2.0 ** 63 - 1024, -1.0, -0.5, 1e300, 0.0]
    d = np.concatenate([x.astype(np.float64) * 2.0 ** 33, np.array(limits)])
    d = np.concatenate([d, np.zeros(-d.size % 8)])
    srcd = np.full(d.size, 7, np.uint64)
    gd = np.zeros(d.size, np.uint64)
    lib.emu_cvtt_pd_u64(P(d), P(srcd), P(gd), ctypes.c_size_t(d.size), 0xFD)
    ld = np.tile(np.array([(0xFD >> j) & 1 for j in range(8)], bool), d.size // 8)
    wd = np.array([_cvtt_model(float(v), 64) for v in d], dtype=object)
    wd[~ld] = 7
    same_bits(gd, np.array(wd.tolist(), np.uint64), d, "cvtt_roundpd_epu64")


# ---- classification, compares, masks, integer conversions, masked memory ----

def _classes(x: np.ndarray) -> dict[int, np.ndarray]:
    u = x.view(np.uint32)
    a, neg = u & 0x7FFFFFFF, (u >> 31) == 1
    nan = a > 0x7F800000
    return {0x01: nan & ((u & 0x400000) != 0), 0x80: nan & ((u & 0x400000) == 0),
            0x02: (a == 0) & ~neg, 0x04: (a == 0) & neg, 0x08: (a == 0x7F800000) & ~neg,
            0x10: (a == 0x7F800000) & neg, 0x20: (a != 0) & (a < 0x00800000),
            0x40: neg & (a != 0) & (a < 0x7F800000)}


@pytest.mark.parametrize("imm", [0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0x81, 0x22, 0xFF])
def test_fpclass_ps_mask(lib: ctypes.CDLL, imm: int) -> None:
    x = edge_and_random_f32(1 << 12, 8)
    got = np.zeros(x.size // 16, np.uint16)
    with _Csr(lib, DEFAULT_CSR | DAZ):  # the encoding is classified as it is
        lib.emu_fpclass(P(x), P(got), ctypes.c_size_t(x.size), imm)
    cls = _classes(x)
    hit = np.zeros(x.size, bool)
    for bit, m in cls.items():
        if imm & bit:
            hit |= m
    want = (hit.reshape(-1, 16) * (1 << np.arange(16))).sum(axis=1).astype(np.uint16)
    assert np.array_equal(got, want)


def test_integer_compares(lib: ctypes.CDLL) -> None:
    rng = np.random.default_rng(9)
    ops = [(0, np.uint16, np.greater, 16), (1, np.int16, np.equal, 32), (2, np.uint16, np.less, 32),
           (3, np.uint32, np.greater, 16), (4, np.uint32, np.less, 16),
           (5, np.uint64, np.greater, 8), (6, np.uint64, np.less, 8)]
    for _ in range(200):
        raw = rng.integers(0, 256, 128, dtype=np.uint8)
        raw[64:] = np.where(rng.random(64) < 0.3, raw[:64], raw[64:])  # some equal lanes
        raw[rng.integers(0, 128, 8)] = 0xFF
        for which, dt, op, n in ops:
            a = np.ascontiguousarray(raw[:64]).view(dt)[:n]
            b = np.ascontiguousarray(raw[64:]).view(dt)[:n]
            want = int(sum(int(bool(v)) << j for j, v in enumerate(op(a, b))))
            assert lib.emu_cmp(which, P(raw[:64].copy()), P(raw[64:].copy())) == want, which


def test_kunpack(lib: ctypes.CDLL) -> None:
    assert lib.emu_kunpack(0, 0xABCD, 0x1234) == 0xCD34
    assert lib.emu_kunpack(1, 0x12345678, 0x9ABCDEF0) == 0x5678DEF0
    assert lib.emu_kunpack(2, 0x1111222233334444, 0x5555666677778888) == 0x3333444477778888


def test_integer_narrowing_and_widening(lib: ctypes.CDLL) -> None:
    rng = np.random.default_rng(10)
    for _ in range(50):
        v = rng.integers(0, 1 << 32, 16, dtype=np.uint64).astype(np.uint32)
        o16, o8 = np.zeros(16, np.uint16), np.zeros(16, np.uint8)
        lib.emu_cvt_int(0, P(v), P(o16))
        lib.emu_cvt_int(1, P(v), P(o8))
        assert np.array_equal(o16, v.astype(np.uint16)) and np.array_equal(o8, v.astype(np.uint8))
        b = rng.integers(0, 256, 32, dtype=np.uint8)
        w32, w64, w16 = np.zeros(16, np.uint32), np.zeros(8, np.uint64), np.zeros(32, np.uint16)
        lib.emu_cvt_int(2, P(b), P(w32))
        lib.emu_cvt_int(3, P(b), P(w64))
        lib.emu_cvt_int(4, P(b), P(w16))
        assert np.array_equal(w32, b.view(np.uint16).astype(np.uint32))
        assert np.array_equal(w64, b[:32].view(np.uint32)[:8].astype(np.uint64))
        assert np.array_equal(w16, b.astype(np.uint16))


def test_masked_stores_touch_only_their_bytes(lib: ctypes.CDLL) -> None:
    rng = np.random.default_rng(11)
    # which -> (element size in memory, lanes, value -> stored elements)
    kinds = {0: (2, 16, lambda v: v[:32].view(np.uint16)), 1: (1, 64, lambda v: v),
             2: (4, 16, lambda v: v.view(np.uint32)),
             3: (2, 16, lambda v: v.view(np.uint32).astype(np.uint16)),
             4: (1, 16, lambda v: v.view(np.uint32).astype(np.uint8))}
    for _ in range(100):
        v = rng.integers(0, 256, 64, dtype=np.uint8)
        for which, (size, lanes, elems) in kinds.items():
            k = int(rng.integers(0, 1 << 63)) & ((1 << lanes) - 1)
            buf = np.full(64 + 16, 0xEE, np.uint8)
            lib.emu_mask_store(which, ctypes.c_void_p(buf.ctypes.data + 3), k, P(v))
            want = np.full(64 + 16, 0xEE, np.uint8)
            e = elems(v).view(np.uint8).reshape(lanes, size)
            for j in range(lanes):
                if (k >> j) & 1:
                    want[3 + j * size: 3 + (j + 1) * size] = e[j]
            assert np.array_equal(buf, want), (which, hex(k))


@pytest.mark.parametrize("which,size,lanes", [(0, 2, 16), (1, 4, 16), (2, 8, 8)])
def test_masked_loads_do_not_read_masked_off_lanes(lib: ctypes.CDLL, which: int, size: int,
                                                   lanes: int) -> None:
    """The lanes past the readable page are masked off; reading them would fault (SIGSEGV)."""
    for avail_lanes in (0, 1, lanes // 2, lanes - 1, lanes):
        out = np.zeros(64, np.uint8)
        k = (1 << avail_lanes) - 1
        assert lib.emu_mask_load_edge(which, k, avail_lanes * size, P(out)) == 0
        want = np.zeros(64, np.uint8)
        want[: avail_lanes * size] = (np.arange(avail_lanes * size) + 1).astype(np.uint8)
        assert np.array_equal(out[: lanes * size], want[: lanes * size]), avail_lanes


def test_streaming_stores(lib: ctypes.CDLL) -> None:
    v = np.arange(64, dtype=np.uint8)
    buf = np.zeros(192, np.uint8)
    p = (buf.ctypes.data + 63) & ~63
    for which in (0, 1):
        buf[:] = 0
        lib.emu_stream(which, ctypes.c_void_p(p), P(v))
        off = p - buf.ctypes.data
        assert np.array_equal(buf[off:off + 64], v) and not buf[:off].any() and not buf[off + 64:].any()
    assert lib.emu_stream_misaligned_traps() != 0  # VMOVNTDQ faults on a misaligned address

