/* Fast kernels compiled for AVX-512 F/BW/VL/DQ (chosen at run time only where the CPU has it). */
#include "pyprecision.h"

#if defined(__x86_64__) || defined(__i386__)
#ifdef PP_EMULATE_AVX512 /* test build: AVX-512 emulated with AVX2 (csrc/emu512.h, SIMDe) */
#include "emu512.h"
#else
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,f16c,bmi,bmi2,popcnt")
#include <immintrin.h>
#endif
#define PP_VBYTES 64
#define PP_STREAM(d, s) _mm512_stream_si512((void *)(d), _mm512_loadu_si512((const void *)(s)))
#define PP_SFENCE() _mm_sfence()
#define KSUF avx512
#include "kern_shared.h"
/* Software prefetch of the input this many bytes ahead (T0) in the streaming loops (fp8, F16C
 * fp16, the fused stochastic rounding, the lanes of kern_body.h); 0: none. From issue 16's
 * measurement on Intel Emerald Rapids (4 KiB ahead, T0: bf16 rne 0.44-0.65 -> 0.77-0.92 of the
 * floor, fp8 -> 0.91-0.97, SR -> 0.57-0.75); structurally the AVX2 set's (measured on Zen 3,
 * docs/decisions/speed.md S15). Not measured on an AVX-512 machine by this change. */
#ifndef PP_PREFETCH_AVX512
#define PP_PREFETCH_AVX512 4096
#endif
#ifndef PP_PREFETCH_LANES
#define PP_PREFETCH_LANES PP_PREFETCH_AVX512
#endif
/* The LINES cache lines at P + PP_PREFETCH_AVX512 (a prefetch never faults, past the end either). */
#define PF512(P, LINES)                                                                            \
    do {                                                                                           \
        for (int l_ = 0; PP_PREFETCH_AVX512 > 0 && l_ < (LINES); l_++)                             \
            _mm_prefetch((const char *)(P) + PP_PREFETCH_AVX512 + 64 * l_, _MM_HINT_T0);           \
    } while (0)

/* ---- SplitMix64 (srwords.c is the definition), 8 outputs = 16 words per vector ----
 * Lane k of the state holds seed + (j + 1 + k) * gamma for pair index j + k; mix64 with vpmullq
 * (AVX512DQ). The 8 64-bit results, read as 16 32-bit lanes, are the words of elements 2j .. 2j+15
 * in element order (low half = even index). */
static inline __m512i sm_mix512(__m512i z) {
    z = _mm512_xor_si512(z, _mm512_srli_epi64(z, 30));
    z = _mm512_mullo_epi64(z, _mm512_set1_epi64((long long)PP_SM_M1));
    z = _mm512_xor_si512(z, _mm512_srli_epi64(z, 27));
    z = _mm512_mullo_epi64(z, _mm512_set1_epi64((long long)PP_SM_M2));
    return _mm512_xor_si512(z, _mm512_srli_epi64(z, 31));
}

/* The state for pair indices j .. j+7 (the caller adds sm_step512() per 16 words). */
static inline __m512i sm_state512(uint64_t seed, uint64_t j) {
    const __m512i k = _mm512_set_epi64(8, 7, 6, 5, 4, 3, 2, 1);
    const __m512i g = _mm512_set1_epi64((long long)PP_SM_GAMMA);
    return _mm512_add_epi64(_mm512_set1_epi64((long long)(seed + j * PP_SM_GAMMA)),
                            _mm512_mullo_epi64(k, g));
}
static inline __m512i sm_step512(void) { return _mm512_set1_epi64((long long)(8 * PP_SM_GAMMA)); }

/* 32 words from pair index j on (two independent vectors). */
static inline void srw32_avx512(uint64_t seed, uint64_t j, uint32_t *out) {
    const __m512i s0 = sm_state512(seed, j);
    _mm512_storeu_si512((void *)out, sm_mix512(s0));
    _mm512_storeu_si512((void *)(out + 16), sm_mix512(_mm512_add_epi64(s0, sm_step512())));
}
#define PP_SRW_WORDS 32
#define PP_SRW_VEC srw32_avx512

/* fp8 -> float32 through the exact table: every fp8 value's float32 has 16 zero low bits, so the
 * top halves of the 128 magnitudes' entries (4 registers of 32 words) are looked up with two
 * vpermt2w, the sign ORed in, and the words widened to the high halves of the float32 lanes. */
static inline void decode8_body(int format, const uint8_t *in, size_t n, uint32_t *out,
                                const int stream) {
    const float *tab = pp_decode_table(format);
    _Alignas(64) uint16_t hi[128];
    for (int k = 0; k < 128; k++) hi[k] = (uint16_t)(pp_f32_to_bits(tab[k]) >> 16);
    const __m512i t0 = _mm512_load_si512((const void *)hi), t1 = _mm512_load_si512((const void *)(hi + 32));
    const __m512i t2 = _mm512_load_si512((const void *)(hi + 64)), t3 = _mm512_load_si512((const void *)(hi + 96));
    const __m512i bit6 = _mm512_set1_epi16(0x40), sgn = _mm512_set1_epi16((short)0x8000);
    size_t i = 0;
    if (stream) /* plain stores up to a 64-byte aligned destination */
        for (; i < n && ((uintptr_t)(out + i) & 63u); i++) out[i] = pp_f32_to_bits(tab[in[i]]);
    for (; i + 32 <= n; i += 32) {
        const __m512i c = _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)(const void *)(in + i)));
        const __m512i lo = _mm512_permutex2var_epi16(t0, c, t1); /* index bits 0-5 */
        const __m512i up = _mm512_permutex2var_epi16(t2, c, t3);
        __m512i w = _mm512_mask_blend_epi16(_mm512_test_epi16_mask(c, bit6), lo, up);
        w = _mm512_ternarylogic_epi32(w, _mm512_slli_epi16(c, 8), sgn, 0xF8); /* w | (c<<8 & sgn) */
        const __m512i d0 = _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(w)), 16);
        const __m512i d1 = _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(w, 1)), 16);
        if (stream) {
            _mm512_stream_si512((void *)(out + i), d0);
            _mm512_stream_si512((void *)(out + i + 16), d1);
        } else {
            _mm512_storeu_si512((void *)(out + i), d0);
            _mm512_storeu_si512((void *)(out + i + 16), d1);
        }
    }
    for (; i < n; i++) out[i] = pp_f32_to_bits(tab[in[i]]);
}

static void decode8_avx512(int format, const uint8_t *in, size_t n, uint32_t *out) {
    decode8_body(format, in, n, out, 0);
}

/* 16 float32 (bits) of the 2- and 4-byte codes of elements [i, i + 16) under mask m (masked
 * loads: lanes outside m read nothing), as the reference decodes them (kern_aux.h decode_): bf16
 * codes are a float32's upper half; fp32r codes a float32 whose low 13 bits are ignored, NaNs
 * made the quiet NaN with their sign; fp16 by the conversion instruction (exact, dec16_avx512 has
 * when), NaNs the quiet NaN with their sign. */
static inline __attribute__((always_inline)) __m512i dec_wide16(const void *in, size_t i,
                                                                __mmask16 m, const int format) {
    const __m512i sign = _mm512_set1_epi32((int)0x80000000u), qnan = _mm512_set1_epi32(0x7fc00000);
    if (format == PP_FMT_BF16)
        return _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(
                                     m, (const void *)((const uint16_t *)in + i))), 16);
    if (format == PP_FMT_FP32R) {
        const __m512i u = _mm512_and_si512(
            _mm512_maskz_loadu_epi32(m, (const void *)((const uint32_t *)in + i)),
            _mm512_set1_epi32((int)0xffffe000u));
        const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_andnot_si512(sign, u),
                                                      _mm512_set1_epi32(0x7f800000));
        return _mm512_mask_ternarylogic_epi32(u, nan, sign, qnan, 0xEA); /* (u & sign) | qnan */
    }
    const __m256i h = _mm256_maskz_loadu_epi16(m, (const void *)((const uint16_t *)in + i));
    const __mmask16 nan = _mm256_cmpgt_epu16_mask(_mm256_and_si256(h, _mm256_set1_epi16(0x7fff)),
                                                  _mm256_set1_epi16(0x7c00));
    const __m512i f = _mm512_castps_si512(_mm512_cvtph_ps(h));
    return _mm512_mask_ternarylogic_epi32(f, nan, sign, qnan, 0xEA);
}

/* bf16, fp16 or fp32r codes straight to the destination: masked plain stores up to its first
 * 64-byte boundary and after the last whole vector, streaming stores between. */
static inline __attribute__((always_inline)) void dec_wide_stream(const void *in, size_t n,
                                                                  uint32_t *out, const int format,
                                                                  const int cb) {
    size_t i = pp_head_to(out, n, 4, 64); /* < 16 */
    if (i) _mm512_mask_storeu_epi32((void *)out, (__mmask16)((1u << i) - 1u), dec_wide16(in, 0, (__mmask16)((1u << i) - 1u), format));
    for (; i + 32 <= n; i += 32) {
        PF512((const char *)in + i * (size_t)cb, cb / 2);
        const __m512i d0 = dec_wide16(in, i, (__mmask16)0xffff, format);
        const __m512i d1 = dec_wide16(in, i + 16, (__mmask16)0xffff, format);
        _mm512_stream_si512((void *)(out + i), d0);
        _mm512_stream_si512((void *)(out + i + 16), d1);
    }
    for (; i < n; i += 16) {
        const __mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1u);
        _mm512_mask_storeu_epi32((void *)(out + i), m, dec_wide16(in, i, m, format));
    }
}

/* The same, writing straight to the destination with streaming stores (no block buffer); the
 * caller issues the sfence. fp16 only where its conversion is exact (dec16_avx512); 0, having
 * written nothing, when not this case. */
static int decode_stream_avx512(int format, const void *in, size_t n, uint32_t *out) {
    /* a destination not aligned to its float32 elements never reaches a 64-byte boundary: the
     * block path (decode into a buffer, then copy) takes it, as in the AVX2 set (UBSan on real
     * AVX-512: the fp8 branch came before this check and stored misaligned words) */
    if ((uintptr_t)out & 3u) return 0;
    if (pp_format_is_fp8(format)) {
        decode8_body(format, (const uint8_t *)in, n, out, 1);
        return 1;
    }
    if (format == PP_FMT_BF16) dec_wide_stream(in, n, out, PP_FMT_BF16, 2);
    else if (format == PP_FMT_FP32R) dec_wide_stream(in, n, out, PP_FMT_FP32R, 4);
    else if (format == PP_FMT_FP16 && (_mm_getcsr() & 0x1fc0u) == 0x1f80u)
        dec_wide_stream(in, n, out, PP_FMT_FP16, 2);
    else return 0;
    return 1;
}
#define PP_DECODE_STREAM decode_stream_avx512

#define PP_DECODE8 decode8_avx512

/* float32 -> fp16 with the conversion instruction, the rounding given in the instruction (rne or
 * rtz); NaNs first become the quiet NaN with their sign (see kern_body.h enc16_ for when this is
 * exact). rtz: the instruction's finite overflow is max, the reference's too (§2: rtz stops at
 * max), and inf stays inf. rna: nearest even of x with its lowest bit set (finite x; speed.md S24).
 * The conversion drops at least 13 low bits of every finite float32, bit 0 among them, so setting
 * it moves a dropped part of exactly one half (a tie) above the half and no other dropped part
 * across it: ties go up in magnitude, away from zero, and every other x rounds as it did. 65520
 * (the tie between max and 2^16) becomes inf, the reference's rna overflow (no saturation on this
 * path); a float32 subnormal or zero stays below 2^-25 and converts to zero with its sign. The
 * caller's MXCSR is exactly the default here (no DAZ: the subnormal made of a zero is a value).
 * With stream set (dst 64-byte aligned: f16c_stream_avx512), 32 codes per streaming store. */
static inline __attribute__((always_inline)) __m256i f16c16_avx512(__m512i u, const int rnd) {
    const __m512i absm = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
    const __m512i qnan = _mm512_set1_epi32(0x7fc00000);
    const __m512i a = _mm512_and_si512(u, absm);
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(a, inf);
    if (rnd == PP_RNA)
        u = _mm512_mask_or_epi32(u, _mm512_cmplt_epu32_mask(a, inf), u, _mm512_set1_epi32(1));
    u = _mm512_mask_ternarylogic_epi32(u, nan, absm, qnan, 0xBA); /* (u & ~abs) | qnan */
    if (rnd == PP_RTZ)
        return _mm512_cvtps_ph(_mm512_castsi512_ps(u), _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    return _mm512_cvtps_ph(_mm512_castsi512_ps(u), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
static inline __attribute__((always_inline)) void f16c_body512(const uint32_t *src, size_t n,
                                                               uint16_t *dst, const int stream,
                                                               const int rnd) {
    size_t i = 0;
    if (stream) {
        for (; i + 32 <= n; i += 32) {
            PF512(src + i, 2);
            const __m256i h0 = f16c16_avx512(_mm512_loadu_si512((const void *)(src + i)), rnd);
            const __m256i h1 = f16c16_avx512(_mm512_loadu_si512((const void *)(src + i + 16)), rnd);
            _mm512_stream_si512((void *)(dst + i), _mm512_inserti64x4(_mm512_castsi256_si512(h0), h1, 1));
        }
    }
    for (; i + 16 <= n; i += 16) {
        PF512(src + i, 1);
        const __m256i h = f16c16_avx512(_mm512_loadu_si512((const void *)(src + i)), rnd);
        _mm256_storeu_si256((__m256i *)(void *)(dst + i), h);
    }
    if (i < n) {
        const __mmask16 m = (__mmask16)((1u << (n - i)) - 1u);
        const __m256i h = f16c16_avx512(_mm512_maskz_loadu_epi32(m, (const void *)(src + i)), rnd);
        _mm256_mask_storeu_epi16((void *)(dst + i), m, h);
    }
}
/* The rounding (rne, rtz or rna: pr->hw_fp16 allows no other) as a constant of the loop. */
#define F16C_ROUNDINGS512(SRC, N, DST, STREAM)                                                     \
    do {                                                                                           \
        if (pr->rounding == PP_RNE) f16c_body512(SRC, N, DST, STREAM, PP_RNE);                     \
        else if (pr->rounding == PP_RTZ) f16c_body512(SRC, N, DST, STREAM, PP_RTZ);                \
        else f16c_body512(SRC, N, DST, STREAM, PP_RNA);                                            \
    } while (0)
static void f16c_avx512(const pp_params *pr, const uint32_t *src, size_t n, uint16_t *dst) {
    F16C_ROUNDINGS512(src, n, dst, 0);
}
/* The same with streaming stores from dst's first 64-byte boundary on; 0 when not this case. */
static int f16c_stream_avx512(const pp_params *pr, const uint32_t *src, size_t n, uint16_t *dst) {
    if (!pr->hw_fp16 || ((uintptr_t)dst & 1u)) return 0;
    const size_t head = pp_head_to(dst, n, 2, 64);
    F16C_ROUNDINGS512(src, head, dst, 0);
    F16C_ROUNDINGS512(src + head, n - head, dst + head, 1);
    return 1;
}
#define PP_F16C f16c_avx512

/* fp16 -> float32 with the conversion instruction, which is exact for every non-NaN half
 * (subnormal halves are normal floats; no rounding) unless DAZ zeroes subnormal inputs, and which
 * keeps NaN payloads where the decoder gives the quiet NaN with the sign: those lanes are fixed
 * after. Only when this thread's MXCSR has DAZ off and every exception masked (a signaling NaN
 * must not trap); returns 0, having done nothing, otherwise. */
static int dec16_avx512(const void *bits, size_t n, uint32_t *out) {
    if ((_mm_getcsr() & 0x1fc0u) != 0x1f80u) return 0;
    const uint16_t *in = (const uint16_t *)bits;
    const __m256i abs16 = _mm256_set1_epi16(0x7fff), inf16 = _mm256_set1_epi16(0x7c00);
    const __m512i sign = _mm512_set1_epi32((int)0x80000000u), qnan = _mm512_set1_epi32(0x7fc00000);
    size_t i = 0;
    for (; i < n; i += 16) {
        const __mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1u);
        const __m256i h = _mm256_maskz_loadu_epi16(m, (const void *)(in + i));
        const __mmask16 nan = _mm256_cmpgt_epu16_mask(_mm256_and_si256(h, abs16), inf16);
        __m512i f = _mm512_castps_si512(_mm512_cvtph_ps(h));
        f = _mm512_mask_ternarylogic_epi32(f, nan, sign, qnan, 0xEA); /* (f & sign) | qnan */
        _mm512_mask_storeu_epi32((void *)(out + i), m, f);
    }
    return 1;
}
#define PP_DECODE16 dec16_avx512

/* float32 -> fp8 (p = 2 or 3), rne / rtz / rna, signs kept on every special (pr->simple != 0):
 * one fused multiply-add rounds every binade in hardware, with the rounding given in the
 * instruction. For x in binade e (e clamped below at emin), C = ±2^(max(e, emin) + s0) * (1 + d)
 * with s0 = 23 - p, the sign of x, and d < 2^-7 (below) has ulp(C) = 2^(max(e, emin) - p), the
 * format's quantum there; s = C + x, rounded once (rounding is symmetric, so this rounds |x|),
 * stays in C's binade (|x| < 2^(e+1) <= |C| / 2), and its bits are C's plus K, the rounded
 * significand (2^p .. 2^(p+1) for normals, the code itself for subnormals and zero):
 *     code = K + (max(e, emin) - emin) * 2^p = s.lo16 - (C's low 16 bits) + (s.hi16 << 1 >> (8 - p)) - Cc
 * with Cc = (emin + s0 + 127) << p; d is chosen so that C's low 16 bits are -Cc (mod 2^16), so
 *     code = s.lo16 + (s.hi16 << 1 >> (8 - p))   (mod 2^16)
 * (K <= 16 < Cc never carries into s.hi16; C's last bit is 0, so rne's tie parity is K's). C comes
 * from x's sign and exponent bits (x & 0xff800000, never subnormal) with vrangeps keeping the larger
 * magnitude of it and 2^emin and x's sign. The 16-bit halves are gathered into 16-bit lanes (32
 * elements per instruction from there on), clamped to the overflow result and the specials
 * selected from s.hi16 << 1 (0xff00: inf, or an rne overflow, which the FMA rounds to inf; above:
 * NaN, quieted by the FMA; rtz never rounds a finite sum to inf), packed to bytes, the signs ORed
 * in (s.hi16 packed with signed saturation: its sign is x's, NaNs included) and the packs' lane
 * order undone. AVX-512 F/BW/DQ only (no VBMI).
 * rtz: the same sum truncated. rna: |x| + ulp/2 truncated first (a second FMA, C * 2^-(p+1)
 * added; two truncations at 2^-k | quantum equal one), then the sum truncated.
 * The rounding is in the instruction and no operand is subnormal except x (DAZ turns a float32
 * subnormal into 0, whose code is the same ±0), the sum is normal (FTZ cannot act), and {sae}
 * raises nothing: the caller's MXCSR cannot change a bit. */
typedef struct {
    __m512i sexpm, cmin, scale, halfs, idxH, idxL, ord, s80, hinf2, ovf, nan, inf;
} fp8_consts;

#define FP8_RNE (_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define FP8_RTZ (_MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC)
#define FP8_MAXABS_SIGN1 3 /* vrangeps: larger magnitude, the first operand's sign */

static inline __attribute__((always_inline)) __m512i fp8_sum(const fp8_consts *k, __m512i u,
                                                             const int rnd) {
    const __m512 x = _mm512_castsi512_ps(u);
    const __m512 c = _mm512_range_ps(_mm512_castsi512_ps(_mm512_and_si512(u, k->sexpm)),
                                     _mm512_castsi512_ps(k->cmin), FP8_MAXABS_SIGN1);
    const __m512 sc = _mm512_castsi512_ps(k->scale);
    if (rnd == PP_RNE) return _mm512_castps_si512(_mm512_fmadd_round_ps(c, sc, x, FP8_RNE));
    if (rnd == PP_RTZ) return _mm512_castps_si512(_mm512_fmadd_round_ps(c, sc, x, FP8_RTZ));
    const __m512 xh = _mm512_fmadd_round_ps(c, _mm512_castsi512_ps(k->halfs), x, FP8_RTZ);
    return _mm512_castps_si512(_mm512_fmadd_round_ps(c, sc, xh, FP8_RTZ));
}

/* 32 codes without sign (16-bit lanes, in the order of _mm512_packs_epi32(ua, ub)) of two vectors
 * of float32 bits, and the sums' upper halves (*hi, same order). mode: 1 ovf == inf; 2 ovf != inf
 * == nan; 3 all three differ (2 and 3: rtz / rna only). */
static inline __attribute__((always_inline)) __m512i fp8_words(const fp8_consts *k, __m512i ua,
                                                               __m512i ub, __m512i *hi,
                                                               const int p, const int rnd,
                                                               const int mode) {
    const __m512i sa = fp8_sum(k, ua, rnd), sb = fp8_sum(k, ub, rnd);
    const __m512i h = _mm512_permutex2var_epi16(sa, k->idxH, sb);
    const __m512i lo = _mm512_permutex2var_epi16(sa, k->idxL, sb);
    const __m512i h2 = _mm512_add_epi16(h, h); /* the sign shifted out */
    const __m512i v = _mm512_add_epi16(lo, _mm512_srli_epi16(h2, 8 - p));
    *hi = h;
    if (mode == 1) return _mm512_mask_min_epu16(k->nan, _mm512_cmple_epu16_mask(h2, k->hinf2), v, k->ovf);
    const __mmask32 fin = _mm512_cmplt_epu16_mask(h2, k->hinf2);
    const __m512i spec = mode == 2 ? k->nan
                         : _mm512_mask_blend_epi16(_mm512_cmpeq_epi16_mask(h2, k->hinf2), k->nan, k->inf);
    return _mm512_mask_min_epu16(spec, fin, v, k->ovf);
}

/* 64 codes in element order. */
static inline __attribute__((always_inline)) __m512i fp8_64(const fp8_consts *k, __m512i u0,
                                                            __m512i u1, __m512i u2, __m512i u3,
                                                            const int p, const int rnd,
                                                            const int mode) {
    __m512i h0, h1;
    const __m512i w0 = fp8_words(k, u0, u1, &h0, p, rnd, mode);
    const __m512i w1 = fp8_words(k, u2, u3, &h1, p, rnd, mode);
    /* signed saturation keeps the sign: bit 7 of each byte is the sum's (x's) sign */
    const __m512i b = _mm512_ternarylogic_epi32(_mm512_packus_epi16(w0, w1),
                                                _mm512_packs_epi16(h0, h1), k->s80, 0xF8);
    return _mm512_permutexvar_epi32(k->ord, b); /* the packs' lane order -> element order */
}

/* Elements [i, n), n - i < 64, with masked loads and a masked (plain) store. */
static inline __attribute__((always_inline)) void fp8_part(const fp8_consts *k, const uint32_t *src,
                                                           size_t i, size_t n, uint8_t *dst,
                                                           const int p, const int rnd,
                                                           const int mode) {
    const __mmask64 m = ((__mmask64)1 << (n - i)) - 1u;
    const __m512i u0 = _mm512_maskz_loadu_epi32((__mmask16)m, (const void *)(src + i));
    const __m512i u1 = _mm512_maskz_loadu_epi32((__mmask16)(m >> 16), (const void *)(src + i + 16));
    const __m512i u2 = _mm512_maskz_loadu_epi32((__mmask16)(m >> 32), (const void *)(src + i + 32));
    const __m512i u3 = _mm512_maskz_loadu_epi32((__mmask16)(m >> 48), (const void *)(src + i + 48));
    _mm512_mask_storeu_epi8((void *)(dst + i), m, fp8_64(k, u0, u1, u2, u3, p, rnd, mode));
}

/* All n elements; stream: non-temporal stores from the first 64-byte aligned output on (the
 * caller issues the sfence). */
static inline __attribute__((always_inline)) void fp8_loop(const fp8_consts *k, const uint32_t *src,
                                                           size_t n, uint8_t *dst, const int stream,
                                                           const int p, const int rnd,
                                                           const int mode) {
    size_t i = 0;
    if (stream) {
        size_t head = (size_t)(-(uintptr_t)dst & 63u);
        if (head > n) head = n;
        if (head) fp8_part(k, src, 0, head, dst, p, rnd, mode);
        i = head;
    }
    for (; i + 64 <= n; i += 64) {
        PF512(src + i, 4);
        const __m512i b = fp8_64(k, _mm512_loadu_si512((const void *)(src + i)),
                                 _mm512_loadu_si512((const void *)(src + i + 16)),
                                 _mm512_loadu_si512((const void *)(src + i + 32)),
                                 _mm512_loadu_si512((const void *)(src + i + 48)), p, rnd, mode);
        if (stream) _mm512_stream_si512((void *)(dst + i), b);
        else _mm512_storeu_si512((void *)(dst + i), b);
    }
    if (i < n) fp8_part(k, src, i, n, dst, p, rnd, mode);
}

#define FP8_ROUNDINGS(P) PP_FP8_DISPATCH(fp8_loop, P)

/* Returns n when it encoded the n elements, 0 when the case is not one of this kernel's. */
static size_t fp8_avx512(const pp_params *pr, const uint32_t *src, size_t n, uint8_t *dst,
                         const int stream) {
    const int p = pr->p;
    if ((p != 2 && p != 3) || pr->shift != 0 || pr->sign_pos != 7 || !pr->simple ||
        pr->ovf[0] > 0x7fu || pr->inf[0] > 0x7fu || pr->nan[0] > 0x7fu || n == 0)
        return 0;
    if (pr->rounding != PP_RNE && pr->rounding != PP_RTZ && pr->rounding != PP_RNA) return 0;
    /* rne rounds a finite overflow to inf and takes inf's result (mode 1); rna truncates it to
     * the largest float32, like rtz, but its inf result is ovf's in every policy there is */
    const int mode = pr->inf[0] == pr->ovf[0] ? 1 : pr->inf[0] == pr->nan[0] ? 2 : 3;
    if (pr->rounding != PP_RTZ && mode != 1) return 0;
    const uint32_t s0 = 23u - (uint32_t)p;
    const uint32_t cc = (uint32_t)(pr->emin + (int)s0 + 127) << p; /* 536 or 1128 here */
    fp8_consts k;
    k.sexpm = _mm512_set1_epi32((int)0xff800000u);
    k.cmin = _mm512_set1_epi32((int)((uint32_t)(pr->emin + 127) << 23));
    k.scale = _mm512_set1_epi32((int)(((127u + s0) << 23) | ((0x10000u - cc) & 0xffffu))); /* 2^s0 (1 + d) */
    k.halfs = _mm512_set1_epi32((int)((uint32_t)(127 - p - 1) << 23));                      /* 2^-(p+1) */
    /* word 8 l + r of a 128-bit lane l: element 4 l + r of a (r < 4), 4 l + r - 4 of b (r >= 4),
     * as _mm512_packs_epi32(a, b) orders them; hi takes the upper halves of the 32-bit lanes */
    _Alignas(64) uint16_t ih[32], il[32];
    for (int l = 0; l < 4; l++)
        for (int r = 0; r < 8; r++) {
            const int w = r < 4 ? 4 * l + r : 16 + 4 * l + r - 4; /* 32-bit lane of a:b */
            il[8 * l + r] = (uint16_t)(2 * w);
            ih[8 * l + r] = (uint16_t)(2 * w + 1);
        }
    k.idxH = _mm512_load_si512((const void *)ih);
    k.idxL = _mm512_load_si512((const void *)il);
    k.ord = _mm512_set_epi32(15, 11, 7, 3, 14, 10, 6, 2, 13, 9, 5, 1, 12, 8, 4, 0);
    k.s80 = _mm512_set1_epi8((char)0x80);
    k.hinf2 = _mm512_set1_epi16((short)0xff00);
    k.ovf = _mm512_set1_epi16((short)pr->ovf[0]);
    k.nan = _mm512_set1_epi16((short)pr->nan[0]);
    k.inf = _mm512_set1_epi16((short)pr->inf[0]);
    if (p == 3) FP8_ROUNDINGS(3);
    else FP8_ROUNDINGS(2);
    return n;
}

#include "kern_wide_avx512.h"

/* float32 -> fp32r by integer rounding (rne, rtz, rna; kern_wide_avx512.h). */
static size_t fp32r_avx512(const pp_params *pr, const uint32_t *src, size_t n, uint32_t *dst) {
    return wide_avx512(pr, src, n, dst, 4, 0);
}
#define PP_FP32R_FAST fp32r_avx512

/* float32 -> 8-, 16- or 32-bit codes straight to dst with streaming stores (convert.c, large
 * outputs), where the set has a kernel for the case: fp8 (FMA), bf16 and fp32r (integer; bf16 rne
 * by vcvtneps2bf16 where the CPU has it), fp16 (the conversion instruction). */
static int enc_stream_avx512(const pp_params *pr, const uint32_t *src, size_t n, void *dst,
                             int out_bytes) {
    if (out_bytes == 1) return fp8_avx512(pr, src, n, (uint8_t *)dst, 1) != 0;
    if (out_bytes == 2 && pr->hw_fp16) return f16c_stream_avx512(pr, src, n, (uint16_t *)dst);
    return wide_avx512(pr, src, n, dst, out_bytes, 1) != 0;
}
#define PP_ENC_STREAM enc_stream_avx512

/* float32 -> 16-bit codes, rne, signs kept on every special (pr->simple == 1) (8-bit codes: the
 * fp8 kernel above), written with AVX-512 masks: kern_body.h's two paths (normal: rebias +
 * increment + shift; subnormal: |x| + D in the FPU, so only with pr->fp_default) and its tail
 * (overflow result, then NaN, then the sign), then saturating packs (codes fit) and one
 * permutation into element order. Does whole groups of 32 elements and returns how many it did
 * (0 when the case is not this one). */
typedef struct {
    __m128i cnt;
    __m512i absm, one, add, minnorm, dv, ovf, inf, nan, sbit;
    int sub, sgsh;
} rne_consts;

static inline __m512i rne16(const rne_consts *k, const uint32_t *src) {
    const __m512i u = _mm512_loadu_si512((const void *)src);
    const __m512i a = _mm512_and_si512(u, k->absm);
    const __m512i lsb = _mm512_and_si512(_mm512_srl_epi32(a, k->cnt), k->one);
    __m512i code = _mm512_srl_epi32(_mm512_add_epi32(_mm512_add_epi32(a, k->add), lsb), k->cnt);
    if (k->sub) {
        const __mmask16 ks = _mm512_cmplt_epu32_mask(a, k->minnorm);
        const __m512 f = _mm512_add_ps(_mm512_castsi512_ps(a), _mm512_castsi512_ps(k->dv));
        code = _mm512_mask_sub_epi32(code, ks, _mm512_castps_si512(f), k->dv);
    }
    code = _mm512_min_epu32(code, k->ovf); /* ovf is max or the code after it (inf / NaN) */
    code = _mm512_mask_mov_epi32(code, _mm512_cmpgt_epu32_mask(a, k->inf), k->nan);
    const __m512i sg = k->sgsh == 24 ? _mm512_srli_epi32(u, 24) : _mm512_srli_epi32(u, 16);
    return _mm512_ternarylogic_epi32(code, sg, k->sbit, 0xF8); /* code | (sg & sign bit) */
}

static size_t rne_avx512(const pp_params *pr, const uint32_t *src, size_t n, void *dst,
                         int out_bytes) {
    /* 8-bit codes: fp8_avx512 takes every rne case this kernel could (and rtz / rna) */
    if (out_bytes == 1) return fp8_avx512(pr, src, n, (uint8_t *)dst, 0);
    /* bf16 (every policy, rne / rtz / rna): the integer kernel or vcvtneps2bf16 */
    if (out_bytes == 2 && wide_avx512(pr, src, n, dst, 2, 0)) return n;
    if (pr->rounding != PP_RNE || pr->simple != 1 || (pr->has_sub && !pr->fp_default) ||
        pr->shift != 0 || out_bytes != 2 ||
        (pr->ovf[0] != pr->maxc && pr->ovf[0] != pr->maxc + 1))
        return 0;
    const uint32_t s0 = 23u - (uint32_t)pr->p;
    rne_consts k;
    k.cnt = _mm_cvtsi32_si128((int)s0);
    k.absm = _mm512_set1_epi32(0x7fffffff);
    k.one = _mm512_set1_epi32(1);
    k.add = _mm512_set1_epi32((int)(((uint32_t)(pr->bias - 127) << 23) + (1u << (s0 - 1)) - 1u));
    k.minnorm = _mm512_set1_epi32((int)((uint32_t)(pr->emin + 127) << 23));
    k.dv = _mm512_set1_epi32((int)((uint32_t)(pr->emin - pr->p + 23 + 127) << 23));
    k.ovf = _mm512_set1_epi32((int)pr->ovf[0]);
    k.inf = _mm512_set1_epi32(0x7f800000);
    k.nan = _mm512_set1_epi32((int)pr->nan[0]);
    k.sbit = _mm512_set1_epi32((int)pr->sign_bit);
    k.sub = pr->has_sub;
    k.sgsh = 31 - pr->sign_pos;
    size_t i = 0;
    const __m512i ord = _mm512_set_epi64(7, 5, 3, 1, 6, 4, 2, 0);
    for (; i + 32 <= n; i += 32) {
        PF512(src + i, 2);
        const __m512i w = _mm512_packus_epi32(rne16(&k, src + i), rne16(&k, src + i + 16));
        _mm512_storeu_si512((void *)((uint16_t *)dst + i), _mm512_permutexvar_epi64(ord, w));
    }
    return i;
}
#define PP_RNE_FAST rne_avx512

#include "kern_sr_avx512.h"
#define PP_SR_FUSED sr_avx512
#include "kern_narrow_avx512.h"
#define PP_NARROW64 narrow64_avx512
#define PP_NARROW_I32 narrow_i32_avx512
#include "kern_body.h"
#else
const pp_kernel_set pp_kernels_avx512;
#endif
