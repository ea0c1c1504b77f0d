/* sleef_math.h - float32 and float64 elementary functions eight (four) elements at a time, through
 * SLEEF's AVX2 functions (https://sleef.org; 1.0-ulp bound), where the build found SLEEF (meson
 * option `sleef`, Debian's libsleef-dev) and ct_cpu_isa() is AVX2 or above. The C library's
 * functions, one element at a time, took 10-25 ns an element; SLEEF's take about one.
 *
 * Elements past the range over which SLEEF's functions were found right are computed by the C
 * library instead: asinh and acosh past 1.84e19 in float32 (1.34e154 in float64), the bound
 * SLEEF documents; sinh and cosh past 88.5 (709) and log1p past 1e38 (1e307), where a sweep of
 * the whole range found them overflowing early. Every element of a run goes through the same
 * function whatever the run's layout (strided elements are gathered eight at a time, a short tail
 * padded), so an element's result does not depend on where it sits; it may differ from the C
 * library's in the last place, as vector_math.h's exponential differs between instruction sets.
 * Without SLEEF or AVX2 the kernels keep the C library's functions. */
#ifndef CTENSOR_CPU_SLEEF_MATH_H_
#define CTENSOR_CPU_SLEEF_MATH_H_

#include <stdbool.h>
#include <stdint.h>

#include "internal.h"
#include "strided_iter.h"

/* The functions, by their operator names. */
#define CT_SLEEF_UNARY_FUNCTIONS(X) \
  X(sin)                            \
  X(cos)                            \
  X(tan)                            \
  X(asin)                           \
  X(acos)                           \
  X(atan)                           \
  X(sinh)                           \
  X(cosh)                           \
  X(tanh)                           \
  X(asinh)                          \
  X(acosh)                          \
  X(atanh)                          \
  X(log)                            \
  X(log2)                           \
  X(log10)                          \
  X(log1p)                          \
  X(expm1)                          \
  X(erf)

typedef enum ct_sleef_fn {
#define CT_SLEEF_ENUM(NAME) CT_SLEEF_##NAME,
  CT_SLEEF_UNARY_FUNCTIONS(CT_SLEEF_ENUM)
#undef CT_SLEEF_ENUM
      CT_SLEEF_COUNT
} ct_sleef_fn;

/* dst[i · ds] = fn(src[i · ss]) for i < n (steps in bytes; dst may be src), returning true; or
 * false, with nothing written, where SLEEF or AVX2 is not there. */
CT_INTERNAL bool ct_sleef_unary_f32(ct_sleef_fn fn, const char* src, int64_t ss, char* dst,
                                    int64_t ds, int64_t n);
CT_INTERNAL bool ct_sleef_unary_f64(ct_sleef_fn fn, const char* src, int64_t ss, char* dst,
                                    int64_t ds, int64_t n);

/* The AVX2 loops behind them (sleef_math_avx2.c, built only with SLEEF). */
CT_INTERNAL void ct_sleef_unary_f32_avx2(ct_sleef_fn fn, const char* src, int64_t ss, char* dst,
                                         int64_t ds, int64_t n);
CT_INTERNAL void ct_sleef_unary_f64_avx2(ct_sleef_fn fn, const char* src, int64_t ss, char* dst,
                                         int64_t ds, int64_t n);

/* The float32 and float64 loops of unary operator NAME: SLEEF's function where it runs, else
 * the template loop ct_cpu_NAME_f32_entry / _f64_entry (elementwise_loops.h, defined before). */
#define CT_SLEEF_UNARY_LOOP_OF(NAME, SFX)                                                  \
  static void ct_cpu_##NAME##_##SFX##_sleef(char** data, const int64_t* steps, int64_t n,  \
                                            const void* extra) {                           \
    if (!ct_sleef_unary_##SFX(CT_SLEEF_##NAME, data[0], steps[0], data[1], steps[1], n)) { \
      ct_cpu_##NAME##_##SFX##_entry.loop(data, steps, n, extra);                           \
    }                                                                                      \
  }                                                                                        \
  static const ct_cpu_loop_entry ct_cpu_##NAME##_##SFX##_sleef_entry = {                   \
      ct_cpu_##NAME##_##SFX##_sleef};
#define CT_SLEEF_UNARY_LOOPS(NAME)  \
  CT_SLEEF_UNARY_LOOP_OF(NAME, f32) \
  CT_SLEEF_UNARY_LOOP_OF(NAME, f64)
/* Their rows of a kernel table. */
#define CT_SLEEF_UNARY_REG(NAME)      \
  {#NAME,                             \
   2,                                 \
   {CT_DT_F32, CT_DT_F32},            \
   ct_cpu_elementwise_run,            \
   NULL,                              \
   &ct_cpu_##NAME##_f32_sleef_entry}, \
      {#NAME,                         \
       2,                             \
       {CT_DT_F64, CT_DT_F64},        \
       ct_cpu_elementwise_run,        \
       NULL,                          \
       &ct_cpu_##NAME##_f64_sleef_entry},

#endif /* CTENSOR_CPU_SLEEF_MATH_H_ */
