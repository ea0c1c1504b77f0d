/* sleef_math.h - float32 and float64 elementary functions a vector at a time, through SLEEF's
 * AVX-512F or AVX2 functions (https://sleef.org; 1.0-ulp bound), where the build found SLEEF (meson
 * option `sleef`, Debian's libsleef-dev) and ct_cpu_isa() is AVX2 or above: the one-argument
 * functions, atan2 and hypot, and floor_divide and remainder over SLEEF's fmod. The C library's
 * functions, one element at a time, took 10-25 ns an element; SLEEF's take about one.
 *
 * Elements past the range over which SLEEF's functions were found right are computed by the C
 * library instead (the limits in CT_SLEEF_UNARY_FUNCTIONS). Every element of a run goes through
 * the same function whatever the run's layout (strided elements are gathered eight at a time, a
 * short tail padded), so an element's result does not depend on where it sits; it may differ from
 * the C library's in the last place, as vector_math.h's exponential differs between instruction
 * sets. Without SLEEF or AVX2 the kernels keep the C library's functions. */
#ifndef CTENSOR_CPU_SLEEF_MATH_H_
#define CTENSOR_CPU_SLEEF_MATH_H_

#include <stdbool.h>
#include <stdint.h>

#include "internal.h"
#include "engine/strided_iter.h"

/* The functions, by their operator names (SLEEF's and the C library's functions are named from
 * them), each with the magnitude past which the C library's function is used instead in float32
 * and in float64 (INFINITY: none; see above): asinh and acosh past SLEEF's documented range, where
 * it returns infinity; sinh, cosh and log1p where a sweep of 2 million random bit patterns per type
 * against the C library in a wider precision found SLEEF's overflowing early (sinh and cosh from
 * 88.7 and 709.8). The trigonometric functions measured within 1 ulp over the whole range (older
 * SLEEF documentation bounds them to 5e9 in float32, 1e14 in float64). A function added here
 * needs its operator's kernel list to name it (CT_SLEEF_UNARY_LOOPS, CT_SLEEF_UNARY_REG); float32
 * tanh and erf run vector_math.h's own loops instead (within half an ulp, faster), their entries
 * here serve float64 only. */
#define CT_SLEEF_UNARY_FUNCTIONS(X) \
  X(sin, INFINITY, INFINITY)        \
  X(cos, INFINITY, INFINITY)        \
  X(tan, INFINITY, INFINITY)        \
  X(asin, INFINITY, INFINITY)       \
  X(acos, INFINITY, INFINITY)       \
  X(atan, INFINITY, INFINITY)       \
  X(sinh, 88.5f, 709.0)             \
  X(cosh, 88.5f, 709.0)             \
  X(tanh, INFINITY, INFINITY)       \
  X(asinh, 1.84e19f, 1.34e154)      \
  X(acosh, 1.84e19f, 1.34e154)      \
  X(atanh, INFINITY, INFINITY)      \
  X(log, INFINITY, INFINITY)        \
  X(log2, INFINITY, INFINITY)       \
  X(log10, INFINITY, INFINITY)      \
  X(log1p, 1e38f, 1e307)            \
  X(expm1, INFINITY, INFINITY)      \
  X(erf, INFINITY, INFINITY)

typedef enum ct_sleef_fn {
#define CT_SLEEF_ENUM(NAME, LIMIT_F32, LIMIT_F64) CT_SLEEF_##NAME,
  CT_SLEEF_UNARY_FUNCTIONS(CT_SLEEF_ENUM)
#undef CT_SLEEF_ENUM
      CT_SLEEF_COUNT
} ct_sleef_fn;

/* The two-argument functions, each with SLEEF's accuracy suffix (bounds 1 ulp and 0.5001 ulp).
 * Every element goes through the vector function whatever its magnitude: over random bit
 * patterns (tests/test_ops_binary_math.py) both stay within 1 ulp of the exact result, with the
 * special values' results of the C library. */
#define CT_SLEEF_BINARY_FUNCTIONS(X) \
  X(atan2, _u10)                     \
  X(hypot, _u05)

typedef enum ct_sleef_binary_fn {
#define CT_SLEEF_BINARY_ENUM(NAME, ACCURACY) CT_SLEEF2_##NAME,
  CT_SLEEF_BINARY_FUNCTIONS(CT_SLEEF_BINARY_ENUM)
#undef CT_SLEEF_BINARY_ENUM
      CT_SLEEF_BINARY_COUNT
} ct_sleef_binary_fn;

/* dst[i · ds] = fn(src[i · ss]) for i < n (steps in bytes; dst may be src), returning true; or
 * false, with nothing written, where SLEEF or AVX2 is not there. */
CT_INTERNAL bool ct_sleef_unary_f32(ct_sleef_fn fn, const char* src, int64_t ss, char* dst,
                                    int64_t ds, int64_t n);
CT_INTERNAL bool ct_sleef_unary_f64(ct_sleef_fn fn, const char* src, int64_t ss, char* dst,
                                    int64_t ds, int64_t n);

/* dst[i · ds] = fn(a[i · as], b[i · bs]) for i < n (steps in bytes, 0 for a scalar operand; dst
 * may be a or b), returning true; or false, with nothing written, where SLEEF or AVX2 is not
 * there. */
CT_INTERNAL bool ct_sleef_binary_f32(ct_sleef_binary_fn fn, const char* a, int64_t as,
                                     const char* b, int64_t bs, char* dst, int64_t ds, int64_t n);
CT_INTERNAL bool ct_sleef_binary_f64(ct_sleef_binary_fn fn, const char* a, int64_t as,
                                     const char* b, int64_t bs, char* dst, int64_t ds, int64_t n);

/* dst[i · ds] = NumPy's floor_divide (floor_divide != 0) or remainder of a[i · as] and b[i · bs],
 * from SLEEF's fmod with NumPy's corrections in vectors; `scalar` (the operator's own scalar
 * function) computes the elements SLEEF's fmod cannot (a / b overflowing). Returns true; or
 * false, with nothing written, where SLEEF or AVX2 is not there. */
CT_INTERNAL bool ct_sleef_divmod_f32(int floor_divide, float (*scalar)(float, float), const char* a,
                                     int64_t as, const char* b, int64_t bs, char* dst, int64_t ds,
                                     int64_t n);
CT_INTERNAL bool ct_sleef_divmod_f64(int floor_divide, double (*scalar)(double, double),
                                     const char* a, int64_t as, const char* b, int64_t bs,
                                     char* dst, int64_t ds, int64_t n);

/* The loops behind them, per instruction set (sleef_math_avx2.c, sleef_math_avx512.c, through
 * sleef_math_impl.h; built only with SLEEF). */
#define CT_SLEEF_DECLARE_LOOPS(SFX, T, ISA)                                                        \
  CT_INTERNAL void ct_sleef_unary_##SFX##_##ISA(ct_sleef_fn fn, const char* src, int64_t ss,       \
                                                char* dst, int64_t ds, int64_t n);                 \
  CT_INTERNAL void ct_sleef_binary_##SFX##_##ISA(ct_sleef_binary_fn fn, const char* a, int64_t as, \
                                                 const char* b, int64_t bs, char* dst, int64_t ds, \
                                                 int64_t n);                                       \
  CT_INTERNAL void ct_sleef_divmod_##SFX##_##ISA(int floor_divide, T (*scalar)(T, T),              \
                                                 const char* a, int64_t as, const char* b,         \
                                                 int64_t bs, char* dst, int64_t ds, int64_t n);
CT_SLEEF_DECLARE_LOOPS(f32, float, avx2)
CT_SLEEF_DECLARE_LOOPS(f64, double, avx2)
CT_SLEEF_DECLARE_LOOPS(f32, float, avx512)
CT_SLEEF_DECLARE_LOOPS(f64, double, avx512)
#undef CT_SLEEF_DECLARE_LOOPS

/* A loop ct_cpu_NAME_SFX_sleef (and its entry) that runs RUN, an expression over the loop's
 * data, steps and n that is false where SLEEF or AVX2 is not there, and then the template loop
 * ct_cpu_NAME_SFX_entry (elementwise_loops.h, defined before). */
#define CT_SLEEF_OR_TEMPLATE_LOOP(NAME, SFX, RUN)                                         \
  static void ct_cpu_##NAME##_##SFX##_sleef(char** data, const int64_t* steps, int64_t n, \
                                            const void* extra) {                          \
    if (!(RUN)) ct_cpu_##NAME##_##SFX##_entry.loop(data, steps, n, extra);                \
  }                                                                                       \
  static const ct_cpu_loop_entry ct_cpu_##NAME##_##SFX##_sleef_entry = {                  \
      ct_cpu_##NAME##_##SFX##_sleef};

/* The float32 and float64 loops of unary operator NAME: SLEEF's function where it runs, else
 * the template loop. */
#define CT_SLEEF_UNARY_LOOP_OF(NAME, SFX) \
  CT_SLEEF_OR_TEMPLATE_LOOP(              \
      NAME, SFX, ct_sleef_unary_##SFX(CT_SLEEF_##NAME, data[0], steps[0], data[1], steps[1], n))
#define CT_SLEEF_UNARY_LOOPS(NAME)  \
  CT_SLEEF_UNARY_LOOP_OF(NAME, f32) \
  CT_SLEEF_UNARY_LOOP_OF(NAME, f64)
/* Their rows of a kernel table: one dtype's, both float types'. */
#define CT_SLEEF_UNARY_REG_OF(NAME, SFX, ID) \
  {#NAME, 2, {ID, ID}, ct_cpu_elementwise_run, NULL, &ct_cpu_##NAME##_##SFX##_sleef_entry},
#define CT_SLEEF_UNARY_REG(NAME) \
  CT_SLEEF_UNARY_REG_OF(NAME, f32, CT_DT_F32) CT_SLEEF_UNARY_REG_OF(NAME, f64, CT_DT_F64)

/* The float32 and float64 loops of binary operator NAME (one of CT_SLEEF_BINARY_FUNCTIONS):
 * SLEEF's function where it runs, else the template loop; and their rows of a kernel table (the
 * rows of any binary CT_SLEEF_OR_TEMPLATE_LOOP). */
#define CT_SLEEF_BINARY_LOOP_OF(NAME, SFX)                                                      \
  CT_SLEEF_OR_TEMPLATE_LOOP(NAME, SFX,                                                          \
                            ct_sleef_binary_##SFX(CT_SLEEF2_##NAME, data[0], steps[0], data[1], \
                                                  steps[1], data[2], steps[2], n))
#define CT_SLEEF_BINARY_LOOPS(NAME)  \
  CT_SLEEF_BINARY_LOOP_OF(NAME, f32) \
  CT_SLEEF_BINARY_LOOP_OF(NAME, f64)
#define CT_SLEEF_BINARY_REG_OF(NAME, SFX, ID) \
  {#NAME, 3, {ID, ID, ID}, ct_cpu_elementwise_run, NULL, &ct_cpu_##NAME##_##SFX##_sleef_entry},
#define CT_SLEEF_BINARY_REG(NAME) \
  CT_SLEEF_BINARY_REG_OF(NAME, f32, CT_DT_F32) CT_SLEEF_BINARY_REG_OF(NAME, f64, CT_DT_F64)

/* An operator whose float32 runs vector_math.h's own loop, computed in double (tanh, erf): that
 * loop (CT_VECTOR_MATH_F32_LOOP, elementwise_loops.h), SLEEF's float64 one, and the template loops
 * for the other float types; and their rows of a kernel table. */
#define CT_DOUBLE_COMPUTED_F32_LOOPS(NAME)          \
  CT_CPU_FLOAT_TYPES_BUT_F32(CT_UNARY_SAME_X, NAME) \
  CT_SLEEF_UNARY_LOOP_OF(NAME, f64)                 \
  CT_VECTOR_MATH_F32_LOOP(NAME)
#define CT_DOUBLE_COMPUTED_F32_REG(NAME)       \
  CT_CPU_LOWP_TYPES(CT_UNARY_SAME_REG_X, NAME) \
  CT_VECTOR_MATH_F32_REG(NAME) CT_SLEEF_UNARY_REG_OF(NAME, f64, CT_DT_F64)

#endif /* CTENSOR_CPU_SLEEF_MATH_H_ */
