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
