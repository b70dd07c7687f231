/* pyprecision C core: a chain of float32 elementwise operations, evaluated a tile of lanes at a
 * time (decision EM-15, docs/decisions/ir.md).
 *
 * The executors (emulate/shared/chain.py) compile a run of elementwise instructions into a short
 * program of the operations below, each the IEEE single operation NumPy's float32 loop performs
 * (+ - * / sqrt, x*x, 1/x, the sign operations, compares, select) or a rounding of a float32 value
 * to bf16 / fp16 (round to nearest even, no saturation) or to fp8e4 / fp8e4m3fn / fp8e5 (round to
 * nearest even, saturating: finite overflow and ±inf give ±max, Neuron's fp8 default, decision
 * EM-19). Every register holds float32 values.
 *
 * NaN: the NumPy routes choose a NaN result's payload by rules of their own (decision OP12's first
 * operand, the float64 route of EM-11), which a vector loop here would have to reproduce lane by
 * lane. It does not try: a tile in which a NaN reaches an output or an operation that could hide
 * it (step() below) makes the call return PP_CHAIN_NAN, and the caller evaluates that block its own way. Likewise when the
 * floating-point environment is not the default one (round to nearest, no FTZ/DAZ), where the
 * hardware operations here would not be NumPy's. So on every lane this function writes, its
 * value is the value the NumPy route computes: the same IEEE operations on the same operands.
 *
 * No FMA (-ffp-contract=off), no reassociation (no -ffast-math): each operation is rounded once,
 * in the program's order. The operand order of a commutative operation only matters for a NaN
 * payload, which never reaches a result here.
 */
#include "pyprecision.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#define TILE 256
#define MAX_REGS 4096
/* lanes per thread's share at least: a 64 Ki-element block splits in four */
#define CHAIN_GRAIN 16384

static inline uint32_t fbits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float bitsf(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

/* bf16 code of a non-NaN float32, rounded to nearest even (overflow gives ±inf: no saturation;
 * bf16 has float32's exponent range, so subnormals round by the same carry). */
static inline uint16_t bf16_code(float x) {
    uint32_t u = fbits(x);
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* All ones where c, else zero: the selects below are masks, not branches, so that GCC vectorizes
 * the tile loops they are inlined into (a ?: there left some clones scalar; decision EM-18). */
static inline uint32_t ones_if(int c) { return 0u - (uint32_t)(c != 0); }
static inline uint32_t pick(uint32_t m, uint32_t x, uint32_t y) { return (x & m) | (y & ~m); }

/* fp16 code of a non-NaN float32, rounded to nearest even, no saturation. */
static inline uint16_t f16_code(float x) {
    uint32_t u = fbits(x);
    uint32_t s = (u >> 16) & 0x8000u, a = u & 0x7FFFFFFFu;
    /* >= 2^-14, a normal fp16: the carry of the rounding goes into the exponent, whose bias
     * goes 127 -> 15 (wraps harmlessly below 2^-14, where it is not picked) */
    uint32_t nrm = (a + 0xFFFu + ((a >> 13) & 1u) - 0x38000000u) >> 13;
    /* below 2^-14: a multiple of 2^-24. |x| + 0.5 lies in [0.5, 1), where a float32 ulp is
     * 2^-24, so the hardware addition rounds |x| to that grid to nearest even, exactly once;
     * 1024 units = 2^-14 gives code 0x400, right */
    uint32_t sub = fbits(bitsf(a) + 0.5f) - 0x3F000000u;
    uint32_t c = pick(ones_if(a >= 0x38800000u), nrm, sub);
    c = pick(ones_if(a >= 0x477FF000u), 0x7C00u, c); /* >= 65520 (or inf): rounds to inf */
    return (uint16_t)(s | c);
}

static inline float f16_value(uint16_t h) {
    uint32_t s = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
    float sub = (float)(int32_t)m * 0x1p-24f; /* exact: m < 2^10 */
    uint32_t nrm = ((e + 112u) << 23) | (m << 13);
    nrm = pick(ones_if(e == 31), 0x7F800000u | (m << 13), nrm); /* inf or a NaN (the caller's) */
    return bitsf(s | pick(ones_if(e == 0), fbits(sub), nrm));
}

/* f16_value(f16_code(x)) in one step: x rounded to fp16's grid, as a float32. */
static inline float f16_round(float x) {
    uint32_t u = fbits(x);
    uint32_t s = u & 0x80000000u, a = u & 0x7FFFFFFFu;
    uint32_t nrm = (a + 0xFFFu + ((a >> 13) & 1u)) & 0xFFFFE000u;
    nrm = pick(ones_if(nrm >= 0x47800000u), 0x7F800000u, nrm); /* 2^16 and up: inf */
    float sub = (bitsf(a) + 0.5f) - 0.5f; /* exact: a multiple of 2^-24 below 2^-13 */
    return bitsf(s | pick(ones_if(a >= 0x38800000u), nrm, fbits(sub)));
}

static inline float bf16_value(uint16_t h) { return bitsf((uint32_t)h << 16); }
static inline float bf16_round(float v) { return bf16_value(bf16_code(v)); }

/* x rounded to an fp8 format's grid to nearest even, saturating (CAST_SEMANTICS.md §3: a result
 * above max, and ±inf, give ±max), as a float32; x is not a NaN. M: the format's mantissa bits,
 * EMIN its least normal exponent, MAXB the float32 word of its max. Normal range: the carry of
 * the rounding at bit 23 - M (an exponent carry included; past FLT_MAX it gives inf, which the
 * saturation takes). Below 2^EMIN the grid is 2^(EMIN - M): |x| + 2^(EMIN - M + 23), whose
 * float32 ulp is that step, rounds |x| to it once, exactly as f16_round's + 0.5 does for fp16
 * (in float32 every fp8 value and every such sum is normal). Branch-free, so it vectorizes. */
#define FP8_ROUND(name, M, EMIN, MAXB)                                                          \
    static inline float name(float x) {                                                        \
        uint32_t u = fbits(x);                                                                  \
        uint32_t s = u & 0x80000000u, a = u & 0x7FFFFFFFu;                                      \
        const uint32_t half = 1u << (22 - (M)), low = (1u << (23 - (M))) - 1u;                  \
        uint32_t nrm = (a + (half - 1u) + ((a >> (23 - (M))) & 1u)) & ~low;                     \
        const float c = bitsf((uint32_t)((EMIN) - (M) + 23 + 127) << 23);                       \
        float sub = (bitsf(a) + c) - c;                                                         \
        uint32_t r = pick(ones_if(a >= ((uint32_t)((EMIN) + 127) << 23)), nrm, fbits(sub));     \
        r = pick(ones_if(r > (MAXB)), (MAXB), r);                                               \
        return bitsf(s | r);                                                                    \
    }
FP8_ROUND(fp8e4_round, 3, -6, 0x43700000u)     /* max 240 = 1.875 * 2^7 */
FP8_ROUND(fp8e4m3fn_round, 3, -6, 0x43E00000u) /* max 448 = 1.75 * 2^8 */
FP8_ROUND(fp8e5_round, 2, -14, 0x47600000u)    /* max 57344 = 1.75 * 2^15 */
#undef FP8_ROUND

#if defined(__x86_64__)
static int env_default(void) { return (_mm_getcsr() & ~0x3fu) == 0x1f80u; }
#else
static int env_default(void) { return 0; }
#endif

static int check(const int32_t *code, size_t n_insn, size_t n_regs, size_t n_in,
                 const int32_t *in_kind, const int64_t *in_stride, size_t n_out,
                 const int32_t *out_kind, const int32_t *out_reg) {
    if (n_regs == 0 || n_regs > MAX_REGS || n_in > n_regs) return 0;
    for (size_t i = 0; i < n_in; i++) {
        if (in_kind[i] < 0 || in_kind[i] > PP_CHAIN_I64) return 0;
        if (in_stride[i] != 0 && in_stride[i] != 1) return 0;
    }
    for (size_t i = 0; i < n_out; i++) {
        if (out_kind[i] < 0 || out_kind[i] > PP_CHAIN_I64) return 0;
        if (out_reg[i] < 0 || (size_t)out_reg[i] >= n_regs) return 0;
    }
    for (size_t i = 0; i < n_insn; i++) {
        const int32_t *c = code + 5 * i;
        if (c[0] < 0 || c[0] >= PP_CHAIN_NOPS) return 0;
        for (int j = 1; j < 5; j++)
            if (c[j] < 0 || (size_t)c[j] >= n_regs) return 0;
    }
    return 1;
}

/* Whether any of x[0 .. len) is a NaN. */
#define CH_INLINE static inline __attribute__((always_inline))
CH_INLINE int any_nan(const float *x, size_t len) {
    uint32_t bad = 0; /* on the bits: an integer compare vectorizes, x != x did not */
    for (size_t j = 0; j < len; j++) bad |= ones_if((fbits(x[j]) & 0x7FFFFFFFu) > 0x7F800000u);
    return bad != 0;
}

CH_INLINE void load_run(float *r, const void *src, int kind, size_t off, size_t len) {
    switch (kind) {
    case PP_CHAIN_F32:
        memcpy(r, (const float *)src + off, len * sizeof(float));
        break;
    case PP_CHAIN_BF16: {
        const uint16_t *s = (const uint16_t *)src + off;
        for (size_t j = 0; j < len; j++) r[j] = bf16_value(s[j]);
        break;
    }
    case PP_CHAIN_F16: {
        const uint16_t *s = (const uint16_t *)src + off;
        for (size_t j = 0; j < len; j++) r[j] = f16_value(s[j]);
        break;
    }
    case PP_CHAIN_U8: {
        const uint8_t *s = (const uint8_t *)src + off;
        for (size_t j = 0; j < len; j++) r[j] = s[j] != 0 ? 1.0f : 0.0f;
        break;
    }
    default: { /* PP_CHAIN_I64 */
        const int64_t *s = (const int64_t *)src + off;
        for (size_t j = 0; j < len; j++) r[j] = s[j] != 0 ? 1.0f : 0.0f;
        break;
    }
    }
}

/* Register r over lanes [off, off + len) of an input: contiguous (stride 1) or one value. */
CH_INLINE void load(float *r, const void *src, int kind, int64_t stride, size_t off, size_t len) {
    if (stride == 0) {
        float v;
        load_run(&v, src, kind, 0, 1);
        for (size_t j = 0; j < len; j++) r[j] = v;
        return;
    }
    load_run(r, src, kind, off, len);
}

CH_INLINE void store(void *dst, int kind, size_t off, const float *r, size_t len) {
    switch (kind) {
    case PP_CHAIN_F32:
        memcpy((float *)dst + off, r, len * sizeof(float));
        break;
    case PP_CHAIN_BF16: { /* the value is a bf16 value (the program rounded it): its top half */
        uint16_t *d = (uint16_t *)dst + off;
        for (size_t j = 0; j < len; j++) d[j] = (uint16_t)(fbits(r[j]) >> 16);
        break;
    }
    case PP_CHAIN_F16: {
        uint16_t *d = (uint16_t *)dst + off;
        for (size_t j = 0; j < len; j++) d[j] = f16_code(r[j]);
        break;
    }
    case PP_CHAIN_U8: {
        uint8_t *d = (uint8_t *)dst + off;
        for (size_t j = 0; j < len; j++) d[j] = r[j] != 0.0f;
        break;
    }
    default: {
        int64_t *d = (int64_t *)dst + off;
        for (size_t j = 0; j < len; j++) d[j] = r[j] != 0.0f;
        break;
    }
    }
}

/* One operation over a tile. Returns whether the operation could hide a NaN: an operand of one
 * whose result need not be a NaN where an operand is (max/min as written here, relu, and the
 * roundings, which may turn a signalling NaN into an infinity) is a NaN. The other operations
 * either give a NaN wherever an operand is one (IEEE arithmetic; the sign operations keep it), or
 * give NumPy's result whatever the payload (a compare is false, != true; a select copies the
 * lane it picks). So a NaN made or loaded anywhere reaches such an operand, an output (the caller
 * checks the outputs) or no result at all: no lane is stored whose value a NaN payload decides. */
CH_INLINE int step(int op, float *d, const float *a, const float *b, const float *c,
                   size_t len) {
    int bad = 0;
    switch (op) {
    case PP_CHAIN_MAX: case PP_CHAIN_MIN:
        bad = any_nan(a, len) | any_nan(b, len);
        break;
    case PP_CHAIN_RELU: case PP_CHAIN_BF16_ROUND: case PP_CHAIN_F16_ROUND:
    case PP_CHAIN_FP8E4_ROUND: case PP_CHAIN_FP8E4M3FN_ROUND: case PP_CHAIN_FP8E5_ROUND:
        bad = any_nan(a, len);
        break;
    default:
        break;
    }
    if (bad) return 1;
    switch (op) {
#define LOOP(expr) for (size_t j = 0; j < len; j++) d[j] = (expr); break
    case PP_CHAIN_ADD: LOOP(a[j] + b[j]);
    case PP_CHAIN_SUB: LOOP(a[j] - b[j]);
    case PP_CHAIN_MUL: LOOP(a[j] * b[j]);
    case PP_CHAIN_DIV: LOOP(a[j] / b[j]);
    case PP_CHAIN_MAX: /* -0 < +0 (OP9): a tie of zeros gives +0 when either is +0 */
        for (size_t j = 0; j < len; j++) {
            float m = a[j] > b[j] ? a[j] : b[j];
            d[j] = (a[j] == b[j]) ? bitsf(fbits(a[j]) & fbits(b[j])) : m;
        }
        break;
    case PP_CHAIN_MIN: /* ... and -0 when either is -0 */
        for (size_t j = 0; j < len; j++) {
            float m = a[j] < b[j] ? a[j] : b[j];
            d[j] = (a[j] == b[j]) ? bitsf(fbits(a[j]) | fbits(b[j])) : m;
        }
        break;
    case PP_CHAIN_NEG: LOOP(bitsf(fbits(a[j]) ^ 0x80000000u));
    case PP_CHAIN_ABS: LOOP(bitsf(fbits(a[j]) & 0x7FFFFFFFu));
    case PP_CHAIN_SQRT: LOOP(sqrtf(a[j]));
    case PP_CHAIN_SQUARE: LOOP(a[j] * a[j]);
    case PP_CHAIN_RECIP: LOOP(1.0f / a[j]);
    case PP_CHAIN_RELU: LOOP(a[j] > 0.0f ? a[j] : 0.0f);
    case PP_CHAIN_EQ: LOOP(a[j] == b[j] ? 1.0f : 0.0f);
    case PP_CHAIN_NE: LOOP(a[j] != b[j] ? 1.0f : 0.0f);
    case PP_CHAIN_LT: LOOP(a[j] < b[j] ? 1.0f : 0.0f);
    case PP_CHAIN_LE: LOOP(a[j] <= b[j] ? 1.0f : 0.0f);
    case PP_CHAIN_GT: LOOP(a[j] > b[j] ? 1.0f : 0.0f);
    case PP_CHAIN_GE: LOOP(a[j] >= b[j] ? 1.0f : 0.0f);
    case PP_CHAIN_SELECT: LOOP(a[j] != 0.0f ? b[j] : c[j]);
    case PP_CHAIN_BF16_ROUND: LOOP(bf16_value(bf16_code(a[j])));
    case PP_CHAIN_F16_ROUND: LOOP(f16_round(a[j]));
    case PP_CHAIN_FP8E4_ROUND: LOOP(fp8e4_round(a[j]));
    case PP_CHAIN_FP8E4M3FN_ROUND: LOOP(fp8e4m3fn_round(a[j]));
    case PP_CHAIN_FP8E5_ROUND: LOOP(fp8e5_round(a[j]));
    case PP_CHAIN_SATINF: /* ±inf -> ±|b| (satinf's bound); a NaN stays the NaN it is */
        for (size_t j = 0; j < len; j++) {
            const uint32_t w = fbits(a[j]);
            const uint32_t inf = ones_if((w & 0x7FFFFFFFu) == 0x7F800000u);
            d[j] = bitsf(pick(inf, (w & 0x80000000u) | (fbits(b[j]) & 0x7FFFFFFFu), w));
        }
        break;
    default: LOOP(a[j]); /* PP_CHAIN_COPY */
#undef LOOP
    }
    return 0;
}

/* An arithmetic operation (+ - * /) into register x followed by a rounding of x into register
 * d, in one pass over the tile (decision EM-25): each lane's exact value e = a OP b is stored in x
 * and its rounding in d, and the pair reports a NaN wherever e is one, exactly as the rounding
 * step alone would (the arithmetic step reports nothing). Per lane the reads come before the
 * writes, so x or d may be the register of a or b, or each other (the rounding written last), as
 * in the two steps run one after the other. Returns whether a NaN was met. */
static inline int fusible(const int32_t *c) {
    return (c[0] == PP_CHAIN_ADD || c[0] == PP_CHAIN_SUB || c[0] == PP_CHAIN_MUL ||
            c[0] == PP_CHAIN_DIV) &&
           c[5] >= PP_CHAIN_BF16_ROUND && c[5] <= PP_CHAIN_FP8E5_ROUND && c[7] == c[1];
}

#define CH_FUSE(EXPR, ROUND)                                                                   \
    for (size_t j = 0; j < len; j++) {                                                          \
        const float e = (EXPR);                                                                 \
        bad |= ones_if((fbits(e) & 0x7FFFFFFFu) > 0x7F800000u);                                \
        x[j] = e;                                                                               \
        d[j] = ROUND(e);                                                                        \
    }                                                                                           \
    break
#define CH_FUSE_OPS(ROUND)                                                                     \
    switch (op) {                                                                               \
    case PP_CHAIN_ADD: CH_FUSE(a[j] + b[j], ROUND);                                             \
    case PP_CHAIN_SUB: CH_FUSE(a[j] - b[j], ROUND);                                             \
    case PP_CHAIN_MUL: CH_FUSE(a[j] * b[j], ROUND);                                             \
    default: CH_FUSE(a[j] / b[j], ROUND);                                                       \
    }                                                                                           \
    break

CH_INLINE int step_rounded(int op, int rnd, float *x, float *d, const float *a, const float *b,
                           size_t len) {
    uint32_t bad = 0;
    switch (rnd) {
    case PP_CHAIN_BF16_ROUND: CH_FUSE_OPS(bf16_round);
    case PP_CHAIN_F16_ROUND: CH_FUSE_OPS(f16_round);
    case PP_CHAIN_FP8E4_ROUND: CH_FUSE_OPS(fp8e4_round);
    case PP_CHAIN_FP8E4M3FN_ROUND: CH_FUSE_OPS(fp8e4m3fn_round);
    default: CH_FUSE_OPS(fp8e5_round);
    }
    return bad != 0;
}
#undef CH_FUSE_OPS
#undef CH_FUSE

/* The tile loop, compiled for AVX-512, AVX2 and the baseline and picked by the CPU at load time
 * (GCC's target_clones): the same IEEE operations in every width. */
#if defined(__x86_64__) && defined(__GNUC__) && __GNUC__ >= 11 && !defined(__clang__) && \
    !defined(PP_EMULATE_AVX512)
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
static int run(const int32_t *code, size_t n_insn, size_t n_in, const void *const *in_ptr,
               const int32_t *in_kind, const int64_t *in_stride, size_t n_out,
               void *const *out_ptr, const int32_t *out_kind, const int32_t *out_reg, size_t begin,
               size_t end, float *regs) {
    for (size_t off = begin; off < end; off += TILE) {
        size_t len = end - off < TILE ? end - off : TILE;
        int bad = 0;
        for (size_t i = 0; i < n_in; i++)
            load(regs + i * TILE, in_ptr[i], in_kind[i], in_stride[i], off, len);
        for (size_t i = 0; i < n_insn && !bad; i++) {
            const int32_t *c = code + 5 * i;
            if (i + 1 < n_insn && fusible(c)) { /* an operation and its rounding: one pass */
                bad |= step_rounded(c[0], c[5], regs + (size_t)c[1] * TILE,
                                    regs + (size_t)c[6] * TILE, regs + (size_t)c[2] * TILE,
                                    regs + (size_t)c[3] * TILE, len);
                i++;
                continue;
            }
            bad |= step(c[0], regs + (size_t)c[1] * TILE, regs + (size_t)c[2] * TILE,
                        regs + (size_t)c[3] * TILE, regs + (size_t)c[4] * TILE, len);
        }
        for (size_t i = 0; i < n_out && !bad; i++)
            bad |= any_nan(regs + (size_t)out_reg[i] * TILE, len);
        if (bad) return PP_CHAIN_NAN;
        for (size_t i = 0; i < n_out; i++)
            store(out_ptr[i], out_kind[i], off, regs + (size_t)out_reg[i] * TILE, len);
    }
    return PP_OK;
}

typedef struct {
    const int32_t *code;
    size_t n_insn, n_regs, n_in, n_out;
    const void *const *in_ptr;
    const int32_t *in_kind;
    const int64_t *in_stride;
    void *const *out_ptr;
    const int32_t *out_kind, *out_reg;
    _Atomic int status;
} chain_job;

/* One thread's share [begin, end) of the lanes, with registers of its own. */
static void chain_range(void *ctx, size_t begin, size_t end) {
    chain_job *j = ctx;
    if (atomic_load(&j->status) != PP_OK) return;
    if (!env_default()) { /* a worker's own environment (threads inherit their creator's) */
        atomic_store(&j->status, PP_CHAIN_NAN);
        return;
    }
    float *regs = malloc(j->n_regs * TILE * sizeof(float));
    if (!regs) {
        atomic_store(&j->status, PP_ENOMEM);
        return;
    }
    int st = run(j->code, j->n_insn, j->n_in, j->in_ptr, j->in_kind, j->in_stride, j->n_out,
                 j->out_ptr, j->out_kind, j->out_reg, begin, end, regs);
    free(regs);
    if (st != PP_OK) atomic_store(&j->status, st);
}

int pp_chain(const int32_t *code, size_t n_insn, size_t n_regs, size_t n_in,
             const void *const *in_ptr, const int32_t *in_kind, const int64_t *in_stride,
             size_t n_out, void *const *out_ptr, const int32_t *out_kind, const int32_t *out_reg,
             size_t n, int threads) {
    if (!code || !in_kind || !in_stride || !out_kind || !out_reg || (n_in && !in_ptr) ||
        (n_out && !out_ptr) || threads < 1)
        return PP_EINVAL;
    if (!check(code, n_insn, n_regs, n_in, in_kind, in_stride, n_out, out_kind, out_reg))
        return PP_EINVAL;
    for (size_t i = 0; i < n_in; i++)
        if (!in_ptr[i] && n) return PP_EINVAL;
    for (size_t i = 0; i < n_out; i++)
        if (!out_ptr[i] && n) return PP_EINVAL;
    if (!env_default()) return PP_CHAIN_NAN; /* the caller's; each worker checks its own */
    if (n == 0) return PP_OK;
    chain_job j = {code, n_insn, n_regs, n_in, n_out, in_ptr, in_kind, in_stride, out_ptr,
                   out_kind, out_reg, PP_OK};
    int st = pp_parallel_for(n, CHAIN_GRAIN, threads, chain_range, &j);
    if (st != PP_OK) return st;
    return atomic_load(&j.status);
}

/* ---- pp_chain_fold: a reduce's sequential fold in a narrow accumulation dtype (EM-21) ----
 * out[r] = round(...round(round(init[r] op x[r][0]) op x[r][1])... op x[r][n-1]) for each row
 * of a row-major rows x n float32 matrix: each step the IEEE single operation (+ or *) of two
 * values of the format, rounded once by the chain's rounding `rnd` (its step() case), in index
 * order, eight rows in flight. A NaN among the operands, a NaN a step makes (inf - inf, 0 x inf:
 * its rounding would not keep it, the fp8s' saturation would make it ±max), or a floating-point
 * environment that is not the default: PP_CHAIN_NAN, and the caller takes its own steps. */
typedef struct {
    int kind, rnd;
    const float *x, *init;
    float *out;
    size_t n;
    _Atomic int status;
} nfold_job;

#define NFOLD_ROWS 8

CH_INLINE int nan_bits(float v) { return (fbits(v) & 0x7FFFFFFFu) > 0x7F800000u; }

#define NFOLD_STEP(ROUND)                                                                       \
    if (j->kind == PP_FOLD_ADD)                                                                 \
        for (size_t k = 0; k < n; k++)                                                          \
            for (int i = 0; i < NFOLD_ROWS; i++) {                                              \
                const float s = a[i] + x[i][k];                                                 \
                bad |= ones_if(nan_bits(s));                                                    \
                a[i] = ROUND(s);                                                                \
            }                                                                                   \
    else                                                                                        \
        for (size_t k = 0; k < n; k++)                                                          \
            for (int i = 0; i < NFOLD_ROWS; i++) {                                              \
                const float s = a[i] * x[i][k];                                                 \
                bad |= ones_if(nan_bits(s));                                                    \
                a[i] = ROUND(s);                                                                \
            }


/* rows [r, r + NFOLD_ROWS) (rows past `end` repeat the last one, their results not stored) */
static int nfold_group(const nfold_job *j, size_t r, size_t end) {
    const size_t n = j->n;
    float a[NFOLD_ROWS];
    const float *x[NFOLD_ROWS];
    uint32_t bad = 0;
    for (int i = 0; i < NFOLD_ROWS; i++) {
        const size_t row = r + (size_t)i < end ? r + (size_t)i : end - 1;
        a[i] = j->init[row];
        x[i] = j->x + row * n;
        bad |= ones_if(nan_bits(a[i])) | ones_if(any_nan(x[i], n));
    }
    if (bad) return PP_CHAIN_NAN;
    switch (j->rnd) {
    case PP_CHAIN_BF16_ROUND: NFOLD_STEP(bf16_round) break;
    case PP_CHAIN_F16_ROUND: NFOLD_STEP(f16_round) break;
    case PP_CHAIN_FP8E4_ROUND: NFOLD_STEP(fp8e4_round) break;
    case PP_CHAIN_FP8E4M3FN_ROUND: NFOLD_STEP(fp8e4m3fn_round) break;
    default: NFOLD_STEP(fp8e5_round) break; /* PP_CHAIN_FP8E5_ROUND */
    }
    if (bad) return PP_CHAIN_NAN;
    for (int i = 0; i < NFOLD_ROWS && r + (size_t)i < end; i++) j->out[r + (size_t)i] = a[i];
    return PP_OK;
}
#undef NFOLD_STEP

static void nfold_rows(void *ctx, size_t begin, size_t end) {
    nfold_job *j = ctx;
    if (atomic_load(&j->status) != PP_OK) return;
    if (!env_default()) {
        atomic_store(&j->status, PP_CHAIN_NAN);
        return;
    }
    for (size_t r = begin; r < end; r += NFOLD_ROWS) {
        const int st = nfold_group(j, r, end);
        if (st != PP_OK) {
            atomic_store(&j->status, st);
            return;
        }
    }
}

int pp_chain_fold(int kind, int rnd, const float *x, size_t rows, size_t n, const float *init,
                  float *out, int threads) {
    if (kind != PP_FOLD_ADD && kind != PP_FOLD_MUL) return PP_EINVAL;
    if (rnd != PP_CHAIN_BF16_ROUND && rnd != PP_CHAIN_F16_ROUND && rnd != PP_CHAIN_FP8E4_ROUND &&
        rnd != PP_CHAIN_FP8E4M3FN_ROUND && rnd != PP_CHAIN_FP8E5_ROUND)
        return PP_EINVAL;
    if (threads < 1) return PP_EINVAL;
    size_t total;
    if (__builtin_mul_overflow(rows, n, &total)) return PP_EINVAL;
    if (rows == 0) return PP_OK;
    if (!init || !out || (total && !x)) return PP_EINVAL;
    if (!env_default()) return PP_CHAIN_NAN;
    nfold_job j = {kind, rnd, x, init, out, n, PP_OK};
    size_t grain = n ? ((size_t)1 << 16) / n : rows; /* about 2^16 elements a share */
    grain = (grain + NFOLD_ROWS - 1) / NFOLD_ROWS * NFOLD_ROWS;
    const int st = pp_parallel_for(rows, grain ? grain : NFOLD_ROWS, threads, nfold_rows, &j);
    if (st != PP_OK) return st;
    return atomic_load(&j.status);
}
