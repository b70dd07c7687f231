/* Fast kernels compiled for AVX2 (chosen at run time only where the CPU has it). */
#include "pyprecision.h"

#if defined(__x86_64__) || defined(__i386__)
#pragma GCC target("avx2,f16c,bmi,bmi2,popcnt")
#include <immintrin.h>
#define PP_VBYTES 32
#define PP_STREAM(d, s) _mm256_stream_si256((__m256i *)(void *)(d), _mm256_loadu_si256((const __m256i *)(const void *)(s)))
#define PP_SFENCE() _mm_sfence()
#define KSUF avx2

/* Philox4x32-10 of 8 consecutive blocks in the lanes of four vectors, stored in element order. */
static inline void philox8(uint32_t k0, uint32_t k1, uint64_t blk, uint32_t *out) {
    const __m256i idx = _mm256_set_epi32(7, 6, 5, 4, 3, 2, 1, 0);
    const __m256i lo = _mm256_set1_epi32((int)(uint32_t)blk);
    const __m256i flip = _mm256_set1_epi32((int)0x80000000u);
    __m256i c0 = _mm256_add_epi32(lo, idx);
    /* carry into the high word where c0 wrapped (c0 < lo, unsigned) */
    const __m256i carry = _mm256_cmpgt_epi32(_mm256_xor_si256(lo, flip), _mm256_xor_si256(c0, flip));
    __m256i c1 = _mm256_sub_epi32(_mm256_set1_epi32((int)(uint32_t)(blk >> 32)), carry);
    __m256i c2 = _mm256_setzero_si256(), c3 = _mm256_setzero_si256();
    const __m256i m0 = _mm256_set1_epi32((int)PP_PHILOX_M0), m1 = _mm256_set1_epi32((int)PP_PHILOX_M1);
    for (int r = 0; r < 10; r++) {
        const __m256i ka = _mm256_set1_epi32((int)(k0 + (uint32_t)r * PP_PHILOX_W0));
        const __m256i kb = _mm256_set1_epi32((int)(k1 + (uint32_t)r * PP_PHILOX_W1));
        const __m256i e0 = _mm256_mul_epu32(c0, m0);
        const __m256i o0 = _mm256_mul_epu32(_mm256_srli_epi64(c0, 32), m0);
        const __m256i e1 = _mm256_mul_epu32(c2, m1);
        const __m256i o1 = _mm256_mul_epu32(_mm256_srli_epi64(c2, 32), m1);
        const __m256i hi0 = _mm256_blend_epi32(_mm256_srli_epi64(e0, 32), o0, 0xAA);
        const __m256i lo0 = _mm256_mullo_epi32(c0, m0);
        const __m256i hi1 = _mm256_blend_epi32(_mm256_srli_epi64(e1, 32), o1, 0xAA);
        const __m256i lo1 = _mm256_mullo_epi32(c2, m1);
        c0 = _mm256_xor_si256(_mm256_xor_si256(hi1, c1), ka);
        c2 = _mm256_xor_si256(_mm256_xor_si256(hi0, c3), kb);
        c1 = lo1;
        c3 = lo0;
    }
    const __m256i t0 = _mm256_unpacklo_epi32(c0, c1), t1 = _mm256_unpackhi_epi32(c0, c1);
    const __m256i t2 = _mm256_unpacklo_epi32(c2, c3), t3 = _mm256_unpackhi_epi32(c2, c3);
    const __m256i u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
    const __m256i u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
    _mm256_storeu_si256((__m256i *)(void *)out, _mm256_permute2x128_si256(u0, u1, 0x20));
    _mm256_storeu_si256((__m256i *)(void *)(out + 8), _mm256_permute2x128_si256(u2, u3, 0x20));
    _mm256_storeu_si256((__m256i *)(void *)(out + 16), _mm256_permute2x128_si256(u0, u1, 0x31));
    _mm256_storeu_si256((__m256i *)(void *)(out + 24), _mm256_permute2x128_si256(u2, u3, 0x31));
}
/* float32 -> fp16 with F16C, rne given in the instruction; NaNs first become the quiet NaN with
 * their sign (see kern_body.h enc16_ for when this is exact). */
static void f16c_avx2(const uint32_t *src, size_t n, uint16_t *dst) {
    const __m256i absm = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
    const __m256i qnan = _mm256_set1_epi32(0x7fc00000), sign = _mm256_set1_epi32((int)0x80000000u);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i u = _mm256_loadu_si256((const __m256i *)(const void *)(src + i));
        const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, absm), inf);
        u = _mm256_blendv_epi8(u, _mm256_or_si256(_mm256_and_si256(u, sign), qnan), nan);
        const __m128i h = _mm256_cvtps_ph(_mm256_castsi256_ps(u), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm_storeu_si128((__m128i *)(void *)(dst + i), h);
    }
    for (; i < n; i++) {
        uint32_t u = src[i];
        if ((u & 0x7fffffffu) > 0x7f800000u) u = (u & 0x80000000u) | 0x7fc00000u;
        const __m128 v = _mm_castsi128_ps(_mm_cvtsi32_si128((int)u));
        dst[i] = (uint16_t)_mm_extract_epi16(_mm_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), 0);
    }
}
#define PP_F16C f16c_avx2

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

#define PP_PHILOX_LANES 8
#define PP_PHILOX_VEC philox8
#include "kern_body.h"
#else
const pp_kernel_set pp_kernels_avx2;
#endif
