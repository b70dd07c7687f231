/* Fast kernels compiled for AVX2 (chosen at run time only where the CPU has it). */
#include "pyprecision.h"

#if defined(__x86_64__) || defined(__i386__)
#pragma GCC target("avx2,f16c,bmi,bmi2,popcnt")
#include <immintrin.h>
#include <pthread.h>
#define PP_VBYTES 32
#define PP_STREAM(d, s) _mm256_stream_si256((__m256i *)(void *)(d), _mm256_loadu_si256((const __m256i *)(const void *)(s)))
#define PP_SFENCE() _mm_sfence()
#define KSUF avx2
#include "kern_shared.h"
/* Software prefetch of the input this many bytes ahead (T0) in the hand-written streaming loops
 * (fp8, fp32r, F16C fp16); 0: none. Measured on Zen 3 (docs/decisions/speed.md S14): +50 % fp8,
 * +37 % fp32r at 16 Mi elements; a burst prefetch of the next 8 KiB block in the driver was worse. */
#ifndef PP_PREFETCH_AVX2
#define PP_PREFETCH_AVX2 4096
#endif
/* ... and in the compiler-vectorized lane loops of kern_body.h (bf16, fp16 rtz / rna, float64
 * and integer sources): measured in speed.md S15. */
#ifndef PP_PREFETCH_LANES
#define PP_PREFETCH_LANES PP_PREFETCH_AVX2
#endif

/* ---- SplitMix64 (srwords.c is the definition), 4 outputs = 8 words per vector ----
 * AVX2 has no 64-bit multiply: z * c mod 2^64 = lo(z) lo(c) + ((hi(z) lo(c) + lo(z) hi(c)) << 32).
 * PP_SM_MULLO (default): the two cross products mod 2^32 by one vpmulld against c with its halves
 * swapped, summed into the high half by a shift and an add: two multiplies instead of three
 * vpmuludq (docs/decisions/speed.md S15). The 64-bit results, read as 32-bit lanes, are the words
 * in element order. */
#ifndef PP_SM_MULLO
#define PP_SM_MULLO 1
#endif
static inline __m256i sm_mul256(__m256i z, uint64_t c) {
    const __m256i cl = _mm256_set1_epi64x((long long)(c & 0xffffffffu));
#if PP_SM_MULLO
    const __m256i cs = _mm256_set1_epi64x((long long)((c << 32) | (c >> 32)));
    const __m256i t = _mm256_mullo_epi32(z, cs); /* lanes: lo(z) hi(c), hi(z) lo(c) mod 2^32 */
    /* both into the high half: t << 32 and t's high half alone (one shift; speed.md S17) */
    const __m256i th = _mm256_and_si256(t, _mm256_set1_epi64x((long long)0xffffffff00000000ull));
    return _mm256_add_epi64(_mm256_add_epi64(_mm256_mul_epu32(z, cl), _mm256_slli_epi64(t, 32)), th);
#else
    const __m256i ch = _mm256_set1_epi64x((long long)(c >> 32));
    const __m256i ll = _mm256_mul_epu32(z, cl);
    const __m256i cross = _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(z, 32), cl),
                                           _mm256_mul_epu32(z, ch));
    return _mm256_add_epi64(ll, _mm256_slli_epi64(cross, 32));
#endif
}
static inline __m256i sm_mix256(__m256i z) {
    z = _mm256_xor_si256(z, _mm256_srli_epi64(z, 30));
    z = sm_mul256(z, PP_SM_M1);
    z = _mm256_xor_si256(z, _mm256_srli_epi64(z, 27));
    z = sm_mul256(z, PP_SM_M2);
    return _mm256_xor_si256(z, _mm256_srli_epi64(z, 31));
}

/* 16 words from pair index j on (two independent vectors of four pairs). */
static inline void srw16_avx2(uint64_t seed, uint64_t j, uint32_t *out) {
    const uint64_t b = seed + j * PP_SM_GAMMA, g = PP_SM_GAMMA;
    const __m256i s0 = _mm256_set_epi64x((long long)(b + 4 * g), (long long)(b + 3 * g),
                                         (long long)(b + 2 * g), (long long)(b + g));
    const __m256i s1 = _mm256_add_epi64(s0, _mm256_set1_epi64x((long long)(4 * g)));
    _mm256_storeu_si256((__m256i *)(void *)out, sm_mix256(s0));
    _mm256_storeu_si256((__m256i *)(void *)(out + 8), sm_mix256(s1));
}
#define PP_SRW_WORDS 16
#define PP_SRW_VEC srw16_avx2

/* float32 -> fp16 with F16C, the rounding given in the instruction (rne or rtz; rna: nearest even
 * of x with its lowest bit set, finite x); NaNs first become the quiet NaN with their sign.
 * f16c16_avx512 in kern_avx512.c has why each is exact (the caller's MXCSR is exactly the
 * default: pr->hw_fp16). With stream set (dst 32-byte aligned: f16c_stream_avx2), 16 codes per
 * streaming store. */
static inline __attribute__((always_inline)) __m128i f16c8(__m256i u, const int rnd) {
    const __m256i absm = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
    const __m256i qnan = _mm256_set1_epi32(0x7fc00000), sign = _mm256_set1_epi32((int)0x80000000u);
    const __m256i a = _mm256_and_si256(u, absm);
    const __m256i nan = _mm256_cmpgt_epi32(a, inf); /* signed compare: |x| < 2^31 */
    if (rnd == PP_RNA) /* bit 0 set where |x| < inf */
        u = _mm256_or_si256(u, _mm256_srli_epi32(_mm256_cmpgt_epi32(inf, a), 31));
    u = _mm256_blendv_epi8(u, _mm256_or_si256(_mm256_and_si256(u, sign), qnan), nan);
    if (rnd == PP_RTZ)
        return _mm256_cvtps_ph(_mm256_castsi256_ps(u), _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    return _mm256_cvtps_ph(_mm256_castsi256_ps(u), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
static inline __attribute__((always_inline)) void f16c_loop_avx2(const uint32_t *src, size_t n,
                                                                 uint16_t *dst, const int stream,
                                                                 const int rnd) {
    size_t i = 0;
    if (stream) {
        for (; i + 16 <= n; i += 16) {
#if PP_PREFETCH_AVX2 > 0
            _mm_prefetch((const char *)(src + i) + PP_PREFETCH_AVX2, _MM_HINT_T0);
#endif
            const __m128i h0 = f16c8(_mm256_loadu_si256((const __m256i *)(const void *)(src + i)), rnd);
            const __m128i h1 = f16c8(_mm256_loadu_si256((const __m256i *)(const void *)(src + i + 8)), rnd);
            _mm256_stream_si256((__m256i *)(void *)(dst + i), _mm256_set_m128i(h1, h0));
        }
    }
    for (; i + 8 <= n; i += 8) {
#if PP_PREFETCH_AVX2 > 0
        if (!(i & 15)) _mm_prefetch((const char *)(src + i) + PP_PREFETCH_AVX2, _MM_HINT_T0);
#endif
        const __m128i h = f16c8(_mm256_loadu_si256((const __m256i *)(const void *)(src + i)), rnd);
        _mm_storeu_si128((__m128i *)(void *)(dst + i), h);
    }
    if (i < n) { /* the last 1-7 through a zero-padded buffer: the same instructions */
        uint32_t in[8] = {0};
        uint16_t o[8];
        memcpy(in, src + i, (n - i) * sizeof(uint32_t));
        _mm_storeu_si128((__m128i *)(void *)o, f16c8(_mm256_loadu_si256((const __m256i *)(void *)in), rnd));
        memcpy(dst + i, o, (n - i) * sizeof(uint16_t));
    }
}
/* The rounding (rne, rtz or rna: pr->hw_fp16 allows no other) as a constant of the loop. */
static inline __attribute__((always_inline)) void f16c_avx2(const pp_params *pr,
                                                            const uint32_t *src, size_t n,
                                                            uint16_t *dst, const int stream) {
    if (pr->rounding == PP_RNE) {
        f16c_loop_avx2(src, n, dst, stream, PP_RNE);
    } else if (pr->rounding == PP_RTZ) {
        f16c_loop_avx2(src, n, dst, stream, PP_RTZ);
    } else {
        f16c_loop_avx2(src, n, dst, stream, PP_RNA);
    }
}
static void f16c_plain_avx2(const pp_params *pr, const uint32_t *src, size_t n, uint16_t *dst) {
    f16c_avx2(pr, src, n, dst, 0);
}
#define PP_F16C f16c_plain_avx2

/* fp16 -> float32 with F16C; see dec16_avx512 in kern_avx512.c for why and when it is exact. */
static int dec16_avx2(const void *bits, size_t n, uint32_t *out) {
    if ((_mm_getcsr() & 0x1fc0u) != 0x1f80u) return 0;
    const uint16_t *in = (const uint16_t *)bits;
    const __m256i absm = _mm256_set1_epi32(0x7fff), inf = _mm256_set1_epi32(0x7c00);
    const __m256i sign = _mm256_set1_epi32((int)0x80000000u), qnan = _mm256_set1_epi32(0x7fc00000);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128i h = _mm_loadu_si128((const __m128i *)(const void *)(in + i));
        const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(_mm256_cvtepu16_epi32(h), absm), inf);
        const __m256i f = _mm256_castps_si256(_mm256_cvtph_ps(h));
        const __m256i q = _mm256_or_si256(_mm256_and_si256(f, sign), qnan);
        _mm256_storeu_si256((__m256i *)(void *)(out + i), _mm256_blendv_epi8(f, q, nan));
    }
    for (; i < n; i++) {
        const uint32_t h = in[i];
        const __m128 v = _mm_cvtph_ps(_mm_cvtsi32_si128((int)h));
        const uint32_t f = (uint32_t)_mm_cvtsi128_si32(_mm_castps_si128(v));
        out[i] = (h & 0x7fffu) > 0x7c00u ? (f & 0x80000000u) | 0x7fc00000u : f;
    }
    return 1;
}
#define PP_DECODE16 dec16_avx2

#include "kern_dec_avx2.h"

/* float32 -> fp8 (p = 2 or 3), rne / rtz / rna: kern_avx512.c's fp8_avx512 (one FMA rounds every
 * binade; see there) for AVX2 + FMA. Differences: |x| goes into the FMA (no vrangeps; the signs
 * come from the inputs packed with signed saturation), the 16-bit halves are gathered with shifts,
 * blends and packs, and AVX2 has no rounding in the instruction, so the kernel runs under its own
 * MXCSR (every exception masked, no FTZ / DAZ, round to nearest for rne, toward zero for rtz and
 * rna) and gives the caller's back, flags included: the caller's environment cannot change a bit.
 * Used only where the CPU has FMA (the AVX2 set itself does not require it). */
#define FP8X_FN static inline __attribute__((always_inline, target("avx2,fma")))

typedef struct {
    __m256i absm, expm, cmin, scale, halfs, hinf, ovf, nan, inf, s80, ord;
} fp8x_consts;

FP8X_FN __m256i fp8x_sum(const fp8x_consts *k, __m256i u, const int rnd) {
    const __m256 a = _mm256_castsi256_ps(_mm256_and_si256(u, k->absm));
    const __m256 c = _mm256_castsi256_ps(_mm256_max_epu32(_mm256_and_si256(u, k->expm), k->cmin));
    const __m256 sc = _mm256_castsi256_ps(k->scale);
    if (rnd != PP_RNA) return _mm256_castps_si256(_mm256_fmadd_ps(c, sc, a));
    const __m256 ah = _mm256_fmadd_ps(c, _mm256_castsi256_ps(k->halfs), a);
    return _mm256_castps_si256(_mm256_fmadd_ps(c, sc, ah));
}

/* 16 codes without sign, 16-bit lanes in the order of _mm256_packs_epi32(ua, ub). */
FP8X_FN __m256i fp8x_words(const fp8x_consts *k, __m256i ua, __m256i ub, const int p,
                           const int rnd, const int mode) {
    const __m256i sa = fp8x_sum(k, ua, rnd), sb = fp8x_sum(k, ub, rnd);
    const __m256i z = _mm256_setzero_si256();
    const __m256i h = _mm256_packus_epi32(_mm256_srli_epi32(sa, 16), _mm256_srli_epi32(sb, 16));
    const __m256i lo = _mm256_packus_epi32(_mm256_blend_epi16(sa, z, 0xAA), _mm256_blend_epi16(sb, z, 0xAA));
    const __m256i r = _mm256_min_epu16(_mm256_add_epi16(lo, _mm256_srli_epi16(h, 7 - p)), k->ovf);
    const __m256i nanm = _mm256_cmpgt_epi16(h, k->hinf); /* h <= 0x7fff: no sign in the sum */
    if (mode == 1) return _mm256_blendv_epi8(r, k->nan, nanm);
    const __m256i infm = _mm256_cmpeq_epi16(h, k->hinf);
    if (mode == 2) return _mm256_blendv_epi8(r, k->nan, _mm256_or_si256(nanm, infm));
    return _mm256_blendv_epi8(_mm256_blendv_epi8(r, k->inf, infm), k->nan, nanm);
}

/* 32 codes in element order. */
FP8X_FN __m256i fp8x_32(const fp8x_consts *k, const uint32_t *src, const int p, const int rnd,
                        const int mode) {
    const __m256i u0 = _mm256_loadu_si256((const __m256i *)(const void *)src);
    const __m256i u1 = _mm256_loadu_si256((const __m256i *)(const void *)(src + 8));
    const __m256i u2 = _mm256_loadu_si256((const __m256i *)(const void *)(src + 16));
    const __m256i u3 = _mm256_loadu_si256((const __m256i *)(const void *)(src + 24));
    const __m256i w0 = fp8x_words(k, u0, u1, p, rnd, mode), w1 = fp8x_words(k, u2, u3, p, rnd, mode);
    const __m256i sg = _mm256_packs_epi16(_mm256_packs_epi32(u0, u1), _mm256_packs_epi32(u2, u3));
    const __m256i b = _mm256_or_si256(_mm256_packus_epi16(w0, w1), _mm256_and_si256(sg, k->s80));
    return _mm256_permutevar8x32_epi32(b, k->ord); /* the packs' lane order -> element order */
}

/* Elements [i, i + cnt), cnt < 32, through a zero-padded buffer, plain stores. */
FP8X_FN void fp8x_part(const fp8x_consts *k, const uint32_t *src, size_t i, size_t cnt,
                       uint8_t *dst, const int p, const int rnd, const int mode) {
    uint32_t in[32] = {0};
    uint8_t o[32];
    memcpy(in, src + i, cnt * sizeof(uint32_t));
    _mm256_storeu_si256((__m256i *)(void *)o, fp8x_32(k, in, p, rnd, mode));
    memcpy(dst + i, o, cnt);
}

FP8X_FN void fp8x_loop(const fp8x_consts *k, const uint32_t *src, size_t n, uint8_t *dst,
                       const int stream, const int p, const int rnd, const int mode) {
    size_t i = 0;
    if (stream) {
        size_t head = (size_t)(-(uintptr_t)dst & 31u);
        if (head > n) head = n;
        if (head) fp8x_part(k, src, 0, head, dst, p, rnd, mode);
        i = head;
    }
    for (; i + 32 <= n; i += 32) {
#if PP_PREFETCH_AVX2 > 0
        /* the input PP_PREFETCH_AVX2 bytes ahead, both lines of this step (a prefetch never
         * faults, past the end either) */
        _mm_prefetch((const char *)(src + i) + PP_PREFETCH_AVX2, _MM_HINT_T0);
        _mm_prefetch((const char *)(src + i) + PP_PREFETCH_AVX2 + 64, _MM_HINT_T0);
#endif
        const __m256i b = fp8x_32(k, src + i, p, rnd, mode);
        if (stream) _mm256_stream_si256((__m256i *)(void *)(dst + i), b);
        else _mm256_storeu_si256((__m256i *)(void *)(dst + i), b);
    }
    if (i < n) fp8x_part(k, src, i, n - i, dst, p, rnd, mode);
}

#define FP8X_ROUNDINGS(P) PP_FP8_DISPATCH(fp8x_loop, P)

/* Returns n when it encoded the n elements, 0 when the case is not one of this kernel's. */
__attribute__((target("avx2,fma"))) static size_t fp8_avx2(const pp_params *pr,
                                                            const uint32_t *src, size_t n,
                                                            uint8_t *dst, const int stream) {
    const int p = pr->p;
    if ((p != 2 && p != 3) || pr->shift != 0 || pr->sign_pos != 7 || !pr->simple ||
        pr->ovf[0] > 0x7fu || pr->inf[0] > 0x7fu || pr->nan[0] > 0x7fu || n == 0)
        return 0;
    if (pr->rounding != PP_RNE && pr->rounding != PP_RTZ && pr->rounding != PP_RNA) return 0;
    const int mode = pr->inf[0] == pr->ovf[0] ? 1 : pr->inf[0] == pr->nan[0] ? 2 : 3;
    if (pr->rounding != PP_RTZ && mode != 1) return 0; /* see fp8_avx512 */
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("fma")) return 0;
    const uint32_t s0 = 23u - (uint32_t)p;
    const uint32_t cc = (uint32_t)(pr->emin + (int)s0 + 127) << p;
    fp8x_consts k;
    k.absm = _mm256_set1_epi32(0x7fffffff);
    k.expm = _mm256_set1_epi32(0x7f800000);
    k.cmin = _mm256_set1_epi32((int)((uint32_t)(pr->emin + 127) << 23));
    k.scale = _mm256_set1_epi32((int)(((127u + s0) << 23) | ((0x10000u - cc) & 0xffffu)));
    k.halfs = _mm256_set1_epi32((int)((uint32_t)(127 - p - 1) << 23));
    k.hinf = _mm256_set1_epi16(0x7f80);
    k.ovf = _mm256_set1_epi16((short)pr->ovf[0]);
    k.nan = _mm256_set1_epi16((short)pr->nan[0]);
    k.inf = _mm256_set1_epi16((short)pr->inf[0]);
    k.s80 = _mm256_set1_epi8((char)0x80);
    k.ord = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    const unsigned csr = _mm_getcsr();
    /* all exceptions masked, FTZ and DAZ off; rounding to nearest (rne) or toward zero */
    _mm_setcsr(pr->rounding == PP_RNE ? 0x1f80u : 0x7f80u);
    if (p == 3) FP8X_ROUNDINGS(3);
    else FP8X_ROUNDINGS(2);
    _mm_setcsr(csr);
    return n;
}


#include "kern_wide_avx2.h"

static size_t rne_avx2(const pp_params *pr, const uint32_t *src, size_t n, void *dst,
                       int out_bytes) {
    if (out_bytes == 1) return fp8_avx2(pr, src, n, (uint8_t *)dst, 0);
    return out_bytes == 2 ? wide_avx2(pr, src, n, dst, 2, 0) : 0;
}
#define PP_RNE_FAST rne_avx2

static size_t fp32r_avx2(const pp_params *pr, const uint32_t *src, size_t n, uint32_t *dst) {
    return wide_avx2(pr, src, n, dst, 4, 0);
}
#define PP_FP32R_FAST fp32r_avx2

/* float32 -> fp16 through F16C (see f16c_avx2), streaming stores; 0 when not this case. */
static int f16c_stream_avx2(const pp_params *pr, const uint32_t *src, size_t n, uint16_t *dst) {
    if (!pr->hw_fp16 || ((uintptr_t)dst & 1u)) return 0;
    const size_t head = pp_head_to(dst, n, 2, 32);
    f16c_avx2(pr, src, head, dst, 0);
    f16c_avx2(pr, src + head, n - head, dst + head, 1);
    return 1;
}

/* float32 -> 8-, 16- or 32-bit codes straight to dst with streaming stores, where the set has a
 * kernel for the case: fp8 (FMA), bf16 and fp32r (integer), fp16 (F16C). */
static int enc_stream_avx2(const pp_params *pr, const uint32_t *src, size_t n, void *dst,
                           int out_bytes) {
    if (out_bytes == 1) return fp8_avx2(pr, src, n, (uint8_t *)dst, 1) != 0;
    if (out_bytes == 2 && pr->hw_fp16) return f16c_stream_avx2(pr, src, n, (uint16_t *)dst);
    return wide_avx2(pr, src, n, dst, out_bytes, 1) != 0;
}
#define PP_ENC_STREAM enc_stream_avx2

#include "kern_sr_avx2.h"
#define PP_SR_FUSED sr_avx2
#include "kern_narrow_avx2.h"
#define PP_NARROW64 narrow64_avx2
#define PP_NARROW_I32 narrow_i32_avx2
#include "kern_body.h"
#else
const pp_kernel_set pp_kernels_avx2;
#endif
