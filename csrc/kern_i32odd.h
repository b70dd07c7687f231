/* int32 -> float32 rounded to odd, in 256-bit vectors (AVX2 instructions, which the AVX2 and the
 * AVX-512 sets both have, and which the emulated AVX-512 build runs natively): included by
 * kern_narrow_avx2.h and kern_narrow_avx512.h; their narrow_i32 run it, then the set's float32
 * kernels (kern_shared.h pp_narrow64_run). */
#ifndef PP_KERN_I32ODD_H
#define PP_KERN_I32ODD_H

/* Software prefetch of the int32 input this many bytes ahead (T0), 0: none; from the set's
 * prefetch distance (speed.md §23: before, this loop had none). */
#ifndef PP_I32ODD_PREFETCH
#if defined(PP_PREFETCH_AVX512)
#define PP_I32ODD_PREFETCH PP_PREFETCH_AVX512
#elif defined(PP_PREFETCH_AVX2)
#define PP_I32ODD_PREFETCH PP_PREFETCH_AVX2
#else
#define PP_I32ODD_PREFETCH 0
#endif
#endif

/* int32 -> float32 bits rounded to odd at 23 or 24 significant bits (either is at least p + 2 for
 * every format, all that the double-rounding argument of speed.md §18 asks), in integer
 * arithmetic, so no MXCSR field can change a bit: E, the exponent of the conversion's float32
 * (under any rounding floor(log2 |x|), or one more where it rounded up to a power of two), gives
 * the shift s = max(E - 23, 0); K = |x| >> s (logical: |INT32_MIN| is 2^31) has at most 24 bits,
 * K | (K << s != |x|) is |x| truncated with the sticky bit ORed into its last bit, converted
 * exactly, its exponent raised by s (K >= 1 for x != 0: a normal float32 stays one) and x's sign
 * put back. Zero gives +0, as the reference does. */
static inline __attribute__((always_inline)) __m256i pp_i32odd8(__m256i x) {
    const __m256i a = _mm256_abs_epi32(x);
    const __m256i e = _mm256_and_si256(_mm256_srli_epi32(_mm256_castps_si256(_mm256_cvtepi32_ps(x)), 23),
                                       _mm256_set1_epi32(0xff));
    const __m256i s = _mm256_max_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(127 + 23)),
                                       _mm256_setzero_si256());
    const __m256i k = _mm256_srlv_epi32(a, s);
    const __m256i exact = _mm256_cmpeq_epi32(_mm256_sllv_epi32(k, s), a);
    const __m256i v = _mm256_or_si256(k, _mm256_andnot_si256(exact, _mm256_set1_epi32(1)));
    const __m256i f = _mm256_add_epi32(_mm256_castps_si256(_mm256_cvtepi32_ps(v)), _mm256_slli_epi32(s, 23));
    return _mm256_or_si256(f, _mm256_and_si256(x, _mm256_set1_epi32((int)0x80000000u)));
}

/* The same by the conversion instruction under RC = toward zero (the caller's MXCSR set aside):
 * t = trunc(x) in float32 (24 bits; an int32 converts to a normal float32 or +0, so FTZ and DAZ
 * cannot act), widened back by the truncating conversion (exact: |t| <= |x| <= 2^31, and
 * -2^31 = INT32_MIN is representable) and compared with x; where they differ the last bit is set:
 * x rounded to odd at 24 bits, the value pp_i32odd8 gives at 23 or 24 (both >= p + 2; speed.md
 * §23 has why either is the same code after the float32 kernel). Five instructions per 8
 * elements against pp_i32odd8's fifteen: the AVX2 int32 row was bound by them (speed.md §23). */
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
