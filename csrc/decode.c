/* Decode: format codes -> float32, exact (CAST_SEMANTICS.md §6) — the driver. The reference
 * decoder and its tables are tables.c; the kernel set comes from dispatch.c. */
#include "pyprecision.h"

typedef struct {
    const void *bits;
    int format;
    float *dst;
    const pp_kernel_set *ks; /* NULL: the reference decoder */
    int stream;        /* through the block buffer with streaming stores */
    int stream_direct; /* the set's streaming decoder, where it has one */
} decode_job;

#define PP_DBLOCK 2048

static void decode_range(void *ctx, size_t begin, size_t end) {
    const decode_job *j = ctx;
    float *restrict out = j->dst;
    const int bytes = pp_formats[j->format].bits / 8;
    if (!j->ks) {
        for (size_t i = begin; i < end; i++) {
            uint32_t c = bytes == 1 ? ((const uint8_t *)j->bits)[i]
                         : bytes == 2 ? ((const uint16_t *)j->bits)[i]
                                      : ((const uint32_t *)j->bits)[i];
            out[i] = pp_decode_one(j->format, c);
        }
        return;
    }
    if (j->stream_direct && j->ks->decode_stream(j->format, (const char *)j->bits + begin * (size_t)bytes,
                                          end - begin, (uint32_t *)(out + begin))) {
        j->ks->sfence();
        return;
    }
    _Alignas(64) uint32_t obuf[PP_DBLOCK];
    for (size_t b = begin; b < end; b += PP_DBLOCK) {
        const size_t n = end - b < PP_DBLOCK ? end - b : PP_DBLOCK;
        const char *in = (const char *)j->bits + b * (size_t)bytes;
        if (j->stream) {
            j->ks->decode(j->format, in, n, obuf);
            j->ks->stream(out + b, obuf, n * sizeof(float));
        } else {
            j->ks->decode(j->format, in, n, (uint32_t *)(out + b));
        }
    }
    if (j->stream) j->ks->sfence();
}

int pp_decode(const void *bits, size_t n, int format, float *dst, int threads, int isa) {
    if (format < 0 || format >= PP_NFORMATS) return PP_EINVAL;
    if (n && (!bits || !dst)) return PP_EINVAL;
    if (isa == PP_ISA_AUTO) isa = pp_isa_auto();
    if (isa < PP_ISA_REFERENCE || isa > PP_ISA_AVX512) return PP_EINVAL;
    if (!pp_isa_supported(isa)) return PP_EUNSUPPORTED;
    if (n == 0) return PP_OK;
    decode_job j = {bits, format, dst, pp_kernels_for(isa), 0, 0};
    const size_t moved = n * (size_t)(pp_formats[format].bits / 8 + 4);
    j.stream = j.ks != NULL && pp_use_streaming(moved, PP_STREAM_DECODE);
    /* the AVX2 set's fp16 and fp32r decoders that stream their own output have their own
     * threshold (speed.md S28: measured on one family, never elsewhere) */
    const int wide_avx2 = isa == PP_ISA_AVX2 && (format == PP_FMT_FP16 || format == PP_FMT_FP32R);
    j.stream_direct = j.ks != NULL &&
                      pp_use_streaming(moved, wide_avx2 ? PP_STREAM_DECODE_WIDE : PP_STREAM_DECODE_DIRECT);
    return pp_parallel_for(n, (size_t)1 << 17, threads, decode_range, &j);
}
