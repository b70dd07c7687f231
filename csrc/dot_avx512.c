/* The PE dot's register tiles for AVX-512 F (csrc/dot_kern.h), chosen at run time only where the
 * CPU has the AVX-512 set (isa.c). Emulated with AVX2 by the PP_EMULATE_AVX512 test build
 * (csrc/emu512.h; scripts/emulate_avx512.sh), like kern_avx512.c. */
#include "pyprecision.h"

#if defined(__x86_64__) || defined(__i386__)
#ifdef PP_EMULATE_AVX512 /* test build: AVX-512 emulated with AVX2 (csrc/emu512.h, SIMDe) */
#include "emu512.h"
#else
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,f16c,bmi,bmi2,popcnt")
#include <immintrin.h>
#endif

/* Tile shape: PP_DOT512_MR rows by PP_DOT512_NV vectors: 24 of the 32 zmm registers hold the
 * accumulators, the rest the NV panel loads and a broadcast (6 x 4 and 8 x 2 measured alike on Zen
 * 5, both near 2 multiplies + 2 adds per cycle; docs/decisions/kernel.md K9). */
#ifndef PP_DOT512_MR
#define PP_DOT512_MR 6
#endif
#ifndef PP_DOT512_NV
#define PP_DOT512_NV 4
#endif

static inline __mmask16 dot_m16(int n) {
    return n >= 16 ? (__mmask16)0xffffu : (__mmask16)((1u << n) - 1u);
}
static inline __mmask8 dot_m8(int n) { return n >= 8 ? (__mmask8)0xffu : (__mmask8)((1u << n) - 1u); }
#ifdef PP_EMULATE_AVX512
/* SIMDe 0.7.4 lacks the masked loads and stores: Intel's semantics, one element at a time
 * (masked-off elements are neither read nor written). */
static inline __m512 dot_maskz_loadu_ps(__mmask16 m, const float *p) {
    pp_e512 v;
    for (int i = 0; i < 16; i++) v.f32[i] = (m >> i) & 1 ? p[i] : 0.0f;
    return v.f;
}
static inline void dot_mask_storeu_ps(float *p, __mmask16 m, __m512 x) {
    pp_e512 v;
    v.f = x;
    for (int i = 0; i < 16; i++)
        if ((m >> i) & 1) p[i] = v.f32[i];
}
static inline __m512d dot_maskz_loadu_pd(__mmask8 m, const double *p) {
    pp_e512 v;
    for (int i = 0; i < 8; i++) v.f64[i] = (m >> i) & 1 ? p[i] : 0.0;
    return v.d;
}
static inline void dot_mask_storeu_pd(double *p, __mmask8 m, __m512d x) {
    pp_e512 v;
    v.d = x;
    for (int i = 0; i < 8; i++)
        if ((m >> i) & 1) p[i] = v.f64[i];
}
#else
#define dot_maskz_loadu_ps _mm512_maskz_loadu_ps
#define dot_mask_storeu_ps _mm512_mask_storeu_ps
#define dot_maskz_loadu_pd _mm512_maskz_loadu_pd
#define dot_mask_storeu_pd _mm512_mask_storeu_pd
#endif
static inline __m512 dot_canon_ps(__m512 v) {
    const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    return _mm512_mask_mov_ps(v, nan, _mm512_castsi512_ps(_mm512_set1_epi32(0x7fc00000)));
}
static inline __m512d dot_canon_pd(__m512d v) {
    const __mmask8 nan = _mm512_cmp_pd_mask(v, v, _CMP_UNORD_Q);
    return _mm512_mask_mov_pd(v, nan,
                              _mm512_castsi512_pd(_mm512_set1_epi64(0x7ff8000000000000LL)));
}

#define DK_T float
#define DK_V __m512
#define DK_LANES 16
#define DK_NV PP_DOT512_NV
#define DK_MR PP_DOT512_MR
#define DK_NAME dot_f32_avx512
#define DK_ZERO() _mm512_setzero_ps()
#define DK_SET1(x) _mm512_set1_ps(x)
#define DK_LOAD(p) _mm512_loadu_ps(p)
#define DK_MUL(x, y) _mm512_mul_ps(x, y)
#define DK_ADD(x, y) _mm512_add_ps(x, y)
#define DK_LOADN(p, n) dot_maskz_loadu_ps(dot_m16(n), p)
#define DK_STOREN(p, v, n) dot_mask_storeu_ps(p, dot_m16(n), v)
#define DK_CANON(v) dot_canon_ps(v)
#include "dot_kern.h"
/* The tall tile: 16 rows of one zmm (16 columns), each broadcast folded into its multiply, k
 * unrolled by 2. On AMD Zen 4 (family 19h with AVX-512, whose 512-bit operations issue as two
 * 256-bit halves) it ran 1.1-1.35x the 6 x 4 tile's multiply-adds per second on MiniLM's shapes
 * (docs/decisions/kernel.md K12); elsewhere the 6 x 4 tile stays (isa.c pp_isa_dot_tall). */
#undef DK_NAME
#undef DK_NV
#undef DK_MR
#define DK_NAME dot_f32_tall_avx512
#define DK_NV 1
#define DK_MR 16
#define DK_KUNROLL _Pragma("GCC unroll 2")
#include "dot_kern.h"
#undef DK_NAME
#undef DK_NV
#undef DK_MR
#define DK_NV PP_DOT512_NV
#define DK_MR PP_DOT512_MR
/* the same tile with one fused multiply-add per step, for exact products (K11) */
#undef DK_NAME
#define DK_NAME dot_f32_exact_avx512
#define DK_FMADD(x, y, acc) _mm512_fmadd_ps(x, y, acc)
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
#define DK_V __m512d
#define DK_LANES 8
#define DK_NAME dot_f64_avx512
#define DK_ZERO() _mm512_setzero_pd()
#define DK_SET1(x) _mm512_set1_pd(x)
#define DK_LOAD(p) _mm512_loadu_pd(p)
#define DK_MUL(x, y) _mm512_mul_pd(x, y)
#define DK_ADD(x, y) _mm512_add_pd(x, y)
#define DK_LOADN(p, n) dot_maskz_loadu_pd(dot_m8(n), p)
#define DK_STOREN(p, v, n) dot_mask_storeu_pd(p, dot_m8(n), v)
#define DK_CANON(v) dot_canon_pd(v)
#include "dot_kern.h"

const pp_dot_set pp_dot_avx512 = {
    {PP_DOT512_MR, 16 * PP_DOT512_NV, dot_f32_avx512},
    {PP_DOT512_MR, 8 * PP_DOT512_NV, dot_f64_avx512},
    {PP_DOT512_MR, 16 * PP_DOT512_NV, dot_f32_exact_avx512},
};
/* the tall float32 tile; the fused one stays 6 x 4 (measured faster on Zen 4 as well) */
const pp_dot_set pp_dot_avx512_tall = {
    {16, 16, dot_f32_tall_avx512},
    {PP_DOT512_MR, 8 * PP_DOT512_NV, dot_f64_avx512},
    {PP_DOT512_MR, 16 * PP_DOT512_NV, dot_f32_exact_avx512},
};
#else
const pp_dot_set pp_dot_avx512;
const pp_dot_set pp_dot_avx512_tall;
#endif
