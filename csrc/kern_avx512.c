/* Fast kernels compiled for AVX-512 F/BW/VL/DQ (chosen at run time only where the CPU has it). */
#include "pyprecision.h"

#if defined(__x86_64__) || defined(__i386__)
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,bmi,bmi2,popcnt")
#include <immintrin.h>
#define PP_VBYTES 64
#define PP_STREAM(d, s) _mm512_stream_si512((void *)(d), _mm512_loadu_si512((const void *)(s)))
#define PP_SFENCE() _mm_sfence()
#define KSUF avx512

/* Philox4x32-10 of 16 consecutive blocks (blk .. blk + 15) in the lanes of four vectors; the
 * words are stored in element order: out[4 j + k] = word k of block blk + j. */
static inline void philox16(uint32_t k0, uint32_t k1, uint64_t blk, uint32_t *out) {
    const __m512i idx = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    const __m512i lo = _mm512_set1_epi32((int)(uint32_t)blk);
    __m512i c0 = _mm512_add_epi32(lo, idx);
    const __mmask16 carry = _mm512_cmplt_epu32_mask(c0, lo);
    const __m512i hi = _mm512_set1_epi32((int)(uint32_t)(blk >> 32));
    __m512i c1 = _mm512_mask_add_epi32(hi, carry, hi, _mm512_set1_epi32(1));
    __m512i c2 = _mm512_setzero_si512(), c3 = _mm512_setzero_si512();
    const __m512i m0 = _mm512_set1_epi32((int)PP_PHILOX_M0), m1 = _mm512_set1_epi32((int)PP_PHILOX_M1);
    for (int r = 0; r < 10; r++) {
        const __m512i ka = _mm512_set1_epi32((int)(k0 + (uint32_t)r * PP_PHILOX_W0));
        const __m512i kb = _mm512_set1_epi32((int)(k1 + (uint32_t)r * PP_PHILOX_W1));
        const __m512i e0 = _mm512_mul_epu32(c0, m0);
        const __m512i o0 = _mm512_mul_epu32(_mm512_srli_epi64(c0, 32), m0);
        const __m512i e1 = _mm512_mul_epu32(c2, m1);
        const __m512i o1 = _mm512_mul_epu32(_mm512_srli_epi64(c2, 32), m1);
        const __m512i hi0 = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(e0, 32), o0);
        const __m512i lo0 = _mm512_mask_blend_epi32(0xAAAA, e0, _mm512_slli_epi64(o0, 32));
        const __m512i hi1 = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(e1, 32), o1);
        const __m512i lo1 = _mm512_mask_blend_epi32(0xAAAA, e1, _mm512_slli_epi64(o1, 32));
        c0 = _mm512_ternarylogic_epi32(hi1, c1, ka, 0x96); /* three-way xor */
        c2 = _mm512_ternarylogic_epi32(hi0, c3, kb, 0x96);
        c1 = lo1;
        c3 = lo0;
    }
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
#define PP_PHILOX_LANES 16
#define PP_PHILOX_VEC philox16
#include "kern_body.h"
#else
const pp_kernel_set pp_kernels_avx512;
#endif
