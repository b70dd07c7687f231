/* pyprecision C core: internal header. The public API is pyprecision_api.h. */
#ifndef PYPRECISION_H
#define PYPRECISION_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pyprecision_api.h"

#define PP_NFORMATS (PP_FMT_FP8E5 + 1)

/* The format row of a narrow float source type (PP_T_BF16, PP_T_F16, PP_T_FP8*), -1 otherwise.
 * The fp8 types and the fp8 rows are in the same order. */
_Static_assert(PP_T_FP8E5 - PP_T_FP8E4 == PP_FMT_FP8E5 - PP_FMT_FP8E4 &&
                   PP_T_FP8E4M3FN - PP_T_FP8E4 == PP_FMT_FP8E4M3FN - PP_FMT_FP8E4,
               "fp8 source types and format rows in the same order");
static inline int pp_format_of_type(int t) {
    if (t >= PP_T_FP8E4 && t <= PP_T_FP8E5) return t - PP_T_FP8E4 + PP_FMT_FP8E4;
    return t == PP_T_BF16 ? PP_FMT_BF16 : t == PP_T_F16 ? PP_FMT_FP16 : -1;
}
/* Whether a (valid) format index is one of the three 8-bit formats: the last rows of the table. */
static inline int pp_format_is_fp8(int format) { return format >= PP_FMT_FP8E4; }

/* Internal views of the format table (formats.c). */
extern const pp_format_info pp_formats[PP_NFORMATS];

/* Parameters the converters need, derived once from a format row and the cast options. */
typedef struct {
    int p;              /* mantissa bits */
    int bias;
    int emin;           /* 1 - bias */
    int shift;          /* storage shift (fp32r: 13) */
    uint32_t sign_bit;  /* in storage position */
    uint32_t maxc;      /* max finite magnitude code, before the storage shift */
    int rounding;
    /* Complete results (storage position, sign included) for the special cases. */
    uint32_t ovf[2];    /* a finite value whose rounded magnitude exceeds max, by sign */
    uint32_t inf[2];    /* an infinite input, by sign */
    uint32_t nan[2];    /* a NaN input, by sign */
    /* For the fast kernels: X[1] == X[0] | (sign bit & dX), the sign bit at sign_pos. */
    uint32_t dovf, dinf, dnan;
    int sign_pos;
    int simple;         /* every special keeps the sign (dovf == dinf == dnan == sign bit):
                           1 when inf also gives the overflow result, 2 otherwise; 0: neither */
    int has_sub;        /* the source has values below the format's min normal (set per call) */
    int fp_default;     /* the calling thread's FP environment is the default (set per range) */
    int hw_fp16;        /* enc16 may use F16C (set per range, see kern_body.h enc16_) */
} pp_params;

int pp_params_init(pp_params *pr, const pp_cast_options *opt);

/* The generic converter: round the exact value (-1)^sign * m * 2^e (m != 0) once. */
uint32_t pp_round_exact(const pp_params *pr, unsigned sign, uint64_t m, int e, uint32_t r);

/* Decode one code exactly (the reference decoder, also used to build the tables). */
float pp_decode_one(int format, uint32_t code);
/* 8-bit formats' 256-entry tables and fp16's 65536-entry table, built once. */
const float *pp_decode_table(int format);

/* Thread pool (pool.c). fn is called on disjoint [begin, end) ranges covering [0, n). */
typedef void (*pp_task_fn)(void *ctx, size_t begin, size_t end);
int pp_parallel_for(size_t n, size_t grain, int threads, pp_task_fn fn, void *ctx);

/* The stochastic-rounding words (srwords.c, docs/decisions/kernel.md K4): SplitMix64 (Steele, Lea
 * & Flood 2014) keyed by the seed, z_j = mix64(seed + (j + 1) * golden gamma); element i's word is
 * the low half of z_(i/2) for even i, the high half for odd i. */
#define PP_SM_GAMMA UINT64_C(0x9E3779B97F4A7C15)
#define PP_SM_M1 UINT64_C(0xBF58476D1CE4E5B9)
#define PP_SM_M2 UINT64_C(0x94D049BB133111EB)
static inline uint64_t pp_splitmix64(uint64_t seed, uint64_t j) {
    uint64_t z = seed + (j + 1) * PP_SM_GAMMA;
    z = (z ^ (z >> 30)) * PP_SM_M1;
    z = (z ^ (z >> 27)) * PP_SM_M2;
    return z ^ (z >> 31);
}
/* The words of element indices [first, first + n), one element at a time (the definition). */
void pp_sr_words_ref(uint64_t seed, uint64_t first, size_t n, uint32_t *out);

#define PP_2P53 (UINT64_C(1) << 53)

/* Fast kernels, one set per instruction set (kern_*.c including kern_body.h). Every one is
 * proven equal to the reference converter / decoder by tests/fastpaths. */
typedef void (*pp_enc_kernel)(const pp_params *pr, const void *src, size_t n,
                              const uint32_t *rnd, void *dst);
typedef struct {
    pp_enc_kernel enc32[3]; /* float32 bits -> 1-, 2-, 4-byte codes */
    pp_enc_kernel enc64[3]; /* float64 bits -> 1-, 2-, 4-byte codes */
    /* narrow floats and integers of <= 16 bits -> exact float32 bits */
    void (*widen32)(int src_type, const void *src, size_t n, uint32_t *out);
    /* 32/64-bit integers -> float64 bits; nonzero when some |v| > 2^53 (not converted) */
    int (*widen64)(int src_type, const void *src, size_t n, uint64_t *out);
    /* the stochastic-rounding words of pp_sr_words_ref */
    void (*sr_words)(uint64_t seed, uint64_t first, size_t n, uint32_t *out);
    /* codes -> float32 bits, as pp_decode_one */
    void (*decode)(int format, const void *bits, size_t n, uint32_t *out);
    /* the same with streaming stores straight to out (no sfence); 0 when the set has none */
    int (*decode_stream)(int format, const void *bits, size_t n, uint32_t *out);
    /* float32 -> 1-, 2- or 4-byte codes with streaming stores straight to dst (no sfence); 0
     * when the set has no such kernel for the case (then nothing was written) */
    int (*enc_stream)(const pp_params *pr, const uint32_t *src, size_t n, void *dst,
                      int out_bytes);
    /* copy with non-temporal stores where the set has them; sfence orders them */
    void (*stream)(void *dst, const void *src, size_t bytes);
    void (*sfence)(void);
    /* float32 (f64 = 0) or float64 bits -> 1-, 2- or 4-byte codes under stochastic rounding,
     * the words taken from rnd or, when rnd is NULL, generated in registers for element indices
     * first.. (first even); returns how many elements it did from the start (0: not this case).
     * stream != 0: all n or none, 4-byte codes streamed straight to dst (no sfence; speed.md
     * S26), 0 where the set has no such form */
    size_t (*sr_fused)(const pp_params *pr, int f64, const void *src, size_t n,
                       const uint32_t *rnd, uint64_t seed, uint64_t first, void *dst,
                       int out_bytes, int stream);
    /* float64 bits -> 1-, 2- or 4-byte codes through float32 rounded to odd (in buf, room for
     * 2048 float32) and the set's enc32, which round it as they would the float64 (rne, rtz,
     * rna; docs/decisions/speed.md S18); 0: not this set or this rounding (nothing written).
     * stream != 0: the set's enc_stream instead of enc32, streaming to dst (buf: room for
     * PP_NARROW_STREAM_STEP float32; no sfence), 0 also where enc_stream has no kernel for the
     * case (speed.md S23) */
    int (*narrow64)(const pp_params *pr, const void *src, size_t n, uint32_t *buf, void *dst,
                    int out_bytes, int stream);
    /* int32 -> 1-, 2- or 4-byte codes the same way (float32 rounded to odd in buf, then enc32;
     * kern_i32odd.h, kern_narrow_avx512.h; stream as for narrow64); 0: not this set or this rounding
     * (nothing written) */
    int (*narrow_i32)(const pp_params *pr, const void *src, size_t n, uint32_t *buf, void *dst,
                      int out_bytes, int stream);
} pp_kernel_set;

/* Elements per step of narrow64 / narrow_i32 with stream set (kern_shared.h pp_narrow64_run):
 * the step's float32 stay in L1 (4 KiB, the caller's buffer) and the float32 kernel's per-call
 * set-up (the fp8 kernel's constants, the 64-byte head) is paid once per step. */
#ifndef PP_NARROW_STREAM_STEP
#define PP_NARROW_STREAM_STEP 1024
#endif

/* The fp8 kernels' dispatch (kern_avx512.c fp8_avx512, kern_avx2.c fp8_avx2): one loop per
 * (p, rounding, special-value mode, streaming), all compile-time constants. Expands in the
 * kernel, which has k, src, n, dst, stream, pr and mode in scope. */
#define PP_FP8_LOOP_(LOOP, P, R, M)                                                                \
    do {                                                                                           \
        if (stream) LOOP(&k, src, n, dst, 1, P, R, M);                                             \
        else LOOP(&k, src, n, dst, 0, P, R, M);                                                    \
    } while (0)
#define PP_FP8_DISPATCH(LOOP, P)                                                                   \
    do {                                                                                           \
        if (pr->rounding == PP_RNE) PP_FP8_LOOP_(LOOP, P, PP_RNE, 1);                              \
        else if (pr->rounding == PP_RNA) PP_FP8_LOOP_(LOOP, P, PP_RNA, 1);                         \
        else if (mode == 1) PP_FP8_LOOP_(LOOP, P, PP_RTZ, 1);                                      \
        else if (mode == 2) PP_FP8_LOOP_(LOOP, P, PP_RTZ, 2);                                      \
        else PP_FP8_LOOP_(LOOP, P, PP_RTZ, 3);                                                     \
    } while (0)
extern const pp_kernel_set pp_kernels_portable;
extern const pp_kernel_set pp_kernels_avx2;
extern const pp_kernel_set pp_kernels_avx512;
/* The kernel set of an instruction set (PP_ISA_PORTABLE..AVX512), NULL for the reference. */
const pp_kernel_set *pp_kernels_for(int isa);
/* kern_avx512.c may use vcvtneps2bf16 (isa.c: the CPU has AVX512_BF16, not disabled) */
int pp_isa_avx512_bf16(void);
/* Whether a call that moves this many bytes (input + output) writes its output with streaming
 * stores, by kind: an encoder's block buffer, an encoder that streams its own output,
 * pp_decode's block buffer, a decoder that streams its own output, an encoder's block buffer
 * under stochastic rounding with an output of at most half its input bytes, or a stochastic
 * rounding kernel that streams its own 4-byte codes, or the AVX2 set's fp16 / fp32r decoders that
 * stream their own output (the thresholds differ: dispatch.c). */
enum {
    PP_STREAM_BUFFER = 0,
    PP_STREAM_DIRECT = 1,
    PP_STREAM_DECODE = 2,
    PP_STREAM_DECODE_DIRECT = 3,
    PP_STREAM_SR_BUFFER = 4,
    PP_STREAM_SR_DIRECT = 5,
    PP_STREAM_DECODE_WIDE = 6
};
#define PP_STREAM_KINDS 7
int pp_use_streaming(size_t bytes, int kind);

/* The PE dot's register tiles (dot.c drives them; dot_kern.h, dot_portable.c): the uk computes an
 * mr x nr tile of outputs over kc steps of k from a packed panel of b (dot_kern.h documents the
 * arguments). PP_DOT_FIRST: start from +0.0 (else from the partial sums in c); PP_DOT_LAST: the
 * last block of k (NaN results canonicalised). */
#define PP_DOT_FIRST 1
#define PP_DOT_LAST 2
typedef void (*pp_dot_ukernel)(size_t kc, const void *a, size_t lda, const void *bp, void *c,
                               size_t ldc, int mr, int nr, int flags);
typedef struct {
    int mr, nr; /* rows and columns of the tile */
    pp_dot_ukernel uk;
} pp_dot_tile;
typedef struct {
    pp_dot_tile f32, f64;
    /* float32 with one fused multiply-add per step, for operands whose every product is exact in
     * float32 (pp_dot_products_exact): then round(acc + a*b) is round(acc + round(a*b)), the same
     * bits as f32's multiply and add (docs/decisions/kernel.md K11). uk NULL: none. */
    pp_dot_tile f32_exact;
} pp_dot_set;
extern const pp_dot_set pp_dot_portable;
extern const pp_dot_set pp_dot_avx2;
extern const pp_dot_set pp_dot_avx512;
extern const pp_dot_set pp_dot_avx512_tall; /* the 16 x 16 float32 tile (K12) */
/* Whether the fused tile may run with `isa` (isa.c; PYPRECISION_DOT_FMA=0 turns it off). */
int pp_isa_dot_fma(int isa);
/* Whether the AVX-512 set's float32 dot takes the tall tile (isa.c; PYPRECISION_DOT_TILE). */
int pp_isa_dot_tall(void);
/* The tiles of an instruction set (PP_ISA_PORTABLE..AVX512), NULL for the reference loop. */
const pp_dot_set *pp_dot_set_for(int isa);

static inline float pp_bits_to_f32(uint32_t u) {
    union { uint32_t u; float f; } v = { u };
    return v.f;
}
static inline uint32_t pp_f32_to_bits(float f) {
    union { float f; uint32_t u; } v = { f };
    return v.u;
}
static inline double pp_bits_to_f64(uint64_t u) {
    union { uint64_t u; double f; } v = { u };
    return v.f;
}
static inline uint64_t pp_f64_to_bits(double f) {
    union { double f; uint64_t u; } v = { f };
    return v.u;
}

#endif
