/* Which fast path this CPU can run. */
#include "pyprecision.h"

#include <stdlib.h>
#include <string.h>

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

/* Whether the AVX-512 set's float32 PE dot runs the tall tile (16 rows x 16 columns, dot_avx512.c):
 * on AMD family 19h with the AVX-512 set (Zen 4), where it was measured faster (K12); elsewhere the
 * 6 x 64 tile. PYPRECISION_DOT_TILE=tall or =wide forces one (to compare them, and so every
 * machine's tests run both); the result never depends on it. The environment is read once. */
int pp_isa_dot_tall(void) {
    static _Atomic int tall = -1;
    int t = tall;
    if (t < 0) {
        t = 0;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_cpu_init();
        t = pp_isa_supported(PP_ISA_AVX512) && __builtin_cpu_is("amd") &&
            __builtin_cpu_is("amdfam19h");
#endif
        const char *env = getenv("PYPRECISION_DOT_TILE");
        if (env && !strcmp(env, "tall")) t = 1;
        if (env && !strcmp(env, "wide")) t = 0;
        tall = t;
    }
    return t;
}

int pp_isa_auto(void) {
    if (pp_isa_supported(PP_ISA_AVX512)) return PP_ISA_AVX512;
    if (pp_isa_supported(PP_ISA_AVX2)) return PP_ISA_AVX2;
    return PP_ISA_PORTABLE;
}
