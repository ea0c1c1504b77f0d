/* vector_math.h - explicitly vectorised float32 loops (exp, tanh, softmax rows, norm rows), one
 * set per instruction set, and the run-time choice between them.
 *
 * The sets share one body (vector_math_impl.h, GCC vector extensions) compiled three times: the
 * generic set in the main library (16-byte vectors: SSE2 on x86-64), the AVX2 + FMA and AVX-512
 * sets in files built with their own flags (meson: one static library per instruction set), as
 * the GEMM micro-kernels. ct_vector_math_get() picks the set for ct_cpu_isa() (cpu_isa.h), so
 * CTENSOR_CPU_ISA=generic|avx2|avx512 selects a set for tests. Sets differ in vector width and in
 * exp's fused multiply-adds only: sums and norm rows agree bitwise between sets (see
 * vector_math_impl.h), exp and softmax within an ulp or two.
 *
 * The exponential (ct_exp_f32 below and the vector copies): x = n ln2 + r with n = rint(x/ln2)
 * and a two-constant (Cody-Waite) ln2, so r is exact and |r| <= ln2/2; exp(r) = 1 + r + r^2 q(r)
 * with q a degree-4 polynomial fitted here for least maximum relative error (3e-9 before
 * rounding); 2^n is applied as 2^(n/2) 2^(n - n/2), two normal scale factors, so results that
 * overflow become inf and subnormal results are rounded once. Inputs are clamped to [-104, 89]
 * first (exp(89) overflows, exp(-104) rounds to 0); nan stays nan. Error over the whole float32
 * range against float64: at most 0.98 ulp without FMA (generic set, scalar copy), 1.01 ulp with
 * (tests/test_ops_vector_math.py sweeps it). */
#ifndef CTENSOR_CPU_VECTOR_MATH_H_
#define CTENSOR_CPU_VECTOR_MATH_H_

#include <stdint.h>
#include <string.h>

#include "half.h" /* ct_float_bits, ct_bits_float */
#include "internal.h"

/* One instruction set's loops. Pointers are to contiguous float32 runs of n elements (n >= 0);
 * dst may be src (in place). */
typedef struct ct_vector_math {
  const char* isa; /* "generic", "avx2" or "avx512" */
  /* dst = exp(src); with stream != 0, dst's whole lines are written with non-temporal stores
   * (the same results; stream_store.h says when that pays), which the caller fences
   * (ct_stream_fence) after its last call. softmax rows store normally: their last pass rescales
   * a row still in cache. */
  void (*exp_f32)(const float* src, float* dst, int64_t n, int stream);
  /* The largest element, nan if any is nan; -inf for n == 0. */
  float (*max_f32)(const float* src, int64_t n);
  /* Sum (in double) of exp(src - shift); the exponentials are stored in dst unless it is NULL.
   * Prefetches the n elements after src and dst (the next row) meanwhile. */
  double (*exp_sum_f32)(const float* src, float* dst, int64_t n, float shift);
  /* dst = src * factor */
  void (*scale_f32)(const float* src, float* dst, int64_t n, float factor);
  /* dst = (src - a) - b (log_softmax's last step) */
  void (*subtract2_f32)(const float* src, float* dst, int64_t n, float a, float b);
  /* One layer_norm (center != 0) or rms_norm (center == 0) row: the mean, then the sum of
   * squared deviations corrected by their sum (partial sums in float over 8 blocks of 16
   * elements, totals in double), then dst = (src - mean) * rstd * weight + bias; weight and
   * bias may be NULL. Prefetches the n elements after src (the next row) meanwhile. With stream,
   * dst is written with non-temporal stores as exp_f32's. */
  void (*norm_row_f32)(const float* src, float* dst, const float* weight, const float* bias,
                       int64_t n, int center, double eps, int stream);
  /* dst = tanh(src), computed in double (ct_tanh_f32 below): bitwise the same in every set. */
  void (*tanh_f32)(const float* src, float* dst, int64_t n);
} ct_vector_math;

CT_INTERNAL extern const ct_vector_math ct_vector_math_generic;
#ifdef CT_HAVE_VECTOR_MATH_AVX2
CT_INTERNAL extern const ct_vector_math ct_vector_math_avx2;
#endif
#ifdef CT_HAVE_VECTOR_MATH_AVX512
CT_INTERNAL extern const ct_vector_math ct_vector_math_avx512;
#endif

/* The set in use (chosen once, thread-safe). */
CT_INTERNAL const ct_vector_math* ct_vector_math_get(void);

/* ----- the exponential's constants, shared by the scalar and vector copies ----- */

#define CT_EXP_F32_MIN (-104.0f) /* below: 0 */
#define CT_EXP_F32_MAX 89.0f     /* above: inf */
#define CT_EXP_F32_LOG2E 1.44269502162933349609375f
#define CT_EXP_F32_SHIFTER 12582912.0f /* 1.5 * 2^23: adding it rounds to an integer */
#define CT_EXP_F32_SHIFTER_BITS 0x4b400000u
#define CT_EXP_F32_LN2_HI 0.693145751953125f /* 16 significant bits: n * hi is exact */
#define CT_EXP_F32_LN2_LO 1.428606765330187e-06f
#define CT_EXP_F32_C2 0.4999999403953552f
#define CT_EXP_F32_C3 0.1666652113199234f
#define CT_EXP_F32_C4 0.04166838899254799f
#define CT_EXP_F32_C5 0.00836874544620514f
#define CT_EXP_F32_C6 0.0013814540579915047f

/* Scalar exp for strided and low-precision paths: the generic vector set's arithmetic (no fused
 * multiply-adds), so results equal that set's bitwise. */
static inline float ct_exp_f32(float x) {
  x = x < CT_EXP_F32_MIN ? CT_EXP_F32_MIN : x; /* nan compares false and stays */
  x = x > CT_EXP_F32_MAX ? CT_EXP_F32_MAX : x;
  const float t = x * CT_EXP_F32_LOG2E + CT_EXP_F32_SHIFTER;
  const float fn = t - CT_EXP_F32_SHIFTER;
  float r = x - fn * CT_EXP_F32_LN2_HI;
  r = r - fn * CT_EXP_F32_LN2_LO;
  float p = CT_EXP_F32_C6;
  p = p * r + CT_EXP_F32_C5;
  p = p * r + CT_EXP_F32_C4;
  p = p * r + CT_EXP_F32_C3;
  p = p * r + CT_EXP_F32_C2;
  const float y = (p * (r * r) + r) + 1.0f;
  const uint32_t n = ct_float_bits(t) - CT_EXP_F32_SHIFTER_BITS;
  const uint32_t n1 = (uint32_t)((int32_t)n >> 1), n2 = n - n1;
  return y * ct_bits_float((n1 + 127u) << 23) * ct_bits_float((n2 + 127u) << 23);
}

/* ----- float32 tanh, computed in double -----
 * For a = |x| (clamped to CT_TANH_F32_SATURATE, past which tanh rounds to 1 in float32; nan
 * stays): e = expm1(2a) and tanh(a) = e / (e + 2), the sign of x copied onto the result. expm1 in
 * double: 2a = k ln2 + r with k = rint(2a / ln2) (the shifter's rounding) and a two-constant ln2
 * whose high part has 32 significant bits (k ln2_hi is exact), so |r| <= ln2 / 2; expm1(r) is its
 * Taylor polynomial to degree 9 (truncated at below 3e-11 of it); e = 2^k expm1(r) + (2^k - 1),
 * which for k = 0 is expm1(r) itself (no cancellation near 0). The double quotient is within
 * 1e-9 of tanh relatively, so the float32 result is tanh correctly rounded except within 0.02 ulp
 * of a rounding boundary (0.5000 ulp at most over a sweep of the whole range,
 * tests/test_ops_vector_math.py).
 * Only additions, multiplications and one division, none fused: every vector set and the scalar
 * copy give the same bits. */
#define CT_TANH_F32_SATURATE 9.1
#define CT_TANH_INV_LN2 1.4426950408889634
#define CT_TANH_SHIFTER 6755399441055744.0 /* 1.5 * 2^52: adding it rounds to an integer */
#define CT_TANH_SHIFTER_BITS 0x4338000000000000ull
#define CT_TANH_LN2_HI 6.93147180369123816490e-01 /* 32 significant bits */
#define CT_TANH_LN2_LO 1.90821492927058770002e-10
#define CT_TANH_C2 (1.0 / 2)
#define CT_TANH_C3 (1.0 / 6)
#define CT_TANH_C4 (1.0 / 24)
#define CT_TANH_C5 (1.0 / 120)
#define CT_TANH_C6 (1.0 / 720)
#define CT_TANH_C7 (1.0 / 5040)
#define CT_TANH_C8 (1.0 / 40320)
#define CT_TANH_C9 (1.0 / 362880)

static inline double ct_tanh_bits_double(uint64_t bits) {
  double d;
  memcpy(&d, &bits, sizeof d);
  return d;
}

/* Scalar float32 tanh for strided runs and tails: the vector sets' arithmetic. */
static inline float ct_tanh_f32(float x) {
  double a = (double)(x < 0 ? -x : x);
  a = a > CT_TANH_F32_SATURATE ? CT_TANH_F32_SATURATE : a; /* nan compares false and stays */
  const double y = a + a;
  const double t = y * CT_TANH_INV_LN2 + CT_TANH_SHIFTER;
  const double k = t - CT_TANH_SHIFTER;
  const double r = (y - k * CT_TANH_LN2_HI) - k * CT_TANH_LN2_LO;
  const double r2 = r * r, r4 = r2 * r2; /* Estrin's scheme: a shorter chain than Horner's */
  const double q = ((r * CT_TANH_C3 + CT_TANH_C2) + r2 * (r * CT_TANH_C5 + CT_TANH_C4)) +
                   r4 * ((r * CT_TANH_C7 + CT_TANH_C6) + r2 * (r * CT_TANH_C9 + CT_TANH_C8));
  const double p = q * r2 + r;
  uint64_t tb;
  memcpy(&tb, &t, sizeof tb);
  const double scale = ct_tanh_bits_double((tb - (CT_TANH_SHIFTER_BITS - 1023u)) << 52);
  const double e = scale * p + (scale - 1.0);
  const float magnitude = (float)(e / (e + 2.0));
  return ct_bits_float(ct_float_bits(magnitude) | (ct_float_bits(x) & 0x80000000u));
}

#endif /* CTENSOR_CPU_VECTOR_MATH_H_ */
