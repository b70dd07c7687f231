/* Fast kernels compiled for AVX2 (chosen at run time only where the CPU has it). */
#include "pyprecision.h"

#if defined(__x86_64__) || defined(__i386__)
#pragma GCC target("avx2,f16c,bmi,bmi2,popcnt")
#include <immintrin.h>
#define PP_VBYTES 32
#define PP_STREAM(d, s) _mm256_stream_si256((__m256i *)(void *)(d), _mm256_loadu_si256((const __m256i *)(const void *)(s)))
#define PP_SFENCE() _mm_sfence()
#define KSUF avx2
/* Software prefetch of the input this many bytes ahead (T0) in the hand-written streaming loops
 * (fp8, fp32r, F16C fp16); 0: none. Measured on Zen 3 (docs/decisions/speed.md §14): +50 % fp8,
 * +37 % fp32r at 16 Mi elements; a burst prefetch of the next 8 KiB block in the driver was worse. */
#ifndef PP_PREFETCH_AVX2
#define PP_PREFETCH_AVX2 4096
#endif
/* ... and in the compiler-vectorized lane loops of kern_body.h (bf16, fp16 rtz / rna, float64
 * and integer sources): measured in speed.md §15. */
#ifndef PP_PREFETCH_LANES
#define PP_PREFETCH_LANES PP_PREFETCH_AVX2
#endif

/* ---- SplitMix64 (srwords.c is the definition), 4 outputs = 8 words per vector ----
 * AVX2 has no 64-bit multiply: z * c mod 2^64 = lo(z) lo(c) + ((hi(z) lo(c) + lo(z) hi(c)) << 32).
 * PP_SM_MULLO (default): the two cross products mod 2^32 by one vpmulld against c with its halves
 * swapped, summed into the high half by a shift and an add: two multiplies instead of three
 * vpmuludq (docs/decisions/speed.md §15). The 64-bit results, read as 32-bit lanes, are the words
 * in element order. */
#ifndef PP_SM_MULLO
#define PP_SM_MULLO 1
#endif
static inline __m256i sm_mul256(__m256i z, uint64_t c) {
    const __m256i cl = _mm256_set1_epi64x((long long)(c & 0xffffffffu));
#if PP_SM_MULLO
    const __m256i cs = _mm256_set1_epi64x((long long)((c << 32) | (c >> 32)));
    const __m256i t = _mm256_mullo_epi32(z, cs); /* lanes: lo(z) hi(c), hi(z) lo(c) mod 2^32 */
    /* both into the high half: t << 32 and t's high half alone (one shift; speed.md §17) */
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

/* float32 -> fp16 with F16C, rne given in the instruction; NaNs first become the quiet NaN with
 * their sign (see kern_body.h enc16_ for when this is exact). With stream set (dst 32-byte
 * aligned: f16c_stream_avx2), 16 codes per streaming store. */
static inline __m128i f16c8(__m256i u) {
    const __m256i absm = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
    const __m256i qnan = _mm256_set1_epi32(0x7fc00000), sign = _mm256_set1_epi32((int)0x80000000u);
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, absm), inf);
    u = _mm256_blendv_epi8(u, _mm256_or_si256(_mm256_and_si256(u, sign), qnan), nan);
    return _mm256_cvtps_ph(_mm256_castsi256_ps(u), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
static inline __attribute__((always_inline)) void f16c_avx2(const uint32_t *src, size_t n,
                                                            uint16_t *dst, const int stream) {
    size_t i = 0;
    if (stream) {
        for (; i + 16 <= n; i += 16) {
#if PP_PREFETCH_AVX2 > 0
            _mm_prefetch((const char *)(src + i) + PP_PREFETCH_AVX2, _MM_HINT_T0);
#endif
            const __m128i h0 = f16c8(_mm256_loadu_si256((const __m256i *)(const void *)(src + i)));
            const __m128i h1 = f16c8(_mm256_loadu_si256((const __m256i *)(const void *)(src + i + 8)));
            _mm256_stream_si256((__m256i *)(void *)(dst + i), _mm256_set_m128i(h1, h0));
        }
    }
    for (; i + 8 <= n; i += 8) {
#if PP_PREFETCH_AVX2 > 0
        if (!(i & 15)) _mm_prefetch((const char *)(src + i) + PP_PREFETCH_AVX2, _MM_HINT_T0);
#endif
        const __m128i h = f16c8(_mm256_loadu_si256((const __m256i *)(const void *)(src + i)));
        _mm_storeu_si128((__m128i *)(void *)(dst + i), h);
    }
    for (; i < n; i++) {
        uint32_t u = src[i];
        if ((u & 0x7fffffffu) > 0x7f800000u) u = (u & 0x80000000u) | 0x7fc00000u;
        const __m128 v = _mm_castsi128_ps(_mm_cvtsi32_si128((int)u));
        dst[i] = (uint16_t)_mm_extract_epi16(_mm_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), 0);
    }
}
static void f16c_plain_avx2(const uint32_t *src, size_t n, uint16_t *dst) {
    f16c_avx2(src, n, dst, 0);
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

/* fp8 codes -> float32 bits: kern_aux.h's dec_small_ in vectors of 8 (the same arithmetic and
 * selections: normal by shift and rebias, subnormal as (float)man times a power of two, exact
 * and normal, so neither rounding mode nor FTZ / DAZ can change it; then inf, NaN, the sign).
 * 32 codes per step; with stream set, the elements before out's first 32-byte boundary and after
 * the last whole step by pp_decode_one, the rest with streaming stores. */
typedef struct {
    __m256i m7f, s80, bias, nmin, infm, infv, qnan, mmask;
    __m256 scale;
} dec8_consts;

static inline __attribute__((always_inline)) __m256i dec8x(const dec8_consts *k, __m128i b8,
                                                           const int P) {
    const __m256i c = _mm256_cvtepu8_epi32(b8);
    const __m256i mag = _mm256_and_si256(c, k->m7f);
    const __m256i normal = _mm256_add_epi32(_mm256_slli_epi32(mag, 23 - P), k->bias);
    const __m256i sub = _mm256_castps_si256(
        _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_and_si256(mag, k->mmask)), k->scale));
    __m256i v = _mm256_blendv_epi8(normal, sub, _mm256_cmpgt_epi32(k->nmin, mag));
    v = _mm256_blendv_epi8(v, k->infv, _mm256_cmpeq_epi32(mag, k->infm));
    v = _mm256_blendv_epi8(v, k->qnan, _mm256_cmpgt_epi32(mag, k->infm));
    return _mm256_or_si256(v, _mm256_slli_epi32(_mm256_and_si256(c, k->s80), 24));
}

static inline __attribute__((always_inline)) void dec8_loop(const dec8_consts *k, int format,
                                                            const uint8_t *in, size_t n,
                                                            uint32_t *out, const int stream,
                                                            const int P) {
    size_t i = 0;
    if (stream)
        for (; i < n && ((uintptr_t)(out + i) & 31u); i++)
            out[i] = pp_f32_to_bits(pp_decode_one(format, in[i]));
    for (; i + 32 <= n; i += 32) {
#if PP_PREFETCH_AVX2 > 0
        _mm_prefetch((const char *)(in + i) + PP_PREFETCH_AVX2, _MM_HINT_T0);
#endif
        const __m128i lo = _mm_loadu_si128((const __m128i *)(const void *)(in + i));
        const __m128i hi = _mm_loadu_si128((const __m128i *)(const void *)(in + i + 16));
        const __m256i d0 = dec8x(k, lo, P), d1 = dec8x(k, _mm_srli_si128(lo, 8), P);
        const __m256i d2 = dec8x(k, hi, P), d3 = dec8x(k, _mm_srli_si128(hi, 8), P);
        __m256i *o = (__m256i *)(void *)(out + i);
        if (stream) {
            _mm256_stream_si256(o, d0);
            _mm256_stream_si256(o + 1, d1);
            _mm256_stream_si256(o + 2, d2);
            _mm256_stream_si256(o + 3, d3);
        } else {
            _mm256_storeu_si256(o, d0);
            _mm256_storeu_si256(o + 1, d1);
            _mm256_storeu_si256(o + 2, d2);
            _mm256_storeu_si256(o + 3, d3);
        }
    }
    for (; i < n; i++) out[i] = pp_f32_to_bits(pp_decode_one(format, in[i]));
}

/* dec_small_'s constants per format (kern_aux.h decode_). */
static void dec8_avx2_any(int format, const uint8_t *in, size_t n, uint32_t *out, const int stream) {
    const int p = format == PP_FMT_FP8E5 ? 2 : 3;
    const uint32_t bias_adj = p == 2 ? 112u : 120u;
    const uint32_t infm = format == PP_FMT_FP8E4 ? 0x78u : format == PP_FMT_FP8E4M3FN ? 0x7fu : 0x7cu;
    const uint32_t infv = format == PP_FMT_FP8E4M3FN ? 0x7fc00000u : 0x7f800000u;
    dec8_consts k;
    k.m7f = _mm256_set1_epi32(0x7f);
    k.s80 = _mm256_set1_epi32(0x80);
    k.bias = _mm256_set1_epi32((int)(bias_adj << 23));
    k.nmin = _mm256_set1_epi32(1 << p);
    k.infm = _mm256_set1_epi32((int)infm);
    k.infv = _mm256_set1_epi32((int)infv);
    k.qnan = _mm256_set1_epi32(0x7fc00000);
    k.mmask = _mm256_set1_epi32((1 << p) - 1);
    k.scale = _mm256_set1_ps(p == 2 ? 0x1p-16f : 0x1p-9f);
    if (p == 2) {
        if (stream) dec8_loop(&k, format, in, n, out, 1, 2);
        else dec8_loop(&k, format, in, n, out, 0, 2);
    } else {
        if (stream) dec8_loop(&k, format, in, n, out, 1, 3);
        else dec8_loop(&k, format, in, n, out, 0, 3);
    }
}

static void decode8_avx2(int format, const void *in, size_t n, uint32_t *out) {
    dec8_avx2_any(format, (const uint8_t *)in, n, out, 0);
}
#define PP_DECODE8 decode8_avx2

/* bf16 codes -> float32 bits (the code in the high half), streaming stores from out's first
 * 32-byte boundary on. */
static void dec_bf16_stream_avx2(const uint16_t *in, size_t n, uint32_t *out) {
    size_t i = 0;
    for (; i < n && ((uintptr_t)(out + i) & 31u); i++) out[i] = (uint32_t)in[i] << 16;
    for (; i + 16 <= n; i += 16) {
#if PP_PREFETCH_AVX2 > 0
        _mm_prefetch((const char *)(in + i) + PP_PREFETCH_AVX2, _MM_HINT_T0);
#endif
        const __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(in + i));
        const __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(in + i + 8));
        __m256i *o = (__m256i *)(void *)(out + i);
        _mm256_stream_si256(o, _mm256_slli_epi32(_mm256_cvtepu16_epi32(a), 16));
        _mm256_stream_si256(o + 1, _mm256_slli_epi32(_mm256_cvtepu16_epi32(b), 16));
    }
    for (; i < n; i++) out[i] = (uint32_t)in[i] << 16;
}

/* The same straight to the destination with streaming stores (the caller issues the sfence);
 * the fp8 formats and bf16 (0 otherwise: the block buffer). */
static int decode_stream_avx2(int format, const void *in, size_t n, uint32_t *out) {
    if ((uintptr_t)out & 3u) return 0;
    if (format == PP_FMT_BF16) {
        if ((uintptr_t)in & 1u) return 0;
        dec_bf16_stream_avx2((const uint16_t *)in, n, out);
        return 1;
    }
    if (!pp_format_is_fp8(format)) return 0;
    dec8_avx2_any(format, (const uint8_t *)in, n, out, 1);
    return 1;
}
#define PP_DECODE_STREAM decode_stream_avx2

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


/* float32 -> fp32r or bf16, rne / rtz / rna. Both share float32's exponent range, and their
 * subnormal quanta (2^-136, 2^-133) are bit S of a float32 subnormal's bits as they are of a
 * normal's (S = 13 for fp32r, 16 for bf16), so every finite magnitude a rounds at bit S of its
 * bits, a carry moving into the exponent (past max it gives 0x7f800000, which the overflow test
 * sees): rne a + (2^(S-1) - 1) + lsb, rna a + 2^(S-1), rtz a, then the bits below S dropped
 * (fp32r keeps its code in place, bf16 shifts it down by 16). The specials are selected last as
 * in kern_body.h's lane (overflow, then inf, then NaN inputs), each with the sign where the policy
 * keeps it (the dX masks: the sign at bit 31 for fp32r, 15 for bf16). Integer operations only.
 *
 * With stream set, the output goes to memory with streaming stores (no read for ownership: a
 * quarter of the traffic of a bf16 call, a third of an fp32r one); the elements before the first
 * 32-byte boundary of dst and after the last whole step through the scalar loop. */
#define WIDE_FN static inline __attribute__((always_inline))

typedef struct {
    __m256i absm, inf, keep, half, one, tie, maxc, ovf0, dovf, inf0, dinf, nan0, dnan;
} wide_consts;

/* 8 results in 32-bit lanes (bf16: the 16-bit code in the low half). PLAIN: overflow gives inf
 * with its sign (no saturation), so every overflowing sum and inf itself already are that code
 * (a finite a rounds to at most 0x7f800000 + the dropped bits): only NaN inputs are selected. */
WIDE_FN __m256i wide8(const wide_consts *k, __m256i u, const int rnd, const int S,
                      const int PLAIN) {
    const __m256i a = _mm256_and_si256(u, k->absm);
    __m256i sg = _mm256_andnot_si256(k->absm, u);
    __m256i r;
    if (rnd == PP_RNE)
        r = _mm256_add_epi32(_mm256_add_epi32(a, k->half),
                             _mm256_and_si256(_mm256_srli_epi32(a, S), k->one));
    else if (rnd == PP_RNA)
        r = _mm256_add_epi32(a, k->tie);
    else
        r = a;
    /* r <= 0x80000000 + 2^(S-1): a NaN's sum may wrap negative (fp32r) or past max (bf16), but
     * NaNs are replaced below */
    if (S == 16) {
        r = _mm256_srli_epi32(r, 16);
        sg = _mm256_srli_epi32(sg, 16);
    } else {
        r = _mm256_and_si256(r, k->keep);
    }
    __m256i v = _mm256_or_si256(r, sg);
    if (!PLAIN) {
        v = _mm256_blendv_epi8(v, _mm256_or_si256(k->ovf0, _mm256_and_si256(sg, k->dovf)),
                               _mm256_cmpgt_epi32(r, k->maxc));
        v = _mm256_blendv_epi8(v, _mm256_or_si256(k->inf0, _mm256_and_si256(sg, k->dinf)),
                               _mm256_cmpeq_epi32(a, k->inf));
    }
    return _mm256_blendv_epi8(v, _mm256_or_si256(k->nan0, _mm256_and_si256(sg, k->dnan)),
                              _mm256_cmpgt_epi32(a, k->inf));
}

/* The same arithmetic, one element. */
WIDE_FN uint32_t wide1(const pp_params *pr, uint32_t u, const int rnd, const int S) {
    const uint32_t a = u & 0x7fffffffu, sg0 = u & 0x80000000u;
    const uint32_t sg = S == 16 ? sg0 >> 16 : sg0;
    const uint32_t h = 1u << (S - 1);
    uint32_t r = rnd == PP_RNE ? a + (h - 1u) + ((a >> S) & 1u) : rnd == PP_RNA ? a + h : a;
    r = S == 16 ? r >> 16 : r & ~((1u << S) - 1u);
    const uint32_t maxc = S == 16 ? pr->maxc : pr->maxc << S;
    uint32_t v = r > maxc && a <= 0x7f800000u ? pr->ovf[0] | (sg & pr->dovf) : r | sg;
    v = a == 0x7f800000u ? pr->inf[0] | (sg & pr->dinf) : v;
    return a > 0x7f800000u ? pr->nan[0] | (sg & pr->dnan) : v;
}

WIDE_FN void wide_loop(const pp_params *pr, const uint32_t *src, size_t n, void *dst_,
                       const int stream, const int rnd, const int S, const int PLAIN) {
    wide_consts k;
    k.absm = _mm256_set1_epi32(0x7fffffff);
    k.inf = _mm256_set1_epi32(0x7f800000);
    k.keep = _mm256_set1_epi32((int)~((1u << S) - 1u));
    k.half = _mm256_set1_epi32((int)((1u << (S - 1)) - 1u));
    k.one = _mm256_set1_epi32(1);
    k.tie = _mm256_set1_epi32((int)(1u << (S - 1)));
    k.maxc = _mm256_set1_epi32((int)(S == 16 ? pr->maxc : pr->maxc << S));
    k.ovf0 = _mm256_set1_epi32((int)pr->ovf[0]);
    k.dovf = _mm256_set1_epi32((int)pr->dovf);
    k.inf0 = _mm256_set1_epi32((int)pr->inf[0]);
    k.dinf = _mm256_set1_epi32((int)pr->dinf);
    k.nan0 = _mm256_set1_epi32((int)pr->nan[0]);
    k.dnan = _mm256_set1_epi32((int)pr->dnan);
    const size_t ob = S == 16 ? 2 : 4;
    uint16_t *d16 = (uint16_t *)dst_;
    uint32_t *d32 = (uint32_t *)dst_;
    size_t i = 0;
    if (stream) { /* to dst's first 32-byte boundary (dst is aligned to its element size) */
        size_t head = (size_t)(-(uintptr_t)dst_ & 31u) / ob;
        if (head > n) head = n;
        for (; i < head; i++) {
            if (S == 16) d16[i] = (uint16_t)wide1(pr, src[i], rnd, S);
            else d32[i] = wide1(pr, src[i], rnd, S);
        }
    }
    for (; i + 16 <= n; i += 16) {
#if PP_PREFETCH_AVX2 > 0
        _mm_prefetch((const char *)(src + i) + PP_PREFETCH_AVX2, _MM_HINT_T0);
#endif
        const __m256i v0 = wide8(&k, _mm256_loadu_si256((const __m256i *)(const void *)(src + i)), rnd, S, PLAIN);
        const __m256i v1 = wide8(&k, _mm256_loadu_si256((const __m256i *)(const void *)(src + i + 8)), rnd, S, PLAIN);
        if (S == 16) {
            /* codes <= 0xffff: the unsigned saturating pack is exact; then the 64-bit quarters
             * into element order */
            const __m256i h = _mm256_permute4x64_epi64(_mm256_packus_epi32(v0, v1), 0xd8);
            if (stream) _mm256_stream_si256((__m256i *)(void *)(d16 + i), h);
            else _mm256_storeu_si256((__m256i *)(void *)(d16 + i), h);
        } else if (stream) {
            _mm256_stream_si256((__m256i *)(void *)(d32 + i), v0);
            _mm256_stream_si256((__m256i *)(void *)(d32 + i + 8), v1);
        } else {
            _mm256_storeu_si256((__m256i *)(void *)(d32 + i), v0);
            _mm256_storeu_si256((__m256i *)(void *)(d32 + i + 8), v1);
        }
    }
    for (; i < n; i++) {
        if (S == 16) d16[i] = (uint16_t)wide1(pr, src[i], rnd, S);
        else d32[i] = wide1(pr, src[i], rnd, S);
    }
}

#define WIDE_LOOP_(R, S, PL)                                                                       \
    do {                                                                                           \
        if (stream) wide_loop(pr, src, n, dst, 1, R, S, PL);                                       \
        else wide_loop(pr, src, n, dst, 0, R, S, PL);                                              \
    } while (0)
#define WIDE_ROUNDINGS_(S, PL)                                                                     \
    do {                                                                                           \
        if (pr->rounding == PP_RNE) WIDE_LOOP_(PP_RNE, S, PL);                                     \
        else if (pr->rounding == PP_RNA) WIDE_LOOP_(PP_RNA, S, PL);                                \
        else WIDE_LOOP_(PP_RTZ, S, PL);                                                            \
    } while (0)
#define WIDE_ROUNDINGS(S)                                                                          \
    do {                                                                                           \
        const uint32_t infc_ = S == 16 ? 0x7f80u : 0x7f800000u;                                    \
        const uint32_t sgm_ = S == 16 ? 0x8000u : 0x80000000u;                                     \
        if (pr->ovf[0] == infc_ && pr->inf[0] == infc_ && pr->dovf == sgm_ && pr->dinf == sgm_)    \
            WIDE_ROUNDINGS_(S, 1);                                                                 \
        else WIDE_ROUNDINGS_(S, 0);                                                                \
    } while (0)

/* Returns n when it encoded the n elements (fp32r or bf16 under rne, rtz or rna), 0 otherwise
 * (then nothing was written). */
static size_t wide_avx2(const pp_params *pr, const uint32_t *src, size_t n, void *dst,
                        int out_bytes, const int stream) {
    if (pr->rounding != PP_RNE && pr->rounding != PP_RNA && pr->rounding != PP_RTZ) return 0;
    if (pr->emin != -126 || pr->bias != 127) return 0;
    if ((uintptr_t)dst % (unsigned)out_bytes) return 0; /* not aligned to its elements */
    if (out_bytes == 4 && pr->shift == 13 && pr->p == 10 && pr->sign_pos == 31) WIDE_ROUNDINGS(13);
    else if (out_bytes == 2 && pr->shift == 0 && pr->p == 7 && pr->sign_pos == 15) WIDE_ROUNDINGS(16);
    else return 0;
    return n;
}

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
    size_t head = (size_t)(-(uintptr_t)dst & 31u) / 2;
    if (head > n) head = n;
    f16c_avx2(src, head, dst, 0);
    f16c_avx2(src + head, n - head, dst + head, 1);
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
#include "kern_body.h"
#else
const pp_kernel_set pp_kernels_avx2;
#endif
