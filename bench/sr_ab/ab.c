/* A/B of stochastic-rounding encodes between builds of the C core in one process (speed.md S27).
 *
 *   gcc -O2 -I csrc bench/sr_ab/ab.c -ldl -lm -o /tmp/ab
 *   /tmp/ab n rounds fmt f64 given a.so b.so ...     (bench/sr_ab/mklib.sh builds the .so files)
 *
 * fmt: 0 bf16, 1 fp16, 2 fp32r, 3 fp8e4, 4 fp8e4m3fn, 5 fp8e5; f64: 1 for float64 sources; given:
 * 1 for random_bits instead of a seed. Data: N(0, 4^2) as in bench/probe_sr.py. Each round times
 * every library in turn on a batch of calls (~4 M elements), thread CPU time (wall time with
 * THREADS=t set, the pool's thread count); prints GB/s of input, best and median over the rounds,
 * and MISMATCH when a library's codes differ from the first one's. STH=<bytes> calls
 * pp_set_stream_threshold(bytes) in each library first; ISA=avx512 times the AVX-512 set. */
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pyprecision_api.h"

typedef int (*enc_t)(const void *, int, size_t, void *, const pp_cast_options *);
static double clk(clockid_t c) {
    struct timespec t;
    clock_gettime(c, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}
static int cmpd(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
int main(int argc, char **argv) {
    if (argc < 7) {
        fprintf(stderr, "usage: ab n rounds fmt f64 given lib.so...\n");
        return 2;
    }
    const size_t n = strtoull(argv[1], 0, 0);
    int rounds = atoi(argv[2]);
    if (rounds > 64) rounds = 64;
    const int fmt = atoi(argv[3]), f64 = atoi(argv[4]), given = atoi(argv[5]);
    int nl = argc - 6;
    if (nl > 8) nl = 8;
    enc_t enc[8];
    for (int l = 0; l < nl; l++) {
        void *h = dlopen(argv[6 + l], RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            fprintf(stderr, "%s\n", dlerror());
            return 1;
        }
        enc[l] = (enc_t)dlsym(h, "pp_encode");
        if (getenv("STH")) {
            long long (*st)(long long) = (long long (*)(long long))dlsym(h, "pp_set_stream_threshold");
            st(atoll(getenv("STH")));
        }
    }
    float *x = aligned_alloc(64, n * 8 + 64);
    double *xd = (double *)(void *)x;
    srand(1);
    for (size_t i = 0; i < n; i++) {
        const double u1 = (rand() + 1.0) / RAND_MAX, u2 = rand() / (double)RAND_MAX;
        const double g = sqrt(-2 * log(u1)) * cos(6.283185307 * u2) * 4;
        if (f64) xd[i] = (float)g;
        else x[i] = (float)g;
    }
    const int ob = fmt == 2 ? 4 : fmt < 2 ? 2 : 1;
    void *out[8];
    for (int l = 0; l < nl; l++) {
        out[l] = aligned_alloc(64, n * 4 + 64);
        memset(out[l], 0, n * 4);
    }
    uint32_t *w = aligned_alloc(64, n * 4 + 64);
    for (size_t i = 0; i < n; i++) w[i] = (uint32_t)(i * 2654435761u ^ (i >> 3) * 40503u);
    pp_cast_options o;
    memset(&o, 0, sizeof o);
    o.format = fmt;
    o.rounding = PP_STOCHASTIC;
    o.seed = 7;
    o.threads = getenv("THREADS") ? atoi(getenv("THREADS")) : 1;
    /* ISA=avx512 times the AVX-512 set (default: the AVX2 one) */
    o.isa = getenv("ISA") && !strcmp(getenv("ISA"), "avx512") ? PP_ISA_AVX512 : PP_ISA_AVX2;
    o.random_bits = given ? w : NULL;
    const clockid_t c = getenv("THREADS") ? CLOCK_MONOTONIC : CLOCK_THREAD_CPUTIME_ID;
    const int k = (int)(4e6 / (double)n) + 1; /* calls per batch */
    double res[8][64];
    for (int r = 0; r < rounds; r++)
        for (int l = 0; l < nl; l++) {
            const double t = clk(c);
            for (int i = 0; i < k; i++) enc[l](x, f64 ? 1 : 0, n, out[l], &o);
            res[l][r] = (clk(c) - t) / k;
        }
    double la[3];
    getloadavg(la, 3);
    printf("n %zu fmt %d %s %s load %.2f:", n, fmt, f64 ? "f64" : "f32", given ? "given" : "seeded", la[0]);
    const double in = (double)n * (f64 ? 8.0 : 4.0);
    for (int l = 0; l < nl; l++) {
        qsort(res[l], rounds, sizeof(double), cmpd);
        printf("  [%d] best %.2f med %.2f", l, in / res[l][0] / 1e9, in / res[l][rounds / 2] / 1e9);
        if (l && memcmp(out[l], out[0], n * ob)) printf(" MISMATCH");
    }
    printf(" GB/s\n");
    return 0;
}
