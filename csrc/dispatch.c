/* Dispatch: which kernel set runs a call, and whether its output is written with streaming stores.
 *
 * The drivers (convert.c's pp_encode, decode.c's pp_decode) and pp_random_words call down into
 * this unit, and it calls down into the kernel sets (kern_*.c), which call only the decode tables
 * (tables.c): formats.c <- tables.c <- kern_*.c <- dispatch.c <- convert.c, decode.c.
 */
#include "pyprecision.h"

#include <stdio.h>
#include <unistd.h>

const pp_kernel_set *pp_kernels_for(int isa) {
    switch (isa) {
    case PP_ISA_PORTABLE: return &pp_kernels_portable;
    case PP_ISA_AVX2: return &pp_kernels_avx2;
    case PP_ISA_AVX512: return &pp_kernels_avx512;
    default: return NULL;
    }
}

/* Streaming stores pay off once the data cannot stay in the cache anyway. */
static _Atomic long long stream_threshold = -1;

/* The last-level cache size: sysfs first (glibc's sysconf reports 10x the real L3 on some AMD
 * virtual machines), then sysconf, capped; 32 MiB when unknown. */
static long long default_stream_threshold(void) {
    long long bytes = -1;
    FILE *f = fopen("/sys/devices/system/cpu/cpu0/cache/index3/size", "r");
    if (f) {
        char unit = 0;
        long long v = 0;
        if (fscanf(f, "%lld%c", &v, &unit) >= 1 && v > 0)
            bytes = unit == 'K' ? v << 10 : unit == 'M' ? v << 20 : v;
        fclose(f);
    }
#ifdef _SC_LEVEL3_CACHE_SIZE
    if (bytes <= 0) bytes = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
    if (bytes <= 0 || bytes > (256LL << 20)) bytes = 32LL << 20;
    return bytes;
}

long long pp_set_stream_threshold(long long bytes) {
    long long prev = stream_threshold;
    if (prev < 0) prev = default_stream_threshold();
    stream_threshold = bytes < 0 ? -1 : bytes;
    return prev;
}

int pp_use_streaming(size_t bytes) {
    long long th = stream_threshold;
    if (th < 0) {
        th = default_stream_threshold();
        stream_threshold = th;
    }
    return bytes > (unsigned long long)th;
}

int pp_random_words(uint64_t seed, uint64_t first, size_t n, uint32_t *out) {
    if (n && !out) return PP_EINVAL;
    /* the vectorized generator of the best instruction set (the same words as pp_sr_words_ref) */
    pp_kernels_for(pp_isa_auto())->sr_words(seed, first, n, out);
    return PP_OK;
}
