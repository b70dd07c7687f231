/* Fast kernels compiled for AVX-512 F/BW/VL/DQ (chosen at run time only where the CPU has it). */
#include "pyprecision.h"

#if defined(__x86_64__) || defined(__i386__)
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,f16c,bmi,bmi2,popcnt")
#include <immintrin.h>
#define PP_VBYTES 64
#define PP_STREAM(d, s) _mm512_stream_si512((void *)(d), _mm512_loadu_si512((const void *)(s)))
#define PP_SFENCE() _mm_sfence()
#define KSUF avx512

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

/* The same, writing straight to the destination with streaming stores (no block buffer); the
 * caller issues the sfence. */
static int decode_stream_avx512(int format, const void *in, size_t n, uint32_t *out) {
    if (format < 3) return 0;
    decode8_body(format, (const uint8_t *)in, n, out, 1);
    return 1;
}
#define PP_DECODE_STREAM decode_stream_avx512

#define PP_DECODE8 decode8_avx512

/* float32 -> fp16 with the conversion instruction, rne given in the instruction; NaNs first
 * become the quiet NaN with their sign (see kern_body.h enc16_ for when this is exact). */
static void f16c_avx512(const uint32_t *src, size_t n, uint16_t *dst) {
    const __m512i absm = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
    const __m512i qnan = _mm512_set1_epi32(0x7fc00000);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512i u = _mm512_loadu_si512((const void *)(src + i));
        const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, absm), inf);
        u = _mm512_mask_ternarylogic_epi32(u, nan, absm, qnan, 0xBA); /* (u & ~abs) | qnan */
        const __m256i h = _mm512_cvtps_ph(_mm512_castsi512_ps(u), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm256_storeu_si256((__m256i *)(void *)(dst + i), h);
    }
    if (i < n) {
        const __mmask16 m = (__mmask16)((1u << (n - i)) - 1u);
        __m512i u = _mm512_maskz_loadu_epi32(m, (const void *)(src + i));
        const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, absm), inf);
        u = _mm512_mask_ternarylogic_epi32(u, nan, absm, qnan, 0xBA); /* (u & ~abs) | qnan */
        const __m256i h = _mm512_cvtps_ph(_mm512_castsi512_ps(u), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm256_mask_storeu_epi16((void *)(dst + i), m, h);
    }
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

/* float32 -> 8/16-bit codes, rne, signs kept on every special (pr->simple == 1), written with
 * AVX-512 masks: kern_body.h's two paths (normal: rebias + increment + shift; subnormal: |x| + D in
 * the FPU, so only with pr->fp_default) and its tail (overflow result, then NaN, then the sign),
 * then saturating packs (codes fit) and one permutation into element order. Does whole groups of
 * 64 elements and returns how many it did (0 when the case is not this one). */
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
    if (pr->rounding != PP_RNE || pr->simple != 1 || (pr->has_sub && !pr->fp_default) ||
        pr->shift != 0 || (out_bytes != 1 && out_bytes != 2) ||
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
    if (out_bytes == 1) {
        const __m512i ord = _mm512_set_epi32(15, 11, 7, 3, 14, 10, 6, 2, 13, 9, 5, 1, 12, 8, 4, 0);
        for (; i + 64 <= n; i += 64) {
            const __m512i w01 = _mm512_packus_epi32(rne16(&k, src + i), rne16(&k, src + i + 16));
            const __m512i w23 = _mm512_packus_epi32(rne16(&k, src + i + 32), rne16(&k, src + i + 48));
            const __m512i b = _mm512_permutexvar_epi32(ord, _mm512_packus_epi16(w01, w23));
            _mm512_storeu_si512((void *)((uint8_t *)dst + i), b);
        }
    } else {
        const __m512i ord = _mm512_set_epi64(7, 5, 3, 1, 6, 4, 2, 0);
        for (; i + 32 <= n; i += 32) {
            const __m512i w = _mm512_packus_epi32(rne16(&k, src + i), rne16(&k, src + i + 16));
            _mm512_storeu_si512((void *)((uint16_t *)dst + i), _mm512_permutexvar_epi64(ord, w));
        }
    }
    return i;
}
#define PP_RNE_FAST rne_avx512

#include "kern_sr_avx512.h"
#define PP_SR_FUSED sr_avx512
#include "kern_body.h"
#else
const pp_kernel_set pp_kernels_avx512;
#endif
