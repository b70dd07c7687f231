/* Stochastic rounding of float32 bits to 8-, 16- and 32-bit codes with AVX-512 F/BW/VL/DQ, the
 * words generated in registers (SplitMix64, sm_mix512 in kern_avx512.c) or loaded from the caller's
 * random_bits. Included by kern_avx512.c only; the generic lane PP_LANE (kern_body.h) is the
 * definition this follows, and tests/fastpaths proves it equal to the reference converter.
 *
 * With a = |x| (bits), s0 = 23 - p and R the element's word (CAST_SEMANTICS.md §2: up iff
 * R < floor(f * 2^32), f the dropped fraction of a quantum):
 *
 *   normal results   code = (a + rebias + 2^s0 - 1 - (R >> (32 - s0))) >> s0, as the AVX2 set
 *                    (kern_sr_avx2.h; speed.md S27, S30): with d the s0 dropped bits, floor(f 2^32)
 *                    = d 2^(32 - s0), so R < floor(f 2^32) iff (R >> (32 - s0)) < d iff
 *                    d + 2^s0 - 1 - (R >> (32 - s0)) carries into bit s0 (the rebias is a multiple
 *                    of 2^s0, and 0 <= a + rebias < a + rebias + 2^s0 - 1 < 2^32 for every a
 *                    at or above the format's min normal, NaNs included; lanes below it take
 *                    the subnormal path, which replaces their code)
 *   subnormal ones   (formats whose min normal is above float32's: fp16, the fp8s) by the FPU,
 *                    on those lanes only (masked), only for groups of 16 that have such a lane:
 *                    a branch per group, or (8- and 16-bit codes under the min-trick tail) no
 *                    branch in the main loop and the groups redone afterwards (sr_fixup):
 *                    y   = a * 2^(p - emin)            exact: a power of two up; y < 2^p, and
 *                                                      normal for every normal a
 *                    K   = cvtt(y)                     truncation: the kept quanta
 *                    fr  = y - trunc(y)  (vreduceps)   exact: the bits of y below its units
 *                    thr = cvtt(fr * 2^32)             fr * 2^32 exact (power of two, < 2^32),
 *                                                      truncation = floor
 *                    code = K + (R < thr)              (K + 1 = 2^p is the min normal's code;
 *                                                      a compare on those lanes only)
 *   Every step is exact or truncates by its encoding, so MXCSR's rounding mode cannot matter; all
 *   are {sae} (no exception raised or flagged whatever MXCSR's masks). DAZ / FTZ can only zero a
 *   float32 subnormal a or a subnormal y; both mean a < 2^-126, whose exact thr is
 *   floor(a 2^(p - emin + 32)) < 2^(-126 + 94) rounds down to 0 (the kernel is used for
 *   p - emin <= 94; fp16's is 24) and K = 0, which a zero gives.
 *
 * Then the tail of PP_LANE: a code above max is the overflow result, an inf input the inf result, a
 * NaN the NaN result, each with the sign where the policy keeps it. When overflow and inf give the
 * same result, either max or the code after it, with the sign (saturate=True, or an inf / the NaN
 * code after max without saturation, ml_dtypes signs) this is min(code, ovf); otherwise the three
 * are selected by masks. NaN's sign bit comes from pr->dnan either way (nvidia drops it).
 *
 * float64 sources: the same in 64-bit lanes, two vectors of 8 per 16 elements: s0 = 52 - p >= 30,
 * thr = the upper 32 bits of a << (64 - s0) (the top 32 of the dropped bits: floor(f 2^32)),
 * gathered with the clamped codes into 32-bit lanes and compared with the words there (sr16d), the
 * subnormal path in double (y = a 2^(p - emin), cvtt to 64-bit, vreduce;
 * the same argument: a float64 subnormal a < 2^-1022 gives thr = floor(a 2^(p - emin + 32)) = 0
 * and K = 0 for p - emin <= 990; bf16's p - emin is 133), then codes clamped to
 * max + 1 (or to the min-trick result), narrowed to 32-bit lanes, and the float32 tail. */

typedef struct {
    __m128i cs0, cthr, csh;
    __m512i absm, one, rebias1, minnorm, scale, two32, inf, maxc, ovfc, ovf0, inf0, nan0;
    __m512i dovf, dinf, dnan, sbit;
    /* float64 sources */
    __m128i ds0, dthr;
    __m512i dabsm, drebias, dminnorm, dscale, dtwo32, dinf64, dclamp, dclamp32;
} sr_consts;

/* The specials of a policy that selects them one by one (no min shortcut): codes past max become
 * the overflow code, inf (ki) and NaN (kn) inputs theirs; *dm gets the sign bits each keeps. */
static inline __attribute__((always_inline)) __m512i sr_specials(const sr_consts *k, __m512i code,
                                                                 __mmask16 ki, __mmask16 kn,
                                                                 int wide, __m512i *dm) {
    const __mmask16 ko = _mm512_cmpgt_epu32_mask(code, k->maxc);
    if (wide) code = _mm512_sll_epi32(code, k->csh);
    code = _mm512_mask_mov_epi32(code, ko, k->ovf0);
    code = _mm512_mask_mov_epi32(code, ki, k->inf0);
    code = _mm512_mask_mov_epi32(code, kn, k->nan0);
    *dm = _mm512_mask_mov_epi32(*dm, ko & (__mmask16)~kn, k->dovf);
    *dm = _mm512_mask_mov_epi32(*dm, ki, k->dinf);
    return code;
}

/* ksign: when not NULL (and mint), the code is returned without its sign and without the NaN
 * select: ksign[0] gets the lanes whose sign bit is to be set, ksign[1] the NaN lanes (the caller
 * does both after packing, one op each per vector of packed codes). sub == 2: the subnormal path
 * is not taken, ksign[2] gets the lanes that need it (the caller redoes the group). */
static inline __attribute__((always_inline)) __m512i sr16(const sr_consts *k, __m512i u, __m512i r,
                                                          const int sub, const int mint,
                                                          const int wide, __mmask16 *ksign) {
    const __m512i a = _mm512_and_si512(u, k->absm);
    /* normal results, rounded up where R < floor(f 2^32) (speed.md S30): ((a + rebias) + (2^s0 -
     * 1 - (R >> (32 - s0)))) >> s0 */
    __m512i code = _mm512_srl_epi32(_mm512_sub_epi32(_mm512_add_epi32(a, k->rebias1),
                                                     _mm512_srl_epi32(r, k->cthr)), k->cs0);
    if (sub == 2) {
        /* deferred: the caller redoes groups with such a lane (sr_fixup), so no branch here */
        ksign[2] = _mm512_cmplt_epu32_mask(a, k->minnorm);
    } else if (sub) {
        const int rz = _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC;
        const __mmask16 ks = _mm512_cmplt_epu32_mask(a, k->minnorm);
        if (ks) { /* skipped for groups without such a lane (rare in most data) */
        const __m512 y = _mm512_maskz_mul_round_ps(ks, _mm512_castsi512_ps(a), _mm512_castsi512_ps(k->scale), rz);
        code = _mm512_mask_cvtt_roundps_epu32(code, ks, y, _MM_FROUND_NO_EXC);
        const __m512 fr = _mm512_maskz_reduce_round_ps(ks, y, 0x0B, _MM_FROUND_NO_EXC); /* y - trunc(y) */
        const __m512 f32 = _mm512_maskz_mul_round_ps(ks, fr, _mm512_castsi512_ps(k->two32), rz);
        const __m512i thr = _mm512_mask_cvtt_roundps_epu32(_mm512_setzero_si512(), ks, f32, _MM_FROUND_NO_EXC);
        code = _mm512_mask_add_epi32(code, ks & _mm512_cmplt_epu32_mask(r, thr), code, k->one);
        }
    }
    const __mmask16 kn = _mm512_cmpgt_epu32_mask(a, k->inf);
    __m512i dm = k->sbit;
    if (!(mint & 2)) dm = _mm512_mask_mov_epi32(dm, kn, k->dnan); /* mint & 2: NaN signed */
    if (mint) {
        code = _mm512_min_epu32(code, k->ovfc); /* max, or the code after it (inf / NaN) */
        if (ksign) {
            ksign[0] = mint & 2 ? _mm512_movepi32_mask(u) : _mm512_movepi32_mask(u) & (__mmask16)~kn;
            ksign[1] = kn;
            return code;
        }
        if (wide) code = _mm512_sll_epi32(code, k->csh);
        code = _mm512_mask_mov_epi32(code, kn, k->nan0);
    } else {
        code = sr_specials(k, code, _mm512_cmpeq_epi32_mask(a, k->inf), kn, wide, &dm);
    }
    return _mm512_mask_or_epi32(code, _mm512_movepi32_mask(u), code, dm); /* code | (sign ? dm : 0) */
}

/* 16 float64 elements (u0: the first 8, u1: the next 8) with their words r: the codes in 32-bit
 * lanes, complete (specials and signs), as sr16 gives for float32. Each half's kept quanta are
 * clamped in 64 bits (min(code, clamp) < 2^32) and its thresholds left in the upper halves of the
 * 64-bit lanes (the dropped bits top-aligned: the upper 32 are floor(f 2^32)); one two-source
 * permute each gathers the 16 codes (lower halves) and the 16 thresholds (upper halves) into
 * 32-bit lanes, where the comparison with the words, the increment and the clamp run once per 16:
 * min(min(code, clamp) + up, clamp) = min(code + up, clamp) for every code and up in {0, 1}. */
static inline __attribute__((always_inline)) __m512i sr16d(const sr_consts *k, __m512i u0, __m512i u1,
                                                           __m512i r, const int mint,
                                                           const int wide, __mmask16 *ksign) {
    const int rz = _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC;
    __m512i c64[2], t64[2];
    __mmask8 kn8[2], ki8[2], ks8[2];
    for (int h = 0; h < 2; h++) {
        const __m512i u = h ? u1 : u0;
        const __m512i a = _mm512_and_si512(u, k->dabsm);
        __m512i code = _mm512_srl_epi64(_mm512_add_epi64(a, k->drebias), k->ds0);
        __m512i thr = _mm512_sll_epi64(a, k->dthr); /* floor(f 2^32) in the upper half */
        const __mmask8 ks = _mm512_cmplt_epu64_mask(a, k->dminnorm);
        if (ks) { /* skipped for groups without such a lane */
            const __m512d y = _mm512_maskz_mul_round_pd(ks, _mm512_castsi512_pd(a), _mm512_castsi512_pd(k->dscale), rz);
            code = _mm512_mask_cvtt_roundpd_epu64(code, ks, y, _MM_FROUND_NO_EXC);
            const __m512d fr = _mm512_maskz_reduce_round_pd(ks, y, 0x0B, _MM_FROUND_NO_EXC); /* y - trunc(y) */
            const __m512d f32 = _mm512_maskz_mul_round_pd(ks, fr, _mm512_castsi512_pd(k->dtwo32), rz);
            const __m512i t = _mm512_mask_cvtt_roundpd_epu64(_mm512_setzero_si512(), ks, f32, _MM_FROUND_NO_EXC);
            thr = _mm512_mask_mov_epi64(thr, ks, _mm512_slli_epi64(t, 32)); /* into the upper half */
        }
        c64[h] = _mm512_min_epu64(code, k->dclamp); /* fits 32 bits; max + 1 still says overflow */
        t64[h] = thr;
        kn8[h] = _mm512_cmpgt_epu64_mask(a, k->dinf64);
        ki8[h] = _mm512_cmpeq_epi64_mask(a, k->dinf64);
        ks8[h] = _mm512_movepi64_mask(u); /* the sign bits */
    }
    const __m512i lo = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i hi = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    const __m512i thr32 = _mm512_permutex2var_epi32(t64[0], hi, t64[1]);
    __m512i code = _mm512_permutex2var_epi32(c64[0], lo, c64[1]);
    code = _mm512_mask_add_epi32(code, _mm512_cmplt_epu32_mask(r, thr32), code, k->one);
    code = _mm512_min_epu32(code, k->dclamp32);
    const __mmask16 kn = _mm512_kunpackb(kn8[1], kn8[0]), ksg = _mm512_kunpackb(ks8[1], ks8[0]);
    __m512i dm = k->sbit;
    if (!(mint & 2)) dm = _mm512_mask_mov_epi32(dm, kn, k->dnan); /* mint & 2: NaN signed */
    if (mint) {
        /* already min(code, ovf) */
        if (ksign) {
            ksign[0] = mint & 2 ? ksg : ksg & (__mmask16)~kn;
            ksign[1] = kn;
            return code;
        }
        if (wide) code = _mm512_sll_epi32(code, k->csh);
        code = _mm512_mask_mov_epi32(code, kn, k->nan0);
    } else {
        code = sr_specials(k, code, _mm512_kunpackb(ki8[1], ki8[0]), kn, wide, &dm);
    }
    return _mm512_mask_or_epi32(code, ksg, code, dm); /* code | (sign ? dm : 0) */
}

/* The words of the next 16 elements: the caller's, or the generator's (state advanced). */
static inline __attribute__((always_inline)) __m512i sr_words16(const uint32_t *rnd, size_t i,
                                                                __m512i *st) {
    if (rnd) return _mm512_loadu_si512((const void *)(rnd + i));
    const __m512i z = sm_mix512(*st);
    *st = _mm512_add_epi64(*st, sm_step512());
    return z;
}

/* 16 elements from element i of src (float32 or float64 bits), words r: their codes. */
static inline __attribute__((always_inline)) __m512i sr_group(const sr_consts *k, const void *src,
                                                              size_t i, __m512i r, const int f64,
                                                              const int sub, const int mint,
                                                              const int wide, __mmask16 *ksign) {
    if (f64) {
        const uint64_t *s = (const uint64_t *)src + i;
        return sr16d(k, _mm512_loadu_si512((const void *)s), _mm512_loadu_si512((const void *)(s + 8)),
                     r, mint, wide, ksign);
    }
    return sr16(k, _mm512_loadu_si512((const void *)((const uint32_t *)src + i)), r, sub, mint, wide,
                ksign);
}

/* Groups (16 float32 elements from offset list[j], an even offset) whose subnormal lanes the
 * main loop deferred: computed again completely, their codes stored over the main loop's. The
 * words are the same: the caller's, or the generator's state at element 0 advanced by list[j] / 2
 * pairs. A list of offsets instead of a branch per group: in data where such groups are neither
 * rare nor common (normal values x 4 into fp8e4: ~5 %) the branch mispredicts (measured: 13 %
 * slower from DRAM than the same data without such values). */
static inline __attribute__((always_inline)) void sr_fixup(const sr_consts *k, const uint32_t *src,
                                                           const uint32_t *rnd, __m512i st0,
                                                           void *dst, const int ob, const int mint,
                                                           const size_t *list, size_t cnt) {
    for (size_t j = 0; j < cnt; j++) {
        const size_t o = list[j];
        const __m512i r = rnd ? _mm512_loadu_si512((const void *)(rnd + o))
                              : sm_mix512(_mm512_add_epi64(
                                    st0, _mm512_set1_epi64((long long)((uint64_t)(o >> 1) * PP_SM_GAMMA))));
        const __m512i c = sr16(k, _mm512_loadu_si512((const void *)(src + o)), r, 1, mint, 0, NULL);
        if (ob == 1) _mm_storeu_si128((__m128i *)(void *)((uint8_t *)dst + o), _mm512_cvtepi32_epi8(c));
        else _mm256_storeu_si256((__m256i *)(void *)((uint16_t *)dst + o), _mm512_cvtepi32_epi16(c));
    }
}

/* stream (32-bit codes only; dst 64-byte aligned): a main loop of non-temporal stores */
static inline __attribute__((always_inline)) void sr_loop(const sr_consts *k, const void *src,
                                                          size_t n, const uint32_t *rnd, __m512i st,
                                                          void *dst, const int ob, const int f64,
                                                          const int sub, const int mint,
                                                          const int stream) {
    const int wide = ob == 4;
    /* float32 sources with a subnormal path: deferred to sr_fixup (8- and 16-bit codes) */
    const int defer = !f64 && sub && mint && ob != 4;
    const int msub = defer ? 2 : sub;
    const __m512i st0 = st;
    size_t list[128], cnt = 0;
    /* the input (and the given words) of elements [I, I + CNT) PP_PREFETCH_AVX512 bytes ahead */
#define SR_PREFETCH(I, CNT)                                                                        \
    do {                                                                                           \
        PF512((const char *)src + (I) * (f64 ? 8u : 4u), (CNT) * (f64 ? 8 : 4) / 64);              \
        if (rnd) PF512(rnd + (I), (CNT) * 4 / 64);                                                 \
    } while (0)
#define PP_SR_NOTE(S, OFF)                                                                         \
    do {                                                                                           \
        if (defer) {                                                                               \
            list[cnt] = (OFF);                                                                     \
            cnt += (S)[2] != 0;                                                                    \
        }                                                                                          \
    } while (0)
    size_t i = 0;
    if (ob == 1) {
        /* group by group (short live ranges); codes <= 0xff: the saturating packs keep them. With
         * mint the codes come without signs (<= 0x7f) and the sign bytes are set after packing. */
        const __m512i ord = _mm512_set_epi32(15, 11, 7, 3, 14, 10, 6, 2, 13, 9, 5, 1, 12, 8, 4, 0);
        const __m512i sb8 = _mm512_set1_epi8((char)0x80);
        const __m512i nan8 = _mm512_set1_epi8((char)_mm_cvtsi128_si32(_mm512_castsi512_si128(k->nan0)));
        for (; i + 64 <= n; i += 64) {
            SR_PREFETCH(i, 64);
            __mmask16 s0[3] = {0, 0, 0}, s1[3] = {0, 0, 0}, s2[3] = {0, 0, 0}, s3[3] = {0, 0, 0};
            const __m512i c0 = sr_group(k, src, i, sr_words16(rnd, i, &st), f64, msub, mint, 0, s0);
            const __m512i c1 = sr_group(k, src, i + 16, sr_words16(rnd, i + 16, &st), f64, msub, mint, 0, s1);
            const __m512i w01 = _mm512_packus_epi32(c0, c1);
            const __m512i c2 = sr_group(k, src, i + 32, sr_words16(rnd, i + 32, &st), f64, msub, mint, 0, s2);
            const __m512i c3 = sr_group(k, src, i + 48, sr_words16(rnd, i + 48, &st), f64, msub, mint, 0, s3);
            const __m512i w23 = _mm512_packus_epi32(c2, c3);
            __m512i b = _mm512_permutexvar_epi32(ord, _mm512_packus_epi16(w01, w23));
            if (mint) {
                const __mmask64 kn64 = _mm512_kunpackd(_mm512_kunpackw(s3[1], s2[1]), _mm512_kunpackw(s1[1], s0[1]));
                const __mmask64 ks64 = _mm512_kunpackd(_mm512_kunpackw(s3[0], s2[0]), _mm512_kunpackw(s1[0], s0[0]));
                b = _mm512_mask_mov_epi8(b, kn64, nan8);
                b = _mm512_mask_add_epi8(b, ks64, b, sb8); /* bit 7 was clear: add = or */
            }
            _mm512_storeu_si512((void *)((uint8_t *)dst + i), b);
            PP_SR_NOTE(s0, i);
            PP_SR_NOTE(s1, i + 16);
            PP_SR_NOTE(s2, i + 32);
            PP_SR_NOTE(s3, i + 48);
            if (defer && cnt > 124) {
                sr_fixup(k, (const uint32_t *)src, rnd, st0, dst, ob, mint, list, cnt);
                cnt = 0;
            }
        }
    } else if (ob == 2) {
        const __m512i ord = _mm512_set_epi64(7, 5, 3, 1, 6, 4, 2, 0);
        const __m512i sb16 = _mm512_set1_epi16((short)0x8000);
        const __m512i nan16 = _mm512_set1_epi16((short)_mm_cvtsi128_si32(_mm512_castsi512_si128(k->nan0)));
        for (; i + 32 <= n; i += 32) {
            SR_PREFETCH(i, 32);
            __mmask16 s0[3] = {0, 0, 0}, s1[3] = {0, 0, 0};
            const __m512i c0 = sr_group(k, src, i, sr_words16(rnd, i, &st), f64, msub, mint, 0, s0);
            const __m512i c1 = sr_group(k, src, i + 16, sr_words16(rnd, i + 16, &st), f64, msub, mint, 0, s1);
            __m512i w = _mm512_permutexvar_epi64(ord, _mm512_packus_epi32(c0, c1));
            if (mint) {
                w = _mm512_mask_mov_epi16(w, _mm512_kunpackw(s1[1], s0[1]), nan16);
                w = _mm512_mask_add_epi16(w, _mm512_kunpackw(s1[0], s0[0]), w, sb16); /* bit 15 clear */
            }
            _mm512_storeu_si512((void *)((uint16_t *)dst + i), w);
            PP_SR_NOTE(s0, i);
            PP_SR_NOTE(s1, i + 16);
            if (defer && cnt > 124) {
                sr_fixup(k, (const uint32_t *)src, rnd, st0, dst, ob, mint, list, cnt);
                cnt = 0;
            }
        }
    } else if (stream) {
        /* 32-bit codes (fp32r) streamed, two groups per step, whole vectors (the tail loop below
         * takes the last < 32 elements with plain stores) */
        for (; i + 32 <= n; i += 32) {
            SR_PREFETCH(i, 32);
            const __m512i c0 = sr_group(k, src, i, sr_words16(rnd, i, &st), f64, sub, mint, 1, NULL);
            const __m512i c1 = sr_group(k, src, i + 16, sr_words16(rnd, i + 16, &st), f64, sub, mint, 1, NULL);
            uint32_t *d = (uint32_t *)dst + i;
            _mm512_stream_si512((void *)d, c0);
            _mm512_stream_si512((void *)(d + 16), c1);
        }
    }
    if (defer && cnt) sr_fixup(k, (const uint32_t *)src, rnd, st0, dst, ob, mint, list, cnt);
#undef PP_SR_NOTE
    /* 16 at a time, the last group masked (masked-off lanes are zeros: no fault, no exception) */
    for (; i < n; i += 16) {
        SR_PREFETCH(i, 16);
        const __mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1u);
        __m512i r;
        if (rnd) {
            r = _mm512_maskz_loadu_epi32(m, (const void *)(rnd + i));
        } else {
            r = sm_mix512(st);
            st = _mm512_add_epi64(st, sm_step512());
        }
        __m512i c;
        if (f64) {
            const uint64_t *s = (const uint64_t *)src + i;
            const __m512i u0 = _mm512_maskz_loadu_epi64((__mmask8)m, (const void *)s);
            const __m512i u1 = _mm512_maskz_loadu_epi64((__mmask8)(m >> 8), (const void *)(s + 8));
            c = sr16d(k, u0, u1, r, mint, wide, NULL);
        } else {
            const __m512i u = _mm512_maskz_loadu_epi32(m, (const void *)((const uint32_t *)src + i));
            c = sr16(k, u, r, sub, mint, wide, NULL);
        }
        if (ob == 1) _mm512_mask_cvtepi32_storeu_epi8((uint8_t *)dst + i, m, c);
        else if (ob == 2) _mm512_mask_cvtepi32_storeu_epi16((uint16_t *)dst + i, m, c);
        else _mm512_mask_storeu_epi32((uint32_t *)dst + i, m, c);
    }
}

/* Elements [0, n) of float32 (f64 = 0) or float64 bits (all of them, or 0 when the case is not
 * this one: not stochastic, an odd first index without random words). stream: 32-bit codes into a
 * 64-byte aligned dst, the main loop's stores non-temporal (sr_avx512 checks the case). */
static inline __attribute__((always_inline)) size_t sr_run(const pp_params *pr, int f64,
                                                           const void *src, size_t n,
                                                           const uint32_t *rnd, uint64_t seed,
                                                           uint64_t first, void *dst,
                                                           int out_bytes, const int stream) {
    if (pr->rounding != PP_STOCHASTIC || (!rnd && (first & 1u)) || pr->p < 1 || pr->p > 22) return 0;
    if (out_bytes != 1 && out_bytes != 2 && out_bytes != 4) return 0;
    const int sub = pr->has_sub != 0 || f64;
    /* the subnormal path's argument (above) needs 0 <= p - emin <= 94 for float32 sources (a
     * float32 subnormal, < 2^-126, must give thr = 0) and <= 990 for float64 ones (< 2^-1022) */
    if (sub && (pr->p - pr->emin < 0 || pr->p - pr->emin > (f64 ? 990 : 94))) return 0;
    const uint32_t s0 = 23u - (uint32_t)pr->p, shift = (uint32_t)pr->shift;
    const uint32_t ovfc = pr->ovf[0] >> shift;
    int mint = (ovfc == pr->maxc || ovfc == pr->maxc + 1u) && (ovfc << shift) == pr->ovf[0] &&
               pr->inf[0] == pr->ovf[0] && pr->dovf == pr->sign_bit && pr->dinf == pr->sign_bit;
    if (mint && pr->dnan == pr->sign_bit) mint = 3; /* and NaN keeps the sign too */
    sr_consts k;
    k.cs0 = _mm_cvtsi32_si128((int)s0);
    k.cthr = _mm_cvtsi32_si128((int)(32u - s0));
    k.csh = _mm_cvtsi32_si128((int)shift);
    k.absm = _mm512_set1_epi32(0x7fffffff);
    k.one = _mm512_set1_epi32(1);
    k.rebias1 = _mm512_set1_epi32((int)(((uint32_t)(pr->bias - 127) << 23) + (1u << s0) - 1u));
    k.minnorm = _mm512_set1_epi32((int)((uint32_t)(pr->emin + 127) << 23));
    k.scale = _mm512_set1_epi32((int)((uint32_t)(pr->p - pr->emin + 127) << 23));
    k.two32 = _mm512_set1_epi32(0x4f800000); /* 2^32 */
    k.inf = _mm512_set1_epi32(0x7f800000);
    k.maxc = _mm512_set1_epi32((int)pr->maxc);
    k.ovfc = _mm512_set1_epi32((int)ovfc);
    k.ovf0 = _mm512_set1_epi32((int)pr->ovf[0]);
    k.inf0 = _mm512_set1_epi32((int)pr->inf[0]);
    k.nan0 = _mm512_set1_epi32((int)pr->nan[0]);
    k.dovf = _mm512_set1_epi32((int)pr->dovf);
    k.dinf = _mm512_set1_epi32((int)pr->dinf);
    k.dnan = _mm512_set1_epi32((int)pr->dnan);
    k.sbit = _mm512_set1_epi32((int)pr->sign_bit);
    const uint64_t ds0 = 52u - (uint64_t)pr->p;
    k.ds0 = _mm_cvtsi64_si128((long long)ds0);
    k.dthr = _mm_cvtsi64_si128((long long)(64u - ds0));
    k.dabsm = _mm512_set1_epi64(0x7fffffffffffffffLL);
    k.drebias = _mm512_set1_epi64((long long)((uint64_t)(int64_t)(pr->bias - 1023) << 52));
    k.dminnorm = _mm512_set1_epi64((long long)((uint64_t)(pr->emin + 1023) << 52));
    k.dscale = _mm512_set1_epi64((long long)((uint64_t)(pr->p - pr->emin + 1023) << 52));
    k.dtwo32 = _mm512_set1_epi64(0x41f0000000000000LL); /* 2^32 */
    k.dinf64 = _mm512_set1_epi64(0x7ff0000000000000LL);
    k.dclamp = _mm512_set1_epi64((long long)(mint ? ovfc : pr->maxc + 1u));
    k.dclamp32 = _mm512_set1_epi32((int)(mint ? ovfc : pr->maxc + 1u));
    const __m512i st = rnd ? _mm512_setzero_si512() : sm_state512(seed, first >> 1);
    /* one loop per (source, output width, subnormal path, tail): constants, so each is branch-free */
#define PP_SR_TAIL(OB, F64, SUB, ST)                                                               \
    do {                                                                                           \
        if (mint == 3) sr_loop(&k, src, n, rnd, st, dst, OB, F64, SUB, 3, ST);                     \
        else if (mint) sr_loop(&k, src, n, rnd, st, dst, OB, F64, SUB, 1, ST);                     \
        else sr_loop(&k, src, n, rnd, st, dst, OB, F64, SUB, 0, ST);                               \
    } while (0)
#define PP_SR_CASE(OB, ST)                                                                         \
    do {                                                                                           \
        if (f64) PP_SR_TAIL(OB, 1, 1, ST);                                                         \
        else if (sub) PP_SR_TAIL(OB, 0, 1, ST);                                                    \
        else PP_SR_TAIL(OB, 0, 0, ST);                                                             \
    } while (0)
    if (stream) PP_SR_CASE(4, 1);
    else if (out_bytes == 1) PP_SR_CASE(1, 0);
    else if (out_bytes == 2) PP_SR_CASE(2, 0);
    else PP_SR_CASE(4, 0);
#undef PP_SR_CASE
#undef PP_SR_TAIL
    return n;
}

/* sr_run's two forms, each its own function: the streamed loops kept out of the others' (with
 * them in one function, bf16 SR from DRAM ran 8.3-12.4 GB/s against 12.8-13.8 without them,
 * session 14; in L2 the same) */
static __attribute__((noinline)) size_t sr_plain(const pp_params *pr, int f64, const void *src,
                                                 size_t n, const uint32_t *rnd, uint64_t seed,
                                                 uint64_t first, void *dst, int out_bytes) {
    return sr_run(pr, f64, src, n, rnd, seed, first, dst, out_bytes, 0);
}
static __attribute__((noinline)) size_t sr_stream4(const pp_params *pr, int f64, const void *src,
                                                   size_t n, const uint32_t *rnd, uint64_t seed,
                                                   uint64_t first, void *dst) {
    return sr_run(pr, f64, src, n, rnd, seed, first, dst, 4, 1);
}

/* sr_plain; with stream (32-bit codes only, convert.c's large calls): the elements before dst's
 * first 64-byte boundary with plain stores, the rest with non-temporal ones (no sfence). 0 (nothing
 * written) also when that boundary splits a pair of generated words (an odd head without words). */
static size_t sr_avx512(const pp_params *pr, int f64, const void *src, size_t n, const uint32_t *rnd,
                        uint64_t seed, uint64_t first, void *dst, int out_bytes, int stream) {
    if (!stream) return sr_plain(pr, f64, src, n, rnd, seed, first, dst, out_bytes);
    if (out_bytes != 4 || (uintptr_t)dst % 4u) return 0;
    const size_t head = pp_head_to(dst, n, 4, 64);
    if (!rnd && ((head | first) & 1u)) return 0;
    if (head && !sr_plain(pr, f64, src, head, rnd, seed, first, dst, 4)) return 0;
    if (head == n) return n;
    const char *s = (const char *)src + head * (f64 ? 8u : 4u);
    if (!sr_stream4(pr, f64, s, n - head, rnd ? rnd + head : NULL, seed, first + head,
                    (uint32_t *)dst + head))
        return 0; /* not reached: the head's call took the same case */
    return n;
}
