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

/* SLEEF's documented range for asinh and acosh, past which they return infinity; measured (2
 * million random bit patterns per type against the C library in a wider precision): sinh and cosh
 * overflow to infinity early, from 88.7 (709.8), and log1p from 1e38 (1e307). The trigonometric
 * functions measured within 1 ulp over the whole range (older SLEEF documentation bounds them to
 * 5e9 in float32, 1e14 in float64). */
#define CT_AHYP_LIMIT_F32 1.84e19f
#define CT_AHYP_LIMIT_F64 1.34e154
#define CT_HYP_LIMIT_F32 88.5f
#define CT_HYP_LIMIT_F64 709.0
#define CT_LOG1P_LIMIT_F32 1e38f
#define CT_LOG1P_LIMIT_F64 1e307

static const ct_sleef_f32_fn ct_sleef_f32_fns[CT_SLEEF_COUNT] = {
    [CT_SLEEF_sin] = {Sleef_sinf8_u10avx2, sinf, INFINITY},
    [CT_SLEEF_cos] = {Sleef_cosf8_u10avx2, cosf, INFINITY},
    [CT_SLEEF_tan] = {Sleef_tanf8_u10avx2, tanf, INFINITY},
    [CT_SLEEF_asin] = {Sleef_asinf8_u10avx2, asinf, INFINITY},
    [CT_SLEEF_acos] = {Sleef_acosf8_u10avx2, acosf, INFINITY},
    [CT_SLEEF_atan] = {Sleef_atanf8_u10avx2, atanf, INFINITY},
    [CT_SLEEF_sinh] = {Sleef_sinhf8_u10avx2, sinhf, CT_HYP_LIMIT_F32},
    [CT_SLEEF_cosh] = {Sleef_coshf8_u10avx2, coshf, CT_HYP_LIMIT_F32},
    [CT_SLEEF_tanh] = {Sleef_tanhf8_u10avx2, tanhf, INFINITY},
    [CT_SLEEF_asinh] = {Sleef_asinhf8_u10avx2, asinhf, CT_AHYP_LIMIT_F32},
    [CT_SLEEF_acosh] = {Sleef_acoshf8_u10avx2, acoshf, CT_AHYP_LIMIT_F32},
    [CT_SLEEF_atanh] = {Sleef_atanhf8_u10avx2, atanhf, INFINITY},
    [CT_SLEEF_log] = {Sleef_logf8_u10avx2, logf, INFINITY},
    [CT_SLEEF_log2] = {Sleef_log2f8_u10avx2, log2f, INFINITY},
    [CT_SLEEF_log10] = {Sleef_log10f8_u10avx2, log10f, INFINITY},
    [CT_SLEEF_log1p] = {Sleef_log1pf8_u10avx2, log1pf, CT_LOG1P_LIMIT_F32},
    [CT_SLEEF_expm1] = {Sleef_expm1f8_u10avx2, expm1f, INFINITY},
    [CT_SLEEF_erf] = {Sleef_erff8_u10avx2, erff, INFINITY},
};

static const ct_sleef_f64_fn ct_sleef_f64_fns[CT_SLEEF_COUNT] = {
    [CT_SLEEF_sin] = {Sleef_sind4_u10avx2, sin, INFINITY},
    [CT_SLEEF_cos] = {Sleef_cosd4_u10avx2, cos, INFINITY},
    [CT_SLEEF_tan] = {Sleef_tand4_u10avx2, tan, INFINITY},
    [CT_SLEEF_asin] = {Sleef_asind4_u10avx2, asin, INFINITY},
    [CT_SLEEF_acos] = {Sleef_acosd4_u10avx2, acos, INFINITY},
    [CT_SLEEF_atan] = {Sleef_atand4_u10avx2, atan, INFINITY},
    [CT_SLEEF_sinh] = {Sleef_sinhd4_u10avx2, sinh, CT_HYP_LIMIT_F64},
    [CT_SLEEF_cosh] = {Sleef_coshd4_u10avx2, cosh, CT_HYP_LIMIT_F64},
    [CT_SLEEF_tanh] = {Sleef_tanhd4_u10avx2, tanh, INFINITY},
    [CT_SLEEF_asinh] = {Sleef_asinhd4_u10avx2, asinh, CT_AHYP_LIMIT_F64},
    [CT_SLEEF_acosh] = {Sleef_acoshd4_u10avx2, acosh, CT_AHYP_LIMIT_F64},
    [CT_SLEEF_atanh] = {Sleef_atanhd4_u10avx2, atanh, INFINITY},
    [CT_SLEEF_log] = {Sleef_logd4_u10avx2, log, INFINITY},
    [CT_SLEEF_log2] = {Sleef_log2d4_u10avx2, log2, INFINITY},
    [CT_SLEEF_log10] = {Sleef_log10d4_u10avx2, log10, INFINITY},
    [CT_SLEEF_log1p] = {Sleef_log1pd4_u10avx2, log1p, CT_LOG1P_LIMIT_F64},
    [CT_SLEEF_expm1] = {Sleef_expm1d4_u10avx2, expm1, INFINITY},
    [CT_SLEEF_erf] = {Sleef_erfd4_u10avx2, erf, INFINITY},
};

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
      T in[LANES] = {0}, out[LANES];                                                         \
      const int whole = m == LANES;                                                          \
      V x;                                                                                   \
      if (whole && ss == size) {                                                             \
        x = LOADU((const T*)(src + i * ss));                                                 \
      } else {                                                                               \
        for (int64_t k = 0; k < m; ++k) in[k] = *(const T*)(src + (i + k) * ss);             \
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
