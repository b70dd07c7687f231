"""CAST_SEMANTICS.md §9 and §3 as literal expected values, copied from the spec by hand."""
from __future__ import annotations

COLUMNS = ("bf16", "fp16", "fp8e4", "fp8e4m3fn", "fp8e5", "fp32r")

# §9: fp32 input, rne, saturate=False, nan="ml_dtypes".  (label, fp32 bits, codes in COLUMNS order)
EDGE_TABLE: tuple[tuple[str, int, tuple[int, ...]], ...] = (
    ("-0", 0x80000000, (0x8000, 0x8000, 0x80, 0x80, 0x80, 0x80000000)),
    ("2^-10", 0x3A800000, (0x3A80, 0x1400, 0x00, 0x00, 0x14, 0x3A800000)),
    ("1.5*2^-9", 0x3B400000, (0x3B40, 0x1A00, 0x02, 0x02, 0x1A, 0x3B400000)),
    ("1+2^-4", 0x3F880000, (0x3F88, 0x3C40, 0x38, 0x38, 0x3C, 0x3F880000)),
    ("1+3*2^-4", 0x3F980000, (0x3F98, 0x3CC0, 0x3A, 0x3A, 0x3D, 0x3F980000)),
    ("1+2^-8", 0x3F808000, (0x3F80, 0x3C04, 0x38, 0x38, 0x3C, 0x3F808000)),
    ("1+2^-11", 0x3F801000, (0x3F80, 0x3C00, 0x38, 0x38, 0x3C, 0x3F800000)),
    ("248", 0x43780000, (0x4378, 0x5BC0, 0x78, 0x78, 0x5C, 0x43780000)),
    ("464", 0x43E80000, (0x43E8, 0x5F40, 0x78, 0x7E, 0x5F, 0x43E80000)),
    ("476", 0x43EE0000, (0x43EE, 0x5F70, 0x78, 0x7F, 0x5F, 0x43EE0000)),
    ("61440", 0x47700000, (0x4770, 0x7B80, 0x78, 0x7F, 0x7C, 0x47700000)),
    ("65520", 0x477FF000, (0x4780, 0x7C00, 0x78, 0x7F, 0x7C, 0x47800000)),
    ("0x7f7f8000", 0x7F7F8000, (0x7F80, 0x7C00, 0x78, 0x7F, 0x7C, 0x7F7F8000)),
    ("0x7f7ff000", 0x7F7FF000, (0x7F80, 0x7C00, 0x78, 0x7F, 0x7C, 0x7F800000)),
    ("-inf", 0xFF800000, (0xFF80, 0xFC00, 0xF8, 0xFF, 0xFC, 0xFF800000)),
    ("-qNaN", 0xFFC00000, (0xFFC0, 0xFE00, 0xFC, 0xFF, 0xFE, 0xFFC00000)),
    ("sNaN", 0x7F800001, (0x7FC0, 0x7E00, 0x7C, 0x7F, 0x7E, 0x7FC00000)),
)

# §9 last paragraph / §3: saturate=True (rne, nan="ml_dtypes").  (fmt, fp32 bits, code)
SATURATE_ROWS: tuple[tuple[str, int, int], ...] = (
    ("fp8e4", 0x43780000, 0x77),  # 248
    ("fp8e4m3fn", 0x43EE0000, 0x7E),  # 476
    ("fp8e5", 0x47700000, 0x7B),  # 61440
    ("bf16", 0x7F800000, 0x7F7F), ("bf16", 0xFF800000, 0xFF7F),
    ("fp16", 0x7F800000, 0x7BFF), ("fp16", 0xFF800000, 0xFBFF),
    ("fp32r", 0x7F800000, 0x7F7FE000), ("fp32r", 0xFF800000, 0xFF7FE000),
    ("fp8e4", 0x7F800000, 0x77), ("fp8e4", 0xFF800000, 0xF7),
    ("fp8e4m3fn", 0x7F800000, 0x7E), ("fp8e4m3fn", 0xFF800000, 0xFE),
    ("fp8e5", 0x7F800000, 0x7B), ("fp8e5", 0xFF800000, 0xFB),
    # NaN unchanged under saturation
    ("bf16", 0xFFC00000, 0xFFC0), ("fp16", 0x7F800001, 0x7E00), ("fp32r", 0xFFC00000, 0xFFC00000),
    ("fp8e4", 0xFFC00000, 0xFC), ("fp8e4m3fn", 0x7F800001, 0x7F), ("fp8e5", 0xFFC00000, 0xFE),
    # everything else identical to the non-saturating result (§3)
    ("fp8e4m3fn", 0x43E80000, 0x7E),  # 464 -> 448 (tie to even)
    ("fp8e4", 0x3F880000, 0x38),
)

# §3 consequences spelled out in prose (saturate=False): (fmt, fp32 bits, code)
OVERFLOW_ROWS: tuple[tuple[str, int, int], ...] = (
    ("fp8e4", 0x43780000, 0x78),  # 248 -> inf (240 odd, tie goes up)
    ("fp8e4m3fn", 0x43E80000, 0x7E),  # 464 -> 448
    ("fp8e4m3fn", 0x43E80001, 0x7F),  # anything above 464 -> NaN
    ("fp8e4m3fn", 0xC3E80001, 0xFF),
    ("fp8e5", 0x47700000, 0x7C),  # 61440 -> inf
)

# §4 nan="nvidia": sign dropped.  (fmt, code for any NaN input)
NVIDIA_NAN = {"bf16": 0x7FFF, "fp16": 0x7FFF, "fp32r": 0x7FFFE000, "fp8e4": 0x7F,
              "fp8e4m3fn": 0x7F, "fp8e5": 0x7F}
ML_DTYPES_NAN = {"bf16": 0x7FC0, "fp16": 0x7E00, "fp32r": 0x7FC00000, "fp8e4": 0x7C,
                 "fp8e4m3fn": 0x7F, "fp8e5": 0x7E}

# §2 rtz: never becomes inf, stops at ±max; §2 rna ties away.  (fmt, rounding, fp32 bits, code)
MODE_ROWS: tuple[tuple[str, str, int, int], ...] = (
    ("fp8e4", "rtz", 0x43780000, 0x77),  # 248 -> 240
    ("fp8e4", "rtz", 0x7F7FFFFF, 0x77),  # f32 max -> max, not inf
    ("fp8e4m3fn", "rtz", 0x447A0000, 0x7E),  # 1000 -> 448, not NaN
    ("fp8e5", "rtz", 0x47700000, 0x7B),
    ("bf16", "rtz", 0x7F7FFFFF, 0x7F7F),
    ("fp16", "rtz", 0x477FF000, 0x7BFF),  # 65520 -> 65504
    ("fp32r", "rtz", 0x7F7FFFFF, 0x7F7FE000),
    ("fp16", "rtz", 0x7F800000, 0x7C00),  # inf input stays inf (saturate=False)
    ("fp8e4", "rtz", 0xFF800000, 0xF8),
    ("fp8e4", "rna", 0x3F880000, 0x39),  # 1 + 2^-4: tie away -> 1.125
    ("fp8e4", "rna", 0xBF880000, 0xB9),
    ("fp8e4", "rna", 0x3A800000, 0x01),  # 2^-10: half the smallest subnormal -> away
    ("bf16", "rna", 0x3F808000, 0x3F81),  # 1 + 2^-8
    ("fp16", "rna", 0x3F801000, 0x3C01),  # 1 + 2^-11
    ("fp32r", "rna", 0x3F801000, 0x3F802000),
    ("fp8e4m3fn", "rna", 0x43E80000, 0x7F),  # 464 -> 480: overflow -> NaN
    ("fp8e4", "rtz", 0x3F9FFFFF, 0x39),  # just below 1.25 -> 1.125
    ("fp8e4", "rtz", 0xBF9FFFFF, 0xB9),
    ("fp8e4", "rtz", 0x3AFFFFFF, 0x00),  # just below 2^-9 (smallest subnormal) -> +0
    ("fp8e4", "rtz", 0xBAFFFFFF, 0x80),  # sign of zero kept
    ("fp8e4", "rne", 0xBA800000, 0x80),  # -2^-10: half the smallest subnormal -> -0
)

# §3/§4 specials with saturate=False, for both nan policies and every deterministic rounding.
# The policy encodes NaN *inputs* only; a NaN made from a number keeps its sign (e4m3fn: -inf and
# -overflow -> 0xff under nvidia too, as measured on NVIDIA hardware).  Codes in COLUMNS order.
NEG_INF = (0xFF80, 0xFC00, 0xF8, 0xFF, 0xFC, 0xFF800000)  # every rounding, both policies
POS_INF = (0x7F80, 0x7C00, 0x78, 0x7F, 0x7C, 0x7F800000)
# -f32max / +f32max (0xff7fffff / 0x7f7fffff): rne and rna overflow, rtz stops at max
NEG_OVF = {"rne": NEG_INF, "rna": NEG_INF, "rtz": (0xFF7F, 0xFBFF, 0xF7, 0xFE, 0xFB, 0xFF7FE000)}
POS_OVF = {"rne": POS_INF, "rna": POS_INF, "rtz": (0x7F7F, 0x7BFF, 0x77, 0x7E, 0x7B, 0x7F7FE000)}
# -qNaN (0xffc00000) and +qNaN (0x7fc00000) inputs, by policy, every rounding
NEG_NAN = {"ml_dtypes": (0xFFC0, 0xFE00, 0xFC, 0xFF, 0xFE, 0xFFC00000),
           "nvidia": (0x7FFF, 0x7FFF, 0x7F, 0x7F, 0x7F, 0x7FFFE000)}
POS_NAN = {"ml_dtypes": (0x7FC0, 0x7E00, 0x7C, 0x7F, 0x7E, 0x7FC00000),
           "nvidia": (0x7FFF, 0x7FFF, 0x7F, 0x7F, 0x7F, 0x7FFFE000)}
