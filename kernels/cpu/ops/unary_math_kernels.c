/* unary_math_kernels.c - positive, sign, expm1, log1p, log2, log10, square, reciprocal, the
 * trigonometric and hyperbolic functions, floor, ceil, trunc, round, isnan, isinf, isfinite,
 * logical_not, bitwise_invert and erf (the activations: activation_kernels.c).
 *
 * Built with -fno-trapping-math, as activation_kernels.c: with trapping math GCC keeps floorf,
 * ceilf and truncf calls (their rounding instruction may raise the inexact flag) and the loops
 * stay scalar. No value changes; nothing here reads or sets the exception flags. */
#include <math.h>
#include <string.h>

#include "cpu_register.h"
#include "engine/elementwise_loops.h"
#include "ops/logical_ops.h"
#include "math/sleef_math.h"
#include "math/vector_math.h"

/* ----- operator functions per compute type ----- */

/* Integers (rounding functions leave them unchanged, as NumPy). */
#define CT_DEF(A, SFX, T, C, U, ID)                \
  static inline C ct_op_positive_##C(C x) {        \
    return x;                                      \
  }                                                \
  static inline C ct_op_square_##C(C x) {          \
    return (C)((uint64_t)x * (uint64_t)x);         \
  }                                                \
  static inline C ct_op_floor_##C(C x) {           \
    return x;                                      \
  }                                                \
  static inline C ct_op_ceil_##C(C x) {            \
    return x;                                      \
  }                                                \
  static inline C ct_op_trunc_##C(C x) {           \
    return x;                                      \
  }                                                \
  static inline ct_bool8 ct_op_isnan_##C(C x) {    \
    (void)x;                                       \
    return 0;                                      \
  }                                                \
  static inline ct_bool8 ct_op_isinf_##C(C x) {    \
    (void)x;                                       \
    return 0;                                      \
  }                                                \
  static inline ct_bool8 ct_op_isfinite_##C(C x) { \
    (void)x;                                       \
    return 1;                                      \
  }
CT_CPU_INT_TYPES(CT_DEF, _)
CT_CPU_BOOL_TYPE(CT_DEF, _)
#undef CT_DEF

#define CT_DEF(A, SFX, T, C, U, ID)               \
  static inline C ct_op_round_##C(C x) {          \
    return x;                                     \
  }                                               \
  static inline C ct_op_bitwise_invert_##C(C x) { \
    return (C) ~(U)x;                             \
  }
CT_CPU_INT_TYPES(CT_DEF, _)
#undef CT_DEF

#define CT_DEF(A, SFX, T, C, U, ID)     \
  static inline C ct_op_sign_##C(C x) { \
    return (C)((x > 0) - (x < 0));      \
  }
CT_CPU_SIGNED_TYPES(CT_DEF, _)
#undef CT_DEF
#define CT_DEF(A, SFX, T, C, U, ID)     \
  static inline C ct_op_sign_##C(C x) { \
    return (C)(x != 0);                 \
  }
CT_CPU_UNSIGNED_TYPES(CT_DEF, _)
#undef CT_DEF

/* bool: ~ is logical not (the generic ~ would give 0xfe). */
static inline ct_bool8 ct_op_bitwise_invert_ct_bool8(ct_bool8 x) {
  return !x;
}
/* round(bool) is float16, as NumPy (its rint has no bool loop). */
static inline float ct_op_round_ct_bool8(ct_bool8 x) {
  return (float)x;
}

/* Floats: F is the libm suffix (f for float, empty for double). */
#define CT_DEF(C, F)                                                                     \
  static inline C ct_op_positive_##C(C x) {                                              \
    return x;                                                                            \
  }                                                                                      \
  static inline C ct_op_sign_##C(C x) {                                                  \
    return x > 0 ? (C)1 : x < 0 ? (C) - 1 : x != x ? x : (C)0;                           \
  }                                                                                      \
  static inline C ct_op_expm1_##C(C x) {                                                 \
    return expm1##F(x);                                                                  \
  }                                                                                      \
  static inline C ct_op_log1p_##C(C x) {                                                 \
    return log1p##F(x);                                                                  \
  }                                                                                      \
  static inline C ct_op_log2_##C(C x) {                                                  \
    return log2##F(x);                                                                   \
  }                                                                                      \
  static inline C ct_op_log10_##C(C x) {                                                 \
    return log10##F(x);                                                                  \
  }                                                                                      \
  static inline C ct_op_square_##C(C x) {                                                \
    return x * x;                                                                        \
  }                                                                                      \
  static inline C ct_op_reciprocal_##C(C x) {                                            \
    return (C)1 / x;                                                                     \
  }                                                                                      \
  static inline C ct_op_sin_##C(C x) {                                                   \
    return sin##F(x);                                                                    \
  }                                                                                      \
  static inline C ct_op_cos_##C(C x) {                                                   \
    return cos##F(x);                                                                    \
  }                                                                                      \
  static inline C ct_op_tan_##C(C x) {                                                   \
    return tan##F(x);                                                                    \
  }                                                                                      \
  static inline C ct_op_asin_##C(C x) {                                                  \
    return asin##F(x);                                                                   \
  }                                                                                      \
  static inline C ct_op_acos_##C(C x) {                                                  \
    return acos##F(x);                                                                   \
  }                                                                                      \
  static inline C ct_op_atan_##C(C x) {                                                  \
    return atan##F(x);                                                                   \
  }                                                                                      \
  static inline C ct_op_sinh_##C(C x) {                                                  \
    return sinh##F(x);                                                                   \
  }                                                                                      \
  static inline C ct_op_cosh_##C(C x) {                                                  \
    return cosh##F(x);                                                                   \
  }                                                                                      \
  static inline C ct_op_asinh_##C(C x) {                                                 \
    return asinh##F(x);                                                                  \
  }                                                                                      \
  static inline C ct_op_acosh_##C(C x) {                                                 \
    return acosh##F(x);                                                                  \
  }                                                                                      \
  static inline C ct_op_atanh_##C(C x) {                                                 \
    return atanh##F(x);                                                                  \
  }                                                                                      \
  static inline C ct_op_floor_##C(C x) {                                                 \
    return floor##F(x);                                                                  \
  }                                                                                      \
  static inline C ct_op_ceil_##C(C x) {                                                  \
    return ceil##F(x);                                                                   \
  }                                                                                      \
  static inline C ct_op_trunc_##C(C x) {                                                 \
    return trunc##F(x);                                                                  \
  }                                                                                      \
  static inline C ct_op_round_##C(C x) { /* the default rounding mode: halves to even */ \
    return nearbyint##F(x);                                                              \
  }                                                                                      \
  static inline ct_bool8 ct_op_isnan_##C(C x) {                                          \
    return x != x;                                                                       \
  }                                                                                      \
  static inline ct_bool8 ct_op_isinf_##C(C x) {                                          \
    return isinf(x) != 0;                                                                \
  }                                                                                      \
  static inline ct_bool8 ct_op_isfinite_##C(C x) {                                       \
    return isfinite(x) != 0;                                                             \
  }                                                                                      \
  static inline C ct_op_erf_##C(C x) {                                                   \
    return erf##F(x);                                                                    \
  }
CT_DEF(float, f)
CT_DEF(double, )
#undef CT_DEF

/* bool results */
#define CT_UNARY_BOOL_X(NAME, SFX, T, C, U, ID) CT_UNARY_LOOP(NAME, SFX, T, C, b8, uint8_t)
#define CT_UNARY_BOOL_REG_X(NAME, SFX, T, C, U, ID) \
  {#NAME, 2, {ID, CT_DT_BOOL}, ct_cpu_elementwise_run, NULL, &ct_cpu_##NAME##_##SFX##_entry},

/* ----- the kernel lists: (op, dtypes), the only place to edit ----- */

/* Output dtype equal to the input's. */
#define CT_UNARY_MATH_KERNELS(K)      \
  K(positive, CT_CPU_NUMERIC_TYPES)   \
  K(sign, CT_CPU_NUMERIC_TYPES)       \
  K(square, CT_CPU_NUMERIC_TYPES)     \
  K(reciprocal, CT_CPU_FLOAT_TYPES)   \
  K(floor, CT_CPU_ALL_TYPES)          \
  K(ceil, CT_CPU_ALL_TYPES)           \
  K(trunc, CT_CPU_ALL_TYPES)          \
  K(round, CT_CPU_NUMERIC_TYPES)      \
  K(bitwise_invert, CT_CPU_BOOL_TYPE) \
  K(bitwise_invert, CT_CPU_INT_TYPES)

/* float32 and float64 through SLEEF where it runs (sleef_math.h), the template loop otherwise and
 * for float16 and bfloat16. */
#define CT_UNARY_MATH_SLEEF_KERNELS(K) \
  K(expm1)                             \
  K(log1p)                             \
  K(log2)                              \
  K(log10)                             \
  K(sin)                               \
  K(cos)                               \
  K(tan)                               \
  K(asin)                              \
  K(acos)                              \
  K(atan)                              \
  K(sinh)                              \
  K(cosh)                              \
  K(asinh)                             \
  K(acosh)                             \
  K(atanh)

/* bool output. */
#define CT_UNARY_MATH_BOOL_KERNELS(K) \
  K(isnan, CT_CPU_ALL_TYPES)          \
  K(isinf, CT_CPU_ALL_TYPES)          \
  K(isfinite, CT_CPU_ALL_TYPES)       \
  K(logical_not, CT_CPU_ALL_TYPES)

#define K(NAME, TYPES) TYPES(CT_UNARY_SAME_X, NAME)
CT_UNARY_MATH_KERNELS(K)
#undef K
#define K(NAME) CT_CPU_FLOAT_TYPES(CT_UNARY_SAME_X, NAME) CT_SLEEF_UNARY_LOOPS(NAME)
CT_UNARY_MATH_SLEEF_KERNELS(K)
#undef K
/* erf: float32 computed in double by the vector_math set (0.5 ulp, vector_math.h), float64
 * through SLEEF (or the template loop), float16 and bfloat16 through the template loop. */
CT_DOUBLE_COMPUTED_F32_LOOPS(erf)
#define K(NAME, TYPES) TYPES(CT_UNARY_BOOL_X, NAME)
CT_UNARY_MATH_BOOL_KERNELS(K)
#undef K
CT_UNARY_LOOP(round, b8, uint8_t, ct_bool8, f16, uint16_t)

static const ct_cpu_kernel ct_cpu_unary_math_kernels[] = {
#define K(NAME, TYPES) TYPES(CT_UNARY_SAME_REG_X, NAME)
    CT_UNARY_MATH_KERNELS(K)
#undef K
#define K(NAME) CT_CPU_LOWP_TYPES(CT_UNARY_SAME_REG_X, NAME) CT_SLEEF_UNARY_REG(NAME)
        CT_UNARY_MATH_SLEEF_KERNELS(K)
#undef K
            CT_DOUBLE_COMPUTED_F32_REG(erf)
#define K(NAME, TYPES) TYPES(CT_UNARY_BOOL_REG_X, NAME)
                CT_UNARY_MATH_BOOL_KERNELS(K)
#undef K
                    {"round",
                     2,
                     {CT_DT_BOOL, CT_DT_F16},
                     ct_cpu_elementwise_run,
                     NULL,
                     &ct_cpu_round_b8_entry},
};

int ct_cpu_register_unary_math(void) {
  return ct_cpu_register_all(ct_cpu_unary_math_kernels,
                             CT_CPU_KERNEL_COUNT(ct_cpu_unary_math_kernels));
}
