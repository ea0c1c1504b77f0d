/* binary_math_kernels.c - floor_divide, remainder, atan2, hypot, copysign, bitwise and / or /
 * xor / shifts, not_equal, less_equal, greater_equal, logical and / or / xor, clip. */
#include <math.h>

#include "cpu_register.h"
#include "elementwise_loops.h"
#include "logical_ops.h"

/* ----- operator functions per compute type ----- */

/* Every integer and bool. */
#define CT_DEF(A, SFX, T, C, U, ID)                 \
  static inline C ct_op_bitwise_and_##C(C a, C b) { \
    return (C)(a & b);                              \
  }                                                 \
  static inline C ct_op_bitwise_or_##C(C a, C b) {  \
    return (C)(a | b);                              \
  }                                                 \
  static inline C ct_op_bitwise_xor_##C(C a, C b) { \
    return (C)(a ^ b);                              \
  }                                                 \
  static inline C ct_op_clip_min_##C(C x, C lo) {   \
    return x < lo ? lo : x;                         \
  }                                                 \
  static inline C ct_op_clip_max_##C(C x, C hi) {   \
    return x > hi ? hi : x;                         \
  }
CT_CPU_INT_TYPES(CT_DEF, _)
CT_CPU_BOOL_TYPE(CT_DEF, _)
#undef CT_DEF

/* Every dtype: comparisons and logical ops with bool results. */
#define CT_DEF(A, SFX, T, C, U, ID)                          \
  static inline ct_bool8 ct_op_not_equal_##C(C a, C b) {     \
    return a != b;                                           \
  }                                                          \
  static inline ct_bool8 ct_op_less_equal_##C(C a, C b) {    \
    return a <= b;                                           \
  }                                                          \
  static inline ct_bool8 ct_op_greater_equal_##C(C a, C b) { \
    return a >= b;                                           \
  }
CT_CPU_COMPUTE_TYPES(CT_DEF, _)
CT_CPU_BOOL_TYPE(CT_DEF, _)
#undef CT_DEF

/* Signed integers, as NumPy: division by zero gives 0, MIN // -1 wraps to MIN, the remainder
 * takes the divisor's sign; shifts by a count outside [0, width) give 0 (right shifts of
 * negative values -1). The shift count is compared as unsigned, so negative counts are large. */
#define CT_DEF(A, SFX, T, C, U, ID)                                          \
  static inline C ct_op_floor_divide_##C(C a, C b) {                         \
    if (b == 0) return 0;                                                    \
    if (b == -1) return (C)((U)0 - (U)a);                                    \
    const C q = (C)(a / b);                                                  \
    return (C)((a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q);            \
  }                                                                          \
  static inline C ct_op_remainder_##C(C a, C b) {                            \
    if (b == 0 || b == -1) return 0;                                         \
    const C r = (C)(a % b);                                                  \
    return (C)((r != 0 && ((r < 0) != (b < 0))) ? r + b : r);                \
  }                                                                          \
  static inline C ct_op_bitwise_left_shift_##C(C a, C b) {                   \
    return (U)b < (U)(8 * sizeof(C)) ? (C)((U)a << (U)b) : (C)0;             \
  }                                                                          \
  static inline C ct_op_bitwise_right_shift_##C(C a, C b) {                  \
    return (U)b < (U)(8 * sizeof(C)) ? (C)(a >> (U)b) : (C)(a < 0 ? -1 : 0); \
  }
CT_CPU_SIGNED_TYPES(CT_DEF, _)
#undef CT_DEF

#define CT_DEF(A, SFX, T, C, U, ID)                         \
  static inline C ct_op_floor_divide_##C(C a, C b) {        \
    return b == 0 ? (C)0 : (C)(a / b);                      \
  }                                                         \
  static inline C ct_op_remainder_##C(C a, C b) {           \
    return b == 0 ? (C)0 : (C)(a % b);                      \
  }                                                         \
  static inline C ct_op_bitwise_left_shift_##C(C a, C b) {  \
    return b < (C)(8 * sizeof(C)) ? (C)((U)a << b) : (C)0;  \
  }                                                         \
  static inline C ct_op_bitwise_right_shift_##C(C a, C b) { \
    return b < (C)(8 * sizeof(C)) ? (C)(a >> b) : (C)0;     \
  }
CT_CPU_UNSIGNED_TYPES(CT_DEF, _)
#undef CT_DEF

/* Floats: NumPy's npy_divmod (F is the libm suffix: f for float, empty for double). */
#define CT_DEF(C, F)                                                       \
  static inline C ct_divmod_##C(C a, C b, C* modulus) {                    \
    C mod = fmod##F(a, b);                                                 \
    if (!b) {                                                              \
      *modulus = mod;                                                      \
      return a / b;                                                        \
    }                                                                      \
    C div = (a - mod) / b;                                                 \
    if (mod) {                                                             \
      if ((b < 0) != (mod < 0)) {                                          \
        mod += b;                                                          \
        div -= (C)1;                                                       \
      }                                                                    \
    } else {                                                               \
      mod = copysign##F((C)0, b);                                          \
    }                                                                      \
    C floordiv;                                                            \
    if (div) {                                                             \
      floordiv = floor##F(div);                                            \
      if (div - floordiv > (C)0.5) floordiv += (C)1;                       \
    } else {                                                               \
      floordiv = copysign##F((C)0, a / b);                                 \
    }                                                                      \
    *modulus = mod;                                                        \
    return floordiv;                                                       \
  }                                                                        \
  static inline C ct_op_floor_divide_##C(C a, C b) {                       \
    C mod;                                                                 \
    return b ? ct_divmod_##C(a, b, &mod) : a / b;                          \
  }                                                                        \
  static inline C ct_op_remainder_##C(C a, C b) {                          \
    C mod = fmod##F(a, b);                                                 \
    if (b) ct_divmod_##C(a, b, &mod);                                      \
    return mod;                                                            \
  }                                                                        \
  static inline C ct_op_atan2_##C(C a, C b) {                              \
    return atan2##F(a, b);                                                 \
  }                                                                        \
  static inline C ct_op_hypot_##C(C a, C b) {                              \
    return hypot##F(a, b);                                                 \
  }                                                                        \
  static inline C ct_op_copysign_##C(C a, C b) {                           \
    return copysign##F(a, b);                                              \
  }                                                                        \
  static inline C ct_op_clip_min_##C(C x, C lo) { /* nan in either wins */ \
    return (x >= lo || x != x) ? x : lo;                                   \
  }                                                                        \
  static inline C ct_op_clip_max_##C(C x, C hi) {                          \
    return (x <= hi || x != x) ? x : hi;                                   \
  }
CT_DEF(float, f)
CT_DEF(double, )
#undef CT_DEF

/* ----- clip: one loop per set of bounds present ----- */

typedef struct ct_clip_entries {
  ct_cpu_loop_entry both, min, max, none;
} ct_clip_entries;

#define CT_CLIP_X(NAME, SFX, T, C, U, ID)                                                    \
  static void ct_cpu_clip_both_##SFX(char** data, const int64_t* steps, int64_t n,           \
                                     const void* extra) {                                    \
    (void)extra;                                                                             \
    for (int64_t i = 0; i < n; ++i) {                                                        \
      const C x = ct_load_##SFX(CT_AT(T, data[0], i, steps[0]));                             \
      const C lo = ct_load_##SFX(CT_AT(T, data[1], i, steps[1]));                            \
      const C hi = ct_load_##SFX(CT_AT(T, data[2], i, steps[2]));                            \
      CT_AT(T, data[3], i, steps[3]) =                                                       \
          ct_store_##SFX(ct_op_clip_max_##C(ct_op_clip_min_##C(x, lo), hi));                 \
    }                                                                                        \
  }                                                                                          \
  static void ct_cpu_clip_min_##SFX(char** data, const int64_t* steps, int64_t n,            \
                                    const void* extra) {                                     \
    (void)extra;                                                                             \
    for (int64_t i = 0; i < n; ++i)                                                          \
      CT_AT(T, data[2], i, steps[2]) =                                                       \
          ct_store_##SFX(ct_op_clip_min_##C(ct_load_##SFX(CT_AT(T, data[0], i, steps[0])),   \
                                            ct_load_##SFX(CT_AT(T, data[1], i, steps[1])))); \
  }                                                                                          \
  static void ct_cpu_clip_max_##SFX(char** data, const int64_t* steps, int64_t n,            \
                                    const void* extra) {                                     \
    (void)extra;                                                                             \
    for (int64_t i = 0; i < n; ++i)                                                          \
      CT_AT(T, data[2], i, steps[2]) =                                                       \
          ct_store_##SFX(ct_op_clip_max_##C(ct_load_##SFX(CT_AT(T, data[0], i, steps[0])),   \
                                            ct_load_##SFX(CT_AT(T, data[1], i, steps[1])))); \
  }                                                                                          \
  static void ct_cpu_clip_none_##SFX(char** data, const int64_t* steps, int64_t n,           \
                                     const void* extra) {                                    \
    (void)extra;                                                                             \
    for (int64_t i = 0; i < n; ++i)                                                          \
      CT_AT(T, data[1], i, steps[1]) = CT_AT(T, data[0], i, steps[0]);                       \
  }                                                                                          \
  static const ct_clip_entries ct_cpu_clip_##SFX##_entries = {{ct_cpu_clip_both_##SFX},      \
                                                              {ct_cpu_clip_min_##SFX},       \
                                                              {ct_cpu_clip_max_##SFX},       \
                                                              {ct_cpu_clip_none_##SFX}};

static int ct_cpu_clip_run(const ct_kernel_call* call) {
  const ct_clip_entries* entries = call->kernel_data;
  const ct_tensor *lo = call->inputs[1], *hi = call->inputs[2];
  const ct_cpu_loop_entry* entry = lo && hi ? &entries->both
                                   : lo     ? &entries->min
                                   : hi     ? &entries->max
                                            : &entries->none;
  const ct_tensor* operands[4];
  int32_t n = 0;
  operands[n++] = call->inputs[0];
  if (lo) operands[n++] = lo;
  if (hi) operands[n++] = hi;
  operands[n++] = call->outputs[0];
  ct_cpu_iterate(n, operands, entry->loop, NULL);
  return CT_OK;
}

#define CT_CLIP_REG_X(NAME, SFX, T, C, U, ID) \
  {"clip", 4, {ID, ID, ID, ID}, ct_cpu_clip_run, NULL, &ct_cpu_clip_##SFX##_entries},

/* bool results */
#define CT_BINARY_BOOL_X(NAME, SFX, T, C, U, ID) CT_BINARY_LOOP(NAME, SFX, T, C, b8, uint8_t)
#define CT_BINARY_BOOL_REG_X(NAME, SFX, T, C, U, ID) \
  {#NAME, 3, {ID, ID, CT_DT_BOOL}, ct_cpu_elementwise_run, NULL, &ct_cpu_##NAME##_##SFX##_entry},

/* ----- the kernel lists: (op, dtypes), the only place to edit ----- */

/* Output dtype equal to the inputs'. */
#define CT_BINARY_MATH_KERNELS(K)         \
  K(floor_divide, CT_CPU_NUMERIC_TYPES)   \
  K(remainder, CT_CPU_NUMERIC_TYPES)      \
  K(atan2, CT_CPU_FLOAT_TYPES)            \
  K(hypot, CT_CPU_FLOAT_TYPES)            \
  K(copysign, CT_CPU_FLOAT_TYPES)         \
  K(bitwise_and, CT_CPU_BOOL_TYPE)        \
  K(bitwise_and, CT_CPU_INT_TYPES)        \
  K(bitwise_or, CT_CPU_BOOL_TYPE)         \
  K(bitwise_or, CT_CPU_INT_TYPES)         \
  K(bitwise_xor, CT_CPU_BOOL_TYPE)        \
  K(bitwise_xor, CT_CPU_INT_TYPES)        \
  K(bitwise_left_shift, CT_CPU_INT_TYPES) \
  K(bitwise_right_shift, CT_CPU_INT_TYPES)

/* bool output. */
#define CT_BINARY_MATH_BOOL_KERNELS(K) \
  K(not_equal, CT_CPU_ALL_TYPES)       \
  K(less_equal, CT_CPU_ALL_TYPES)      \
  K(greater_equal, CT_CPU_ALL_TYPES)   \
  K(logical_and, CT_CPU_ALL_TYPES)     \
  K(logical_or, CT_CPU_ALL_TYPES)      \
  K(logical_xor, CT_CPU_ALL_TYPES)

/* clip(x, min, max): every input and the output in one dtype. */
#define CT_CLIP_KERNELS(K) K(clip, CT_CPU_ALL_TYPES)

#define K(NAME, TYPES) TYPES(CT_BINARY_SAME_X, NAME)
CT_BINARY_MATH_KERNELS(K)
#undef K
#define K(NAME, TYPES) TYPES(CT_BINARY_BOOL_X, NAME)
CT_BINARY_MATH_BOOL_KERNELS(K)
#undef K
#define K(NAME, TYPES) TYPES(CT_CLIP_X, NAME)
CT_CLIP_KERNELS(K)
#undef K

static const ct_cpu_kernel ct_cpu_binary_math_kernels[] = {
#define K(NAME, TYPES) TYPES(CT_BINARY_SAME_REG_X, NAME)
    CT_BINARY_MATH_KERNELS(K)
#undef K
#define K(NAME, TYPES) TYPES(CT_BINARY_BOOL_REG_X, NAME)
        CT_BINARY_MATH_BOOL_KERNELS(K)
#undef K
#define K(NAME, TYPES) TYPES(CT_CLIP_REG_X, NAME)
            CT_CLIP_KERNELS(K)
#undef K
};

int ct_cpu_register_binary_math(void) {
  return ct_cpu_register_all(ct_cpu_binary_math_kernels,
                             CT_CPU_KERNEL_COUNT(ct_cpu_binary_math_kernels));
}
