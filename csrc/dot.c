/* The PE dot: out[i] = a[i] (M,K) . b[i] (K,N) for each of `batch` matrix pairs, every element the
 * sum over k = 0, 1, ... of the product a[r][k] * b[k][c] rounded to the element type, added one
 * by one (one rounding per addition, no FMA: -ffp-contract=off) to an accumulator that starts at
 * +0.0; a NaN result is the positive quiet NaN (docs/decisions/numerics.md N5, N6).
 *
 * dot_reference is that definition, one element at a time. The fast paths (dot_kern.h for AVX2 and
 * AVX-512, dot_portable.c) keep an MR x NR tile of outputs in registers, each lane its own sum, so
 * they do exactly the same operations on every element in the same order; the blocking below only
 * chooses which elements are worked on when:
 *   - work items: (batch, MB rows, NB columns), handed to the thread pool (pool.c);
 *   - k in blocks of KC: a tile's partial sums are stored in out and reloaded for the next block
 *     (an exact round trip), so a block of b stays in L1 / L2;
 *   - each block of b is copied (exactly) into panels of NR columns, zero-padded past n. */
#include "pyprecision.h"

#include <stdatomic.h>
#include <stdlib.h>

#ifndef DOT_KC
#define DOT_KC 256 /* k per block */
#endif
#ifndef DOT_MB
#define DOT_MB 128 /* rows per work item */
#endif
#ifndef DOT_NB
#define DOT_NB 256 /* columns per work item */
#endif

typedef struct {
    size_t es; /* element size: 4 or 8 */
    int f64;
    const char *a, *b;
    char *out;
    const int64_t *a_off, *b_off;
    size_t m, k, n;
    size_t row_blocks, col_blocks;
    const pp_dot_tile *tile; /* NULL: dot_reference */
    atomic_int status;
} dot_job;

static size_t min_sz(size_t x, size_t y) { return x < y ? x : y; }

/* Rows [r0, r1) and columns [c0, c1) of one product, one element at a time (the definition). */
static void dot_reference(const dot_job *j, const char *a, const char *b, char *c, size_t r0,
                          size_t r1, size_t c0, size_t c1) {
    const size_t k = j->k, n = j->n;
    for (size_t i = r0; i < r1; i++)
        for (size_t col = c0; col < c1; col++) {
            if (j->f64) {
                const double *x = (const double *)a + i * k, *y = (const double *)b + col;
                double acc = 0.0;
                for (size_t kk = 0; kk < k; kk++) {
                    const double prod = x[kk] * y[kk * n];
                    acc = acc + prod;
                }
                ((double *)c)[i * n + col] =
                    acc != acc ? pp_bits_to_f64(UINT64_C(0x7ff8000000000000)) : acc;
            } else {
                const float *x = (const float *)a + i * k, *y = (const float *)b + col;
                float acc = 0.0f;
                for (size_t kk = 0; kk < k; kk++) {
                    const float prod = x[kk] * y[kk * n];
                    acc = acc + prod;
                }
                ((float *)c)[i * n + col] = acc != acc ? pp_bits_to_f32(0x7fc00000u) : acc;
            }
        }
}

/* The same block through the register tiles; buf holds DOT_KC rows of the block's panels. */
static void dot_tiled(const dot_job *j, const char *a, const char *b, char *c, size_t r0,
                      size_t r1, size_t c0, size_t c1, char *buf) {
    const size_t k = j->k, n = j->n, es = j->es;
    const size_t mr = (size_t)j->tile->mr, nr = (size_t)j->tile->nr;
    const size_t panels = (c1 - c0 + nr - 1) / nr;
    size_t k0 = 0;
    do { /* once when k == 0: the tiles store +0 */
        const size_t kc = min_sz(DOT_KC, k - k0);
        const int flags = (k0 == 0 ? PP_DOT_FIRST : 0) | (k0 + kc == k ? PP_DOT_LAST : 0);
        for (size_t p = 0; p < panels; p++) {
            const size_t col = c0 + p * nr, w = min_sz(nr, c1 - col);
            char *dst = buf + p * kc * nr * es;
            for (size_t kk = 0; kk < kc; kk++) {
                memcpy(dst + kk * nr * es, b + ((k0 + kk) * n + col) * es, w * es);
                if (w < nr) memset(dst + (kk * nr + w) * es, 0, (nr - w) * es);
            }
        }
        for (size_t p = 0; p < panels; p++) {
            const size_t col = c0 + p * nr, w = min_sz(nr, c1 - col);
            const char *panel = buf + p * kc * nr * es;
            for (size_t i = r0; i < r1; i += mr)
                j->tile->uk(kc, a + (i * k + k0) * es, k, panel, c + (i * n + col) * es, n,
                            (int)min_sz(mr, r1 - i), (int)w, flags);
        }
        k0 += kc;
    } while (k0 < k);
}

static size_t dot_buf_bytes(const dot_job *j) {
    const size_t nr = (size_t)j->tile->nr;
    return ((DOT_KC * ((DOT_NB + nr - 1) / nr) * nr * j->es) + 63) / 64 * 64;
}

static void dot_items(void *ctx, size_t begin, size_t end) {
    dot_job *j = ctx;
    char *buf = NULL;
    if (j->tile) {
        buf = aligned_alloc(64, dot_buf_bytes(j));
        if (!buf) {
            atomic_store(&j->status, PP_ENOMEM);
            return;
        }
    }
    for (size_t it = begin; it < end; it++) {
        const size_t cb = it % j->col_blocks, rest = it / j->col_blocks;
        const size_t rb = rest % j->row_blocks, bt = rest / j->row_blocks;
        const char *a = j->a + (size_t)j->a_off[bt] * j->es;
        const char *b = j->b + (size_t)j->b_off[bt] * j->es;
        char *c = j->out + bt * j->m * j->n * j->es;
        const size_t r0 = rb * DOT_MB, r1 = min_sz(j->m, r0 + DOT_MB);
        const size_t c0 = cb * DOT_NB, c1 = min_sz(j->n, c0 + DOT_NB);
        if (buf) dot_tiled(j, a, b, c, r0, r1, c0, c1, buf);
        else dot_reference(j, a, b, c, r0, r1, c0, c1);
    }
    free(buf);
}

/* One operand's side of pp_dot_products_exact: 0 when an element is inf, NaN, subnormal or has a
 * significand of more than 12 bits (a nonzero among the low 12 of its 23 fraction bits); else 1,
 * with the smallest biased exponent of its nonzero elements (255 when it has none) and the largest
 * (0 when it has none). One branch-free pass the compiler vectorises. */
#if defined(__x86_64__) && defined(__GNUC__) && __GNUC__ >= 11 && !defined(__clang__) && \
    !defined(PP_EMULATE_AVX512)
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
static int exact_side(const float *x, size_t n, unsigned *emin, unsigned *emax) {
    const uint32_t *w = (const uint32_t *)(const void *)x;
    uint32_t bad = 0, lo = 255, hi = 0;
    for (size_t i = 0; i < n; i++) {
        const uint32_t u = w[i] & 0x7fffffffu, e = u >> 23;
        const uint32_t zero = (uint32_t)0 - (uint32_t)(u == 0); /* all ones for +-0 */
        const uint32_t special = (uint32_t)0 - (uint32_t)(e == 255u || e == 0u);
        bad |= (u & 0xfffu) | (special & ~zero); /* inf, NaN, subnormal; not +-0 */
        const uint32_t el = e | (zero & 255u); /* a zero's exponent field is 0: 255 */
        lo = el < lo ? el : lo;
        hi = e > hi ? e : hi;
    }
    *emin = lo;
    *emax = hi;
    return bad == 0;
}

int pp_dot_products_exact(const float *a, size_t na, const float *b, size_t nb) {
    unsigned amin, amax, bmin, bmax;
    if ((na && !a) || (nb && !b)) return 0;
    if (!exact_side(a, na, &amin, &amax) || !exact_side(b, nb, &bmin, &bmax)) return 0;
    if (amin == 255u || bmin == 255u) return 1; /* one side all zeros: every product is +-0 */
    /* significands of <= 12 bits multiply into <= 24 bits: exact unless out of the normal range.
     * |a| < 2^(amax-126), |b| < 2^(bmax-126): |a*b| < 2^128 when amax + bmax <= 380 (no
     * overflow); |a| >= 2^(amin-127): |a*b| >= 2^-126 when amin + bmin >= 128 (no subnormal) */
    return amax + bmax <= 380u && amin + bmin >= 128u;
}

const pp_dot_set *pp_dot_set_for(int isa) {
    switch (isa) {
    case PP_ISA_PORTABLE: return &pp_dot_portable;
    case PP_ISA_AVX2: return &pp_dot_avx2;
    case PP_ISA_AVX512: return pp_isa_dot_tall() ? &pp_dot_avx512_tall : &pp_dot_avx512;
    default: return NULL;
    }
}

/* The checks pp_dot makes of type and isa, and the tile it runs on ordered products: *isa resolved
 * (AUTO: this CPU's best), *set and *tile NULL for the reference. PP_OK or the status to return. */
static int dot_tile_for(int type, int *isa, const pp_dot_set **set, const pp_dot_tile **tile) {
    if (type != PP_T_F32 && type != PP_T_F64) return PP_EINVAL;
    if (*isa == PP_ISA_AUTO) *isa = pp_isa_auto();
    if (*isa < PP_ISA_REFERENCE || *isa > PP_ISA_AVX512) return PP_EINVAL;
    if (!pp_isa_supported(*isa)) return PP_EUNSUPPORTED;
    *set = pp_dot_set_for(*isa);
    *tile = *set ? (type == PP_T_F64 ? &(*set)->f64 : &(*set)->f32) : NULL;
    return PP_OK;
}

int pp_dot_tile_rows(int type, int isa) {
    const pp_dot_set *set;
    const pp_dot_tile *tile;
    const int st = dot_tile_for(type, &isa, &set, &tile);
    return st ? st : tile ? tile->mr : 0;
}

/* Whether every offset leaves room for one matrix of `size` elements in an array of `total`. */
static int offsets_ok(const int64_t *off, size_t batch, size_t size, size_t total) {
    for (size_t i = 0; i < batch; i++)
        if (off[i] < 0 || (size && ((uint64_t)off[i] > total || size > total - (size_t)off[i])))
            return 0;
    return 1;
}

int pp_dot(int type, const void *a, size_t a_size, const void *b, size_t b_size, size_t batch,
           const int64_t *a_off, const int64_t *b_off, size_t m, size_t k, size_t n, void *out,
           int threads, int isa) {
    if (threads < 0) return PP_EINVAL;
    const pp_dot_set *set;
    const pp_dot_tile *tile;
    const int bad = dot_tile_for(type, &isa, &set, &tile);
    if (bad) return bad;
    size_t mk, kn, mn, total;
    if (__builtin_mul_overflow(m, k, &mk) || __builtin_mul_overflow(k, n, &kn) ||
        __builtin_mul_overflow(m, n, &mn) || __builtin_mul_overflow(mn, batch, &total) ||
        total > SIZE_MAX / 8)
        return PP_EINVAL;
    if (batch == 0 || mn == 0) return PP_OK;
    if (!out || !a_off || !b_off || (mk && !a) || (kn && !b)) return PP_EINVAL;
    if (!offsets_ok(a_off, batch, mk, a_size) || !offsets_ok(b_off, batch, kn, b_size))
        return PP_EINVAL;
    /* K11: exact products let one fused multiply-add do the multiply and the add, same bits */
    /* (the scan reads both operands once: worth it where each element takes part in >= 8
     * multiply-adds) */
    if (type == PP_T_F32 && set && set->f32_exact.uk && pp_isa_dot_fma(isa) &&
        k && (a_size + b_size) / k <= total / 8 && pp_dot_products_exact(a, a_size, b, b_size))
        tile = &set->f32_exact;
    dot_job j = {
        .es = type == PP_T_F64 ? 8 : 4, .f64 = type == PP_T_F64, .a = a, .b = b, .out = out,
        .a_off = a_off, .b_off = b_off, .m = m, .k = k, .n = n,
        .row_blocks = (m + DOT_MB - 1) / DOT_MB, .col_blocks = (n + DOT_NB - 1) / DOT_NB,
        .tile = tile,
    };
    atomic_init(&j.status, PP_OK);
    const size_t items = batch * j.row_blocks * j.col_blocks;
    /* an item's multiply-adds; small items go several to a chunk (about 2^18 per chunk) */
    const size_t work = min_sz(m, DOT_MB) * min_sz(n, DOT_NB) * (k ? k : 1);
    const size_t grain = work >= ((size_t)1 << 18) ? 1 : ((size_t)1 << 18) / work;
    const int st = pp_parallel_for(items, grain, threads, dot_items, &j);
    return st ? st : atomic_load(&j.status);
}
