/* The emulated AVX-512 test build (-DPP_EMULATE_AVX512, csrc/emu512.h): every AVX-512 feature the
 * core asks the CPU about (avx512f/bw/vl/dq, and any other avx512* a kernel checks, such as
 * avx512bf16) is emulated with AVX2 + FMA + F16C + BMI2, so it is "present" wherever those are.
 * The one place for it: included by isa.c and by emu512.h (so a check inside kern_avx512.c or its
 * headers is covered too). */
#ifndef PP_EMU512_CPU_H
#define PP_EMU512_CPU_H
#ifdef PP_EMULATE_AVX512
#define __builtin_cpu_supports(f)                                                                  \
    (__builtin_strncmp((f), "avx512", 6) == 0                                                     \
         ? __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&                     \
               __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("f16c")                   \
         : __builtin_cpu_supports(f))
#endif
#endif
