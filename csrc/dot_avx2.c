/* The PE dot's register tiles for AVX2 (csrc/dot_kern.h), chosen at run time only where the CPU
 * has AVX2 (isa.c). */
#include "pyprecision.h"

#if defined(__x86_64__) || defined(__i386__)
#pragma GCC target("avx2,f16c,bmi,bmi2,popcnt")
#include <immintrin.h>

/* Tile shape: PP_DOT256_MR rows by PP_DOT256_NV vectors: 12 accumulators, 2 panel loads, a
 * broadcast and a product in the 16 ymm registers. */
#ifndef PP_DOT256_MR
#define PP_DOT256_MR 6
#endif
#ifndef PP_DOT256_NV
#define PP_DOT256_NV 2
#endif

static inline __m256i dot_mask32(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
static inline __m256i dot_mask64(int n) {
    return _mm256_cmpgt_epi64(_mm256_set1_epi64x(n), _mm256_setr_epi64x(0, 1, 2, 3));
}
static inline __m256 dot_canon_ps(__m256 v) {
    return _mm256_blendv_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fc00000)),
                            _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
}
static inline __m256d dot_canon_pd(__m256d v) {
    return _mm256_blendv_pd(v, _mm256_castsi256_pd(_mm256_set1_epi64x(0x7ff8000000000000LL)),
                            _mm256_cmp_pd(v, v, _CMP_UNORD_Q));
}

#define DK_T float
#define DK_V __m256
#define DK_LANES 8
#define DK_NV PP_DOT256_NV
#define DK_MR PP_DOT256_MR
#define DK_NAME dot_f32_avx2
#define DK_ZERO() _mm256_setzero_ps()
#define DK_SET1(x) _mm256_set1_ps(x)
#define DK_LOAD(p) _mm256_loadu_ps(p)
#define DK_MUL(x, y) _mm256_mul_ps(x, y)
#define DK_ADD(x, y) _mm256_add_ps(x, y)
#define DK_LOADN(p, n) _mm256_maskload_ps(p, dot_mask32(n))
#define DK_STOREN(p, v, n) _mm256_maskstore_ps(p, dot_mask32(n), v)
#define DK_CANON(v) dot_canon_ps(v)
#include "dot_kern.h"
/* the same tile with one fused multiply-add per step, for exact products (K11) */
#undef DK_NAME
#define DK_NAME dot_f32_exact_avx2
#define DK_FMADD(x, y, acc) _mm256_fmadd_ps(x, y, acc)
#define DK_ATTR __attribute__((target("avx2,fma")))
#include "dot_kern.h"
#undef DK_FMADD
#undef DK_T
#undef DK_V
#undef DK_LANES
#undef DK_NAME
#undef DK_ZERO
#undef DK_SET1
#undef DK_LOAD
#undef DK_MUL
#undef DK_ADD
#undef DK_LOADN
#undef DK_STOREN
#undef DK_CANON

#define DK_T double
#define DK_V __m256d
#define DK_LANES 4
#define DK_NAME dot_f64_avx2
#define DK_ZERO() _mm256_setzero_pd()
#define DK_SET1(x) _mm256_set1_pd(x)
#define DK_LOAD(p) _mm256_loadu_pd(p)
#define DK_MUL(x, y) _mm256_mul_pd(x, y)
#define DK_ADD(x, y) _mm256_add_pd(x, y)
#define DK_LOADN(p, n) _mm256_maskload_pd(p, dot_mask64(n))
#define DK_STOREN(p, v, n) _mm256_maskstore_pd(p, dot_mask64(n), v)
#define DK_CANON(v) dot_canon_pd(v)
#include "dot_kern.h"

const pp_dot_set pp_dot_avx2 = {
    {PP_DOT256_MR, 8 * PP_DOT256_NV, dot_f32_avx2},
    {PP_DOT256_MR, 4 * PP_DOT256_NV, dot_f64_avx2},
    {PP_DOT256_MR, 8 * PP_DOT256_NV, dot_f32_exact_avx2}, /* pp_dot checks the CPU has FMA */
};
#else
const pp_dot_set pp_dot_avx2;
#endif
