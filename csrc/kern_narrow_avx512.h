/* float64 -> float32 bits with round-to-odd, AVX-512 (included by kern_avx512.c only): the AVX2
 * set's kern_narrow_avx2.h in 512-bit vectors, see there (and docs/decisions/speed.md S18) for
 * why narrowing to odd and then rounding the float32 equals rounding the float64 once (rne, rtz,
 * rna), and why stochastic rounding cannot take this path.
 *
 * Round-to-odd: the truncation toward zero (vcvtpd2ps under RC = toward zero), widened back
 * exactly (vcvtps2pd) and compared with x; where they differ (ordered not-equal: NaNs stay as the
 * conversion made them) the last bit is set. The conversions obey MXCSR's DAZ and FTZ even with
 * an embedded rounding, so the kernel runs under its own MXCSR (RC = toward zero, every exception
 * masked, FTZ and DAZ off) and gives the caller's back, flags included. */

/* 16 elements: src[0..16) -> out[0..16). */
static inline __attribute__((always_inline)) void narrow16_avx512(const uint64_t *src,
                                                                  uint32_t *out) {
    const __m512d x0 = _mm512_loadu_pd((const void *)src);
    const __m512d x1 = _mm512_loadu_pd((const void *)(src + 8));
    const __m256 t0 = _mm512_cvtpd_ps(x0), t1 = _mm512_cvtpd_ps(x1); /* truncated */
    const __mmask8 m0 = _mm512_cmp_pd_mask(_mm512_cvtps_pd(t0), x0, _CMP_NEQ_OQ);
    const __mmask8 m1 = _mm512_cmp_pd_mask(_mm512_cvtps_pd(t1), x1, _CMP_NEQ_OQ);
    const __mmask16 m = (__mmask16)((unsigned)m0 | ((unsigned)m1 << 8));
    const __m512i t = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_castps_si256(t0)),
                                         _mm256_castps_si256(t1), 1);
    _mm512_storeu_si512((void *)out, _mm512_mask_or_epi32(t, m, t, _mm512_set1_epi32(1)));
}

/* Narrows n float64 elements (bits) to float32 bits in out, rounding to odd, under the kernel's own
 * MXCSR (the caller's given back). */
static void narrow_avx512(const void *src_, size_t n, uint32_t *out) {
    const uint64_t *src = (const uint64_t *)src_;
    const unsigned csr = _mm_getcsr();
    _mm_setcsr(0x7f80u); /* RC = toward zero, every exception masked, FTZ and DAZ off */
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        PF512(src + i, 2);
        narrow16_avx512(src + i, out + i);
    }
    if (i < n) { /* the last 1-15 through a zero-padded buffer: the same instructions */
        uint64_t in[16] = {0};
        uint32_t o[16];
        memcpy(in, src + i, (n - i) * sizeof(uint64_t));
        narrow16_avx512(in, o);
        memcpy(out + i, o, (n - i) * sizeof(uint32_t));
    }
    _mm_setcsr(csr);
}

/* float64 bits -> codes (out_bytes each) for rne, rtz and rna through narrow_avx512 and
 * pp_kernels_avx512.enc32 (kern_shared.h pp_narrow64_run); 0 (nothing written) for stochastic
 * rounding. */
static int narrow64_avx512(const pp_params *pr, const void *src, size_t n, uint32_t *buf,
                          void *dst, int out_bytes, int stream) {
    return pp_narrow64_run(pr, src, n, buf, dst, out_bytes, 8, narrow_avx512, &pp_kernels_avx512, stream);
}

/* int32 -> float32 bits rounded to odd at 24 bits: kern_i32odd.h's pp_i32odd8_rz in 512-bit
 * vectors (the truncating conversion under the kernel's MXCSR, RC = toward zero, widened back
 * exactly by vcvttps2dq; where it differs from x the last bit is set). */
static inline __attribute__((always_inline)) __m512i i32odd16_avx512(__m512i x) {
    const __m512i t = _mm512_castps_si512(_mm512_cvtepi32_ps(x)); /* truncated */
    const __mmask16 inexact = _mm512_cmpneq_epi32_mask(_mm512_cvttps_epi32(_mm512_castsi512_ps(t)), x);
    return _mm512_mask_or_epi32(t, inexact, t, _mm512_set1_epi32(1));
}

/* n int32 -> float32 bits rounded to odd in out, 16 at a time (the last 1-15 by masked loads and
 * stores: lanes outside the mask read and write nothing), under the kernel's own MXCSR (RC =
 * toward zero, every exception masked, FTZ and DAZ off), the caller's given back, flags
 * included. */
static void i32odd_avx512(const void *src_, size_t n, uint32_t *out) {
    const int32_t *src = (const int32_t *)src_;
    const unsigned csr = _mm_getcsr();
    _mm_setcsr(0x7f80u);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        PF512(src + i, 1);
        _mm512_storeu_si512((void *)(out + i), i32odd16_avx512(_mm512_loadu_si512((const void *)(src + i))));
    }
    if (i < n) {
        const __mmask16 m = (__mmask16)((1u << (n - i)) - 1u);
        _mm512_mask_storeu_epi32((void *)(out + i), m,
                                 i32odd16_avx512(_mm512_maskz_loadu_epi32(m, (const void *)(src + i))));
    }
    _mm_setcsr(csr);
}

/* int32 -> bf16 / fp32r codes in one pass: kern_narrow_avx2.h's i32wide_avx2 in 512-bit vectors
 * (see there, and speed.md S30, for why it is exact for every saturation and NaN policy: a finite
 * float32 t with |t| <= 2^31 rounds to a code no special selects). Each vector of 16 is narrowed
 * by i32odd16_avx512 (the instructions of i32odd_avx512, under the same MXCSR, set once per call)
 * and rounded at bit S = 16 (bf16) or 13 (fp32r) by wide16 with PLAIN == PP_FINITE (its integer
 * arithmetic, no special selected), in registers: no L1 buffer, no second pass (before: 256 elements narrowed into
 * a buffer, then the float32 kernel over it). With stream set, the elements before dst's first
 * 64-byte boundary by masked plain stores, then 64-byte streaming stores; the last < 32 elements
 * by masked loads and stores (lanes outside the mask read and write nothing). */
static inline __attribute__((always_inline)) __m512i i32w16_avx512(const wide5_consts *k,
                                                                   __m512i x, const int rnd,
                                                                   const int S) {
    return wide16(k, i32odd16_avx512(x), rnd, S, PP_FINITE);
}

/* Elements [i, i + m), m <= 16, by a masked load and a masked plain store. */
static inline __attribute__((always_inline)) void i32w_part512(const wide5_consts *k,
                                                               const int32_t *src, size_t i,
                                                               size_t m, void *dst, const int rnd,
                                                               const int S) {
    const __mmask16 m16 = (__mmask16)((1u << m) - 1u);
    const __m512i v = i32w16_avx512(k, _mm512_maskz_loadu_epi32(m16, (const void *)(src + i)), rnd, S);
    if (S == 16) _mm512_mask_cvtepi32_storeu_epi16((uint16_t *)dst + i, m16, v);
    else _mm512_mask_storeu_epi32((uint32_t *)dst + i, m16, v);
}

static inline __attribute__((always_inline)) void i32w_loop512(const int32_t *src, size_t n,
                                                               void *dst, const int stream,
                                                               const int rnd, const int S) {
    wide5_consts k = {0}; /* the rounding's constants: PP_FINITE reads no other */
    k.absm = _mm512_set1_epi32(0x7fffffff);
    k.keep = _mm512_set1_epi32((int)~((1u << S) - 1u));
    k.half = _mm512_set1_epi32((int)((1u << (S - 1)) - 1u));
    k.one = _mm512_set1_epi32(1);
    k.tie = _mm512_set1_epi32((int)(1u << (S - 1)));
    uint16_t *d16 = (uint16_t *)dst;
    uint32_t *d32 = (uint32_t *)dst;
    const __m512i ord = _mm512_set_epi64(7, 5, 3, 1, 6, 4, 2, 0); /* the packs' quarters */
    size_t i = 0;
    if (stream) { /* to dst's first 64-byte boundary: < 32 (bf16) or 16 (fp32r) elements */
        const size_t head = pp_head_to(dst, n, S == 16 ? 2 : 4, 64);
        while (i < head) {
            const size_t m = head - i < 16 ? head - i : 16;
            i32w_part512(&k, src, i, m, dst, rnd, S);
            i += m;
        }
    }
    for (; i + 32 <= n; i += 32) {
        PF512(src + i, 2);
        const __m512i v0 = i32w16_avx512(&k, _mm512_loadu_si512((const void *)(src + i)), rnd, S);
        const __m512i v1 = i32w16_avx512(&k, _mm512_loadu_si512((const void *)(src + i + 16)), rnd, S);
        if (S == 16) {
            /* codes <= 0xffff: the unsigned saturating pack is exact; then element order */
            const __m512i h = _mm512_permutexvar_epi64(ord, _mm512_packus_epi32(v0, v1));
            if (stream) _mm512_stream_si512((void *)(d16 + i), h);
            else _mm512_storeu_si512((void *)(d16 + i), h);
        } else if (stream) {
            _mm512_stream_si512((void *)(d32 + i), v0);
            _mm512_stream_si512((void *)(d32 + i + 16), v1);
        } else {
            _mm512_storeu_si512((void *)(d32 + i), v0);
            _mm512_storeu_si512((void *)(d32 + i + 16), v1);
        }
    }
    for (; i < n; i += 16) i32w_part512(&k, src, i, n - i < 16 ? n - i : 16, dst, rnd, S);
}

PP_I32WIDE_ENTRY(i32wide_avx512, i32w_loop512)

/* int32 -> codes for rne, rtz and rna: bf16 and fp32r in one pass (i32wide_avx512), the other
 * formats through i32odd_avx512 and pp_kernels_avx512's float32 kernels (enc32, or with stream
 * enc_stream); 0 (nothing written) for stochastic rounding. */
static int narrow_i32_avx512(const pp_params *pr, const void *src, size_t n, uint32_t *buf,
                             void *dst, int out_bytes, int stream) {
    if (i32wide_avx512(pr, (const int32_t *)src, n, dst, out_bytes, stream)) return 1;
    return pp_narrow64_run(pr, src, n, buf, dst, out_bytes, 4, i32odd_avx512, &pp_kernels_avx512, stream);
}
