/* pyprecision C core: internal header. The public API is pyprecision_api.h. */
#ifndef PYPRECISION_H
#define PYPRECISION_H

#include <stddef.h>
#include <stdint.h>

#include "pyprecision_api.h"

#define PP_NFORMATS 6

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

/* Philox4x32-10 block (philox.c). */
void pp_philox4x32(uint64_t seed, uint64_t block, uint32_t out[4]);
void pp_philox_fill(uint64_t seed, uint64_t first, size_t n, uint32_t *out);

/* Fast float32 kernels, one set per instruction set (kern_*.c). */
typedef void (*pp_f32_kernel)(const pp_params *pr, const uint32_t *src, size_t n,
                              const uint32_t *rnd, void *dst);
typedef struct {
    pp_f32_kernel enc8, enc16, enc32;
} pp_kernel_set;
extern const pp_kernel_set pp_kernels_portable;
extern const pp_kernel_set pp_kernels_avx2;
extern const pp_kernel_set pp_kernels_avx512;

static inline float pp_bits_to_f32(uint32_t u) {
    union { uint32_t u; float f; } v = { u };
    return v.f;
}
static inline uint32_t pp_f32_to_bits(float f) {
    union { float f; uint32_t u; } v = { f };
    return v.u;
}

#endif
