/* int32 -> float32 rounded to odd, in 256-bit vectors: included by kern_narrow_avx2.h, whose
 * narrow_i32 runs it, then the set's float32 kernels (kern_shared.h pp_narrow64_run); the AVX-512
 * set has the same in 512-bit vectors (kern_narrow_avx512.h i32odd_avx512). */
#ifndef PP_KERN_I32ODD_H
#define PP_KERN_I32ODD_H

/* Software prefetch of the int32 input this many bytes ahead (T0), 0: none; from the set's
 * prefetch distance (speed.md S23: before, this loop had none). */
#ifndef PP_I32ODD_PREFETCH
#if defined(PP_PREFETCH_AVX512)
#define PP_I32ODD_PREFETCH PP_PREFETCH_AVX512
#elif defined(PP_PREFETCH_AVX2)
#define PP_I32ODD_PREFETCH PP_PREFETCH_AVX2
#else
#define PP_I32ODD_PREFETCH 0
#endif
#endif

/* int32 -> float32 bits rounded to odd at 24 significant bits (at least p + 2 for every format,
 * all that the double-rounding argument of speed.md S18 asks), by the conversion instruction
 * under RC = toward zero (the kernel's own MXCSR, pp_i32odd): t = trunc(x) in float32 (an int32
 * converts to a normal float32 or +0, so FTZ and DAZ cannot act), widened back by the truncating
 * conversion (exact: |t| <= |x|, t <= 2^31 - 128 for x > 0, and -2^31 = INT32_MIN is
 * representable) and compared with x; where they differ the last bit is set. Zero gives +0, as
 * the reference does. Three instructions per 8 elements; the integer version before (issue 28,
 * the shift found from the conversion's exponent) took fifteen, and bound the AVX2 int32 row
 * (speed.md S23). */
static inline __attribute__((always_inline)) __m256i pp_i32odd8_rz(__m256i x) {
    const __m256 t = _mm256_cvtepi32_ps(x); /* truncated: MXCSR.RC = toward zero */
    const __m256i exact = _mm256_cmpeq_epi32(_mm256_cvttps_epi32(t), x);
    return _mm256_or_si256(_mm256_castps_si256(t), _mm256_andnot_si256(exact, _mm256_set1_epi32(1)));
}

/* n int32 -> float32 bits rounded to odd in out, under the kernel's own MXCSR (RC = toward zero,
 * every exception masked, FTZ and DAZ off), the caller's given back, flags included. */
static void pp_i32odd(const void *src_, size_t n, uint32_t *out) {
    const int32_t *src = (const int32_t *)src_;
    const unsigned csr = _mm_getcsr();
    _mm_setcsr(0x7f80u);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
#if PP_I32ODD_PREFETCH > 0
        /* the input this far ahead, one cache line per step (the narrowing reads the source) */
        _mm_prefetch((const char *)(src + i) + PP_I32ODD_PREFETCH, _MM_HINT_T0);
#endif
        _mm256_storeu_si256((__m256i *)(void *)(out + i),
                            pp_i32odd8_rz(_mm256_loadu_si256((const __m256i *)(const void *)(src + i))));
        _mm256_storeu_si256((__m256i *)(void *)(out + i + 8),
                            pp_i32odd8_rz(_mm256_loadu_si256((const __m256i *)(const void *)(src + i + 8))));
    }
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_si256((__m256i *)(void *)(out + i),
                            pp_i32odd8_rz(_mm256_loadu_si256((const __m256i *)(const void *)(src + i))));
    if (i < n) { /* the last 1-7 through a zero-padded buffer: the same instructions */
        int32_t in[8] = {0};
        uint32_t o[8];
        memcpy(in, src + i, (n - i) * sizeof(int32_t));
        _mm256_storeu_si256((__m256i *)(void *)o, pp_i32odd8_rz(_mm256_loadu_si256((const __m256i *)(void *)in)));
        memcpy(out + i, o, (n - i) * sizeof(uint32_t));
    }
    _mm_setcsr(csr);
}

#endif
