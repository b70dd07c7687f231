/* float64 -> float32 bits with round-to-odd, AVX2 (included by kern_avx2.c only). For a block of
 * a float64 source under rne, rtz or rna the driver (convert.c encode_range) calls narrow64_avx2,
 * which narrows 256 elements at a time into the driver's L1 buffer and runs the set's float32
 * kernels on them (docs/decisions/speed.md S18
 * has the proof that this equals rounding the float64 value once, for every format and every
 * input, and why stochastic rounding cannot take this path).
 *
 * Round-to-odd: y = x when x is a float32 value (subnormals included), else the one of x's two
 * float32 neighbours whose last significand bit is 1. Computed as the truncation toward zero
 * (vcvtpd2ps under RC = toward zero), widened back exactly (vcvtps2pd) and compared with x: where
 * they differ (an ordered not-equal, so NaNs are left as the conversion made them) the last bit
 * is set. Truncation of a finite |x| beyond float32's range gives FLT_MAX, which is odd already.
 *
 * The conversion obeys MXCSR, so the kernel runs under its own (RC = toward zero, every
 * exception masked, FTZ and DAZ off: neither a float32 subnormal result nor a float64 subnormal
 * input may be flushed) and gives the caller's back, flags included, before it returns; the
 * float32 kernels then run under the caller's MXCSR, exactly as for a float32 source. */

/* Prefetch of the input this many bytes ahead (0: none), with this hint. */
#ifndef PP_NARROW_PREFETCH
#define PP_NARROW_PREFETCH PP_PREFETCH_AVX2
#endif
#ifndef PP_NARROW_HINT
#define PP_NARROW_HINT _MM_HINT_T0
#endif

/* 8 elements: src[0..8) -> out[0..8). */
static inline __attribute__((always_inline)) void narrow8_avx2(const uint64_t *src,
                                                               uint32_t *out) {
    const __m256d x0 = _mm256_loadu_pd((const double *)(const void *)src);
    const __m256d x1 = _mm256_loadu_pd((const double *)(const void *)(src + 4));
    const __m128 t0 = _mm256_cvtpd_ps(x0), t1 = _mm256_cvtpd_ps(x1); /* truncated */
    const __m256d m0 = _mm256_cmp_pd(_mm256_cvtps_pd(t0), x0, _CMP_NEQ_OQ);
    const __m256d m1 = _mm256_cmp_pd(_mm256_cvtps_pd(t1), x1, _CMP_NEQ_OQ);
    /* the 64-bit masks (all ones or zero) as 32-bit lanes in element order: even dwords from
     * m0, odd ones from m1, then gathered */
    const __m256i m = _mm256_permutevar8x32_epi32(
        _mm256_castps_si256(_mm256_blend_ps(_mm256_castpd_ps(m0), _mm256_castpd_ps(m1), 0xaa)),
        _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7));
    const __m256i t = _mm256_castps_si256(_mm256_set_m128(t1, t0));
    const __m256i odd = _mm256_and_si256(m, _mm256_set1_epi32(1));
    _mm256_storeu_si256((__m256i *)(void *)out, _mm256_or_si256(t, odd));
}

/* Narrows n float64 elements (bits) to float32 bits in out, rounding to odd, under the kernel's own
 * MXCSR (the caller's given back). */
static void narrow_avx2(const void *src_, size_t n, uint32_t *out) {
    const uint64_t *src = (const uint64_t *)src_;
    const unsigned csr = _mm_getcsr();
    _mm_setcsr(0x7f80u); /* RC = toward zero, every exception masked, FTZ and DAZ off */
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
#if PP_NARROW_PREFETCH > 0
        /* the input PP_NARROW_PREFETCH bytes ahead: one cache line per 8 elements */
        _mm_prefetch((const char *)(src + i) + PP_NARROW_PREFETCH, PP_NARROW_HINT);
#endif
        narrow8_avx2(src + i, out + i);
    }
    if (i < n) { /* the last 1-7 through a zero-padded buffer: the same instructions */
        uint64_t in[8] = {0};
        uint32_t o[8];
        memcpy(in, src + i, (n - i) * sizeof(uint64_t));
        narrow8_avx2(in, o);
        memcpy(out + i, o, (n - i) * sizeof(uint32_t));
    }
    _mm_setcsr(csr);
}

/* float64 bits -> codes (out_bytes each) for rne, rtz and rna through narrow_avx2 and
 * pp_kernels_avx2.enc32 (kern_shared.h pp_narrow64_run); 0 (nothing written) for stochastic
 * rounding. */
static int narrow64_avx2(const pp_params *pr, const void *src, size_t n, uint32_t *buf,
                          void *dst, int out_bytes, int stream) {
    return pp_narrow64_run(pr, src, n, buf, dst, out_bytes, 8, narrow_avx2, &pp_kernels_avx2, stream);
}

#include "kern_i32odd.h"

/* int32 -> codes for rne, rtz and rna through pp_i32odd (kern_i32odd.h) and the float32 kernels; 0 (nothing
 * written) for stochastic rounding. */
static int narrow_i32_avx2(const pp_params *pr, const void *src, size_t n, uint32_t *buf,
                           void *dst, int out_bytes, int stream) {
    return pp_narrow64_run(pr, src, n, buf, dst, out_bytes, 4, pp_i32odd, &pp_kernels_avx2, stream);
}
