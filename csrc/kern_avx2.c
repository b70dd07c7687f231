/* Fast kernels compiled for AVX2 (chosen at run time only where the CPU has it). */
#include "pyprecision.h"

#if defined(__x86_64__) || defined(__i386__)
#pragma GCC target("avx2,f16c,bmi,bmi2,popcnt")
#include <immintrin.h>
#define PP_VBYTES 32
#define PP_STREAM(d, s) _mm256_stream_si256((__m256i *)(void *)(d), _mm256_loadu_si256((const __m256i *)(const void *)(s)))
#define PP_SFENCE() _mm_sfence()
#define KSUF avx2

/* ---- SplitMix64 (srwords.c is the definition), 4 outputs = 8 words per vector ----
 * AVX2 has no 64-bit multiply: z * c mod 2^64 = lo(z) lo(c) + ((hi(z) lo(c) + lo(z) hi(c)) << 32),
 * three vpmuludq. The 64-bit results, read as 32-bit lanes, are the words in element order. */
static inline __m256i sm_mul256(__m256i z, uint64_t c) {
    const __m256i cl = _mm256_set1_epi64x((long long)(c & 0xffffffffu));
    const __m256i ch = _mm256_set1_epi64x((long long)(c >> 32));
    const __m256i ll = _mm256_mul_epu32(z, cl);
    const __m256i cross = _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(z, 32), cl),
                                           _mm256_mul_epu32(z, ch));
    return _mm256_add_epi64(ll, _mm256_slli_epi64(cross, 32));
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

#include "kern_sr_avx2.h"
#define PP_SR_FUSED sr_avx2
#include "kern_body.h"
#else
const pp_kernel_set pp_kernels_avx2;
#endif
