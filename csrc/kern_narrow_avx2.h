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

/* int32 -> bf16 (S = 16) or fp32r (S = 13) under rne / rtz / rna in registers (speed.md S28): each
 * vector narrowed to float32 rounded to odd (pp_i32odd8_rz) and rounded at bit S as
 * kern_wide_avx2.h's wide8 rounds a float32, with no special selected: a narrowed int32 is finite
 * and |t| <= 2^31, far below both formats' largest finite values (bf16 0x7f7f, fp32r 0x7f7fe000 at
 * bit 13 and up), so wide8's overflow, inf and NaN selections never fire, under any saturation or
 * NaN policy, and what is left is the same integer rounding of the same float32 t. The narrowing
 * and the encoding are one pass (before: 1024 elements narrowed into an L1 buffer, then the
 * float32 kernel over it, speed.md S23); the kernel's own MXCSR (RC = toward zero, every
 * exception masked, FTZ and DAZ off) is set once per call, the caller's given back, flags
 * included. With stream set, 16 codes per streaming store (bf16) or two (fp32r) from dst's first
 * 32-byte boundary, the head and tail through a zero-padded vector of 8 with plain stores. */
static inline __attribute__((always_inline)) __m256i i32w8(const wide_consts *k, __m256i x,
                                                            const int rnd, const int S) {
    return wide8(k, pp_i32odd8_rz(x), rnd, S, PP_FINITE);
}

/* Elements [i, i + m), m <= 8, through a zero-padded vector, plain stores. */
static inline __attribute__((always_inline)) void i32w_part(const wide_consts *k, const int32_t *src,
                                                             size_t i, size_t m, void *dst,
                                                             const int rnd, const int S) {
    _Alignas(32) int32_t in[8] = {0};
    _Alignas(32) uint32_t o[8];
    memcpy(in, src + i, m * sizeof(int32_t));
    _mm256_store_si256((__m256i *)(void *)o, i32w8(k, _mm256_load_si256((const __m256i *)(void *)in), rnd, S));
    for (size_t j = 0; j < m; j++) {
        if (S == 16) ((uint16_t *)dst)[i + j] = (uint16_t)o[j];
        else ((uint32_t *)dst)[i + j] = o[j];
    }
}

static inline __attribute__((always_inline)) void i32w_loop(const int32_t *src, size_t n,
                                                             void *dst, const int stream,
                                                             const int rnd, const int S) {
    wide_consts k = {0}; /* the rounding's constants: PP_FINITE reads no other */
    k.absm = _mm256_set1_epi32(0x7fffffff);
    k.keep = _mm256_set1_epi32((int)~((1u << S) - 1u));
    k.half = _mm256_set1_epi32((int)((1u << (S - 1)) - 1u));
    k.one = _mm256_set1_epi32(1);
    k.tie = _mm256_set1_epi32((int)(1u << (S - 1)));
    uint16_t *d16 = (uint16_t *)dst;
    uint32_t *d32 = (uint32_t *)dst;
    size_t i = 0;
    if (stream) { /* to dst's first 32-byte boundary: < 16 (bf16) or 8 (fp32r) elements */
        const size_t head = pp_head_to(dst, n, S == 16 ? 2 : 4, 32);
        while (i < head) {
            const size_t m = head - i < 8 ? head - i : 8;
            i32w_part(&k, src, i, m, dst, rnd, S);
            i += m;
        }
    }
    for (; i + 16 <= n; i += 16) {
#if PP_I32ODD_PREFETCH > 0
        _mm_prefetch((const char *)(src + i) + PP_I32ODD_PREFETCH, _MM_HINT_T0);
#endif
        const __m256i v0 = i32w8(&k, _mm256_loadu_si256((const __m256i *)(const void *)(src + i)), rnd, S);
        const __m256i v1 = i32w8(&k, _mm256_loadu_si256((const __m256i *)(const void *)(src + i + 8)), rnd, S);
        if (S == 16) {
            /* codes <= 0xffff: the unsigned saturating pack is exact; then element order */
            const __m256i h = _mm256_permute4x64_epi64(_mm256_packus_epi32(v0, v1), 0xd8);
            if (stream) _mm256_stream_si256((__m256i *)(void *)(d16 + i), h);
            else _mm256_storeu_si256((__m256i *)(void *)(d16 + i), h);
        } else if (stream) {
            _mm256_stream_si256((__m256i *)(void *)(d32 + i), v0);
            _mm256_stream_si256((__m256i *)(void *)(d32 + i + 8), v1);
        } else {
            _mm256_storeu_si256((__m256i *)(void *)(d32 + i), v0);
            _mm256_storeu_si256((__m256i *)(void *)(d32 + i + 8), v1);
        }
    }
    for (; i < n; i += 8) i32w_part(&k, src, i, n - i < 8 ? n - i : 8, dst, rnd, S);
}

PP_I32WIDE_ENTRY(i32wide_avx2, i32w_loop)

/* int32 -> codes for rne, rtz and rna: bf16 and fp32r in one pass (i32wide_avx2), the other
 * formats through pp_i32odd (kern_i32odd.h) and the float32 kernels; 0 (nothing written) for
 * stochastic rounding. */
static int narrow_i32_avx2(const pp_params *pr, const void *src, size_t n, uint32_t *buf,
                           void *dst, int out_bytes, int stream) {
    if (i32wide_avx2(pr, (const int32_t *)src, n, dst, out_bytes, stream)) return 1;
    return pp_narrow64_run(pr, src, n, buf, dst, out_bytes, 4, pp_i32odd, &pp_kernels_avx2, stream);
}
