/* Which fast path this CPU can run. */
#include "pyprecision.h"

#include <stdlib.h>

#include "emu512_cpu.h" /* the emulated AVX-512 test build only */

int pp_isa_supported(int isa) {
    switch (isa) {
    case PP_ISA_REFERENCE:
    case PP_ISA_PORTABLE: return 1;
#if defined(__x86_64__) || defined(__i386__)
    case PP_ISA_AVX2:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi2") &&
               __builtin_cpu_supports("f16c");
    case PP_ISA_AVX512:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
               __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("f16c");
#endif
    default: return 0;
    }
}

/* Whether the AVX-512 set may use vcvtneps2bf16 (kern_wide_avx512.h): the CPU has AVX512_BF16 on
 * top of the set's features, and PYPRECISION_AVX512_BF16 is not "0" (to compare the two paths on
 * such a CPU). Read once. */
int pp_isa_avx512_bf16(void) {
    static _Atomic int have = -1;
    int h = have;
    if (h < 0) {
        h = 0;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_cpu_init();
        h = pp_isa_supported(PP_ISA_AVX512) && __builtin_cpu_supports("avx512bf16");
#endif
        const char *env = getenv("PYPRECISION_AVX512_BF16");
        if (env && env[0] == '0' && env[1] == '\0') h = 0;
        have = h;
    }
    return h;
}

/* Whether the PE dot's fused tile (K11) may run with instruction set `isa`: AVX-512 F has FMA, an
 * AVX2 CPU must say so; PYPRECISION_DOT_FMA=0 turns it off (to compare the two tiles on one CPU).
 * The environment is read once. */
int pp_isa_dot_fma(int isa) {
    static _Atomic int off = -1;
    int o = off;
    if (o < 0) {
        const char *env = getenv("PYPRECISION_DOT_FMA");
        o = off = env && env[0] == '0' && env[1] == '\0';
    }
    if (o) return 0;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (isa == PP_ISA_AVX512) return pp_isa_supported(PP_ISA_AVX512);
    if (isa == PP_ISA_AVX2) return pp_isa_supported(PP_ISA_AVX2) && __builtin_cpu_supports("fma");
#endif
    return 0;
}

int pp_isa_auto(void) {
    if (pp_isa_supported(PP_ISA_AVX512)) return PP_ISA_AVX512;
    if (pp_isa_supported(PP_ISA_AVX2)) return PP_ISA_AVX2;
    return PP_ISA_PORTABLE;
}
