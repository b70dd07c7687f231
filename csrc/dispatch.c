/* Dispatch: which kernel set runs a call, and whether its output is written with streaming stores.
 *
 * The drivers (convert.c's pp_encode, decode.c's pp_decode) and pp_random_words call down into
 * this unit, and it calls down into the kernel sets (kern_*.c), which call only the decode tables
 * (tables.c): formats.c <- tables.c <- kern_*.c <- dispatch.c <- convert.c, decode.c.
 */
#include "pyprecision.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

const pp_kernel_set *pp_kernels_for(int isa) {
    switch (isa) {
    case PP_ISA_PORTABLE: return &pp_kernels_portable;
    case PP_ISA_AVX2: return &pp_kernels_avx2;
    case PP_ISA_AVX512: return &pp_kernels_avx512;
    default: return NULL;
    }
}

/* Streaming stores: when a call moves more bytes (input + output) than a threshold, its output
 * is written with non-temporal stores. Six thresholds, because the ways of streaming cost
 * differently: a kernel that streams its own output (enc_stream, decode_stream: no extra pass;
 * one threshold for encoders, one for decoders) and the block buffer that other kernels write
 * into, copied out with streaming stores (a second pass over every output byte, which pays only
 * where the kernel itself is near the memory floor; encoders and pp_decode apart, and encoders
 * under stochastic rounding apart again: compute-bound, speed.md S25).
 *
 * The defaults are measured per CPU family, not read from the cache sizes the system reports
 * (sysfs and sysconf report the host's L3 in a virtual machine: 300 MiB on an Intel VM that can
 * use 4-24 MiB, 10x the real L3 on an AMD one). docs/decisions/speed.md S16 has the figures
 * (bench/bench_stream_threshold.py): */
#define PP_MIB (1LL << 20)
#define PP_NEVER (1LL << 62)

/* The measured defaults, by kind (PP_STREAM_BUFFER ... PP_STREAM_SR_DIRECT), into th. */
static void measured_thresholds(long long th[PP_STREAM_KINDS]) {
    for (int k = 0; k < PP_STREAM_KINDS; k++) th[k] = 8 * PP_MIB; /* Emerald Rapids' (see the end) */
#if defined(__x86_64__) || defined(__i386__)
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return;
    const unsigned base_family = (a >> 8) & 0xfu;
    unsigned family = base_family, model = (a >> 4) & 0xfu;
    if (base_family == 0xfu) family += (a >> 20) & 0xffu;
    /* the extended model counts where the base family is 15 or 6 (it was tested on the family
     * after the extension was added, which left AMD's models without their high nibble) */
    if (base_family == 0xfu || base_family == 6u) model |= ((a >> 16) & 0xfu) << 4;
    if (family == 25u && !pp_isa_supported(PP_ISA_AVX512)) {
        /* AMD Zen 3 (AVX2 kernels): direct streaming wins from 4 MiB on (1.08-1.37x); the block
         * buffer loses at every size measured, 4-128 MiB (0.72-1.0x for bf16, float64 sources,
         * stochastic rounding): the AVX2 lane kernels are not at the floor, the copy is extra;
         * decode (2 B -> 4 B, twice the bytes out) gains from 32 MiB on (1.18-1.40x) */
        th[PP_STREAM_DIRECT] = 4 * PP_MIB;
        th[PP_STREAM_BUFFER] = PP_NEVER;
        th[PP_STREAM_DECODE] = 32 * PP_MIB;
        /* the AVX2 decoders that stream their own output (session 5, speed.md S19): fp8 wins from
         * 2 MiB (1.02-1.46x), bf16 loses below 8 MiB (0.78-0.95x) and wins from 16 (1.35-1.75x) */
        th[PP_STREAM_DECODE_DIRECT] = 8 * PP_MIB;
    } else if (family == 25u) {
        /* AMD Zen 4 (AVX-512): the 32 MiB (its L3) of issue 5's measurements, every kind */
        for (int k = 0; k < 4; k++) th[k] = 32 * PP_MIB;
    }
    /* Intel family 6 (Emerald Rapids, model 207, measured in issue 16: 8 MiB gave +5-40 % for
     * 8-32 MiB calls against 32 MiB) and every other CPU: the 8 MiB above */
    /* stochastic rounding's block buffer: as the others' unless measured (the SR kernels are
     * compute-bound, so the copy pass is extra work, not hidden under memory time) */
    th[PP_STREAM_SR_BUFFER] = th[PP_STREAM_BUFFER];
    /* the SR kernel that streams its own fp32r codes: never unless measured (speed.md S26) */
    th[PP_STREAM_SR_DIRECT] = PP_NEVER;
    /* the AVX2 set's fp16 and fp32r decoders that stream their own output (speed.md S28): never
     * unless measured (the block buffer, as before) */
    th[PP_STREAM_DECODE_WIDE] = PP_NEVER;
    if (family == 25u && model == 1u && !pp_isa_supported(PP_ISA_AVX512)) {
        /* AMD Zen 3 (EPYC, family 25 model 1; session 15, speed.md S28), streamed / plain
         * stores: fp16 0.87-0.97 at 2-8 MiB, 1.45-1.73 at 16-64 MiB; fp32r 1.00-1.15 at 2-8 MiB,
         * 1.46-1.64 at 16-64 (and against the block buffer streamed, 96 MiB calls: fp16 0.63-0.76
         * -> 1.00-1.11 of the floor, fp32r 0.63-0.75 -> 0.81-0.98) */
        th[PP_STREAM_DECODE_WIDE] = 8 * PP_MIB;
    }
    if (family == 6u && model == 167u) {
        /* Intel with AVX512-FP16 (family 6 model 167 as its hypervisor reports it; session 11,
         * speed.md S25): the buffer streamed cost 17-25 % on float64 sources and 4-12 % on
         * float32 ones in 16 Mi-element calls (80-192 MB moved), one thread, against plain
         * stores into the destination */
        th[PP_STREAM_SR_BUFFER] = PP_NEVER;
        /* SR to 4-byte codes (fp32r) streamed by the kernel itself (session 14, speed.md S26):
         * fp32r SR from float32 0.48-0.60 -> 0.52-0.74 of the floor, from float64 0.66-0.69 ->
         * 1.02-1.06, in 16 Mi-element calls against the block buffer / plain stores */
        th[PP_STREAM_SR_DIRECT] = th[PP_STREAM_DIRECT];
    }
#endif
}

static _Atomic long long stream_override = -1; /* pp_set_stream_threshold; -1: the defaults */
/* by kind: buffer, direct, decode buffer, decode direct, SR buffer, SR direct, AVX2 fp16 / fp32r
 * decode direct */
static _Atomic long long stream_th[PP_STREAM_KINDS] = {-1, -1, -1, -1, -1, -1, -1};

long long pp_set_stream_threshold(long long bytes) {
    const long long prev = stream_override;
    stream_override = bytes < 0 ? -1 : bytes;
    return prev;
}

int pp_use_streaming(size_t bytes, int kind) {
    const long long o = stream_override;
    if (o >= 0) return bytes > (unsigned long long)o;
    if (kind < 0 || kind >= PP_STREAM_KINDS) kind = 0;
    long long th = stream_th[kind];
    if (th < 0) {
        long long t[PP_STREAM_KINDS];
        measured_thresholds(t);
        for (int k = 0; k < PP_STREAM_KINDS; k++) stream_th[k] = t[k];
        th = stream_th[kind];
    }
    return bytes > (unsigned long long)th;
}

int pp_random_words(uint64_t seed, uint64_t first, size_t n, uint32_t *out) {
    if (n && !out) return PP_EINVAL;
    /* the vectorized generator of the best instruction set (the same words as pp_sr_words_ref) */
    pp_kernels_for(pp_isa_auto())->sr_words(seed, first, n, out);
    return PP_OK;
}
