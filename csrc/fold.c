/* The sequential fold of a reduce (issue 27): out[r] = (((init[r] op x[r][0]) op x[r][1]) op ...)
 * for each row r of a row-major rows x n float32 matrix, one float32 rounding per step, in index
 * order (op: + or *). It is what NumPy's accumulate along the last axis computes, with eight rows
 * in flight at once instead of one: each row is still its own chain of steps in the same order,
 * so the bits are the same (-ffp-contract=off). Rows are split between the pool's threads.
 *
 * NaN: with a NaN operand the payload of an IEEE operation depends on the operand order the
 * compiler chose, which C does not fix; callers pass NaN-free operands (a NaN a step makes, inf -
 * inf or 0 x inf, is the hardware's default NaN either way). */
#include "pyprecision.h"

#include <stdlib.h>


typedef struct {
    int kind;
    const float *x, *init;
    float *out;
    size_t n;
} fold_job;

#define FOLD_ROWS 8

static void fold_rows(void *ctx, size_t begin, size_t end) {
    const fold_job *j = ctx;
    const size_t n = j->n;
    size_t r = begin;
    for (; r + FOLD_ROWS <= end; r += FOLD_ROWS) {
        float a[FOLD_ROWS];
        const float *x[FOLD_ROWS];
        for (int i = 0; i < FOLD_ROWS; i++) {
            a[i] = j->init[r + i];
            x[i] = j->x + (r + i) * n;
        }
        if (j->kind == PP_FOLD_ADD)
            for (size_t k = 0; k < n; k++)
                for (int i = 0; i < FOLD_ROWS; i++) a[i] = a[i] + x[i][k];
        else
            for (size_t k = 0; k < n; k++)
                for (int i = 0; i < FOLD_ROWS; i++) a[i] = a[i] * x[i][k];
        for (int i = 0; i < FOLD_ROWS; i++) j->out[r + i] = a[i];
    }
    for (; r < end; r++) {
        float a = j->init[r];
        const float *x = j->x + r * n;
        if (j->kind == PP_FOLD_ADD)
            for (size_t k = 0; k < n; k++) a = a + x[k];
        else
            for (size_t k = 0; k < n; k++) a = a * x[k];
        j->out[r] = a;
    }
}

int pp_fold_f32(int kind, const float *x, size_t rows, size_t n, const float *init, float *out,
                int threads) {
    if (kind != PP_FOLD_ADD && kind != PP_FOLD_MUL) return PP_EINVAL;
    if (threads < 0) return PP_EINVAL;
    size_t total;
    if (__builtin_mul_overflow(rows, n, &total)) return PP_EINVAL;
    if (rows == 0) return PP_OK;
    if (!init || !out || (total && !x)) return PP_EINVAL;
    fold_job j = {kind, x, init, out, n};
    /* about 2^16 elements per chunk, whole groups of rows */
    size_t grain = n ? ((size_t)1 << 16) / n : rows;
    grain = (grain + FOLD_ROWS - 1) / FOLD_ROWS * FOLD_ROWS;
    return pp_parallel_for(rows, grain ? grain : FOLD_ROWS, threads, fold_rows, &j);
}

/* ---- pp_sqdiff_f32: the two sums of a relative l2 error ----
 * The order is fixed by n alone, so the bits do not depend on the thread count or the ISA: the
 * elements are cut into chunks of SQD_CHUNK (the API's PP_SQDIFF_CHUNK); within a chunk, element
 * k goes to lane k % SQD_LANES (each lane a float64 sum in index order), the lanes then added
 * pairwise; the chunks' sums are added in chunk order. Each float32 converts to float64 exactly;
 * the difference and the squares are rounded to float64 (-ffp-contract=off: no fused
 * multiply-add). */
#define SQD_LANES 8
#define SQD_CHUNK ((size_t)PP_SQDIFF_CHUNK)

typedef struct {
    const float *x, *r;
    size_t n;
    double *part; /* 2 per chunk */
} sqd_job;

static double sqd_pairwise(const double a[SQD_LANES]) {
    return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}

static void sqd_chunks(void *ctx, size_t begin, size_t end) {
    const sqd_job *j = ctx;
    for (size_t c = begin; c < end; c++) {
        const size_t lo = c * SQD_CHUNK;
        const size_t m = j->n - lo < SQD_CHUNK ? j->n - lo : SQD_CHUNK;
        const float *x = j->x + lo, *r = j->r + lo;
        double sr[SQD_LANES] = {0}, sd[SQD_LANES] = {0};
        size_t k = 0;
        for (; k + SQD_LANES <= m; k += SQD_LANES)
            for (int l = 0; l < SQD_LANES; l++) {
                const double rv = (double)r[k + l];
                const double d = (double)x[k + l] - rv;
                sr[l] = sr[l] + rv * rv;
                sd[l] = sd[l] + d * d;
            }
        for (int l = 0; k < m; k++, l++) {
            const double rv = (double)r[k];
            const double d = (double)x[k] - rv;
            sr[l] = sr[l] + rv * rv;
            sd[l] = sd[l] + d * d;
        }
        j->part[2 * c] = sqd_pairwise(sr);
        j->part[2 * c + 1] = sqd_pairwise(sd);
    }
}

int pp_sqdiff_f32(const float *x, const float *r, size_t n, double *out, int threads) {
    if (!out || threads < 0) return PP_EINVAL;
    out[0] = out[1] = 0.0;
    if (n == 0) return PP_OK;
    if (!x || !r) return PP_EINVAL;
    const size_t chunks = (n - 1) / SQD_CHUNK + 1;
    double *part = malloc(2 * chunks * sizeof(double));
    if (!part) return PP_ENOMEM;
    sqd_job j = {x, r, n, part};
    const int status = pp_parallel_for(chunks, 1, threads, sqd_chunks, &j);
    if (status == PP_OK)
        for (size_t c = 0; c < chunks; c++) {
            out[0] = out[0] + part[2 * c];
            out[1] = out[1] + part[2 * c + 1];
        }
    free(part);
    return status;
}
