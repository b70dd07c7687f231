/* The generic converter: one exact value in, one code out (CAST_SEMANTICS.md §2-§5).
 *
 * Every source type is first decomposed into an exact (sign, m, e) with value m * 2^e, and rounded
 * once by pp_round_exact. This is the reference every fast path is tested against; it is written
 * for clarity, one element at a time.
 */
#include "pyprecision.h"

#include <string.h>
#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

/* Step 1-5 of the converter. m != 0. */
uint32_t pp_round_exact(const pp_params *pr, unsigned sign, uint64_t m, int e, uint32_t r) {
    const int p = pr->p;
    /* 1. E: exponent of the leading bit, value in [2^E, 2^(E+1)). */
    const int E = e + 63 - __builtin_clzll(m);
    /* 2. The quantum of the result: 2^(max(E, emin) - p); subnormals share emin's quantum. */
    const int q = (E > pr->emin ? E : pr->emin) - p;
    /* 3. s low bits of m lie below the quantum: K = kept multiple of the quantum, rem = the rest. */
    const int s = q - e;
    uint64_t K, rem;
    if (s <= 0) {
        K = m << -s; /* exact: K < 2^(p+1) because E <= q + p */
        rem = 0;
    } else if (s < 64) {
        K = m >> s;
        rem = m & ((UINT64_C(1) << s) - 1);
    } else {
        K = 0;
        rem = m;
    }
    /* 4. The rounding decision, comparing rem with half a quantum (2^(s-1)). */
    int up = 0;
    if (rem != 0) {
        /* cmp: -1, 0, 1 for rem below, at, above half. For s > 64 rem < 2^64 <= half. */
        int cmp;
        if (s > 64) {
            cmp = -1;
        } else {
            const uint64_t half = UINT64_C(1) << (s - 1);
            cmp = rem < half ? -1 : rem > half;
        }
        switch (pr->rounding) {
        case PP_RNE: up = cmp > 0 || (cmp == 0 && (K & 1)); break;
        case PP_RNA: up = cmp >= 0; break;
        case PP_RTZ: up = 0; break;
        default: {
            /* floor(f * 2^32) with f = rem / 2^s, then round up iff R < it. */
            uint64_t thr;
            if (s <= 32) thr = rem << (32 - s);
            else if (s - 32 < 64) thr = rem >> (s - 32);
            else thr = 0;
            up = (uint64_t)r < thr;
        }
        }
    }
    K += (uint64_t)up;
    /* 5. Assemble: ((E + bias - 1) << p) + K turns a mantissa carry (K = 2^(p+1)) into the next
     *    exponent, and a subnormal that rounds up to 2^p into the smallest normal. */
    const int64_t ef = E >= pr->emin ? (int64_t)E + pr->bias - 1 : 0;
    const uint64_t code = ((uint64_t)ef << p) + K;
    if (code > pr->maxc) return pr->ovf[sign];
    return ((uint32_t)code << pr->shift) | (sign ? pr->sign_bit : 0u);
}

/* ---- decomposition of each source element into the exact value ---- */

static inline uint32_t from_f64(const pp_params *pr, uint64_t u, uint32_t r) {
    const unsigned sign = (unsigned)(u >> 63);
    const unsigned eb = (unsigned)(u >> 52) & 0x7ffu;
    uint64_t m = u & ((UINT64_C(1) << 52) - 1);
    if (eb == 0x7ffu) return m ? pr->nan[sign] : pr->inf[sign];
    if (eb) m |= UINT64_C(1) << 52;
    if (!m) return sign ? pr->sign_bit : 0u;
    return pp_round_exact(pr, sign, m, (int)(eb ? eb : 1) - 1075, r);
}

static inline uint32_t from_f32(const pp_params *pr, uint32_t u, uint32_t r) {
    const unsigned sign = u >> 31;
    const unsigned eb = (u >> 23) & 0xffu;
    uint64_t m = u & 0x7fffffu;
    if (eb == 0xffu) return m ? pr->nan[sign] : pr->inf[sign];
    if (eb) m |= 0x800000u;
    if (!m) return sign ? pr->sign_bit : 0u;
    return pp_round_exact(pr, sign, m, (int)(eb ? eb : 1) - 150, r);
}

static inline uint32_t from_i64(const pp_params *pr, int64_t v, uint32_t r) {
    if (!v) return 0u;
    const unsigned sign = v < 0;
    const uint64_t m = sign ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    return pp_round_exact(pr, sign, m, 0, r);
}

static inline uint32_t from_u64(const pp_params *pr, uint64_t v, uint32_t r) {
    if (!v) return 0u;
    return pp_round_exact(pr, 0, v, 0, r);
}

/* One source element, by type code, as an exact conversion (narrow floats widen exactly). */
static inline uint32_t convert_one(const pp_params *pr, const void *src, int t, size_t i,
                                   uint32_t r) {
    switch (t) {
    case PP_T_F32: return from_f32(pr, ((const uint32_t *)src)[i], r);
    case PP_T_F64: return from_f64(pr, ((const uint64_t *)src)[i], r);
    case PP_T_F16:
        return from_f32(pr, pp_f32_to_bits(pp_decode_table(PP_FMT_FP16)[((const uint16_t *)src)[i]]), r);
    case PP_T_BF16: return from_f32(pr, (uint32_t)((const uint16_t *)src)[i] << 16, r);
    case PP_T_FP8E4:
    case PP_T_FP8E4M3FN:
    case PP_T_FP8E5: {
        const float *tab = pp_decode_table(pp_format_of_type(t));
        return from_f32(pr, pp_f32_to_bits(tab[((const uint8_t *)src)[i]]), r);
    }
    case PP_T_I8: return from_i64(pr, ((const int8_t *)src)[i], r);
    case PP_T_I16: return from_i64(pr, ((const int16_t *)src)[i], r);
    case PP_T_I32: return from_i64(pr, ((const int32_t *)src)[i], r);
    case PP_T_I64: return from_i64(pr, ((const int64_t *)src)[i], r);
    case PP_T_U8: return from_u64(pr, ((const uint8_t *)src)[i], r);
    case PP_T_U16: return from_u64(pr, ((const uint16_t *)src)[i], r);
    case PP_T_U32: return from_u64(pr, ((const uint32_t *)src)[i], r);
    default: return from_u64(pr, ((const uint64_t *)src)[i], r);
    }
}

static inline void store(void *dst, int bytes, size_t i, uint32_t v) {
    if (bytes == 1) ((uint8_t *)dst)[i] = (uint8_t)v;
    else if (bytes == 2) ((uint16_t *)dst)[i] = (uint16_t)v;
    else ((uint32_t *)dst)[i] = v;
}

/* ---- the driver: blocks, random words, fast-path dispatch ---- */

#define PP_BLOCK 2048 /* elements per inner block (stack buffers, L1-resident) */

static const unsigned char src_size[PP_T_U64 + 1] = {4, 8, 2, 2, 1, 1, 1, 1, 2, 4, 8, 1, 2, 4, 8};

typedef struct {
    pp_params pr;
    const pp_cast_options *opt;
    const void *src;
    int src_type;
    void *dst;
    int out_bytes;
    int stream;                /* write through a block buffer with streaming stores */
    int stream_direct;         /* the set's kernel that streams its own output, where it has one */
    int stream_sr;             /* stochastic rounding to 4-byte codes, the fused kernel streaming */
    const pp_kernel_set *ks;   /* NULL: the reference converter */
} encode_job;

/* The reference: convert_one per element, the scalar generator. */
static void encode_range_reference(const encode_job *j, size_t begin, size_t end) {
    const int stochastic = j->pr.rounding == PP_STOCHASTIC;
    uint32_t rbuf[PP_BLOCK];
    for (size_t b = begin; b < end; b += PP_BLOCK) {
        const size_t n = end - b < PP_BLOCK ? end - b : PP_BLOCK;
        const uint32_t *rnd = NULL;
        if (stochastic) {
            if (j->opt->random_bits) {
                rnd = j->opt->random_bits + b;
            } else {
                pp_sr_words_ref(j->opt->seed, b, n, rbuf);
                rnd = rbuf;
            }
        }
        char *out = (char *)j->dst + b * (size_t)j->out_bytes;
        for (size_t i = 0; i < n; i++) {
            const uint32_t r = rnd ? rnd[i] : 0u;
            store(out, j->out_bytes, i, convert_one(&j->pr, j->src, j->src_type, b + i, r));
        }
    }
}

/* A 64-bit integer the float64 widening cannot hold exactly (|v| > 2^53). */
static int int_is_big(int t, const void *src, size_t i) {
    if (t == PP_T_I64) return (uint64_t)((const int64_t *)src)[i] + PP_2P53 > 2 * PP_2P53;
    if (t == PP_T_U64) return ((const uint64_t *)src)[i] > PP_2P53;
    return 0;
}

/* Whether this thread's floating-point environment is the default one (round to nearest even,
 * every exception masked), under which the kernels may round in hardware (kern_body.h). */
static int fp_env_default(void) {
#if defined(__x86_64__)
    return (_mm_getcsr() & 0x7f80u) == 0x1f80u;
#else
    return 0;
#endif
}

/* ... and also flushes nothing: FTZ and DAZ off. */
static int fp_env_exact_default(void) {
#if defined(__x86_64__)
    return (_mm_getcsr() & ~0x3fu) == 0x1f80u;
#else
    return 0;
#endif
}

static void encode_range(void *ctx, size_t begin, size_t end) {
    const encode_job *j0 = ctx;
    if (!j0->ks) {
        encode_range_reference(j0, begin, end);
        return;
    }
    encode_job jl = *j0;
    const encode_job *j = &jl;
    jl.pr.fp_default = fp_env_default();
    /* F16C: fp16, inf for inf, ml_dtypes NaNs, an MXCSR that is exactly the default (no FTZ, no
     * DAZ; the exception flags aside), and the overflow result the instruction gives: inf under
     * rne and rna (no saturation), max under rtz (its result without saturation, §2) */
    const int rnd16 = j0->pr.rounding;
    const uint32_t ovf16 = rnd16 == PP_RTZ ? 0x7bffu : 0x7c00u;
    jl.pr.hw_fp16 = j0->opt->format == PP_FMT_FP16 &&
                    (rnd16 == PP_RNE || rnd16 == PP_RTZ || rnd16 == PP_RNA) &&
                    j0->pr.ovf[0] == ovf16 && j0->pr.inf[0] == 0x7c00u &&
                    j0->pr.nan[0] == 0x7e00u && j0->pr.nan[1] == 0xfe00u && fp_env_exact_default();
    const pp_kernel_set *ks = j->ks;
    const int t = j->src_type;
    const int ob = j->out_bytes;
    const int oi = ob == 1 ? 0 : ob == 2 ? 1 : 2;
    const size_t es = src_size[t];
    const int stochastic = j->pr.rounding == PP_STOCHASTIC;
    /* float32 sources where the set has a kernel that streams its own output: no block buffer,
     * no second pass over the output */
    if (j->stream_direct && t == PP_T_F32 &&
        ks->enc_stream(&j->pr, (const uint32_t *)j->src + begin, end - begin,
                       (char *)j->dst + begin * (size_t)ob, ob)) {
        ks->sfence();
        return;
    }
    /* int32 and float64 sources under rne / rtz / rna, likewise: each step narrowed to float32
     * rounded to odd in an L1 buffer, then the set's streaming float32 kernel straight to the
     * destination (kern_shared.h pp_narrow64_run; speed.md S23) */
    if (j->stream_direct && !stochastic && (t == PP_T_I32 || t == PP_T_F64)) {
        _Alignas(64) uint32_t nbuf[PP_NARROW_STREAM_STEP];
        const char *in = (const char *)j->src + begin * es;
        char *out = (char *)j->dst + begin * (size_t)ob;
        if (t == PP_T_I32 ? ks->narrow_i32(&j->pr, in, end - begin, nbuf, out, ob, 1)
                          : ks->narrow64(&j->pr, in, end - begin, nbuf, out, ob, 1)) {
            ks->sfence();
            return;
        }
    }
    /* stochastic rounding to 4-byte codes where the set's fused kernel streams them itself: the
     * whole range in one call, no block buffer (speed.md S26) */
    if (j->stream_sr && (t == PP_T_F32 || t == PP_T_F64) &&
        ks->sr_fused(&j->pr, t == PP_T_F64, (const char *)j->src + begin * es, end - begin,
                     j->opt->random_bits ? j->opt->random_bits + begin : NULL, j->opt->seed, begin,
                     (char *)j->dst + begin * (size_t)ob, ob, 1)) {
        ks->sfence();
        return;
    }
    _Alignas(64) uint32_t rbuf[PP_BLOCK];
    _Alignas(64) uint64_t wide[PP_BLOCK];
    _Alignas(64) uint32_t obuf[PP_BLOCK];
    for (size_t b0 = begin; b0 < end; b0 += PP_BLOCK) {
        const size_t nb = end - b0 < PP_BLOCK ? end - b0 : PP_BLOCK;
        char *out0 = (char *)j->dst + b0 * (size_t)ob;
        char *kout0 = j->stream ? (char *)obuf : out0;
        const char *in0 = (const char *)j->src + b0 * es;
        const uint32_t *given = stochastic && j->opt->random_bits ? j->opt->random_bits + b0 : NULL;
        size_t d = 0; /* elements [0, d) of the block are done */
        if (stochastic && (t == PP_T_F32 || t == PP_T_F64)) {
            /* the set's fused kernel: words from random_bits or generated in its registers from
             * an even element index (an odd block start does its first element here) */
            if (!given && (b0 & 1u)) {
                uint32_t w;
                ks->sr_words(j->opt->seed, b0, 1, &w);
                if (t == PP_T_F32) ks->enc32[oi](&j->pr, in0, 1, &w, kout0);
                else ks->enc64[oi](&j->pr, in0, 1, &w, kout0);
                d = 1;
            }
            d += ks->sr_fused(&j->pr, t == PP_T_F64, in0 + d * es, nb - d, given ? given + d : NULL,
                              j->opt->seed, b0 + d, kout0 + d * (size_t)ob, ob, 0);
        }
        /* the rest: the set's lanes, the words (if any) from random_bits or a block buffer */
        const size_t b = b0 + d, n = nb - d;
        const char *in = in0 + d * es;
        void *kout = kout0 + d * (size_t)ob;
        const uint32_t *rnd = NULL;
        if (stochastic && n) {
            if (given) {
                rnd = given + d;
            } else {
                ks->sr_words(j->opt->seed, b, n, rbuf);
                rnd = rbuf;
            }
        }
        if (n == 0) {
            /* nothing left */
        } else if (t == PP_T_F32) {
            ks->enc32[oi](&j->pr, in, n, rnd, kout);
        } else if (t == PP_T_F64 && ks->narrow64(&j->pr, in, n, (uint32_t *)wide, kout, ob, 0)) {
            /* done: through float32 rounded to odd and the float32 kernels (speed.md S18) */
        } else if (t == PP_T_F64) {
            ks->enc64[oi](&j->pr, in, n, rnd, kout);
        } else if (t == PP_T_I32 && ks->narrow_i32(&j->pr, in, n, rbuf, kout, ob, 0)) {
            /* done: int32 under rne / rtz / rna through float32 rounded to odd and the float32
             * kernels (rbuf is free: not stochastic) */
        } else if (t == PP_T_I32 || t == PP_T_U32 || t == PP_T_I64 || t == PP_T_U64) {
            const int big = ks->widen64(t, in, n, wide);
            ks->enc64[oi](&j->pr, wide, n, rnd, kout);
            if (big) {
                /* the rare integers beyond 2^53: the reference converter */
                for (size_t i = 0; i < n; i++)
                    if (int_is_big(t, j->src, b + i))
                        store(kout, ob, i, convert_one(&j->pr, j->src, t, b + i, rnd ? rnd[i] : 0u));
            }
        } else {
            ks->widen32(t, in, n, (uint32_t *)wide);
            ks->enc32[oi](&j->pr, wide, n, rnd, kout);
        }
        if (j->stream) ks->stream(out0, obuf, nb * (size_t)ob);
    }
    if (j->stream) ks->sfence();
}

/* Elements per task of the pool: below two of these a call stays on the calling thread. */
#define PP_ENCODE_GRAIN ((size_t)1 << 17)

int pp_encode(const void *src, int src_type, size_t n, void *dst, const pp_cast_options *opt) {
    if (!opt || src_type < 0 || src_type > PP_T_U64) return PP_EINVAL;
    if (n && (!src || !dst)) return PP_EINVAL;
    encode_job j;
    memset(&j, 0, sizeof j);
    int st = pp_params_init(&j.pr, opt);
    if (st) return st;
    int isa = opt->isa == PP_ISA_AUTO ? pp_isa_auto() : opt->isa;
    if (isa < PP_ISA_REFERENCE || isa > PP_ISA_AVX512) return PP_EINVAL;
    if (!pp_isa_supported(isa)) return PP_EUNSUPPORTED;
    if (n == 0) return PP_OK;
    j.opt = opt;
    j.src = src;
    j.src_type = src_type;
    j.dst = dst;
    j.out_bytes = pp_formats[opt->format].bits / 8;
    j.ks = pp_kernels_for(isa);
    /* Sources on the float32 lanes have no values below a format that shares float32's
     * exponent range (bf16, fp32r); the float64 lanes always may. */
    const int f64_lanes = src_type == PP_T_F64 || src_type == PP_T_I32 || src_type == PP_T_U32 ||
                          src_type == PP_T_I64 || src_type == PP_T_U64;
    j.pr.has_sub = f64_lanes || j.pr.emin > -126;
    /* the fp8 tables the lanes read: built once, before the pool's threads race to */
    if (j.ks && pp_format_is_fp8(pp_format_of_type(src_type))) pp_decode_table(PP_FMT_FP8E4);
    const size_t moved = n * (src_size[src_type] + (size_t)j.out_bytes);
    /* stochastic rounding with an output of at most half its input (plain stores' reads for
     * ownership of the destination are then a small part of the traffic) has its own threshold */
    const int sr_kind = opt->rounding == PP_STOCHASTIC && 2u * (size_t)j.out_bytes <= src_size[src_type];
    j.stream = j.ks != NULL && pp_use_streaming(moved, sr_kind ? PP_STREAM_SR_BUFFER : PP_STREAM_BUFFER);
    j.stream_direct = j.ks != NULL && pp_use_streaming(moved, PP_STREAM_DIRECT);
    j.stream_sr = j.ks != NULL && opt->rounding == PP_STOCHASTIC && j.out_bytes == 4 &&
                  pp_use_streaming(moved, PP_STREAM_SR_DIRECT);
    return pp_parallel_for(n, PP_ENCODE_GRAIN, opt->threads, encode_range, &j);
}
