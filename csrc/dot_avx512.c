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

/* Tile shape: PP_DOT512_MR rows by PP_DOT512_NV vectors (docs/decisions/speed.md; 32 zmm
 * registers hold the MR * NV accumulators, NV loads of the panel and a broadcast). */
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
#define DK_LOADN(p, n) _mm512_maskz_loadu_ps(dot_m16(n), p)
#define DK_STOREN(p, v, n) _mm512_mask_storeu_ps(p, dot_m16(n), v)
#define DK_CANON(v) dot_canon_ps(v)
#include "dot_kern.h"
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
#define DK_LOADN(p, n) _mm512_maskz_loadu_pd(dot_m8(n), p)
#define DK_STOREN(p, v, n) _mm512_mask_storeu_pd(p, dot_m8(n), v)
#define DK_CANON(v) dot_canon_pd(v)
#include "dot_kern.h"

const pp_dot_set pp_dot_avx512 = {
    {PP_DOT512_MR, 16 * PP_DOT512_NV, dot_f32_avx512},
    {PP_DOT512_MR, 8 * PP_DOT512_NV, dot_f64_avx512},
};
#else
const pp_dot_set pp_dot_avx512;
#endif
