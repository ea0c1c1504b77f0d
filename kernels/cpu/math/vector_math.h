/* vector_math.h - explicitly vectorised float32 loops (exp, tanh, erf, softmax rows, norm rows),
 * one set per instruction set, and the run-time choice between them.
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

#include "engine/half.h" /* ct_float_bits, ct_bits_float */
#include "internal.h"

/* One instruction set's loops. Pointers are to contiguous float32 runs of n elements (n >= 0);
 * dst may be src (in place). */
typedef struct ct_vector_math {
  const char* isa; /* "generic", "avx2" or "avx512" */
  /* dst = exp(src); with stream != 0, dst's whole lines are written with non-temporal stores
   * (the same results; stream_store.h says when that pays), which the caller fences
   * (ct_stream_fence) after its last call. */
  void (*exp_f32)(const float* src, float* dst, int64_t n, int stream);
  /* The largest element, nan if any is nan; -inf for n == 0 (either zero where -0 and +0 are
   * the largest: the lanes are taken in several chains). */
  float (*max_f32)(const float* src, int64_t n);
  /* Sum (in double) of exp(src - shift); the exponentials are stored in dst unless it is NULL.
   * Prefetches the n elements after src (the next row) meanwhile. */
  double (*exp_sum_f32)(const float* src, float* dst, int64_t n, float shift);
  /* dst = src * factor (softmax's last step); stream as exp_f32's */
  void (*scale_f32)(const float* src, float* dst, int64_t n, float factor, int stream);
  /* dst = (src - a) - b (log_softmax's last step); stream as exp_f32's */
  void (*subtract2_f32)(const float* src, float* dst, int64_t n, float a, float b, int stream);
  /* One layer_norm (center != 0) or rms_norm (center == 0) row: the mean, then the sum of
   * squared deviations corrected by their sum (partial sums in float over 8 blocks of 16
   * elements, totals in double), then dst = (src - mean) * rstd * weight + bias; weight and
   * bias may be NULL. Prefetches the n elements after src (the next row) meanwhile. With stream,
   * dst is written with non-temporal stores as exp_f32's. */
  void (*norm_row_f32)(const float* src, float* dst, const float* weight, const float* bias,
                       int64_t n, int center, double eps, int stream);
  /* dst = tanh(src), computed in double (ct_tanh_f32 below): bitwise the same in every set. */
  void (*tanh_f32)(const float* src, float* dst, int64_t n);
  /* dst = erf(src), computed in double (ct_erf_f32 below): bitwise the same in every set. */
  void (*erf_f32)(const float* src, float* dst, int64_t n);
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

/* The scalar functions below are forced inline: loops over them vectorise only with them inlined
 * (the activations', activation_kernels.c), which GCC's size limits stop in files of many loops. */
#define CT_VM_SCALAR static inline __attribute__((always_inline))

/* Scalar exp for strided and low-precision paths: the generic vector set's arithmetic (no fused
 * multiply-adds), so results equal that set's bitwise. */
CT_VM_SCALAR float ct_exp_f32(float x) {
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

/* ----- the exponential in double, for the float32 functions computed in double -----
 * y = k ln2 + r with k = rint(y / ln2) (the shifter's rounding) and a two-constant ln2 whose high
 * part has 32 significant bits (k ln2_hi is exact), so |r| <= ln2 / 2; expm1(r) is its Taylor
 * polynomial to degree 9 (truncated at below 3e-11 of it), and 2^k is built from k's bits. Then
 * exp(y) = 2^k expm1(r) + 2^k and expm1(y) = 2^k expm1(r) + (2^k - 1), which for k = 0 is
 * expm1(r) itself (no cancellation near 0). For |y| < 700. The polynomial is one expression
 * (CT_DEXP_EXPM1_POLY) shared by the scalar and vector copies, so both do the same operations. */
#define CT_DEXP_INV_LN2 1.4426950408889634
#define CT_DEXP_SHIFTER 6755399441055744.0 /* 1.5 * 2^52: adding it rounds to an integer */
#define CT_DEXP_SHIFTER_BITS 0x4338000000000000ull
#define CT_DEXP_LN2_HI 6.93147180369123816490e-01 /* 32 significant bits */
#define CT_DEXP_LN2_LO 1.90821492927058770002e-10
/* expm1(r) for |r| <= ln2 / 2, in Estrin's scheme (a shorter chain than Horner's); r2 = r * r,
 * r4 = r2 * r2. */
#define CT_DEXP_EXPM1_POLY(r, r2, r4)                                                              \
  (((((r) * (1.0 / 6) + (1.0 / 2)) + (r2) * ((r) * (1.0 / 120) + (1.0 / 24))) +                    \
    (r4) * (((r) * (1.0 / 5040) + (1.0 / 720)) + (r2) * ((r) * (1.0 / 362880) + (1.0 / 40320)))) * \
       (r2) +                                                                                      \
   (r))

CT_VM_SCALAR double ct_dexp_bits_double(uint64_t bits) {
  double d;
  memcpy(&d, &bits, sizeof d);
  return d;
}

/* expm1(r) for the reduced argument of y, and 2^k in *scale (see above). */
CT_VM_SCALAR double ct_dexp_parts(double y, double* scale) {
  const double t = y * CT_DEXP_INV_LN2 + CT_DEXP_SHIFTER;
  const double k = t - CT_DEXP_SHIFTER;
  const double r = (y - k * CT_DEXP_LN2_HI) - k * CT_DEXP_LN2_LO;
  const double r2 = r * r, r4 = r2 * r2;
  uint64_t tb;
  memcpy(&tb, &t, sizeof tb);
  *scale = ct_dexp_bits_double((tb - (CT_DEXP_SHIFTER_BITS - 1023u)) << 52);
  return CT_DEXP_EXPM1_POLY(r, r2, r4);
}

/* Scalar float32 expm1 computed in double (above) and rounded once: within half an ulp but for
 * 3e-11 of it. x is clamped to [-104, 89] first (past which expm1 rounds to -1, or overflows to
 * inf); nan stays, and so do signed zeros. Plain arithmetic: loops over it vectorise. */
CT_VM_SCALAR float ct_expm1_f32(float x) {
  double y = (double)x < -104.0 ? -104.0 : (double)x; /* nan compares false and stays */
  y = y > 89.0 ? 89.0 : y;
  double scale;
  const double p = ct_dexp_parts(y, &scale);
  const float e = (float)(scale * p + (scale - 1.0));
  return x == 0 ? x : e; /* -0 stays -0 (the sum above gives +0) */
}

/* x's magnitude computed by MAGNITUDE (double to double) with x's sign: the odd functions below. */
CT_VM_SCALAR float ct_odd_in_double_f32(float x, double (*magnitude)(double)) {
  const float m = (float)magnitude((double)ct_bits_float(ct_float_bits(x) & 0x7fffffffu));
  return ct_bits_float(ct_float_bits(m) | (ct_float_bits(x) & 0x80000000u));
}

/* ----- float32 tanh, computed in double -----
 * For a = |x| (clamped to CT_TANH_F32_SATURATE, past which tanh rounds to 1 in float32; nan
 * stays): e = expm1(2a) (above) and tanh(a) = e / (e + 2), the sign of x copied onto the result.
 * The double quotient is within 1e-9 of tanh relatively, so the float32 result is tanh correctly
 * rounded except within 0.02 ulp of a rounding boundary (0.5000 ulp at most over a sweep of the
 * whole range, tests/test_ops_vector_math.py).
 * Only additions, multiplications and one division, none fused: every vector set and the scalar
 * copy give the same bits. */
#define CT_TANH_F32_SATURATE 9.1

CT_VM_SCALAR double ct_tanh_magnitude(double a) {
  a = a > CT_TANH_F32_SATURATE ? CT_TANH_F32_SATURATE : a; /* nan compares false and stays */
  double scale;
  const double p = ct_dexp_parts(a + a, &scale);
  const double e = scale * p + (scale - 1.0);
  return e / (e + 2.0);
}

/* Scalar float32 tanh for strided runs and tails: the vector sets' arithmetic. */
CT_VM_SCALAR float ct_tanh_f32(float x) {
  return ct_odd_in_double_f32(x, ct_tanh_magnitude);
}

/* ----- float32 erf, computed in double -----
 * For a = |x|:
 *   - a < CT_ERF_F32_SMALL: erf(a) = a P(a^2), P of degree 9 fitted here for least maximum
 *     relative error (1.5e-12) on [0, 1.25^2];
 *   - above: erf(a) = 1 - exp(-a^2) G(a - CT_ERF_F32_MID), G of degree 12 fitted for least
 *     maximum relative error to erfcx(a) = exp(a^2) erfc(a) on [1.25, 3.92] (8.3e-10, so erf
 *     within 7e-11 absolutely), a clamped to CT_ERF_F32_SATURATE first (past 3.9193 erf rounds
 *     to 1 in float32) and a^2 exact in double (a has 24 significant bits);
 * nan stays nan, and the sign of x is copied onto the result. The float32 result is erf correctly
 * rounded except within 0.01 ulp of a rounding boundary (tests/test_ops_vector_math.py sweeps
 * it). As tanh: no fused operations, the same bits in every vector set and the scalar copy. */
#define CT_ERF_F32_SMALL 1.25
#define CT_ERF_F32_SATURATE 3.92
#define CT_ERF_F32_MID 2.585
/* P(z) for z = a^2, z2 = z^2, z4 = z^4, z8 = z^8 (Estrin's scheme). */
#define CT_ERF_SMALL_POLY(z, z2, z4, z8)                                      \
  (((1.1283791670940193 + (z) * -0.37612638884676797) +                       \
    (z2) * (0.1128379128723887 + (z) * -0.026866139575298282)) +              \
   (z4) * ((0.005223848998391296 + (z) * -0.0008545245146611147) +            \
           (z2) * (0.00012009933344388213 + (z) * -1.4505383739538136e-05)) + \
   (z8) * (1.4044155124681712e-06 + (z) * -8.144462237957839e-08))
/* G(s) for s = a - CT_ERF_F32_MID, s2 = s^2, s4 = s^4, s8 = s^8 (Estrin's scheme). */
#define CT_ERF_LARGE_POLY(s, s2, s4, s8)                                     \
  (((0.2046622282250953 + (s) * -0.07027544542537001) +                      \
    (s2) * (0.023000198454831602 + (s) * -0.007213316206659081)) +           \
   (s4) * ((0.002176918952472408 + (s) * -0.0006342652123130562) +           \
           (s2) * (0.00017900763139480115 + (s) * -4.925581172000697e-05)) + \
   (s8) * (((1.3095503583901436e-05 + (s) * -3.18999594936184e-06) +         \
            (s2) * (8.228737089777116e-07 + (s) * -2.986372115744429e-07)) + \
           (s4) * 6.949906013187235e-08))

CT_VM_SCALAR double ct_erf_magnitude(double a) {
  if (a < CT_ERF_F32_SMALL) {
    const double z = a * a, z2 = z * z, z4 = z2 * z2, z8 = z4 * z4;
    return a * CT_ERF_SMALL_POLY(z, z2, z4, z8);
  }
  a = a > CT_ERF_F32_SATURATE ? CT_ERF_F32_SATURATE : a; /* nan compares false and stays */
  double scale;
  const double p = ct_dexp_parts(-(a * a), &scale);
  const double s = a - CT_ERF_F32_MID, s2 = s * s, s4 = s2 * s2, s8 = s4 * s4;
  return 1.0 - (scale * p + scale) * CT_ERF_LARGE_POLY(s, s2, s4, s8);
}

/* Scalar float32 erf for strided runs and tails: the vector sets' arithmetic. */
CT_VM_SCALAR float ct_erf_f32(float x) {
  return ct_odd_in_double_f32(x, ct_erf_magnitude);
}

#endif /* CTENSOR_CPU_VECTOR_MATH_H_ */
