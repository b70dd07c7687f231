"""Chain kernel (csrc/chain.c) ns per lane of single operations at one thread, best of 5 (decision
EM-18, EM-19): the roundings, 16-bit loads and stores against a float32 multiply.

    python bench/probe_chain.py [lanes]   # default 1 Mi lanes (in cache on most CPUs)"""
import sys
import time

import ml_dtypes
import numpy as np

from pyprecision.kernel.chain import Program

F32, BF = np.float32, np.dtype(ml_dtypes.bfloat16)
n = int(sys.argv[1]) if len(sys.argv) > 1 else 1 << 20
x = np.random.default_rng(0).standard_normal(n).astype(F32)


def t(name, prog, ins):
    prog(ins, n, 1)
    best = 1e9
    for _ in range(5):
        s = time.perf_counter()
        prog(ins, n, 1)
        best = min(best, time.perf_counter() - s)
    print(f"{name:28s} {best * 1e9 / n:6.2f} ns/lane")


t("mul f32->f32", Program([("mul", 1, 0, 0)], 2, 1, [(1, F32)]), [x])
t("round_bf16 f32->f32", Program([("round_bf16", 1, 0)], 2, 1, [(1, F32)]), [x])
t("round_fp16 f32->f32", Program([("round_fp16", 1, 0)], 2, 1, [(1, F32)]), [x])
t("load bf16 -> f32", Program([("copy", 1, 0)], 2, 1, [(1, F32)]), [x.astype(BF)])
t("load fp16 -> f32", Program([("copy", 1, 0)], 2, 1, [(1, F32)]), [x.astype(np.float16)])
t("round+store bf16", Program([("round_bf16", 1, 0)], 2, 1, [(1, BF)]), [x])
t("round+store fp16", Program([("round_fp16", 1, 0)], 2, 1, [(1, np.float16)]), [x])
t("round_fp8e4 f32->f32", Program([("round_fp8e4", 1, 0)], 2, 1, [(1, F32)]), [x])
t("round_fp8e4m3fn f32->f32", Program([("round_fp8e4m3fn", 1, 0)], 2, 1, [(1, F32)]), [x])
t("round_fp8e5 f32->f32", Program([("round_fp8e5", 1, 0)], 2, 1, [(1, F32)]), [x])
