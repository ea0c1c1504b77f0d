/* complex_math.h - complex64/complex128 arithmetic with NumPy's formulas.
 *
 * C's complex operators are not NumPy's: GCC's * and / follow C99 Annex G (library calls that
 * recover infinities from nan results), while NumPy multiplies with the plain formula
 * (ac - bd, ad + bc) and divides with Smith's algorithm. These functions write NumPy's
 * arithmetic out on the parts. exp, log, sqrt and the trigonometric functions call the C
 * library's cexp/clog/csqrt/... as NumPy's npymath does on glibc, so branch cuts and special
 * values (inf/nan components) are NumPy's.
 *
 * CT_COMPLEX_MATH(CT, R, F) defines, for the complex type CT with part type R and libm suffix F
 * (f for float, empty for double), static inline functions named ct_c<op>_<CT>. */
#ifndef CTENSOR_CPU_COMPLEX_MATH_H_
#define CTENSOR_CPU_COMPLEX_MATH_H_

#include <complex.h>
#include <math.h>
#include <stdbool.h>

#include "engine/cpu_dtypes.h"

/* A complex from its parts, without arithmetic (x + y*I would turn inf*0 into nan). */
static inline ct_complex64 ct_cmake_ct_complex64(float re, float im) {
  return __builtin_complex(re, im);
}
static inline ct_complex128 ct_cmake_ct_complex128(double re, double im) {
  return __builtin_complex(re, im);
}

#define CT_COMPLEX_MATH(CT, R, F)                                                           \
  static inline CT ct_cadd_##CT(CT a, CT b) {                                               \
    return ct_cmake_##CT(creal##F(a) + creal##F(b), cimag##F(a) + cimag##F(b));             \
  }                                                                                         \
  static inline CT ct_csub_##CT(CT a, CT b) {                                               \
    return ct_cmake_##CT(creal##F(a) - creal##F(b), cimag##F(a) - cimag##F(b));             \
  }                                                                                         \
  /* NumPy's plain product: no Annex G recovery of infinities. */                           \
  static inline CT ct_cmul_##CT(CT a, CT b) {                                               \
    const R ar = creal##F(a), ai = cimag##F(a), br = creal##F(b), bi = cimag##F(b);         \
    return ct_cmake_##CT(ar * br - ai * bi, ar * bi + ai * br);                             \
  }                                                                                         \
  /* conj(a) * b (vecdot). */                                                               \
  static inline CT ct_cmulconj_##CT(CT a, CT b) {                                           \
    const R ar = creal##F(a), ai = cimag##F(a), br = creal##F(b), bi = cimag##F(b);         \
    return ct_cmake_##CT(ar * br + ai * bi, ar * bi - ai * br);                             \
  }                                                                                         \
  /* Smith's algorithm, as NumPy's complex divide (0 / 0 gives nan, x / 0 inf or nan). */   \
  static inline CT ct_cdiv_##CT(CT a, CT b) {                                               \
    const R ar = creal##F(a), ai = cimag##F(a), br = creal##F(b), bi = cimag##F(b);         \
    const R abs_br = fabs##F(br), abs_bi = fabs##F(bi);                                     \
    if (abs_br >= abs_bi) {                                                                 \
      if (abs_br == 0 && abs_bi == 0) return ct_cmake_##CT(ar / abs_br, ai / abs_br);       \
      const R rat = bi / br, scl = (R)1.0 / (br + bi * rat);                                \
      return ct_cmake_##CT((ar + ai * rat) * scl, (ai - ar * rat) * scl);                   \
    }                                                                                       \
    const R rat = br / bi, scl = (R)1.0 / (bi + br * rat);                                  \
    return ct_cmake_##CT((ar * rat + ai) * scl, (ai * rat - ar) * scl);                     \
  }                                                                                         \
  static inline CT ct_cneg_##CT(CT a) {                                                     \
    return ct_cmake_##CT(-creal##F(a), -cimag##F(a));                                       \
  }                                                                                         \
  static inline CT ct_csquare_##CT(CT a) {                                                  \
    const R ar = creal##F(a), ai = cimag##F(a);                                             \
    return ct_cmake_##CT(ar * ar - ai * ai, ar * ai + ai * ar);                             \
  }                                                                                         \
  /* NumPy's reciprocal loop: 1 / a by the larger part. */                                  \
  static inline CT ct_creciprocal_##CT(CT a) {                                              \
    const R ar = creal##F(a), ai = cimag##F(a);                                             \
    if (fabs##F(ai) <= fabs##F(ar)) {                                                       \
      const R r = ai / ar, d = ar + ai * r;                                                 \
      return ct_cmake_##CT((R)1.0 / d, -r / d);                                             \
    }                                                                                       \
    const R r = ar / ai, d = ar * r + ai;                                                   \
    return ct_cmake_##CT(r / d, (R) - 1.0 / d);                                             \
  }                                                                                         \
  /* The modulus, without overflow or underflow in between (hypot). */                      \
  static inline R ct_cabs_##CT(CT a) {                                                      \
    return hypot##F(creal##F(a), cimag##F(a));                                              \
  }                                                                                         \
  /* NumPy 2's sign: a / |a|; 0 for 0; an infinite part gives its unit direction; nan parts \
   * give nan. */                                                                           \
  static inline CT ct_csign_##CT(CT a) {                                                    \
    const R ar = creal##F(a), ai = cimag##F(a), m = hypot##F(ar, ai);                       \
    if (m != m) return ct_cmake_##CT(NAN, NAN);                                             \
    if (isinf(m)) {                                                                         \
      if (isinf(ar)) {                                                                      \
        if (isinf(ai)) return ct_cmake_##CT(NAN, NAN);                                      \
        return ct_cmake_##CT(ar > 0 ? (R)1 : (R) - 1, (R)0);                                \
      }                                                                                     \
      return ct_cmake_##CT((R)0, ai > 0 ? (R)1 : (R) - 1);                                  \
    }                                                                                       \
    if (m == 0) return ct_cmake_##CT((R)0, (R)0);                                           \
    return ct_cmake_##CT(ar / m, ai / m);                                                   \
  }                                                                                         \
  static inline bool ct_cequal_##CT(CT a, CT b) {                                           \
    return creal##F(a) == creal##F(b) && cimag##F(a) == cimag##F(b);                        \
  }                                                                                         \
  static inline bool ct_cisnan_##CT(CT a) {                                                 \
    return isnan(creal##F(a)) || isnan(cimag##F(a));                                        \
  }                                                                                         \
  static inline bool ct_cisinf_##CT(CT a) {                                                 \
    return isinf(creal##F(a)) || isinf(cimag##F(a));                                        \
  }                                                                                         \
  static inline bool ct_cisfinite_##CT(CT a) {                                              \
    return isfinite(creal##F(a)) && isfinite(cimag##F(a));                                  \
  }

CT_COMPLEX_MATH(ct_complex64, float, f)
CT_COMPLEX_MATH(ct_complex128, double, )

#endif /* CTENSOR_CPU_COMPLEX_MATH_H_ */
