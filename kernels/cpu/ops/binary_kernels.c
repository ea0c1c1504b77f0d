/* binary_kernels.c - add, subtract, multiply, divide, maximum, minimum, pow. */
#include <math.h>

#include "cpu_register.h"
#include "engine/elementwise_loops.h"

/* ----- operator functions per compute type ----- */

/* Integers: arithmetic in uint64 is modular, so every width wraps as NumPy's does, with no
 * signed-overflow undefined behaviour. */
#define CT_DEF(A, SFX, T, C, U, ID)                                                    \
  static inline C ct_op_add_##C(C a, C b) {                                            \
    return (C)((uint64_t)a + (uint64_t)b);                                             \
  }                                                                                    \
  static inline C ct_op_subtract_##C(C a, C b) {                                       \
    return (C)((uint64_t)a - (uint64_t)b);                                             \
  }                                                                                    \
  static inline C ct_op_multiply_##C(C a, C b) {                                       \
    return (C)((uint64_t)a * (uint64_t)b);                                             \
  }                                                                                    \
  static inline C ct_op_maximum_##C(C a, C b) {                                        \
    return a > b ? a : b;                                                              \
  }                                                                                    \
  static inline C ct_op_minimum_##C(C a, C b) {                                        \
    return a < b ? a : b;                                                              \
  }                                                                                    \
  static inline double ct_op_divide_##C(C a, C b) {                                    \
    return (double)a / (double)b;                                                      \
  }                                                                                    \
  static inline C ct_op_pow_##C(C a, C b) { /* b >= 0: checked before the loop runs */ \
    uint64_t base = (uint64_t)a, exponent = (uint64_t)b, result = 1;                   \
    while (exponent) {                                                                 \
      if (exponent & 1u) result *= base;                                               \
      base *= base;                                                                    \
      exponent >>= 1;                                                                  \
    }                                                                                  \
    return (C)result;                                                                  \
  }
CT_CPU_INT_TYPES(CT_DEF, _)
#undef CT_DEF

#define CT_DEF(A, SFX, T, C, U, ID)              \
  static inline C ct_op_add_##C(C a, C b) {      \
    return a + b;                                \
  }                                              \
  static inline C ct_op_subtract_##C(C a, C b) { \
    return a - b;                                \
  }                                              \
  static inline C ct_op_multiply_##C(C a, C b) { \
    return a * b;                                \
  }                                              \
  static inline C ct_op_divide_##C(C a, C b) {   \
    return a / b;                                \
  }                                              \
  static inline C ct_op_maximum_##C(C a, C b) {  \
    return (a >= b || a != a) ? a : b;           \
  }                                              \
  static inline C ct_op_minimum_##C(C a, C b) {  \
    return (a <= b || a != a) ? a : b;           \
  }
CT_CPU_FULLP_TYPES(CT_DEF, _)
#undef CT_DEF

static inline float ct_op_pow_float(float a, float b) {
  return powf(a, b);
}
static inline double ct_op_pow_double(double a, double b) {
  return pow(a, b);
}

/* bool: + is or, * is and (NumPy). */
static inline ct_bool8 ct_op_add_ct_bool8(ct_bool8 a, ct_bool8 b) {
  return a | b;
}
static inline ct_bool8 ct_op_multiply_ct_bool8(ct_bool8 a, ct_bool8 b) {
  return a & b;
}
static inline ct_bool8 ct_op_maximum_ct_bool8(ct_bool8 a, ct_bool8 b) {
  return a | b;
}
static inline ct_bool8 ct_op_minimum_ct_bool8(ct_bool8 a, ct_bool8 b) {
  return a & b;
}
static inline double ct_op_divide_ct_bool8(ct_bool8 a, ct_bool8 b) {
  return (double)a / (double)b;
}

/* ----- the kernel lists ----- */

/* (op, dtypes) with the output dtype equal to the inputs'. */
#define CT_BINARY_KERNELS(K)        \
  K(add, CT_CPU_ALL_TYPES)          \
  K(subtract, CT_CPU_NUMERIC_TYPES) \
  K(multiply, CT_CPU_ALL_TYPES)     \
  K(maximum, CT_CPU_ALL_TYPES)      \
  K(minimum, CT_CPU_ALL_TYPES)      \
  K(divide, CT_CPU_FLOAT_TYPES)     \
  K(pow, CT_CPU_FLOAT_TYPES)        \
  K(pow, CT_CPU_UNSIGNED_TYPES)

#define K(NAME, TYPES) TYPES(CT_BINARY_SAME_X, NAME)
CT_BINARY_KERNELS(K)
#undef K

/* True division of integers and bool gives float64. */
#define CT_DIVIDE_TO_F64_X(NAME, SFX, T, C, U, ID) CT_BINARY_LOOP(NAME, SFX, T, C, f64, double)
#define CT_DIVIDE_TO_F64_REG_X(NAME, SFX, T, C, U, ID) \
  {#NAME, 3, {ID, ID, CT_DT_F64}, ct_cpu_elementwise_run, NULL, &ct_cpu_##NAME##_##SFX##_entry},
CT_CPU_INT_TYPES(CT_DIVIDE_TO_F64_X, divide)
CT_CPU_BOOL_TYPE(CT_DIVIDE_TO_F64_X, divide)

/* Signed integer pow: NumPy refuses negative exponents, so the kernel scans x2 first and fails
 * before writing anything. */
typedef struct ct_negative_scan {
  int found;
} ct_negative_scan;

#define CT_SIGNED_POW_X(NAME, SFX, T, C, U, ID)                                        \
  CT_BINARY_LOOP(pow, SFX, T, C, SFX, T)                                               \
  static void ct_cpu_scan_negative_##SFX(char** data, const int64_t* steps, int64_t n, \
                                         const void* extra) {                          \
    ct_negative_scan* scan = (ct_negative_scan*)extra;                                 \
    int found = 0;                                                                     \
    for (int64_t i = 0; i < n; ++i) found |= CT_AT(T, data[0], i, steps[0]) < 0;       \
    if (found) __atomic_store_n(&scan->found, 1, __ATOMIC_RELAXED);                    \
  }                                                                                    \
  static int ct_cpu_pow_signed_run_##SFX(const ct_kernel_call* call) {                 \
    ct_negative_scan scan = {0};                                                       \
    const ct_tensor* exponent = call->inputs[1];                                       \
    ct_cpu_iterate(1, &exponent, ct_cpu_scan_negative_##SFX, &scan);                   \
    if (scan.found) {                                                                  \
      return ct_set_error(CT_ERROR_INVALID_ARGUMENT,                                   \
                          "pow: integers to negative integer powers are not allowed"); \
    }                                                                                  \
    return ct_cpu_elementwise_run(call);                                               \
  }
#define CT_SIGNED_POW_REG_X(NAME, SFX, T, C, U, ID) \
  {"pow", 3, {ID, ID, ID}, ct_cpu_pow_signed_run_##SFX, NULL, &ct_cpu_pow_##SFX##_entry},
CT_CPU_SIGNED_TYPES(CT_SIGNED_POW_X, pow)

static const ct_cpu_kernel ct_cpu_binary_kernels[] = {
#define K(NAME, TYPES) TYPES(CT_BINARY_SAME_REG_X, NAME)
    CT_BINARY_KERNELS(K)
#undef K
        CT_CPU_INT_TYPES(CT_DIVIDE_TO_F64_REG_X, divide) CT_CPU_BOOL_TYPE(
            CT_DIVIDE_TO_F64_REG_X, divide) CT_CPU_SIGNED_TYPES(CT_SIGNED_POW_REG_X, pow)};

int ct_cpu_register_binary(void) {
  return ct_cpu_register_all(ct_cpu_binary_kernels, CT_CPU_KERNEL_COUNT(ct_cpu_binary_kernels));
}
