/* pyprecision C core — the public API.
 *
 * This file is read twice: by the C compiler (through pyprecision.h) and by cffi's cdef (by
 * setup_build.py), so it holds plain declarations and integer #defines only: no includes, no
 * macros with bodies, no conditionals.
 *
 * Every function returns a status code (PP_OK on success) and never aborts or prints.
 */

#define PP_OK 0
#define PP_EINVAL 1      /* an argument is out of range (format, rounding, type code ...) */
#define PP_ENOMEM 2      /* an allocation failed */
#define PP_ETHREAD 3     /* the thread pool could not start a worker */
#define PP_EUNSUPPORTED 4 /* the requested instruction set is not available on this CPU */

/* Rounding modes (CAST_SEMANTICS.md §2). */
#define PP_RNE 0
#define PP_RTZ 1
#define PP_RNA 2
#define PP_STOCHASTIC 3

/* NaN encoding policies (§4). */
#define PP_NAN_MLDTYPES 0
#define PP_NAN_NVIDIA 1

/* Row indices of the format table (formats.c, CAST_SEMANTICS.md §1); the fp8 rows are adjacent. */
#define PP_FMT_BF16 0
#define PP_FMT_FP16 1
#define PP_FMT_FP32R 2
#define PP_FMT_FP8E4 3
#define PP_FMT_FP8E4M3FN 4
#define PP_FMT_FP8E5 5

/* Element types of source / destination arrays. */
#define PP_T_F32 0
#define PP_T_F64 1
#define PP_T_F16 2
#define PP_T_BF16 3
#define PP_T_FP8E4 4
#define PP_T_FP8E4M3FN 5
#define PP_T_FP8E5 6
#define PP_T_I8 7
#define PP_T_I16 8
#define PP_T_I32 9
#define PP_T_I64 10
#define PP_T_U8 11
#define PP_T_U16 12
#define PP_T_U32 13
#define PP_T_U64 14

/* Instruction-set selection for the fast paths. PP_ISA_REFERENCE is the generic one-element-at-a-
 * time converter every fast path is proven equal to. */
#define PP_ISA_AUTO -1
#define PP_ISA_REFERENCE 0
#define PP_ISA_PORTABLE 1
#define PP_ISA_AVX2 2
#define PP_ISA_AVX512 3

/* One row of the format table (CAST_SEMANTICS.md §1). Codes are magnitudes in storage position. */
typedef struct {
    const char *name;
    const char *aliases;      /* comma-separated */
    const char *numpy_dtype;  /* name of the numpy / ml_dtypes dtype of decoded values */
    int bits;                 /* storage width: 8, 16 or 32 */
    int exponent_bits;
    int mantissa_bits;
    int bias;
    int has_inf;
    int storage_shift;        /* fp32r keeps its 1-8-10 value in the top 19 bits: 13 */
    uint32_t max_bits;        /* largest finite, positive */
    uint32_t inf_bits;        /* +inf, or 0 when the format has none */
    uint32_t nan_mldtypes;    /* canonical quiet NaN, positive (sign is ORed in by policy) */
    uint32_t nan_nvidia;      /* NVIDIA's NaN (sign dropped) */
    double max_value;
    double min_normal;
    double min_subnormal;
    /* The format's names in the other vocabularies ("" where a vocabulary has none). */
    const char *hlo_name;     /* XLA HLO element type: bf16, f16, f8e4m3 (IEEE-like), f8e4m3fn ... */
    const char *ir_name;      /* the loop IR's dtype: bfloat16, float16, float32r, float8e4 ... */
    const char *safetensors;  /* safetensors dtype of the values: BF16, F8_E4M3 (= e4m3fn) ... */
    int source_type;          /* PP_T_* code of an array of the decoded values' dtype */
} pp_format_info;

typedef struct {
    int format;                   /* index into the format table */
    int rounding;                 /* PP_RNE ... */
    int saturate;                 /* 0 or 1 */
    int nan_policy;               /* PP_NAN_* */
    uint64_t seed;                /* stochastic: key of the counter-based generator */
    const uint32_t *random_bits;  /* stochastic: one word per element, or NULL for the generator */
    int threads;                  /* 0: all cores */
    int isa;                      /* PP_ISA_* */
} pp_cast_options;

int pp_format_count(void);
const pp_format_info *pp_format_get(int index);

/* Encode n elements of type src_type into raw bits (uint8/uint16/uint32 by the format's width). */
int pp_encode(const void *src, int src_type, size_t n, void *dst, const pp_cast_options *opt);

/* Decode n raw codes of a format into float32 (§6). */
int pp_decode(const void *bits, size_t n, int format, float *dst, int threads, int isa);

/* XLA convert float -> integer (§8): truncate, saturate, NaN -> 0. src_type F32 or F64. */
int pp_float_to_int(const void *src, int src_type, size_t n, void *dst, int dst_type, int threads);

/* The F32 route of an integer dot: a (M,K) and b (K,N) integer matrices, converted to float32
 * (RNE), products rounded to float32, accumulated in float32 in increasing k, no FMA. */
int pp_int_dot_f32(const void *a, int a_type, const void *b, int b_type,
                   size_t m, size_t k, size_t n, float *out, int threads);

/* The PE's float32 matmul: a (M,K) and b (K,N) float32, products rounded to float32 and summed in
 * increasing k from +0.0 in float32, no FMA (the same loop as the integer dot's F32 route):
 * pp_dot of one pair with the automatic instruction set. */
int pp_dot_f32(const float *a, const float *b, size_t m, size_t k, size_t n, float *out,
               int threads);

/* The PE dot of `batch` pairs: out[i] (M,N) = a[a_off[i] ...] (M,K) . b[b_off[i] ...] (K,N), all
 * row-major and contiguous, type PP_T_F32 or PP_T_F64 (a, b and out alike); out holds the batch
 * results one after another. Each element: the products rounded to the type, added in increasing
 * k to an accumulator starting at +0.0, one rounding per addition, no FMA; a NaN result is the
 * positive quiet NaN. a_size / b_size: elements in a and b (every offset is checked against
 * them); offsets may repeat (a broadcast operand). isa: PP_ISA_* (REFERENCE: one element at a
 * time, the definition every fast path is tested equal to). */
int pp_dot(int type, const void *a, size_t a_size, const void *b, size_t b_size, size_t batch,
           const int64_t *a_off, const int64_t *b_off, size_t m, size_t k, size_t n, void *out,
           int threads, int isa);

/* Whether every product of an element of a[0, na) and one of b[0, nb) is exact in float32: no
 * element is inf, NaN or subnormal, every significand has at most 12 bits (bf16, fp16, tf32 and
 * fp8 values do) and the products stay in the normal range. pp_dot then uses one fused
 * multiply-add per step where the CPU has it: the same bits (decision K11). */
int pp_dot_products_exact(const float *a, size_t na, const float *b, size_t nb);

/* The rows of the register tile pp_dot runs for `type` (PP_T_F32 / PP_T_F64) with instruction set
 * `isa` on ordered (not fused) products: 0 for the reference, PP_EUNSUPPORTED / PP_EINVAL as
 * pp_dot would return (which tile runs never changes a bit; the tests check that both run). */
int pp_dot_tile_rows(int type, int isa);

/* A reduce's sequential fold of float32 rows: out[r] = (((init[r] op x[r][0]) op x[r][1]) op ...)
 * over row-major x (rows x n), one float32 rounding per step in index order, op PP_FOLD_ADD (+)
 * or PP_FOLD_MUL (*). Operands must be NaN-free (csrc/fold.c says why). */
#define PP_FOLD_ADD 0
#define PP_FOLD_MUL 1
int pp_fold_f32(int kind, const float *x, size_t rows, size_t n, const float *init, float *out,
                int threads);

/* The sums of a relative l2 error in float64: out[0] = sum of r[i]^2, out[1] = sum of
 * (x[i] - r[i])^2 over [0, n), each square and difference rounded to float64, in an order fixed by
 * n alone (csrc/fold.c), whatever the thread count. A non-finite element makes a sum non-finite.
 * The order: chunks of PP_SQDIFF_CHUNK elements from 0, each chunk's sums added in chunk order, so
 * aligned blocks of that size summed in order give the whole array's bits (decision TU20). */
#define PP_SQDIFF_CHUNK 65536
int pp_sqdiff_f32(const float *x, const float *r, size_t n, double *out, int threads);

/* The stochastic-rounding generator's words (SplitMix64, see srwords.c), for element indices
 * [first, first + n). */
int pp_random_words(uint64_t seed, uint64_t first, size_t n, uint32_t *out);

/* Instruction sets: is one usable here, which one PP_ISA_AUTO picks, and how many cores. */
int pp_isa_supported(int isa);
int pp_isa_auto(void);
int pp_cpu_count(void);

/* Outputs whose call moves more than this many bytes (input + output) are written with
 * non-temporal (streaming) stores, whichever way the kernel streams. bytes < 0 restores the
 * defaults (measured per CPU family, dispatch.c). Returns the previous setting (-1: the
 * defaults). Results never depend on it; it exists for tests and benchmarks. */
long long pp_set_stream_threshold(long long bytes);

/* A program of float32 elementwise operations over n lanes (chain.c, decision EM-15). code holds
 * n_insn instructions of 5 int32 each: op (PP_CHAIN_*), dst, a, b, c, register indices below n_regs
 * (unused operands: any valid index). Registers 0 .. n_in - 1 are loaded from in_ptr[i], an array
 * of in_kind[i] (PP_CHAIN_F32 ...; U8 / I64 give 1.0 where nonzero) read at lane j * in_stride[i]
 * (0: one value for every lane, or 1). After the program, register out_reg[i] is stored to
 * out_ptr[i] as out_kind[i] (a BF16 register must hold bf16 values). Returns PP_CHAIN_NAN, with
 * the outputs partly written, when a loaded or computed value is a NaN or the floating-point
 * environment is not the default one: the caller then computes the lanes its own way. threads:
 * at most this many workers (>= 1), each on lanes of its own. */
#define PP_CHAIN_NAN 5
#define PP_CHAIN_F32 0
#define PP_CHAIN_BF16 1
#define PP_CHAIN_F16 2
#define PP_CHAIN_U8 3
#define PP_CHAIN_I64 4
#define PP_CHAIN_COPY 0
#define PP_CHAIN_ADD 1
#define PP_CHAIN_SUB 2
#define PP_CHAIN_MUL 3
#define PP_CHAIN_DIV 4
#define PP_CHAIN_MAX 5
#define PP_CHAIN_MIN 6
#define PP_CHAIN_NEG 7
#define PP_CHAIN_ABS 8
#define PP_CHAIN_SQRT 9
#define PP_CHAIN_SQUARE 10
#define PP_CHAIN_RECIP 11
#define PP_CHAIN_RELU 12
#define PP_CHAIN_EQ 13
#define PP_CHAIN_NE 14
#define PP_CHAIN_LT 15
#define PP_CHAIN_LE 16
#define PP_CHAIN_GT 17
#define PP_CHAIN_GE 18
#define PP_CHAIN_SELECT 19
#define PP_CHAIN_BF16_ROUND 20
#define PP_CHAIN_F16_ROUND 21
#define PP_CHAIN_FP8E4_ROUND 22
#define PP_CHAIN_FP8E4M3FN_ROUND 23
#define PP_CHAIN_FP8E5_ROUND 24
#define PP_CHAIN_SATINF 25
#define PP_CHAIN_NOPS 26
int pp_chain(const int32_t *code, size_t n_insn, size_t n_regs, size_t n_in,
             const void *const *in_ptr, const int32_t *in_kind, const int64_t *in_stride,
             size_t n_out, void *const *out_ptr, const int32_t *out_kind, const int32_t *out_reg,
             size_t n, int threads);
/* A reduce's sequential fold in a narrow accumulation dtype: out[r] = round(...round(init[r] op
 * x[r][0]) ... op x[r][n-1]) over row-major x (rows x n), op PP_FOLD_ADD / PP_FOLD_MUL, each step
 * the float32 operation rounded by chain rounding `rnd` (PP_CHAIN_BF16_ROUND, _F16_ROUND, the
 * three fp8 roundings). PP_CHAIN_NAN: a NaN operand or step, or a non-default FP environment (the
 * caller takes its own steps). threads >= 1. */
int pp_chain_fold(int kind, int rnd, const float *x, size_t rows, size_t n, const float *init,
                  float *out, int threads);
