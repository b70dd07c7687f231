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
