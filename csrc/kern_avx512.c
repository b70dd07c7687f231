/* Fast kernels compiled for AVX-512 F/BW/VL/DQ (chosen at run time only where the CPU has it). */
#include "pyprecision.h"

#if defined(__x86_64__) || defined(__i386__)
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,f16c,bmi,bmi2,popcnt")
#include <immintrin.h>
#define PP_VBYTES 64
#define PP_STREAM(d, s) _mm512_stream_si512((void *)(d), _mm512_loadu_si512((const void *)(s)))
#define PP_SFENCE() _mm_sfence()
#define KSUF avx512

/* Philox4x32-10 of 32 consecutive blocks (blk .. blk + 31), two independent groups of 16 lanes
 * interleaved so that the multiplier latency overlaps; the words are stored in element order:
 * out[4 j + k] = word k of block blk + j. */
#define PX_MULHILO(c, m, hi, lo)                                                                   \
    do {                                                                                           \
        const __m512i e_ = _mm512_mul_epu32(c, m);                                                 \
        const __m512i o_ = _mm512_mul_epu32(_mm512_srli_epi64(c, 32), m);                          \
        hi = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(e_, 32), o_);                       \
        lo = _mm512_mullo_epi32(c, m);                                                             \
    } while (0)

static inline void philox_store16(__m512i c0, __m512i c1, __m512i c2, __m512i c3, uint32_t *out) {
    const __m512i t0 = _mm512_unpacklo_epi32(c0, c1), t1 = _mm512_unpackhi_epi32(c0, c1);
    const __m512i t2 = _mm512_unpacklo_epi32(c2, c3), t3 = _mm512_unpackhi_epi32(c2, c3);
    const __m512i u0 = _mm512_unpacklo_epi64(t0, t2), u1 = _mm512_unpackhi_epi64(t0, t2);
    const __m512i u2 = _mm512_unpacklo_epi64(t1, t3), u3 = _mm512_unpackhi_epi64(t1, t3);
    const __m512i a01 = _mm512_shuffle_i32x4(u0, u1, 0x44), a23 = _mm512_shuffle_i32x4(u2, u3, 0x44);
    const __m512i b01 = _mm512_shuffle_i32x4(u0, u1, 0xEE), b23 = _mm512_shuffle_i32x4(u2, u3, 0xEE);
    _mm512_storeu_si512((void *)out, _mm512_shuffle_i32x4(a01, a23, 0x88));
    _mm512_storeu_si512((void *)(out + 16), _mm512_shuffle_i32x4(a01, a23, 0xDD));
    _mm512_storeu_si512((void *)(out + 32), _mm512_shuffle_i32x4(b01, b23, 0x88));
    _mm512_storeu_si512((void *)(out + 48), _mm512_shuffle_i32x4(b01, b23, 0xDD));
}

static inline void philox32(uint32_t k0, uint32_t k1, uint64_t blk, uint32_t *out) {
    const __m512i idx = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    const __m512i lo = _mm512_set1_epi32((int)(uint32_t)blk);
    const __m512i hi = _mm512_set1_epi32((int)(uint32_t)(blk >> 32));
    const __m512i one = _mm512_set1_epi32(1);
    __m512i a0 = _mm512_add_epi32(lo, idx);
    __m512i b0 = _mm512_add_epi32(a0, _mm512_set1_epi32(16));
    /* carry into the counter's high word where the low word wrapped */
    __m512i a1 = _mm512_mask_add_epi32(hi, _mm512_cmplt_epu32_mask(a0, lo), hi, one);
    __m512i b1 = _mm512_mask_add_epi32(hi, _mm512_cmplt_epu32_mask(b0, lo), hi, one);
    __m512i a2 = _mm512_setzero_si512(), a3 = a2, b2 = a2, b3 = a2;
    const __m512i m0 = _mm512_set1_epi32((int)PP_PHILOX_M0), m1 = _mm512_set1_epi32((int)PP_PHILOX_M1);
    for (int r = 0; r < 10; r++) {
        const __m512i ka = _mm512_set1_epi32((int)(k0 + (uint32_t)r * PP_PHILOX_W0));
        const __m512i kb = _mm512_set1_epi32((int)(k1 + (uint32_t)r * PP_PHILOX_W1));
        __m512i ah0, al0, ah1, al1, bh0, bl0, bh1, bl1;
        PX_MULHILO(a0, m0, ah0, al0);
        PX_MULHILO(b0, m0, bh0, bl0);
        PX_MULHILO(a2, m1, ah1, al1);
        PX_MULHILO(b2, m1, bh1, bl1);
        a0 = _mm512_ternarylogic_epi32(ah1, a1, ka, 0x96); /* three-way xor */
        b0 = _mm512_ternarylogic_epi32(bh1, b1, ka, 0x96);
        a2 = _mm512_ternarylogic_epi32(ah0, a3, kb, 0x96);
        b2 = _mm512_ternarylogic_epi32(bh0, b3, kb, 0x96);
        a1 = al1;
        b1 = bl1;
        a3 = al0;
        b3 = bl0;
    }
    philox_store16(a0, a1, a2, a3, out);
    philox_store16(b0, b1, b2, b3, out + 64);
}
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

#define PP_PHILOX_LANES 32
#define PP_PHILOX_VEC philox32
#include "kern_body.h"
#else
const pp_kernel_set pp_kernels_avx512;
#endif
