/* AVX-512 emulated with AVX2, for testing only: the AVX-512 kernel set (kern_avx512.c and the
 * headers it includes) compiled on a machine without AVX-512, so that every AVX-512 path can be
 * proven against the reference converter where no AVX-512 CPU is at hand. Used only when the core
 * is built with -DPP_EMULATE_AVX512 (setup_build.py: PYPRECISION_EMULATE_AVX512=<SIMDe include
 * dir>; scripts/emulate_avx512.sh); a normal build never includes it.
 *
 * The unit is compiled for AVX2 + FMA + F16C + BMI/BMI2 + POPCNT (the pragma below; no AVX-512
 * flag, so no AVX-512 instruction can be emitted) and SIMDe (github.com/simd-everywhere/simde,
 * header-only, fetched at build time, never in this repository) supplies the AVX-512 intrinsics
 * from AVX2 halves. The intrinsics SIMDe lacks (Debian's 0.7.4 lacks all below) are written here
 * from Intel's documented semantics (Intrinsics Guide / SDM pseudocode), scalar per element, each
 * under #ifndef so that a SIMDe that has one keeps its own. These shims are the oracle's weak
 * point: tests/fastpaths/test_emu512_shims.py checks each against hand-derived cases and, where
 * this CPU has an equivalent (F16C, scalar FMA / conversions under each rounding), against it.
 *
 * Floating-point shims run the scalar hardware operation of this CPU (which obeys MXCSR's DAZ /
 * FTZ as the AVX-512 one does) with MXCSR's rounding field set to the embedded rounding and every
 * exception masked, then restore MXCSR (which also drops the flags: {sae} reports none); the
 * operands pass through volatiles so the compiler cannot move the operation out of that window.
 * Conversions to and from half precision and bf16 are exact integer arithmetic. */
#ifndef PP_EMU512_H
#define PP_EMU512_H

#if !defined(__GNUC__) || !defined(__OPTIMIZE__)
#error "emu512.h: GCC-compatible compiler and -O1 or more (immintrin.h's -O0 macros would win)"
#endif

#pragma GCC target("avx2,fma,f16c,bmi,bmi2,popcnt")
/* Compile time: at -O3 with SIMDe's functions inlined this unit takes 7 min; -O1 and SIMDe's
 * functions out of line (SIMDE_NO_INLINE, meant for coverage builds: results unchanged) 18 s. */
#pragma GCC optimize("O1")
#define SIMDE_NO_INLINE
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>
#include "emu512_cpu.h" /* CPU feature checks: every avx512* one is emulated */
#include <stdint.h>
#include <string.h>

#define PP_EMU static inline __attribute__((always_inline, unused))

typedef union {
    __m512i i;
    __m512 f;
    __m512d d;
    uint8_t u8[64];
    uint16_t u16[32];
    uint32_t u32[16];
    uint64_t u64[8];
    float f32[16];
    double f64[8];
} pp_e512;
typedef union {
    __m256i i;
    __m256 f;
    uint8_t u8[32];
    uint16_t u16[16];
    uint32_t u32[8];
    uint64_t u64[4];
    float f32[8];
} pp_e256;
typedef union {
    __m128i i;
    uint8_t u8[16];
    uint16_t u16[8];
} pp_e128;

/* ---- MXCSR around one scalar operation ----
 * r: an _MM_FROUND_* argument. Bits 0-1 with bit 2 clear: that rounding, which implies {sae};
 * _MM_FROUND_CUR_DIRECTION (4) | _MM_FROUND_NO_EXC (8): MXCSR's rounding, no exception;
 * _MM_FROUND_CUR_DIRECTION alone: MXCSR as it is (nothing changed, nothing restored). */
PP_EMU unsigned pp_emu_csr_enter(int r) {
    const unsigned old = _mm_getcsr();
    if (!(r & 4)) _mm_setcsr((old & ~0x6000u) | ((unsigned)(r & 3) << 13) | 0x1f80u);
    else if (r & 8) _mm_setcsr(old | 0x1f80u);
    return old;
}
PP_EMU void pp_emu_csr_leave(int r, unsigned old) {
    if ((r & 12) != 4) _mm_setcsr(old);
}
PP_EMU float pp_emu_fmaf(float a, float b, float c) {
    volatile float va = a, vb = b, vc = c;
    volatile float vr = __builtin_fmaf(va, vb, vc); /* vfmadd: FMA is in this unit's target */
    return vr;
}
PP_EMU float pp_emu_mulf(float a, float b) {
    volatile float va = a, vb = b;
    volatile float vr = va * vb;
    return vr;
}
PP_EMU double pp_emu_mul(double a, double b) {
    volatile double va = a, vb = b;
    volatile double vr = va * vb;
    return vr;
}
PP_EMU float pp_emu_subf(float a, float b) {
    volatile float va = a, vb = b;
    volatile float vr = va - vb;
    return vr;
}
PP_EMU double pp_emu_sub(double a, double b) {
    volatile double va = a, vb = b;
    volatile double vr = va - vb;
    return vr;
}
PP_EMU float pp_emu_d2f(double a) {
    volatile double va = a;
    volatile float vr = (float)va; /* vcvtsd2ss */
    return vr;
}
PP_EMU uint32_t pp_emu_fbits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
PP_EMU uint64_t pp_emu_dbits(double d) {
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}
PP_EMU float pp_emu_bitsf(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}
PP_EMU double pp_emu_bitsd(uint64_t u) {
    double d;
    memcpy(&d, &u, 8);
    return d;
}
PP_EMU int pp_emu_daz(void) { return (_mm_getcsr() & 0x40u) != 0; }

/* ---- scalar conversions (exact integer arithmetic) ---- */

/* float32 -> binary16, rounding rc (0 nearest even, 1 down, 2 up, 3 toward zero); VCVTPS2PH:
 * NaN -> quiet NaN with the sign and the top 10 fraction bits; overflow -> inf or max as the
 * rounding direction says; subnormal results produced (FTZ ignored); daz: MXCSR.DAZ, which makes
 * a float32 subnormal input a zero (as F16C's VCVTPS2PH does on Zen 3, test_emu512_shims.py). */
PP_EMU uint16_t pp_emu_f32_to_f16(uint32_t u, int rc, int daz) {
    const uint16_t s = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (daz && a < 0x00800000u) a = 0;
    if (a > 0x7f800000u) return (uint16_t)(s | 0x7e00u | ((a >> 13) & 0x3ffu));
    if (a == 0x7f800000u) return (uint16_t)(s | 0x7c00u);
    if (a == 0) return s;
    const int e = (int)(a >> 23);
    const uint64_t m = (a & 0x7fffffu) | (e ? 0x800000u : 0u);
    const int E = (e ? e : 1) - 150; /* value = m * 2^E */
    const int lg = E + 63 - __builtin_clzll(m); /* floor(log2(value)) */
    const int Q = lg - 10 > -24 ? lg - 10 : -24; /* the result's quantum 2^Q */
    const int sh = Q - E;                         /* >= 13 */
    uint64_t K, rem, half;
    if (sh >= 40) {
        K = 0, rem = m, half = (uint64_t)1 << 39;
    } else {
        K = m >> sh, rem = m & (((uint64_t)1 << sh) - 1u), half = (uint64_t)1 << (sh - 1);
    }
    int up;
    if (rc == 0) up = rem > half || (rem == half && (K & 1u));
    else if (rc == 1) up = rem != 0 && s;
    else if (rc == 2) up = rem != 0 && !s;
    else up = 0;
    const int64_t code = ((int64_t)(Q + 24) << 10) + (int64_t)(K + (uint64_t)up);
    if (code >= 0x7c00) { /* overflow: inf where the direction rounds away from zero, else max */
        const int to_inf = rc == 0 || (rc == 2 && !s) || (rc == 1 && s);
        return (uint16_t)(s | (to_inf ? 0x7c00u : 0x7bffu));
    }
    return (uint16_t)(s | (uint16_t)code);
}

/* binary16 -> float32, exact (VCVTPH2PS; subnormal halves become normal floats, DAZ and FTZ
 * ignored, as on Zen 3);
 * NaN -> quiet NaN (bit 22 set), payload kept. */
PP_EMU uint32_t pp_emu_f16_to_f32(uint16_t h) {
    const uint32_t s = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t e = (h >> 10) & 0x1fu, f = h & 0x3ffu;
    if (e == 0x1f) return s | 0x7f800000u | (f ? 0x400000u : 0u) | (f << 13);
    if (e) return s | ((e + 112u) << 23) | (f << 13);
    if (!f) return s;
    const int msb = 31 - __builtin_clz(f); /* value = f * 2^-24, f < 2^10 */
    return s | ((uint32_t)(msb - 24 + 127) << 23) | ((f << (23 - msb)) & 0x7fffffu);
}

/* float32 -> bf16 as VCVTNEPS2BF16 (AVX512_BF16): nearest even, MXCSR not consulted, subnormal
 * inputs are zeros with their sign (DAZ always), NaN -> the top half with the quiet bit set. */
PP_EMU uint16_t pp_emu_f32_to_bf16(uint32_t u) {
    const uint32_t a = u & 0x7fffffffu;
    if (a < 0x00800000u) return (uint16_t)((u >> 16) & 0x8000u); /* zero or subnormal */
    if (a > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16); /* inf: no carry out of 0x7f80 */
}

/* trunc(x) as an unsigned integer of `bits` bits (VCVTTPS2UDQ / VCVTTPD2UQQ): NaN, or a value
 * whose truncation is not in [0, 2^bits), gives the integer indefinite 2^bits - 1. x is a
 * double (a float32 converts to it exactly). DAZ zeroes a subnormal input, whose truncation is
 * 0 either way. */
PP_EMU uint64_t pp_emu_cvtt_u(double x, int bits) {
    const uint64_t ind = bits == 64 ? ~(uint64_t)0 : (((uint64_t)1 << bits) - 1u);
    if (x != x) return ind;
    if (x <= -1.0) return ind;
    if (x < 1.0) return 0;
    const double lim = bits == 64 ? 18446744073709551616.0 : (double)((uint64_t)1 << bits);
    if (x >= lim) return ind;
    if (x >= 9223372036854775808.0) return (uint64_t)(int64_t)(x - 9223372036854775808.0) + (UINT64_C(1) << 63);
    return (uint64_t)(int64_t)x; /* truncation, exact */
}

/* VREDUCEPS / VREDUCEPD on one element: x - ROUND(2^M x) 2^-M, M = imm8[7:4], ROUND by imm8[1:0]
 * (or MXCSR's when imm8[2]), the subtraction under the same rounding; NaN -> quiet NaN; +-inf ->
 * +0; an exact zero result is +0 (-0 rounding down), the sign of ROUND kept (so x = -0 gives
 * +0). dbl: x is a float64 (else a float32 held exactly in a double, result rounded to float32
 * by the float32 subtraction). The caller has MXCSR set (pp_emu_csr_enter). */
PP_EMU double pp_emu_reduce(double x, int imm8, int dbl, int rc_mxcsr) {
    const int M = (imm8 >> 4) & 15;
    const int rc = (imm8 & 4) ? rc_mxcsr : (imm8 & 3);
    if (x != x) return dbl ? pp_emu_bitsd(pp_emu_dbits(x) | UINT64_C(0x0008000000000000)) : x;
    if (x == __builtin_inf() || x == -__builtin_inf()) return 0.0;
    /* from |x| >= 2^(52 - M) (2^(23 - M) for float32) on, 2^M x is an integer: ROUND keeps it */
    const double big = (dbl ? 4503599627370496.0 : 8388608.0) / (double)(1u << M);
    double t;
    if (x >= big || x <= -big) {
        t = x;
    } else {
        const double y = x * (double)(1u << M); /* exact */
        const int64_t ti = (int64_t)y; /* truncation */
        const double fr = y - (double)ti; /* exact */
        int64_t r = ti;
        if (rc == 0) {
            const double af = fr < 0 ? -fr : fr;
            if (af > 0.5 || (af == 0.5 && (ti & 1))) r += fr < 0 ? -1 : 1;
        } else if (rc == 1) {
            if (fr < 0) r -= 1;
        } else if (rc == 2) {
            if (fr > 0) r += 1;
        }
        t = __builtin_copysign((double)r, y) / (double)(1u << M); /* exact */
    }
    if (dbl) return pp_emu_sub(x, t);
    return (double)pp_emu_subf((float)x, (float)t);
}

/* ---- integer compares into masks ---- */
#define PP_EMU_CMP(NAME, VT, U, FIELD, N, MT, OP)                                                  \
    PP_EMU MT NAME(VT a, VT b) {                                                                   \
        U x, y;                                                                                    \
        x.i = a, y.i = b;                                                                          \
        MT k = 0;                                                                                  \
        for (int j = 0; j < (N); j++) k |= (MT)((MT)(x.FIELD[j] OP y.FIELD[j]) << j);              \
        return k;                                                                                  \
    }
PP_EMU_CMP(pp_emu_mm256_cmpgt_epu16_mask, __m256i, pp_e256, u16, 16, __mmask16, >)
PP_EMU_CMP(pp_emu_mm512_cmpeq_epi16_mask, __m512i, pp_e512, u16, 32, __mmask32, ==)
PP_EMU_CMP(pp_emu_mm512_cmplt_epu16_mask, __m512i, pp_e512, u16, 32, __mmask32, <)
PP_EMU_CMP(pp_emu_mm512_cmpgt_epu32_mask, __m512i, pp_e512, u32, 16, __mmask16, >)
PP_EMU_CMP(pp_emu_mm512_cmplt_epu32_mask, __m512i, pp_e512, u32, 16, __mmask16, <)
PP_EMU_CMP(pp_emu_mm512_cmpgt_epu64_mask, __m512i, pp_e512, u64, 8, __mmask8, >)
PP_EMU_CMP(pp_emu_mm512_cmplt_epu64_mask, __m512i, pp_e512, u64, 8, __mmask8, <)
#ifndef _mm256_cmpgt_epu16_mask
#define _mm256_cmpgt_epu16_mask(a, b) pp_emu_mm256_cmpgt_epu16_mask(a, b)
#endif
#ifndef _mm512_cmpeq_epi16_mask
#define _mm512_cmpeq_epi16_mask(a, b) pp_emu_mm512_cmpeq_epi16_mask(a, b)
#endif
#ifndef _mm512_cmplt_epu16_mask
#define _mm512_cmplt_epu16_mask(a, b) pp_emu_mm512_cmplt_epu16_mask(a, b)
#endif
#ifndef _mm512_cmpgt_epu32_mask
#define _mm512_cmpgt_epu32_mask(a, b) pp_emu_mm512_cmpgt_epu32_mask(a, b)
#endif
#ifndef _mm512_cmplt_epu32_mask
#define _mm512_cmplt_epu32_mask(a, b) pp_emu_mm512_cmplt_epu32_mask(a, b)
#endif
#ifndef _mm512_cmpgt_epu64_mask
#define _mm512_cmpgt_epu64_mask(a, b) pp_emu_mm512_cmpgt_epu64_mask(a, b)
#endif
#ifndef _mm512_cmplt_epu64_mask
#define _mm512_cmplt_epu64_mask(a, b) pp_emu_mm512_cmplt_epu64_mask(a, b)
#endif

/* ---- mask registers: KUNPCKBW / WD / DQ (dst high half = a's low half, low half = b's) ---- */
PP_EMU __mmask16 pp_emu_mm512_kunpackb(__mmask16 a, __mmask16 b) {
    return (__mmask16)(((unsigned)(a & 0xffu) << 8) | (b & 0xffu));
}
PP_EMU __mmask32 pp_emu_mm512_kunpackw(__mmask32 a, __mmask32 b) {
    return ((a & 0xffffu) << 16) | (b & 0xffffu);
}
PP_EMU __mmask64 pp_emu_mm512_kunpackd(__mmask64 a, __mmask64 b) {
    return ((a & 0xffffffffu) << 32) | (b & 0xffffffffu);
}
#ifndef _mm512_kunpackb
#define _mm512_kunpackb(a, b) pp_emu_mm512_kunpackb(a, b)
#endif
#ifndef _mm512_kunpackw
#define _mm512_kunpackw(a, b) pp_emu_mm512_kunpackw(a, b)
#endif
#ifndef _mm512_kunpackd
#define _mm512_kunpackd(a, b) pp_emu_mm512_kunpackd(a, b)
#endif

/* ---- masked loads (masked-off elements are zero and never read: no fault) and stores
 * (masked-off bytes never written). These replace SIMDe's even where it has them: SIMDe 0.8
 * loads the whole vector and blends (a masked-off lane past the end of a buffer faults, where the
 * hardware suppresses the fault: tests/fastpaths/test_emu512_shims.py), which would make the
 * kernels' masked tails look wrong. ---- */
#define PP_EMU_MASKZ_LOAD(NAME, VT, U, FIELD, N, MT, SZ)                                           \
    PP_EMU VT NAME(MT k, const void *p) {                                                          \
        U t;                                                                                       \
        memset(&t, 0, sizeof t);                                                                   \
        for (int j = 0; j < (N); j++)                                                              \
            if ((k >> j) & 1u) memcpy(&t.FIELD[j], (const char *)p + (SZ) * j, (SZ));              \
        return t.i;                                                                                \
    }
#define PP_EMU_MASK_STORE(NAME, VT, U, FIELD, N, MT, SZ)                                           \
    PP_EMU void NAME(void *p, MT k, VT a) {                                                        \
        U t;                                                                                       \
        t.i = a;                                                                                   \
        for (int j = 0; j < (N); j++)                                                              \
            if ((k >> j) & 1u) memcpy((char *)p + (SZ) * j, &t.FIELD[j], (SZ));                    \
    }
PP_EMU_MASKZ_LOAD(pp_emu_mm256_maskz_loadu_epi16, __m256i, pp_e256, u16, 16, __mmask16, 2)
PP_EMU_MASKZ_LOAD(pp_emu_mm512_maskz_loadu_epi32, __m512i, pp_e512, u32, 16, __mmask16, 4)
PP_EMU_MASKZ_LOAD(pp_emu_mm512_maskz_loadu_epi64, __m512i, pp_e512, u64, 8, __mmask8, 8)
PP_EMU_MASK_STORE(pp_emu_mm256_mask_storeu_epi16, __m256i, pp_e256, u16, 16, __mmask16, 2)
PP_EMU_MASK_STORE(pp_emu_mm512_mask_storeu_epi8, __m512i, pp_e512, u8, 64, __mmask64, 1)
PP_EMU_MASK_STORE(pp_emu_mm512_mask_storeu_epi32, __m512i, pp_e512, u32, 16, __mmask16, 4)
#undef _mm256_maskz_loadu_epi16
#define _mm256_maskz_loadu_epi16(k, p) pp_emu_mm256_maskz_loadu_epi16(k, p)
#undef _mm512_maskz_loadu_epi32
#define _mm512_maskz_loadu_epi32(k, p) pp_emu_mm512_maskz_loadu_epi32(k, p)
#undef _mm512_maskz_loadu_epi64
#define _mm512_maskz_loadu_epi64(k, p) pp_emu_mm512_maskz_loadu_epi64(k, p)
#undef _mm256_mask_storeu_epi16
#define _mm256_mask_storeu_epi16(p, k, a) pp_emu_mm256_mask_storeu_epi16(p, k, a)
#undef _mm512_mask_storeu_epi8
#define _mm512_mask_storeu_epi8(p, k, a) pp_emu_mm512_mask_storeu_epi8(p, k, a)
#undef _mm512_mask_storeu_epi32
#define _mm512_mask_storeu_epi32(p, k, a) pp_emu_mm512_mask_storeu_epi32(p, k, a)

/* ---- int32 <-> float32 conversions and an int32 compare SIMDe 0.7.4 lacks (the int32
 * narrowing, kern_narrow_avx512.h): each 512-bit one as the same AVX instruction on both 256-bit
 * halves, which has the AVX-512 one's semantics lane by lane: VCVTDQ2PS rounds by MXCSR.RC (and,
 * an int32 giving a normal float32 or +0, FTZ / DAZ do not act), VCVTTPS2DQ truncates, giving
 * 0x80000000 for NaNs and out-of-range values, in both encodings (Intel SDM). ---- */
PP_EMU __m512 pp_emu_mm512_cvtepi32_ps(__m512i a) {
    pp_e512 x, r;
    x.i = a;
    pp_e256 lo, hi;
    memcpy(&lo, &x.u32[0], 32);
    memcpy(&hi, &x.u32[8], 32);
    lo.f = _mm256_cvtepi32_ps(lo.i);
    hi.f = _mm256_cvtepi32_ps(hi.i);
    memcpy(&r.u32[0], &lo, 32);
    memcpy(&r.u32[8], &hi, 32);
    return r.f;
}
PP_EMU __m512i pp_emu_mm512_cvttps_epi32(__m512 a) {
    pp_e512 x, r;
    x.f = a;
    pp_e256 lo, hi;
    memcpy(&lo, &x.u32[0], 32);
    memcpy(&hi, &x.u32[8], 32);
    lo.i = _mm256_cvttps_epi32(lo.f);
    hi.i = _mm256_cvttps_epi32(hi.f);
    memcpy(&r.u32[0], &lo, 32);
    memcpy(&r.u32[8], &hi, 32);
    return r.i;
}
PP_EMU_CMP(pp_emu_mm512_cmpneq_epi32_mask, __m512i, pp_e512, u32, 16, __mmask16, !=)
#undef _mm512_cvtepi32_ps
#define _mm512_cvtepi32_ps(a) pp_emu_mm512_cvtepi32_ps(a)
#undef _mm512_cvttps_epi32
#define _mm512_cvttps_epi32(a) pp_emu_mm512_cvttps_epi32(a)
#undef _mm512_cmpneq_epi32_mask
#define _mm512_cmpneq_epi32_mask(a, b) pp_emu_mm512_cmpneq_epi32_mask(a, b)

/* Non-temporal stores: a plain store (the cache hint has no effect on results), with the
 * instruction's alignment rule kept: VMOVNTDQ / VMOVNTPS fault (#GP) unless the address is
 * 64-byte aligned, so the emulation traps there too. */
PP_EMU void pp_emu_stream64(void *p, const void *v) {
    if ((uintptr_t)p & 63u) __builtin_trap();
    memcpy(p, v, 64);
}
PP_EMU void pp_emu_mm512_stream_si512(void *p, __m512i a) { pp_emu_stream64(p, &a); }
PP_EMU void pp_emu_mm512_stream_ps(void *p, __m512 a) { pp_emu_stream64(p, &a); }
#ifndef _mm512_stream_si512
#define _mm512_stream_si512(p, a) pp_emu_mm512_stream_si512((void *)(p), a)
#endif
#ifndef _mm512_stream_ps
#define _mm512_stream_ps(p, a) pp_emu_mm512_stream_ps((void *)(p), a)
#endif

/* ---- integer narrowing (VPMOVDW / VPMOVDB: truncation) and widening (zero extension) ---- */
PP_EMU __m256i pp_emu_mm512_cvtepi32_epi16(__m512i a) {
    pp_e512 x;
    pp_e256 r;
    x.i = a;
    for (int j = 0; j < 16; j++) r.u16[j] = (uint16_t)x.u32[j];
    return r.i;
}
PP_EMU __m128i pp_emu_mm512_cvtepi32_epi8(__m512i a) {
    pp_e512 x;
    pp_e128 r;
    x.i = a;
    for (int j = 0; j < 16; j++) r.u8[j] = (uint8_t)x.u32[j];
    return r.i;
}
PP_EMU void pp_emu_mm512_mask_cvtepi32_storeu_epi16(void *p, __mmask16 k, __m512i a) {
    pp_e512 x;
    x.i = a;
    for (int j = 0; j < 16; j++)
        if ((k >> j) & 1u) {
            const uint16_t v = (uint16_t)x.u32[j];
            memcpy((char *)p + 2 * j, &v, 2);
        }
}
PP_EMU void pp_emu_mm512_mask_cvtepi32_storeu_epi8(void *p, __mmask16 k, __m512i a) {
    pp_e512 x;
    x.i = a;
    for (int j = 0; j < 16; j++)
        if ((k >> j) & 1u) ((uint8_t *)p)[j] = (uint8_t)x.u32[j];
}
PP_EMU __m512i pp_emu_mm512_cvtepu16_epi32(__m256i a) {
    pp_e256 x;
    pp_e512 r;
    x.i = a;
    for (int j = 0; j < 16; j++) r.u32[j] = x.u16[j];
    return r.i;
}
PP_EMU __m512i pp_emu_mm512_cvtepu32_epi64(__m256i a) {
    pp_e256 x;
    pp_e512 r;
    x.i = a;
    for (int j = 0; j < 8; j++) r.u64[j] = x.u32[j];
    return r.i;
}
PP_EMU __m512i pp_emu_mm512_cvtepu8_epi16(__m256i a) {
    pp_e256 x;
    pp_e512 r;
    x.i = a;
    for (int j = 0; j < 32; j++) r.u16[j] = x.u8[j];
    return r.i;
}
#ifndef _mm512_cvtepi32_epi16
#define _mm512_cvtepi32_epi16(a) pp_emu_mm512_cvtepi32_epi16(a)
#endif
#ifndef _mm512_cvtepi32_epi8
#define _mm512_cvtepi32_epi8(a) pp_emu_mm512_cvtepi32_epi8(a)
#endif
#ifndef _mm512_mask_cvtepi32_storeu_epi16
#define _mm512_mask_cvtepi32_storeu_epi16(p, k, a) pp_emu_mm512_mask_cvtepi32_storeu_epi16(p, k, a)
#endif
#ifndef _mm512_mask_cvtepi32_storeu_epi8
#define _mm512_mask_cvtepi32_storeu_epi8(p, k, a) pp_emu_mm512_mask_cvtepi32_storeu_epi8(p, k, a)
#endif
#ifndef _mm512_cvtepu16_epi32
#define _mm512_cvtepu16_epi32(a) pp_emu_mm512_cvtepu16_epi32(a)
#endif
#ifndef _mm512_cvtepu32_epi64
#define _mm512_cvtepu32_epi64(a) pp_emu_mm512_cvtepu32_epi64(a)
#endif
#ifndef _mm512_cvtepu8_epi16
#define _mm512_cvtepu8_epi16(a) pp_emu_mm512_cvtepu8_epi16(a)
#endif

/* ---- half precision and bf16 ---- */
PP_EMU __m512 pp_emu_mm512_cvtph_ps(__m256i a) {
    pp_e256 x;
    pp_e512 r;
    x.i = a;
    for (int j = 0; j < 16; j++) r.u32[j] = pp_emu_f16_to_f32(x.u16[j]);
    return r.f;
}
/* imm8[1:0] the rounding, imm8[2] set: MXCSR's instead (bit 3, suppress exceptions: nothing is
 * raised here either way) */
PP_EMU __m256i pp_emu_mm512_cvtps_ph(__m512 a, int imm8) {
    const unsigned csr = _mm_getcsr();
    const int rc = (imm8 & 4) ? (int)((csr >> 13) & 3u) : (imm8 & 3), daz = (csr & 0x40u) != 0;
    pp_e512 x;
    pp_e256 r;
    x.f = a;
    for (int j = 0; j < 16; j++) r.u16[j] = pp_emu_f32_to_f16(x.u32[j], rc, daz);
    return r.i;
}
PP_EMU __m256bh pp_emu_mm512_cvtneps_pbh(__m512 a) {
    pp_e512 x;
    uint16_t h[16];
    x.f = a;
    for (int j = 0; j < 16; j++) h[j] = pp_emu_f32_to_bf16(x.u32[j]);
    __m256bh r;
    memcpy(&r, h, sizeof r);
    return r;
}
#ifndef _mm512_cvtph_ps
#define _mm512_cvtph_ps(a) pp_emu_mm512_cvtph_ps(a)
#endif
#ifndef _mm512_cvtps_ph
#define _mm512_cvtps_ph(a, imm8) pp_emu_mm512_cvtps_ph(a, imm8)
#endif
#ifndef _mm512_cvtneps_pbh
#define _mm512_cvtneps_pbh(a) pp_emu_mm512_cvtneps_pbh(a)
#endif

/* ---- float arithmetic with embedded rounding ---- */
PP_EMU __m512 pp_emu_mm512_fmadd_round_ps(__m512 a, __m512 b, __m512 c, int r) {
    pp_e512 x, y, z, o;
    x.f = a, y.f = b, z.f = c;
    const unsigned old = pp_emu_csr_enter(r);
    for (int j = 0; j < 16; j++) o.f32[j] = pp_emu_fmaf(x.f32[j], y.f32[j], z.f32[j]);
    pp_emu_csr_leave(r, old);
    return o.f;
}
PP_EMU __m512 pp_emu_mm512_maskz_mul_round_ps(__mmask16 k, __m512 a, __m512 b, int r) {
    pp_e512 x, y, o;
    x.f = a, y.f = b;
    memset(&o, 0, sizeof o);
    const unsigned old = pp_emu_csr_enter(r);
    for (int j = 0; j < 16; j++)
        if ((k >> j) & 1u) o.f32[j] = pp_emu_mulf(x.f32[j], y.f32[j]);
    pp_emu_csr_leave(r, old);
    return o.f;
}
PP_EMU __m512d pp_emu_mm512_maskz_mul_round_pd(__mmask8 k, __m512d a, __m512d b, int r) {
    pp_e512 x, y, o;
    x.d = a, y.d = b;
    memset(&o, 0, sizeof o);
    const unsigned old = pp_emu_csr_enter(r);
    for (int j = 0; j < 8; j++)
        if ((k >> j) & 1u) o.f64[j] = pp_emu_mul(x.f64[j], y.f64[j]);
    pp_emu_csr_leave(r, old);
    return o.d;
}
/* sae: _MM_FROUND_NO_EXC or _MM_FROUND_CUR_DIRECTION; the rounding is in imm8 */
PP_EMU __m512 pp_emu_mm512_maskz_reduce_round_ps(__mmask16 k, __m512 a, int imm8, int sae) {
    pp_e512 x, o;
    x.f = a;
    memset(&o, 0, sizeof o);
    const int rc = (int)((_mm_getcsr() >> 13) & 3u), daz = pp_emu_daz();
    const int r = (imm8 & 4) ? 4 | 8 : (imm8 & 3); /* the subtraction's rounding, no exception */
    (void)sae;
    const unsigned old = pp_emu_csr_enter(r);
    for (int j = 0; j < 16; j++)
        if ((k >> j) & 1u) {
            uint32_t u = x.u32[j];
            if (daz && (u & 0x7f800000u) == 0) u &= 0x80000000u;
            o.f32[j] = (float)pp_emu_reduce((double)pp_emu_bitsf(u), imm8, 0, rc);
        }
    pp_emu_csr_leave(r, old);
    return o.f;
}
PP_EMU __m512d pp_emu_mm512_maskz_reduce_round_pd(__mmask8 k, __m512d a, int imm8, int sae) {
    pp_e512 x, o;
    x.d = a;
    memset(&o, 0, sizeof o);
    const int rc = (int)((_mm_getcsr() >> 13) & 3u), daz = pp_emu_daz();
    const int r = (imm8 & 4) ? 4 | 8 : (imm8 & 3);
    (void)sae;
    const unsigned old = pp_emu_csr_enter(r);
    for (int j = 0; j < 8; j++)
        if ((k >> j) & 1u) {
            uint64_t u = x.u64[j];
            if (daz && (u & UINT64_C(0x7ff0000000000000)) == 0) u &= UINT64_C(0x8000000000000000);
            o.f64[j] = pp_emu_reduce(pp_emu_bitsd(u), imm8, 1, rc);
        }
    pp_emu_csr_leave(r, old);
    return o.d;
}
#ifndef _mm512_fmadd_round_ps
#define _mm512_fmadd_round_ps(a, b, c, r) pp_emu_mm512_fmadd_round_ps(a, b, c, r)
#endif
#ifndef _mm512_maskz_mul_round_ps
#define _mm512_maskz_mul_round_ps(k, a, b, r) pp_emu_mm512_maskz_mul_round_ps(k, a, b, r)
#endif
#ifndef _mm512_maskz_mul_round_pd
#define _mm512_maskz_mul_round_pd(k, a, b, r) pp_emu_mm512_maskz_mul_round_pd(k, a, b, r)
#endif
#ifndef _mm512_maskz_reduce_round_ps
#define _mm512_maskz_reduce_round_ps(k, a, imm8, sae) pp_emu_mm512_maskz_reduce_round_ps(k, a, imm8, sae)
#endif
#ifndef _mm512_maskz_reduce_round_pd
#define _mm512_maskz_reduce_round_pd(k, a, imm8, sae) pp_emu_mm512_maskz_reduce_round_pd(k, a, imm8, sae)
#endif

/* ---- float -> integer with truncation, merge-masked; float64 -> float32 ---- */
PP_EMU __m512i pp_emu_mm512_mask_cvtt_roundps_epu32(__m512i src, __mmask16 k, __m512 a, int sae) {
    pp_e512 x, o;
    x.f = a, o.i = src;
    (void)sae;
    for (int j = 0; j < 16; j++)
        if ((k >> j) & 1u) o.u32[j] = (uint32_t)pp_emu_cvtt_u((double)x.f32[j], 32);
    return o.i;
}
PP_EMU __m512i pp_emu_mm512_mask_cvtt_roundpd_epu64(__m512i src, __mmask8 k, __m512d a, int sae) {
    pp_e512 x, o;
    x.d = a, o.i = src;
    (void)sae;
    for (int j = 0; j < 8; j++)
        if ((k >> j) & 1u) o.u64[j] = pp_emu_cvtt_u(x.f64[j], 64);
    return o.i;
}
PP_EMU __m256 pp_emu_mm512_cvt_roundpd_ps(__m512d a, int r) {
    pp_e512 x;
    pp_e256 o;
    x.d = a;
    const unsigned old = pp_emu_csr_enter(r);
    for (int j = 0; j < 8; j++) o.f32[j] = pp_emu_d2f(x.f64[j]);
    pp_emu_csr_leave(r, old);
    return o.f;
}
#ifndef _mm512_mask_cvtt_roundps_epu32
#define _mm512_mask_cvtt_roundps_epu32(src, k, a, sae) pp_emu_mm512_mask_cvtt_roundps_epu32(src, k, a, sae)
#endif
#ifndef _mm512_mask_cvtt_roundpd_epu64
#define _mm512_mask_cvtt_roundpd_epu64(src, k, a, sae) pp_emu_mm512_mask_cvtt_roundpd_epu64(src, k, a, sae)
#endif
#ifndef _mm512_cvt_roundpd_ps
#define _mm512_cvt_roundpd_ps(a, r) pp_emu_mm512_cvt_roundpd_ps(a, r)
#endif
#ifndef _mm512_cvtpd_ps
#define _mm512_cvtpd_ps(a) pp_emu_mm512_cvt_roundpd_ps(a, _MM_FROUND_CUR_DIRECTION)
#endif
/* float32 -> float64 (VCVTPS2PD): exact; this CPU's scalar conversion, so MXCSR.DAZ acts on a
 * subnormal input as it does in the instruction */
PP_EMU __m512d pp_emu_mm512_cvtps_pd(__m256 a) {
    pp_e256 x;
    pp_e512 o;
    x.f = a;
    for (int j = 0; j < 8; j++) o.f64[j] = (double)x.f32[j];
    return o.d;
}
#ifndef _mm512_cvtps_pd
#define _mm512_cvtps_pd(a) pp_emu_mm512_cvtps_pd(a)
#endif

/* ---- VFPCLASSPS: imm8 bit 0 QNaN, 1 +0, 2 -0, 3 +inf, 4 -inf, 5 subnormal, 6 finite negative
 * (not -0), 7 SNaN; the encoding is classified as it is (MXCSR.DAZ not consulted) ---- */
PP_EMU int pp_emu_fpclass(uint32_t u, int imm8) {
    const uint32_t ex = (u >> 23) & 0xffu, fr = u & 0x7fffffu;
    const int neg = (int)(u >> 31);
    int c = 0;
    if (ex == 0xff && fr) c = (fr & 0x400000u) ? 0x01 : 0x80;
    else if (ex == 0xff) c = neg ? 0x10 : 0x08;
    else if (ex == 0 && !fr) c = neg ? 0x04 : 0x02;
    else c = (ex == 0 ? 0x20 : 0) | (neg ? 0x40 : 0);
    return (c & imm8) != 0;
}
PP_EMU __mmask16 pp_emu_mm512_fpclass_ps_mask(__m512 a, int imm8) {
    pp_e512 x;
    x.f = a;
    __mmask16 k = 0;
    for (int j = 0; j < 16; j++) k |= (__mmask16)(pp_emu_fpclass(x.u32[j], imm8) << j);
    return k;
}
#ifndef _mm512_fpclass_ps_mask
#define _mm512_fpclass_ps_mask(a, imm8) pp_emu_mm512_fpclass_ps_mask(a, imm8)
#endif

/* ---- for kern_wide_avx512.h: its AVX512_BF16 function compiled for the unit's own target, and
 * the instruction's __m256bh result as an __m256i (in the real build a vector cast) ---- */
#define PP_TARGET_BF16
PP_EMU __m256i pp_emu_bh_si256(__m256bh h) {
    __m256i r;
    memcpy(&r, &h, sizeof r);
    return r;
}
#define PP_CVTNEPS_SI256(f) pp_emu_bh_si256(_mm512_cvtneps_pbh(f))

#endif /* PP_EMU512_H */
