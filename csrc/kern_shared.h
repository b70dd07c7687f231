/* The parts of the SIMD sets' kernels that are not SIMD: written once, included by kern_avx2.c and
 * kern_avx512.c (each compiles them for its own target). Nothing here depends on the vector width.
 *
 * - pp_head_to: the elements before dst's first V-byte boundary (streaming stores need it).
 * - pp_wide1 / pp_wide_scalar / PP_WIDE_ENTRY: float32 -> fp32r or bf16 by integer rounding, one
 *   element (the heads and tails of kern_wide_avx2.h's and kern_wide_avx512.h's loops), and the
 *   entry point that checks the case and calls the set's loop with constant rounding, S, PLAIN and
 *   stream (kern_wide_avx2.h has the arithmetic and why it is exact).
 * - pp_narrow64_run: the float64 (and int32) driver (kern_narrow_avx2.h has the proof): each
 *   step of PP_NARROW_STEP elements narrowed to float32 rounded to odd, then the set's float32
 *   kernel. */
#ifndef PP_KERN_SHARED_H
#define PP_KERN_SHARED_H

#define PP_KFN static inline __attribute__((always_inline))

/* Elements of ob bytes before dst's first V-byte boundary (V a power of two; dst aligned to ob),
 * at most n. */
PP_KFN size_t pp_head_to(const void *dst, size_t n, size_t ob, unsigned V) {
    const size_t head = (size_t)(-(uintptr_t)dst & (V - 1u)) / ob;
    return head < n ? head : n;
}

/* ---- float32 -> fp32r (S = 13) / bf16 (S = 16) by integer rounding, one element ---- */
PP_KFN uint32_t pp_wide1(const pp_params *pr, uint32_t u, const int rnd, const int S) {
    const uint32_t a = u & 0x7fffffffu, sg0 = u & 0x80000000u;
    const uint32_t sg = S == 16 ? sg0 >> 16 : sg0;
    const uint32_t h = 1u << (S - 1);
    uint32_t r = rnd == PP_RNE ? a + (h - 1u) + ((a >> S) & 1u) : rnd == PP_RNA ? a + h : a;
    r = S == 16 ? r >> 16 : r & ~((1u << S) - 1u);
    const uint32_t maxc = S == 16 ? pr->maxc : pr->maxc << S;
    uint32_t v = r > maxc && a <= 0x7f800000u ? pr->ovf[0] | (sg & pr->dovf) : r | sg;
    v = a == 0x7f800000u ? pr->inf[0] | (sg & pr->dinf) : v;
    return a > 0x7f800000u ? pr->nan[0] | (sg & pr->dnan) : v;
}

/* Elements [i, n) of src one at a time into dst (16-bit codes for S = 16, else 32-bit). */
PP_KFN void pp_wide_scalar(const pp_params *pr, const uint32_t *src, size_t i, size_t n,
                           void *dst, const int rnd, const int S) {
    for (; i < n; i++) {
        if (S == 16) ((uint16_t *)dst)[i] = (uint16_t)pp_wide1(pr, src[i], rnd, S);
        else ((uint32_t *)dst)[i] = pp_wide1(pr, src[i], rnd, S);
    }
}

/* Defines `static size_t NAME(pr, src, n, dst, out_bytes, stream)`: n when it encoded the n
 * elements (fp32r or bf16 under rne, rtz or rna, dst aligned to its elements), 0 otherwise (then
 * nothing was written). PLAIN: the policy gives overflow and inf as inf with the sign (no
 * saturation), which every overflowing sum already is, so the loop selects only NaNs. LOOP is
 * the set's loop, LOOP(pr, src, n, dst, stream, rnd, S, PLAIN), called with every argument after
 * dst a constant. HW(S, PL) is nonzero where, under rne, the statement HW_CALL() encodes the call
 * instead (kern_wide_avx512.h's vcvtneps2bf16); PP_WIDE_NO_HW: never. */
#define PP_WIDE_LOOP_(LOOP, R, S, PL)                                                              \
    do {                                                                                           \
        if (stream) LOOP(pr, src, n, dst, 1, R, S, PL);                                            \
        else LOOP(pr, src, n, dst, 0, R, S, PL);                                                   \
    } while (0)
#define PP_WIDE_ROUNDINGS_(LOOP, HW, S, PL)                                                        \
    do {                                                                                           \
        if (pr->rounding == PP_RNE && HW(S, PL)) HW##_CALL();                                      \
        else if (pr->rounding == PP_RNE) PP_WIDE_LOOP_(LOOP, PP_RNE, S, PL);                       \
        else if (pr->rounding == PP_RNA) PP_WIDE_LOOP_(LOOP, PP_RNA, S, PL);                       \
        else PP_WIDE_LOOP_(LOOP, PP_RTZ, S, PL);                                                   \
    } while (0)
#define PP_WIDE_ROUNDINGS(LOOP, HW, S)                                                             \
    do {                                                                                           \
        const uint32_t infc_ = S == 16 ? 0x7f80u : 0x7f800000u;                                    \
        const uint32_t sgm_ = S == 16 ? 0x8000u : 0x80000000u;                                     \
        if (pr->ovf[0] == infc_ && pr->inf[0] == infc_ && pr->dovf == sgm_ && pr->dinf == sgm_)    \
            PP_WIDE_ROUNDINGS_(LOOP, HW, S, 1);                                                    \
        else PP_WIDE_ROUNDINGS_(LOOP, HW, S, 0);                                                   \
    } while (0)
#define PP_WIDE_ENTRY(NAME, LOOP, HW)                                                              \
    static size_t NAME(const pp_params *pr, const uint32_t *src, size_t n, void *dst,              \
                       int out_bytes, const int stream) {                                          \
        if (pr->rounding != PP_RNE && pr->rounding != PP_RNA && pr->rounding != PP_RTZ) return 0;  \
        if (pr->emin != -126 || pr->bias != 127) return 0;                                         \
        if ((uintptr_t)dst % (unsigned)out_bytes) return 0; /* not aligned to its elements */      \
        if (out_bytes == 4 && pr->shift == 13 && pr->p == 10 && pr->sign_pos == 31)                \
            PP_WIDE_ROUNDINGS(LOOP, HW, 13);                                                       \
        else if (out_bytes == 2 && pr->shift == 0 && pr->p == 7 && pr->sign_pos == 15)             \
            PP_WIDE_ROUNDINGS(LOOP, HW, 16);                                                       \
        else return 0;                                                                             \
        return n;                                                                                  \
    }
#define PP_WIDE_NO_HW(S, PL) 0
#define PP_WIDE_NO_HW_CALL() ((void)0)

/* wide8 / wide16's PLAIN argument for finite inputs only (the one-pass int32 kernels): the
 * rounded code with its sign, no special selected at all. */
#define PP_FINITE 2

/* int32 -> bf16 / fp32r in one pass (kern_narrow_avx2.h i32wide_avx2, kern_narrow_avx512.h
 * i32wide_avx512): NAME returns 1 when it encoded the n elements, 0 otherwise (nothing written).
 * It takes rne / rtz / rna, bf16 or fp32r with dst aligned to its elements (PP_WIDE_ENTRY's
 * layout checks), and a largest finite code at or above 2^31's, which is the premise of the
 * kernels (a narrowed int32 never needs a special code). LOOP(src, n, dst, stream, rnd, S) is the
 * set's loop, called with constant stream, rounding and S = 16 (bf16) or 13 (fp32r) under the
 * kernels' MXCSR (RC = toward zero, every exception masked, FTZ and DAZ off), the caller's given
 * back, flags included. */
#define PP_I32W_STREAMS_(LOOP, R, S)                                                               \
    do {                                                                                           \
        if (stream) LOOP(src, n, dst, 1, R, S);                                                    \
        else LOOP(src, n, dst, 0, R, S);                                                           \
    } while (0)
#define PP_I32W_ROUNDINGS_(LOOP, S)                                                                \
    do {                                                                                           \
        if (pr->rounding == PP_RNE) PP_I32W_STREAMS_(LOOP, PP_RNE, S);                             \
        else if (pr->rounding == PP_RNA) PP_I32W_STREAMS_(LOOP, PP_RNA, S);                        \
        else PP_I32W_STREAMS_(LOOP, PP_RTZ, S);                                                    \
    } while (0)
#define PP_I32WIDE_ENTRY(NAME, LOOP)                                                               \
    static int NAME(const pp_params *pr, const int32_t *src, size_t n, void *dst,                  \
                    int out_bytes, const int stream) {                                             \
        if (pr->rounding != PP_RNE && pr->rounding != PP_RNA && pr->rounding != PP_RTZ) return 0;  \
        if (pr->emin != -126 || pr->bias != 127) return 0;                                         \
        if ((uintptr_t)dst % (unsigned)out_bytes) return 0;                                        \
        const int fp32r = out_bytes == 4 && pr->shift == 13 && pr->p == 10 && pr->sign_pos == 31;  \
        const int bf16 = out_bytes == 2 && pr->shift == 0 && pr->p == 7 && pr->sign_pos == 15;     \
        if (!fp32r && !bf16) return 0;                                                             \
        /* 2^31 rounds to at most its own code (0x4f00 in bf16, 0x4f000000 >> 13 in fp32r) */      \
        if (pr->maxc < (bf16 ? 0x4f00u : 0x4f000000u >> 13)) return 0;                             \
        const unsigned csr = _mm_getcsr();                                                         \
        _mm_setcsr(0x7f80u);                                                                       \
        if (bf16) PP_I32W_ROUNDINGS_(LOOP, 16);                                                    \
        else PP_I32W_ROUNDINGS_(LOOP, 13);                                                         \
        _mm_setcsr(csr);                                                                           \
        return 1;                                                                                  \
    }

/* ---- float64 sources under rne / rtz / rna ---- */
/* Elements per step: narrowed into buf, then encoded by the set's float32 kernel. Short steps
 * keep the input streaming while the float32 kernel runs (a whole 2048-element block at a time
 * left the memory idle during the second pass: speed.md S18 has the measurement). */
#ifndef PP_NARROW_STEP
#define PP_NARROW_STEP 256
#endif

/* float64 bits (src_bytes 8) or int32 (4) -> codes (out_bytes each): each step narrowed to float32
 * rounded to odd in buf (room for PP_NARROW_STEP, or PP_NARROW_STREAM_STEP with stream) by narrow,
 * then set->enc32 with has_sub as for a float32 source.
 * stream != 0 (large outputs, convert.c stream_direct): the set's enc_stream instead, streaming
 * its codes to dst (no block buffer, no second pass; the caller issues the sfence), the first
 * step up to dst's first 64-byte boundary so that the others start on one; 0 (nothing written)
 * when enc_stream has no kernel for the case (it says so on the first step; a later step it
 * declined, which the same parameters do not do, would take enc32).
 * Returns 1, or 0 (nothing written) for stochastic rounding, which must see the float64 value
 * (speed.md S18). */
PP_KFN int pp_narrow64_run(const pp_params *pr, const void *src, size_t n, uint32_t *buf,
                           void *dst, int out_bytes, size_t src_bytes,
                           void (*narrow)(const void *, size_t, uint32_t *),
                           const pp_kernel_set *set, int stream) {
    if (pr->rounding != PP_RNE && pr->rounding != PP_RTZ && pr->rounding != PP_RNA) return 0;
    pp_params pr32 = *pr;
    pr32.has_sub = pr->emin > -126; /* bf16, fp32r: no float32 value is below their min normal */
    const pp_enc_kernel enc = set->enc32[out_bytes == 1 ? 0 : out_bytes == 2 ? 1 : 2];
    if (stream) {
        const size_t ob = (size_t)out_bytes;
        size_t m = (size_t)(-(uintptr_t)dst & 63u) / ob; /* < 64: the first step's length */
        if (m == 0 || m > n) m = n < PP_NARROW_STREAM_STEP ? n : PP_NARROW_STREAM_STEP;
        for (size_t k = 0; k < n;) {
            narrow((const char *)src + k * src_bytes, m, buf);
            char *d = (char *)dst + k * ob;
            if (!set->enc_stream(&pr32, buf, m, d, out_bytes)) {
                if (k == 0) return 0;
                enc(&pr32, buf, m, NULL, d);
            }
            k += m;
            m = n - k < PP_NARROW_STREAM_STEP ? n - k : PP_NARROW_STREAM_STEP;
        }
        return 1;
    }
    for (size_t k = 0; k < n; k += PP_NARROW_STEP) {
        const size_t m = n - k < PP_NARROW_STEP ? n - k : PP_NARROW_STEP;
        narrow((const char *)src + k * src_bytes, m, buf);
        enc(&pr32, buf, m, NULL, (char *)dst + k * (size_t)out_bytes);
    }
    return 1;
}

#endif
