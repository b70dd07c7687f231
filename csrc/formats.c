/* The one format table (CAST_SEMANTICS.md §1). Python reads it; nothing retypes it. */
#include "pyprecision.h"

const pp_format_info pp_formats[PP_NFORMATS] = {
    /* name, aliases, numpy dtype, bits, e, m, bias, inf, shift, max, inf, nan(ml), nan(nv),
       max value, min normal, min subnormal, HLO name, IR name, safetensors name, source type */
    [PP_FMT_BF16] = {"bf16", "bfloat16", "bfloat16", 16, 8, 7, 127, 1, 0, 0x7f7fu, 0x7f80u, 0x7fc0u,
                     0x7fffu, 3.3895313892515355e38, 0x1p-126, 0x1p-133, "bf16", "bfloat16", "BF16",
                     PP_T_BF16},
    [PP_FMT_FP16] = {"fp16", "float16,half", "float16", 16, 5, 10, 15, 1, 0, 0x7bffu, 0x7c00u, 0x7e00u,
                     0x7fffu, 65504.0, 0x1p-14, 0x1p-24, "f16", "float16", "F16", PP_T_F16},
    [PP_FMT_FP32R] = {"fp32r", "tf32,float32r", "float32", 32, 8, 10, 127, 1, 13, 0x7f7fe000u,
                      0x7f800000u, 0x7fc00000u, 0x7fffe000u, 0x1.ffcp127, 0x1p-126, 0x1p-136, "",
                      "float32r", "F32", PP_T_F32},
    [PP_FMT_FP8E4] = {"fp8e4", "fp8_e4m3,float8_e4m3,float8e4", "float8_e4m3", 8, 4, 3, 7, 1, 0, 0x77u,
                      0x78u, 0x7cu, 0x7fu, 240.0, 0x1p-6, 0x1p-9, "f8e4m3", "float8e4", "", PP_T_FP8E4},
    [PP_FMT_FP8E4M3FN] = {"fp8e4m3fn", "float8_e4m3fn,fp8_e4m3fn", "float8_e4m3fn", 8, 4, 3, 7, 0, 0,
                          0x7eu, 0x0u, 0x7fu, 0x7fu, 448.0, 0x1p-6, 0x1p-9, "f8e4m3fn",
                          "float8e4m3fn", "F8_E4M3", PP_T_FP8E4M3FN},
    [PP_FMT_FP8E5] = {"fp8e5", "fp8_e5m2,float8_e5m2,float8e5,float8e5m2", "float8_e5m2", 8, 5, 2, 15,
                      1, 0, 0x7bu, 0x7cu, 0x7eu, 0x7fu, 57344.0, 0x1p-14, 0x1p-16, "f8e5m2",
                      "float8_e5m2", "F8_E5M2", PP_T_FP8E5},
};

int pp_format_count(void) { return PP_NFORMATS; }

const pp_format_info *pp_format_get(int index) {
    if (index < 0 || index >= PP_NFORMATS) return NULL;
    return &pp_formats[index];
}

int pp_params_init(pp_params *pr, const pp_cast_options *opt) {
    if (!pr || !opt) return PP_EINVAL;
    if (opt->format < 0 || opt->format >= PP_NFORMATS) return PP_EINVAL;
    if (opt->rounding < PP_RNE || opt->rounding > PP_STOCHASTIC) return PP_EINVAL;
    if (opt->nan_policy != PP_NAN_MLDTYPES && opt->nan_policy != PP_NAN_NVIDIA) return PP_EINVAL;
    const pp_format_info *f = &pp_formats[opt->format];
    pr->p = f->mantissa_bits;
    pr->bias = f->bias;
    pr->emin = 1 - f->bias;
    pr->shift = f->storage_shift;
    pr->sign_bit = 1u << (f->bits - 1);
    pr->maxc = f->max_bits >> f->storage_shift;
    pr->rounding = opt->rounding;
    for (int s = 0; s < 2; s++) {
        uint32_t sb = s ? pr->sign_bit : 0u;
        /* §4: the policy encodes NaN inputs: ml_dtypes keeps the sign, NVIDIA drops it. */
        pr->nan[s] = opt->nan_policy == PP_NAN_NVIDIA ? f->nan_nvidia : (f->nan_mldtypes | sb);
        /* §3: saturation maps ±inf to ±max; otherwise inf stays inf, or becomes the NaN of a
         * format without one. §4: a NaN produced from a number keeps that number's sign under
         * either policy (e4m3fn: +inf and +overflow 0x7f, -inf and -overflow 0xff). */
        const uint32_t made_nan = f->nan_mldtypes | sb;
        pr->inf[s] = opt->saturate ? (f->max_bits | sb) : f->has_inf ? (f->inf_bits | sb) : made_nan;
        /* §2/§3: a finite overflow stops at max under rtz or saturation. */
        pr->ovf[s] = (opt->saturate || opt->rounding == PP_RTZ) ? (f->max_bits | sb) : pr->inf[s];
        if (!opt->saturate && opt->rounding == PP_RTZ) pr->ovf[s] = f->max_bits | sb;
    }
    pr->dovf = pr->ovf[0] ^ pr->ovf[1];
    pr->dinf = pr->inf[0] ^ pr->inf[1];
    pr->dnan = pr->nan[0] ^ pr->nan[1];
    pr->sign_pos = f->bits - 1;
    pr->simple = pr->dovf != pr->sign_bit || pr->dinf != pr->sign_bit ||
                         pr->dnan != pr->sign_bit ? 0
                 : pr->ovf[0] == pr->inf[0] ? 1 : 2;
    pr->has_sub = 1;
    pr->fp_default = 0;
    pr->hw_fp16 = 0;
    return PP_OK;
}
