/* complex_kernels.c - element-wise kernels of complex64 and complex128: arithmetic, negative,
 * positive, abs, exp, log, sqrt, square, reciprocal, sign, the trigonometric and hyperbolic
 * functions and their inverses, expm1, log1p, log2, log10, equal, not_equal, isnan, isinf, isfinite
 * and where. The arithmetic is NumPy's (complex_math.h); the loops are the shared element-wise
 * templates. */
#include <stdint.h>

/* Complex products must not fuse (see cpu_isa.h): every ISA copy rounds each product. */
#define CT_CPU_ISA_AVX512_AS_AVX2
#include "engine/cpu_isa.h"

#include "math/complex_math.h"
#include "cpu_register.h"
#include "engine/elementwise_loops.h"
#include "ops/logical_ops.h"

/* ----- operator functions per compute type (CT the complex type, R its part type, F the libm
 * suffix) ----- */

#define CT_DEF(CT, R, F)                                                                  \
  static inline CT ct_op_add_##CT(CT a, CT b) {                                           \
    return ct_cadd_##CT(a, b);                                                            \
  }                                                                                       \
  static inline CT ct_op_subtract_##CT(CT a, CT b) {                                      \
    return ct_csub_##CT(a, b);                                                            \
  }                                                                                       \
  static inline CT ct_op_multiply_##CT(CT a, CT b) {                                      \
    return ct_cmul_##CT(a, b);                                                            \
  }                                                                                       \
  static inline CT ct_op_divide_##CT(CT a, CT b) {                                        \
    return ct_cdiv_##CT(a, b);                                                            \
  }                                                                                       \
  static inline ct_bool8 ct_op_equal_##CT(CT a, CT b) {                                   \
    return ct_cequal_##CT(a, b);                                                          \
  }                                                                                       \
  static inline ct_bool8 ct_op_not_equal_##CT(CT a, CT b) {                               \
    return !ct_cequal_##CT(a, b);                                                         \
  }                                                                                       \
  static inline CT ct_op_negative_##CT(CT x) {                                            \
    return ct_cneg_##CT(x);                                                               \
  }                                                                                       \
  static inline CT ct_op_positive_##CT(CT x) {                                            \
    return x;                                                                             \
  }                                                                                       \
  static inline R ct_op_abs_##CT(CT x) {                                                  \
    return ct_cabs_##CT(x);                                                               \
  }                                                                                       \
  static inline CT ct_op_square_##CT(CT x) {                                              \
    return ct_csquare_##CT(x);                                                            \
  }                                                                                       \
  static inline CT ct_op_reciprocal_##CT(CT x) {                                          \
    return ct_creciprocal_##CT(x);                                                        \
  }                                                                                       \
  static inline CT ct_op_sign_##CT(CT x) {                                                \
    return ct_csign_##CT(x);                                                              \
  }                                                                                       \
  static inline ct_bool8 ct_op_isnan_##CT(CT x) {                                         \
    return ct_cisnan_##CT(x);                                                             \
  }                                                                                       \
  static inline ct_bool8 ct_op_isinf_##CT(CT x) {                                         \
    return ct_cisinf_##CT(x);                                                             \
  }                                                                                       \
  static inline ct_bool8 ct_op_isfinite_##CT(CT x) {                                      \
    return ct_cisfinite_##CT(x);                                                          \
  }                                                                                       \
  /* The C library's functions, as NumPy's npymath uses them. */                          \
  static inline CT ct_op_exp_##CT(CT x) {                                                 \
    return cexp##F(x);                                                                    \
  }                                                                                       \
  static inline CT ct_op_log_##CT(CT x) {                                                 \
    return clog##F(x);                                                                    \
  }                                                                                       \
  static inline CT ct_op_sqrt_##CT(CT x) {                                                \
    return csqrt##F(x);                                                                   \
  }                                                                                       \
  static inline CT ct_op_sin_##CT(CT x) {                                                 \
    return csin##F(x);                                                                    \
  }                                                                                       \
  static inline CT ct_op_cos_##CT(CT x) {                                                 \
    return ccos##F(x);                                                                    \
  }                                                                                       \
  static inline CT ct_op_tan_##CT(CT x) {                                                 \
    return ctan##F(x);                                                                    \
  }                                                                                       \
  static inline CT ct_op_sinh_##CT(CT x) {                                                \
    return csinh##F(x);                                                                   \
  }                                                                                       \
  static inline CT ct_op_cosh_##CT(CT x) {                                                \
    return ccosh##F(x);                                                                   \
  }                                                                                       \
  static inline CT ct_op_tanh_##CT(CT x) {                                                \
    return ctanh##F(x);                                                                   \
  }                                                                                       \
  static inline CT ct_op_asin_##CT(CT x) {                                                \
    return casin##F(x);                                                                   \
  }                                                                                       \
  static inline CT ct_op_acos_##CT(CT x) {                                                \
    return cacos##F(x);                                                                   \
  }                                                                                       \
  static inline CT ct_op_atan_##CT(CT x) {                                                \
    return catan##F(x);                                                                   \
  }                                                                                       \
  static inline CT ct_op_asinh_##CT(CT x) {                                               \
    return casinh##F(x);                                                                  \
  }                                                                                       \
  static inline CT ct_op_acosh_##CT(CT x) {                                               \
    return cacosh##F(x);                                                                  \
  }                                                                                       \
  static inline CT ct_op_atanh_##CT(CT x) {                                               \
    return catanh##F(x);                                                                  \
  }                                                                                       \
  /* NumPy's formulas (umath's nc_expm1, nc_log1p, nc_log2, nc_log10). */                 \
  static inline CT ct_op_expm1_##CT(CT x) {                                               \
    const R re = creal##F(x), im = cimag##F(x), a = sin##F(im / 2);                       \
    return ct_cmake_##CT(expm1##F(re) * cos##F(im) - 2 * a * a, exp##F(re) * sin##F(im)); \
  }                                                                                       \
  static inline CT ct_op_log1p_##CT(CT x) {                                               \
    const R re = creal##F(x) + 1, im = cimag##F(x);                                       \
    return ct_cmake_##CT(log##F(hypot##F(re, im)), atan2##F(im, re));                     \
  }                                                                                       \
  static inline CT ct_op_log2_##CT(CT x) {                                                \
    const CT l = clog##F(x);                                                              \
    const R k = (R)1.442695040888963407359924681001892137;                                \
    return ct_cmake_##CT(creal##F(l) * k, cimag##F(l) * k);                               \
  }                                                                                       \
  static inline CT ct_op_log10_##CT(CT x) {                                               \
    const CT l = clog##F(x);                                                              \
    const R k = (R)0.434294481903251827651128918916605082;                                \
    return ct_cmake_##CT(creal##F(l) * k, cimag##F(l) * k);                               \
  }

CT_DEF(ct_complex64, float, f)
CT_DEF(ct_complex128, double, )
#undef CT_DEF

/* ----- the kernel lists: (op, dtypes), the only place to edit ----- */

/* Output dtype equal to the inputs'. */
#define CT_COMPLEX_BINARY_KERNELS(K) \
  K(add, CT_CPU_COMPLEX_TYPES)       \
  K(subtract, CT_CPU_COMPLEX_TYPES)  \
  K(multiply, CT_CPU_COMPLEX_TYPES)  \
  K(divide, CT_CPU_COMPLEX_TYPES)

#define CT_COMPLEX_UNARY_KERNELS(K)   \
  K(negative, CT_CPU_COMPLEX_TYPES)   \
  K(positive, CT_CPU_COMPLEX_TYPES)   \
  K(exp, CT_CPU_COMPLEX_TYPES)        \
  K(log, CT_CPU_COMPLEX_TYPES)        \
  K(sqrt, CT_CPU_COMPLEX_TYPES)       \
  K(square, CT_CPU_COMPLEX_TYPES)     \
  K(reciprocal, CT_CPU_COMPLEX_TYPES) \
  K(sign, CT_CPU_COMPLEX_TYPES)       \
  K(sin, CT_CPU_COMPLEX_TYPES)        \
  K(cos, CT_CPU_COMPLEX_TYPES)        \
  K(tan, CT_CPU_COMPLEX_TYPES)        \
  K(sinh, CT_CPU_COMPLEX_TYPES)       \
  K(cosh, CT_CPU_COMPLEX_TYPES)       \
  K(tanh, CT_CPU_COMPLEX_TYPES)       \
  K(asin, CT_CPU_COMPLEX_TYPES)       \
  K(acos, CT_CPU_COMPLEX_TYPES)       \
  K(atan, CT_CPU_COMPLEX_TYPES)       \
  K(asinh, CT_CPU_COMPLEX_TYPES)      \
  K(acosh, CT_CPU_COMPLEX_TYPES)      \
  K(atanh, CT_CPU_COMPLEX_TYPES)      \
  K(expm1, CT_CPU_COMPLEX_TYPES)      \
  K(log1p, CT_CPU_COMPLEX_TYPES)      \
  K(log2, CT_CPU_COMPLEX_TYPES)       \
  K(log10, CT_CPU_COMPLEX_TYPES)

/* bool output. */
#define CT_COMPLEX_COMPARE_KERNELS(K)  \
  K(equal, CT_CPU_COMPLEX_TYPES)       \
  K(not_equal, CT_CPU_COMPLEX_TYPES)   \
  K(logical_and, CT_CPU_COMPLEX_TYPES) \
  K(logical_or, CT_CPU_COMPLEX_TYPES)  \
  K(logical_xor, CT_CPU_COMPLEX_TYPES)
#define CT_COMPLEX_PREDICATE_KERNELS(K) \
  K(logical_not, CT_CPU_COMPLEX_TYPES)  \
  K(isnan, CT_CPU_COMPLEX_TYPES)        \
  K(isinf, CT_CPU_COMPLEX_TYPES)        \
  K(isfinite, CT_CPU_COMPLEX_TYPES)

#define CT_COMPARE_X(NAME, SFX, T, C, U, ID) CT_BINARY_LOOP(NAME, SFX, T, C, b8, uint8_t)
#define CT_COMPARE_REG_X(NAME, SFX, T, C, U, ID) \
  {#NAME, 3, {ID, ID, CT_DT_BOOL}, ct_cpu_elementwise_run, NULL, &ct_cpu_##NAME##_##SFX##_entry},
#define CT_PREDICATE_X(NAME, SFX, T, C, U, ID) CT_UNARY_LOOP(NAME, SFX, T, C, b8, uint8_t)
#define CT_PREDICATE_REG_X(NAME, SFX, T, C, U, ID) \
  {#NAME, 2, {ID, CT_DT_BOOL}, ct_cpu_elementwise_run, NULL, &ct_cpu_##NAME##_##SFX##_entry},

#define K(NAME, TYPES) TYPES(CT_BINARY_SAME_X, NAME)
CT_COMPLEX_BINARY_KERNELS(K)
#undef K
#define K(NAME, TYPES) TYPES(CT_UNARY_SAME_X, NAME)
CT_COMPLEX_UNARY_KERNELS(K)
#undef K
#define K(NAME, TYPES) TYPES(CT_COMPARE_X, NAME)
CT_COMPLEX_COMPARE_KERNELS(K)
#undef K
#define K(NAME, TYPES) TYPES(CT_PREDICATE_X, NAME)
CT_COMPLEX_PREDICATE_KERNELS(K)
#undef K

/* abs: the modulus in the part dtype. */
CT_UNARY_LOOP(abs, c64, ct_complex64, ct_complex64, f32, float)
CT_UNARY_LOOP(abs, c128, ct_complex128, ct_complex128, f64, double)

/* where for complex128 (16-byte elements; where_kernels.c stops at 8 bytes, and complex64 moves
 * as one 8-byte word there too, but is registered here so that complex stays in one file). */
#define CT_WHERE_COPY_LOOP(SFX, T)                                             \
  static void ct_cpu_where_##SFX(char** data, const int64_t* steps, int64_t n, \
                                 const void* extra) {                          \
    (void)extra;                                                               \
    for (int64_t i = 0; i < n; ++i) {                                          \
      CT_AT(T, data[3], i, steps[3]) = CT_AT(uint8_t, data[0], i, steps[0])    \
                                           ? CT_AT(T, data[1], i, steps[1])    \
                                           : CT_AT(T, data[2], i, steps[2]);   \
    }                                                                          \
  }                                                                            \
  static const ct_cpu_loop_entry ct_cpu_where_##SFX##_entry = {ct_cpu_where_##SFX};
CT_WHERE_COPY_LOOP(c64, ct_complex64)
CT_WHERE_COPY_LOOP(c128, ct_complex128)

static const ct_cpu_kernel ct_cpu_complex_kernels[] = {
#define K(NAME, TYPES) TYPES(CT_BINARY_SAME_REG_X, NAME)
    CT_COMPLEX_BINARY_KERNELS(K)
#undef K
#define K(NAME, TYPES) TYPES(CT_UNARY_SAME_REG_X, NAME)
        CT_COMPLEX_UNARY_KERNELS(K)
#undef K
#define K(NAME, TYPES) TYPES(CT_COMPARE_REG_X, NAME)
            CT_COMPLEX_COMPARE_KERNELS(K)
#undef K
#define K(NAME, TYPES) TYPES(CT_PREDICATE_REG_X, NAME)
                CT_COMPLEX_PREDICATE_KERNELS(K)
#undef K
                    {"abs",
                     2,
                     {CT_DT_C64, CT_DT_F32},
                     ct_cpu_elementwise_run,
                     NULL,
                     &ct_cpu_abs_c64_entry},
    {"abs", 2, {CT_DT_C128, CT_DT_F64}, ct_cpu_elementwise_run, NULL, &ct_cpu_abs_c128_entry},
    {"where",
     4,
     {CT_DT_BOOL, CT_DT_C64, CT_DT_C64, CT_DT_C64},
     ct_cpu_elementwise_run,
     NULL,
     &ct_cpu_where_c64_entry},
    {"where",
     4,
     {CT_DT_BOOL, CT_DT_C128, CT_DT_C128, CT_DT_C128},
     ct_cpu_elementwise_run,
     NULL,
     &ct_cpu_where_c128_entry},
};

int ct_cpu_register_complex(void) {
  return ct_cpu_register_all(ct_cpu_complex_kernels, CT_CPU_KERNEL_COUNT(ct_cpu_complex_kernels));
}
