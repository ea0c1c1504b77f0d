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

/* The loop, for LANES elements of T a vector: whole vectors of a contiguous run are loaded and
 * stored in place; other elements (strided runs, the tail) go through a vector-sized buffer.
 * Lanes past the function's limit are recomputed by the C library. */
#define CT_SLEEF_LOOP(NAME, T, V, LANES, TABLE, LOADU, STOREU, SET1, ABS_BITS, AND, CMP_GT,  \
                      MOVEMASK)                                                              \
  void NAME(ct_sleef_fn fn, const char* src, int64_t ss, char* dst, int64_t ds, int64_t n) { \
    V (*vector)(V) = TABLE[fn].vector;                                                       \
    T (*scalar)(T) = TABLE[fn].scalar;                                                       \
    const T limit = TABLE[fn].limit;                                                         \
    const int checked = limit < INFINITY;                                                    \
    const V bound = SET1(limit), magnitude = ABS_BITS;                                       \
    const int64_t size = (int64_t)sizeof(T);                                                 \
    for (int64_t i = 0; i < n; i += LANES) {                                                 \
      const int64_t m = n - i < LANES ? n - i : LANES;                                       \
      T in[LANES], out[LANES];                                                               \
      const int whole = m == LANES;                                                          \
      V x;                                                                                   \
      if (whole && ss == size) {                                                             \
        x = LOADU((const T*)(src + i * ss));                                                 \
      } else {                                                                               \
        for (int k = 0; k < LANES; ++k) in[k] = k < m ? *(const T*)(src + (i + k) * ss) : 0; \
        x = LOADU(in);                                                                       \
      }                                                                                      \
      V y = vector(x);                                                                       \
      int far = 0;                                                                           \
      if (checked) far = MOVEMASK(CMP_GT(AND(x, magnitude), bound));                         \
      if (whole && ds == size && !far) {                                                     \
        STOREU((T*)(dst + i * ds), y);                                                       \
        continue;                                                                            \
      }                                                                                      \
      STOREU(out, y);                                                                        \
      if (far) {                                                                             \
        STOREU(in, x);                                                                       \
        for (int k = 0; k < LANES; ++k) {                                                    \
          if (far >> k & 1) out[k] = scalar(in[k]);                                          \
        }                                                                                    \
      }                                                                                      \
      for (int64_t k = 0; k < m; ++k) *(T*)(dst + (i + k) * ds) = out[k];                    \
    }                                                                                        \
  }

#define CT_GT_PS(a, b) _mm256_cmp_ps(a, b, _CMP_GT_OQ)
#define CT_GT_PD(a, b) _mm256_cmp_pd(a, b, _CMP_GT_OQ)

CT_SLEEF_LOOP(ct_sleef_unary_f32_avx2, float, __m256, 8, ct_sleef_f32_fns, _mm256_loadu_ps,
              _mm256_storeu_ps, _mm256_set1_ps, _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF)),
              _mm256_and_ps, CT_GT_PS, _mm256_movemask_ps)
CT_SLEEF_LOOP(ct_sleef_unary_f64_avx2, double, __m256d, 4, ct_sleef_f64_fns, _mm256_loadu_pd,
              _mm256_storeu_pd, _mm256_set1_pd,
              _mm256_castsi256_pd(_mm256_set1_epi64x(0x7FFFFFFFFFFFFFFF)), _mm256_and_pd, CT_GT_PD,
              _mm256_movemask_pd)

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

/* The loop of a two-argument vector computation: PROLOGUE runs once, then `r = COMPUTE(x, y, far)`
 * sets r and, in `far`, a bit per lane that FAR_SCALAR(x, y) must compute instead. Whole vectors
 * of contiguous runs are loaded and stored in place, scalar operands broadcast once, other
 * elements go through vector-sized buffers. */
#define CT_SLEEF_PAIR_LOOP(SIGNATURE, PROLOGUE, T, V, LANES, LOADU, STOREU, SET1, COMPUTE,   \
                           FAR_SCALAR)                                                       \
  void SIGNATURE {                                                                           \
    PROLOGUE;                                                                                \
    if (n <= 0) return;                                                                      \
    const V a_scalar = SET1(*(const T*)a), b_scalar = SET1(*(const T*)b);                    \
    for (int64_t i = 0; i < n; i += LANES) {                                                 \
      const int64_t m = n - i < LANES ? n - i : LANES;                                       \
      const int whole = m == LANES;                                                          \
      T a_buffer[LANES], b_buffer[LANES], out[LANES];                                        \
      const V x = CT_SLEEF_OPERAND(T, LOADU, LANES, a, as, a_scalar, i, m, whole, a_buffer); \
      const V y = CT_SLEEF_OPERAND(T, LOADU, LANES, b, bs, b_scalar, i, m, whole, b_buffer); \
      int far = 0;                                                                           \
      const V r = COMPUTE(x, y, &far);                                                       \
      if (whole && ds == (int64_t)sizeof(T) && !far) {                                       \
        STOREU((T*)(dst + i * ds), r);                                                       \
        continue;                                                                            \
      }                                                                                      \
      STOREU(out, r);                                                                        \
      if (far) {                                                                             \
        STOREU(a_buffer, x);                                                                 \
        STOREU(b_buffer, y);                                                                 \
        for (int k = 0; k < LANES; ++k) {                                                    \
          if (far >> k & 1) out[k] = FAR_SCALAR(a_buffer[k], b_buffer[k]);                   \
        }                                                                                    \
      }                                                                                      \
      for (int64_t k = 0; k < m; ++k) *(T*)(dst + (i + k) * ds) = out[k];                    \
    }                                                                                        \
  }

/* SLEEF's function, every lane. */
#define CT_SLEEF_CALL(x, y, far) vector(x, y)
#define CT_SLEEF_NO_SCALAR(x, y) 0

CT_SLEEF_PAIR_LOOP(ct_sleef_binary_f32_avx2(ct_sleef_binary_fn fn, const char* a, int64_t as,
                                            const char* b, int64_t bs, char* dst, int64_t ds,
                                            int64_t n),
                   const ct_sleef_f8_2 vector = ct_sleef_binary_f32_fns[fn], float, __m256, 8,
                   _mm256_loadu_ps, _mm256_storeu_ps, _mm256_set1_ps, CT_SLEEF_CALL,
                   CT_SLEEF_NO_SCALAR)
CT_SLEEF_PAIR_LOOP(ct_sleef_binary_f64_avx2(ct_sleef_binary_fn fn, const char* a, int64_t as,
                                            const char* b, int64_t bs, char* dst, int64_t ds,
                                            int64_t n),
                   const ct_sleef_d4_2 vector = ct_sleef_binary_f64_fns[fn], double, __m256d, 4,
                   _mm256_loadu_pd, _mm256_storeu_pd, _mm256_set1_pd, CT_SLEEF_CALL,
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
CT_SLEEF_PAIR_LOOP(ct_sleef_divmod_f32_avx2(int floor_divide, float (*scalar)(float, float),
                                            const char* a, int64_t as, const char* b, int64_t bs,
                                            char* dst, int64_t ds, int64_t n),
                   (void)0, float, __m256, 8, _mm256_loadu_ps, _mm256_storeu_ps, _mm256_set1_ps,
                   CT_DIVMOD_F8, scalar)
CT_SLEEF_PAIR_LOOP(ct_sleef_divmod_f64_avx2(int floor_divide, double (*scalar)(double, double),
                                            const char* a, int64_t as, const char* b, int64_t bs,
                                            char* dst, int64_t ds, int64_t n),
                   (void)0, double, __m256d, 4, _mm256_loadu_pd, _mm256_storeu_pd, _mm256_set1_pd,
                   CT_DIVMOD_D4, scalar)
