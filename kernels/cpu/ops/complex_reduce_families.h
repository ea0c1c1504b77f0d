/* complex_reduce_families.h - the accumulator families of complex sum, mean and prod, for the
 * reduction engine (reduce_layout.h); included by reduce_kernels.c, whose kernel list names them.
 *
 *   csum / cmean  a (double, double) accumulator, pairwise over runs (NumPy's pairwise_sum shape:
 *                 8 accumulators per 128-element block, per part) and two-level over rows, as
 *                 the real float sums; complex64 sums in complex128 and rounds once;
 *   cprod         a (double, double) accumulator starting at 1 + 0j, multiplied with NumPy's
 *                 plain complex product (complex_math.h), rounded once. */
#ifndef CTENSOR_CPU_COMPLEX_REDUCE_FAMILIES_H_
#define CTENSOR_CPU_COMPLEX_REDUCE_FAMILIES_H_

#include "math/complex_math.h"
#include "engine/reduce_layout.h"

typedef struct ct_cacc {
  double re, im;
} ct_cacc;

/* The element at byte offset i * step as two doubles. */
#define CT_CLOAD_RE(T, x, i, step) ((double)creal((ct_complex128)CT_REDUCE_AT(T, x, i, step)))
#define CT_CLOAD_IM(T, x, i, step) ((double)cimag((ct_complex128)CT_REDUCE_AT(T, x, i, step)))

static inline void ct_cacc_store_c64(char* out, double re, double im) {
  *(ct_complex64*)out = ct_cmake_ct_complex64((float)re, (float)im);
}
static inline void ct_cacc_store_c128(char* out, double re, double im) {
  *(ct_complex128*)out = ct_cmake_ct_complex128(re, im);
}

/* DIVIDE: 1 for mean (result / count), 0 for sum. */
#define CT_COMPLEX_SUM_FAMILY(OP, SFX, T, C, OSFX, OT, DIVIDE)                                    \
  CT_CPU_HOT static ct_cacc ct_##OP##_##SFX##_pw(const char* x, int64_t step, int64_t n) {        \
    ct_cacc s = {0.0, 0.0};                                                                       \
    if (n < 8) {                                                                                  \
      for (int64_t i = 0; i < n; ++i) {                                                           \
        s.re += CT_CLOAD_RE(T, x, i, step);                                                       \
        s.im += CT_CLOAD_IM(T, x, i, step);                                                       \
      }                                                                                           \
      return s;                                                                                   \
    }                                                                                             \
    if (n <= 128) {                                                                               \
      double r[8], m[8];                                                                          \
      for (int64_t i = 0; i < 8; ++i) {                                                           \
        r[i] = CT_CLOAD_RE(T, x, i, step);                                                        \
        m[i] = CT_CLOAD_IM(T, x, i, step);                                                        \
      }                                                                                           \
      int64_t b;                                                                                  \
      for (b = 8; b < n - (n % 8); b += 8) {                                                      \
        for (int64_t k = 0; k < 8; ++k) {                                                         \
          r[k] += CT_CLOAD_RE(T, x, b + k, step);                                                 \
          m[k] += CT_CLOAD_IM(T, x, b + k, step);                                                 \
        }                                                                                         \
      }                                                                                           \
      s.re = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));                   \
      s.im = ((m[0] + m[1]) + (m[2] + m[3])) + ((m[4] + m[5]) + (m[6] + m[7]));                   \
      for (int64_t i = b; i < n; ++i) {                                                           \
        s.re += CT_CLOAD_RE(T, x, i, step);                                                       \
        s.im += CT_CLOAD_IM(T, x, i, step);                                                       \
      }                                                                                           \
      return s;                                                                                   \
    }                                                                                             \
    const int64_t half = n / 2 - (n / 2) % 8;                                                     \
    const ct_cacc left = ct_##OP##_##SFX##_pw(x, step, half);                                     \
    const ct_cacc right = ct_##OP##_##SFX##_pw(x + half * step, step, n - half);                  \
    s.re = left.re + right.re;                                                                    \
    s.im = left.im + right.im;                                                                    \
    return s;                                                                                     \
  }                                                                                               \
  static void ct_##OP##_##SFX##_init(void* acc, int64_t n) {                                      \
    ct_cacc* a = acc;                                                                             \
    for (int64_t j = 0; j < n; ++j) a[j] = (ct_cacc){0.0, 0.0};                                   \
  }                                                                                               \
  CT_CPU_HOT static void ct_##OP##_##SFX##_run(const char* x, int64_t step, int64_t n,            \
                                               int64_t index, void* acc) {                        \
    const ct_cacc s = ct_##OP##_##SFX##_pw(x, step, n);                                           \
    ct_cacc* a = acc;                                                                             \
    a->re += s.re;                                                                                \
    a->im += s.im;                                                                                \
  }                                                                                               \
  CT_CPU_HOT static void ct_##OP##_##SFX##_rows(const char* x, int64_t step, int64_t n,           \
                                                int64_t index, void* acc) {                       \
    ct_cacc* a = acc;                                                                             \
    for (int64_t j = 0; j < n; ++j) {                                                             \
      a[j].re += CT_CLOAD_RE(T, x, j, step);                                                      \
      a[j].im += CT_CLOAD_IM(T, x, j, step);                                                      \
    }                                                                                             \
  }                                                                                               \
  static void ct_##OP##_##SFX##_combine(void* acc, const void* later, int64_t n) {                \
    ct_cacc* a = acc;                                                                             \
    const ct_cacc* b = later;                                                                     \
    for (int64_t j = 0; j < n; ++j) {                                                             \
      a[j].re += b[j].re;                                                                         \
      a[j].im += b[j].im;                                                                         \
    }                                                                                             \
  }                                                                                               \
  static void ct_##OP##_##SFX##_finalize(const void* acc, int64_t n, char* out, int64_t out_step, \
                                         int64_t count, double param) {                           \
    const ct_cacc* a = acc;                                                                       \
    for (int64_t j = 0; j < n; ++j) {                                                             \
      const double re = DIVIDE ? a[j].re / (double)count : a[j].re;                               \
      const double im = DIVIDE ? a[j].im / (double)count : a[j].im;                               \
      ct_cacc_store_##OSFX(out + j * out_step, re, im);                                           \
    }                                                                                             \
  }                                                                                               \
  CT_REDUCE_VTABLE(OP, SFX, sizeof(ct_cacc), false, true)

#define CT_FAMILY_csum(OP, SFX, T, C, OSFX, OT) CT_COMPLEX_SUM_FAMILY(OP, SFX, T, C, OSFX, OT, 0)
#define CT_FAMILY_cmean(OP, SFX, T, C, OSFX, OT) CT_COMPLEX_SUM_FAMILY(OP, SFX, T, C, OSFX, OT, 1)

/* a = a * (re + im j), NumPy's plain product. */
static inline void ct_cacc_multiply(ct_cacc* a, double re, double im) {
  const ct_complex128 p =
      ct_cmul_ct_complex128(ct_cmake_ct_complex128(a->re, a->im), ct_cmake_ct_complex128(re, im));
  a->re = creal(p);
  a->im = cimag(p);
}

#define CT_FAMILY_cprod(OP, SFX, T, C, OSFX, OT)                                                  \
  static void ct_##OP##_##SFX##_init(void* acc, int64_t n) {                                      \
    ct_cacc* a = acc;                                                                             \
    for (int64_t j = 0; j < n; ++j) a[j] = (ct_cacc){1.0, 0.0};                                   \
  }                                                                                               \
  CT_CPU_HOT static void ct_##OP##_##SFX##_run(const char* x, int64_t step, int64_t n,            \
                                               int64_t index, void* acc) {                        \
    ct_cacc r = *(ct_cacc*)acc;                                                                   \
    for (int64_t i = 0; i < n; ++i)                                                               \
      ct_cacc_multiply(&r, CT_CLOAD_RE(T, x, i, step), CT_CLOAD_IM(T, x, i, step));               \
    *(ct_cacc*)acc = r;                                                                           \
  }                                                                                               \
  CT_CPU_HOT static void ct_##OP##_##SFX##_rows(const char* x, int64_t step, int64_t n,           \
                                                int64_t index, void* acc) {                       \
    ct_cacc* a = acc;                                                                             \
    for (int64_t j = 0; j < n; ++j)                                                               \
      ct_cacc_multiply(&a[j], CT_CLOAD_RE(T, x, j, step), CT_CLOAD_IM(T, x, j, step));            \
  }                                                                                               \
  static void ct_##OP##_##SFX##_combine(void* acc, const void* later, int64_t n) {                \
    ct_cacc* a = acc;                                                                             \
    const ct_cacc* b = later;                                                                     \
    for (int64_t j = 0; j < n; ++j) ct_cacc_multiply(&a[j], b[j].re, b[j].im);                    \
  }                                                                                               \
  static void ct_##OP##_##SFX##_finalize(const void* acc, int64_t n, char* out, int64_t out_step, \
                                         int64_t count, double param) {                           \
    const ct_cacc* a = acc;                                                                       \
    for (int64_t j = 0; j < n; ++j) ct_cacc_store_##OSFX(out + j * out_step, a[j].re, a[j].im);   \
  }                                                                                               \
  CT_REDUCE_VTABLE(OP, SFX, sizeof(ct_cacc), false, false)

#endif /* CTENSOR_CPU_COMPLEX_REDUCE_FAMILIES_H_ */
