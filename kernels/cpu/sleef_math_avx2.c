/* sleef_math_avx2.c - SLEEF's AVX2 functions over strided runs (see sleef_math.h). Compiled with
 * -mavx2 -mfma, in the AVX2 instruction-set library, and only where the build found SLEEF;
 * sleef_math.c calls it on CPUs with AVX2. */
#include <immintrin.h>
#include <math.h>
#include <sleef.h>

#include "sleef_math.h"

typedef __m256 (*ct_sleef_f8)(__m256);
typedef __m256d (*ct_sleef_d4)(__m256d);

/* Per function: SLEEF's vector function, the C library's, and the magnitude past which the C
 * library's is used (SLEEF's documented range; INFINITY: none). */
typedef struct ct_sleef_f32_fn {
  ct_sleef_f8 vector;
  float (*scalar)(float);
  float limit;
} ct_sleef_f32_fn;
typedef struct ct_sleef_f64_fn {
  ct_sleef_d4 vector;
  double (*scalar)(double);
  double limit;
} ct_sleef_f64_fn;

/* The tables, from sleef_math.h's list: SLEEF's AVX2 function, the C library's, the limit. */
#define CT_SLEEF_F32_ROW(NAME, LIMIT_F32, LIMIT_F64) \
  [CT_SLEEF_##NAME] = {Sleef_##NAME##f8_u10avx2, NAME##f, LIMIT_F32},
#define CT_SLEEF_F64_ROW(NAME, LIMIT_F32, LIMIT_F64) \
  [CT_SLEEF_##NAME] = {Sleef_##NAME##d4_u10avx2, NAME, LIMIT_F64},
static const ct_sleef_f32_fn ct_sleef_f32_fns[CT_SLEEF_COUNT] = {
    CT_SLEEF_UNARY_FUNCTIONS(CT_SLEEF_F32_ROW)};
static const ct_sleef_f64_fn ct_sleef_f64_fns[CT_SLEEF_COUNT] = {
    CT_SLEEF_UNARY_FUNCTIONS(CT_SLEEF_F64_ROW)};

/* ----- the loop ----- */

/* buffer[k] = the element at p + (i + k) · step for k < m, and ones past m (which every function
 * takes without a special case). */
#define CT_SLEEF_GATHER(T)                                                                   \
  static inline void ct_sleef_gather_##T(const char* p, int64_t step, int64_t i, int64_t m,  \
                                         T* buffer, int lanes) {                             \
    for (int k = 0; k < lanes; ++k) buffer[k] = k < m ? *(const T*)(p + (i + k) * step) : 1; \
  }
CT_SLEEF_GATHER(float)
CT_SLEEF_GATHER(double)

/* One operand's vector of elements [i, i + m) (`whole`: m == LANES): the broadcast scalar (step
 * 0), a load from a contiguous run, or gathered through `buffer`. */
#define CT_SLEEF_OPERAND(T, LOADU, LANES, p, step, scalar, i, m, whole, buffer) \
  ((step) == 0 ? (scalar)                                                       \
   : (whole) && (step) == (int64_t)sizeof(T)                                    \
       ? LOADU((const T*)((p) + (i) * (step)))                                  \
       : (ct_sleef_gather_##T((p), (step), (i), (m), (buffer), LANES), LOADU(buffer)))

/* The loop of a vector computation over ARITY (1 or 2) operands a and b (with one operand, the
 * PROLOGUE names b = a), steps in bytes (0 for a scalar operand): PROLOGUE runs once, then `r =
 * COMPUTE(x, y, &far)` (y is x for one operand) sets r and, in `far`, a bit per lane that
 * FAR_SCALAR(x, y) must compute instead. Whole vectors of contiguous runs are loaded and stored in
 * place (in a loop of their own while all operands are contiguous), scalar operands broadcast once,
 * other elements (strided runs, the tail) go through vector-sized buffers, so that an element's
 * result does not depend on where it sits. dst may be an operand. */
#define CT_SLEEF_VECTOR_LOOP(SIGNATURE, PROLOGUE, ARITY, T, V, LANES, LOADU, STOREU, SET1,         \
                             COMPUTE, FAR_SCALAR)                                                  \
  void SIGNATURE {                                                                                 \
    PROLOGUE;                                                                                      \
    if (n <= 0) return;                                                                            \
    const V a_scalar = SET1(*(const T*)a), b_scalar = SET1(*(const T*)b);                          \
    const int64_t size = (int64_t)sizeof(T);                                                       \
    int64_t i = 0;                                                                                 \
    if (as == size && ((ARITY) == 1 || bs == size) && ds == size) {                                \
      /* contiguous: whole vectors straight through, up to the first with a lane for FAR_SCALAR */ \
      for (; i + LANES <= n; i += LANES) {                                                         \
        const V x = LOADU((const T*)(const void*)a + i);                                           \
        const V y = (ARITY) > 1 ? LOADU((const T*)(const void*)b + i) : x;                         \
        int far = 0;                                                                               \
        const V r = COMPUTE(x, y, &far);                                                           \
        if (far) break;                                                                            \
        STOREU((T*)(void*)dst + i, r);                                                             \
      }                                                                                            \
    }                                                                                              \
    for (; i < n; i += LANES) {                                                                    \
      const int64_t m = n - i < LANES ? n - i : LANES;                                             \
      const int whole = m == LANES;                                                                \
      T a_buffer[LANES], b_buffer[LANES], out[LANES];                                              \
      const V x = CT_SLEEF_OPERAND(T, LOADU, LANES, a, as, a_scalar, i, m, whole, a_buffer);       \
      const V y = (ARITY) > 1                                                                      \
                      ? CT_SLEEF_OPERAND(T, LOADU, LANES, b, bs, b_scalar, i, m, whole, b_buffer)  \
                      : x;                                                                         \
      int far = 0;                                                                                 \
      const V r = COMPUTE(x, y, &far);                                                             \
      if (whole && ds == size && !far) {                                                           \
        STOREU((T*)(dst + i * ds), r);                                                             \
        continue;                                                                                  \
      }                                                                                            \
      STOREU(out, r);                                                                              \
      if (far) {                                                                                   \
        STOREU(a_buffer, x);                                                                       \
        STOREU(b_buffer, y);                                                                       \
        for (int k = 0; k < LANES; ++k) {                                                          \
          if (far >> k & 1) out[k] = FAR_SCALAR(a_buffer[k], b_buffer[k]);                         \
        }                                                                                          \
      }                                                                                            \
      for (int64_t k = 0; k < m; ++k) *(T*)(dst + (i + k) * ds) = out[k];                          \
    }                                                                                              \
  }

/* ----- one-argument functions ----- */

/* SLEEF's function, and the lanes past its limit (the C library's). */
#define CT_SLEEF_UNARY_PROLOGUE(TABLE, V, T, SET1, ABS_BITS)   \
  V (*vector)(V) = TABLE[fn].vector;                           \
  T (*scalar)(T) = TABLE[fn].scalar;                           \
  const int checked = TABLE[fn].limit < INFINITY;              \
  const V bound = SET1(TABLE[fn].limit), magnitude = ABS_BITS; \
  const char* b = a;                                           \
  const int64_t bs = as
#define CT_SLEEF_UNARY_PS(x, y, far)                                                               \
  (*(far) =                                                                                        \
       checked ? _mm256_movemask_ps(_mm256_cmp_ps(_mm256_and_ps(x, magnitude), bound, _CMP_GT_OQ)) \
               : 0,                                                                                \
   (void)(y), vector(x))
#define CT_SLEEF_UNARY_PD(x, y, far)                                                               \
  (*(far) =                                                                                        \
       checked ? _mm256_movemask_pd(_mm256_cmp_pd(_mm256_and_pd(x, magnitude), bound, _CMP_GT_OQ)) \
               : 0,                                                                                \
   (void)(y), vector(x))
#define CT_SLEEF_UNARY_SCALAR(x, y) scalar(x)

CT_SLEEF_VECTOR_LOOP(ct_sleef_unary_f32_avx2(ct_sleef_fn fn, const char* a, int64_t as, char* dst,
                                             int64_t ds, int64_t n),
                     CT_SLEEF_UNARY_PROLOGUE(ct_sleef_f32_fns, __m256, float, _mm256_set1_ps,
                                             _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF))),
                     1, float, __m256, 8, _mm256_loadu_ps, _mm256_storeu_ps, _mm256_set1_ps,
                     CT_SLEEF_UNARY_PS, CT_SLEEF_UNARY_SCALAR)
CT_SLEEF_VECTOR_LOOP(
    ct_sleef_unary_f64_avx2(ct_sleef_fn fn, const char* a, int64_t as, char* dst, int64_t ds,
                            int64_t n),
    CT_SLEEF_UNARY_PROLOGUE(ct_sleef_f64_fns, __m256d, double, _mm256_set1_pd,
                            _mm256_castsi256_pd(_mm256_set1_epi64x(0x7FFFFFFFFFFFFFFF))),
    1, double, __m256d, 4, _mm256_loadu_pd, _mm256_storeu_pd, _mm256_set1_pd, CT_SLEEF_UNARY_PD,
    CT_SLEEF_UNARY_SCALAR)

/* ----- two-argument functions ----- */

typedef __m256 (*ct_sleef_f8_2)(__m256, __m256);
typedef __m256d (*ct_sleef_d4_2)(__m256d, __m256d);

#define CT_SLEEF_BINARY_F32_ROW(NAME, ACCURACY) \
  [CT_SLEEF2_##NAME] = Sleef_##NAME##f8##ACCURACY##avx2,
#define CT_SLEEF_BINARY_F64_ROW(NAME, ACCURACY) \
  [CT_SLEEF2_##NAME] = Sleef_##NAME##d4##ACCURACY##avx2,
static const ct_sleef_f8_2 ct_sleef_binary_f32_fns[CT_SLEEF_BINARY_COUNT] = {
    CT_SLEEF_BINARY_FUNCTIONS(CT_SLEEF_BINARY_F32_ROW)};
static const ct_sleef_d4_2 ct_sleef_binary_f64_fns[CT_SLEEF_BINARY_COUNT] = {
    CT_SLEEF_BINARY_FUNCTIONS(CT_SLEEF_BINARY_F64_ROW)};

/* SLEEF's function, every lane. */
#define CT_SLEEF_CALL(x, y, far) vector(x, y)
#define CT_SLEEF_NO_SCALAR(x, y) 0

CT_SLEEF_VECTOR_LOOP(ct_sleef_binary_f32_avx2(ct_sleef_binary_fn fn, const char* a, int64_t as,
                                              const char* b, int64_t bs, char* dst, int64_t ds,
                                              int64_t n),
                     const ct_sleef_f8_2 vector = ct_sleef_binary_f32_fns[fn], 2, float, __m256, 8,
                     _mm256_loadu_ps, _mm256_storeu_ps, _mm256_set1_ps, CT_SLEEF_CALL,
                     CT_SLEEF_NO_SCALAR)
CT_SLEEF_VECTOR_LOOP(ct_sleef_binary_f64_avx2(ct_sleef_binary_fn fn, const char* a, int64_t as,
                                              const char* b, int64_t bs, char* dst, int64_t ds,
                                              int64_t n),
                     const ct_sleef_d4_2 vector = ct_sleef_binary_f64_fns[fn], 2, double, __m256d,
                     4, _mm256_loadu_pd, _mm256_storeu_pd, _mm256_set1_pd, CT_SLEEF_CALL,
                     CT_SLEEF_NO_SCALAR)

/* NumPy's floor_divide and remainder (npy_divmod, as the scalar copy in binary_math_kernels.c)
 * on a vector, from mod = SLEEF's fmod, with selects for its branches. `far`: the lanes where
 * SLEEF's fmod gave NaN for a finite a and a nonzero, non-NaN b (a / b overflows: 3e38 / 0.5 in
 * float32), which the caller's scalar function computes. S is the intrinsics' suffix. */
#define CT_DIVMOD_VECTOR(NAME, V, S, FMOD)                                                         \
  static inline V NAME(V a, V b, int floor_divide, int* far) {                                     \
    const V mod = FMOD(a, b);                                                                      \
    const V zero = _mm256_setzero_##S(), sign = _mm256_set1_##S(-0.0);                             \
    const V finite_a =                                                                             \
        _mm256_cmp_##S(_mm256_andnot_##S(sign, a), _mm256_set1_##S(INFINITY), _CMP_LT_OQ);         \
    *far = _mm256_movemask_##S(                                                                    \
        _mm256_and_##S(_mm256_and_##S(_mm256_cmp_##S(mod, mod, _CMP_UNORD_Q), finite_a),           \
                       _mm256_cmp_##S(b, zero, _CMP_NEQ_OQ)));                                     \
    /* mod nonzero (or NaN) and of the other sign than b: mod + b, and one less in the quotient */ \
    const V fix = _mm256_and_##S(_mm256_cmp_##S(mod, zero, _CMP_NEQ_UQ),                           \
                                 _mm256_xor_##S(_mm256_cmp_##S(b, zero, _CMP_LT_OQ),               \
                                                _mm256_cmp_##S(mod, zero, _CMP_LT_OQ)));           \
    if (!floor_divide) { /* a zero modulus takes b's sign */                                       \
      const V r = _mm256_blendv_##S(mod, _mm256_add_##S(mod, b), fix);                             \
      return _mm256_blendv_##S(r, _mm256_and_##S(b, sign), _mm256_cmp_##S(mod, zero, _CMP_EQ_OQ)); \
    }                                                                                              \
    const V quotient = _mm256_div_##S(a, b), one = _mm256_set1_##S(1.0);                           \
    V div = _mm256_div_##S(_mm256_sub_##S(a, mod), b);                                             \
    div = _mm256_blendv_##S(div, _mm256_sub_##S(div, one), fix);                                   \
    /* floor, one more where the division left the value more than a half above it */              \
    V floored = _mm256_round_##S(div, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);                  \
    floored = _mm256_blendv_##S(                                                                   \
        floored, _mm256_add_##S(floored, one),                                                     \
        _mm256_cmp_##S(_mm256_sub_##S(div, floored), _mm256_set1_##S(0.5), _CMP_GT_OQ));           \
    /* a zero quotient takes a / b's sign; b == 0 gives a / b */                                   \
    const V r = _mm256_blendv_##S(floored, _mm256_and_##S(quotient, sign),                         \
                                  _mm256_cmp_##S(div, zero, _CMP_EQ_OQ));                          \
    return _mm256_blendv_##S(r, quotient, _mm256_cmp_##S(b, zero, _CMP_EQ_OQ));                    \
  }
CT_DIVMOD_VECTOR(ct_divmod_f8, __m256, ps, Sleef_fmodf8_avx2)
CT_DIVMOD_VECTOR(ct_divmod_d4, __m256d, pd, Sleef_fmodd4_avx2)

#define CT_DIVMOD_F8(x, y, far) ct_divmod_f8(x, y, floor_divide, far)
#define CT_DIVMOD_D4(x, y, far) ct_divmod_d4(x, y, floor_divide, far)
CT_SLEEF_VECTOR_LOOP(ct_sleef_divmod_f32_avx2(int floor_divide, float (*scalar)(float, float),
                                              const char* a, int64_t as, const char* b, int64_t bs,
                                              char* dst, int64_t ds, int64_t n),
                     (void)0, 2, float, __m256, 8, _mm256_loadu_ps, _mm256_storeu_ps,
                     _mm256_set1_ps, CT_DIVMOD_F8, scalar)
CT_SLEEF_VECTOR_LOOP(ct_sleef_divmod_f64_avx2(int floor_divide, double (*scalar)(double, double),
                                              const char* a, int64_t as, const char* b, int64_t bs,
                                              char* dst, int64_t ds, int64_t n),
                     (void)0, 2, double, __m256d, 4, _mm256_loadu_pd, _mm256_storeu_pd,
                     _mm256_set1_pd, CT_DIVMOD_D4, scalar)
