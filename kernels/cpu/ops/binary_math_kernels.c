/* binary_math_kernels.c - floor_divide, remainder, atan2, hypot, copysign, logaddexp, bitwise
 * and / or / xor / shifts, not_equal, less_equal, greater_equal, logical and / or / xor, clip. */
#include <math.h>

#include "cpu_register.h"
#include "engine/elementwise_loops.h"
#include "ops/logical_ops.h"
#include "math/sleef_math.h"

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

/* Floats: NumPy's npy_divmod (F is the libm suffix: f for float, empty for double). The float32
 * and float64 loops run a vector copy of it (ct_sleef_divmod_*, over SLEEF's fmod), and these
 * functions where SLEEF is not there, or where its fmod cannot go. */
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
  /* NumPy's npy_logaddexp: a + log(2) for equal values (same-signed       \
   * infinities), else the larger + log1p(exp(-|a - b|)); nan: a - b. */   \
  static inline C ct_op_logaddexp_##C(C a, C b) {                          \
    if (a == b) return a + (C)0.693147180559945309417232121458176568;      \
    const C d = a - b;                                                     \
    if (d > 0) return a + log1p##F(exp##F(-d));                            \
    if (d <= 0) return b + log1p##F(exp##F(d));                            \
    return d;                                                              \
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

/* ----- float32 and float64 floor_divide and remainder: vectors through SLEEF's fmod ----- */

/* The C library's fmod, one element at a time, held these loops at 12-13 ns an element. */
#define CT_FLOAT_DIVMOD_X(NAME, SFX, T, C, U, ID)                                                \
  CT_BINARY_SAME_X(NAME, SFX, T, C, U, ID)                                                       \
  CT_SLEEF_OR_TEMPLATE_LOOP(                                                                     \
      NAME, SFX,                                                                                 \
      ct_sleef_divmod_##SFX(CT_FLOAT_DIVMOD_FLOOR_##NAME, ct_op_##NAME##_##C, data[0], steps[0], \
                            data[1], steps[1], data[2], steps[2], n))
#define CT_FLOAT_DIVMOD_FLOOR_floor_divide 1
#define CT_FLOAT_DIVMOD_FLOOR_remainder 0

/* ----- clip: one loop per set of bounds present ----- */

/* clip(x, lo, hi) with both bounds, for CT_ELEMENTWISE_LOOP (a body as CT_BINARY_BODY): x and the
 * output contiguous with scalar bounds (the common call) or contiguous bounds get indexed loops
 * the compiler vectorises, the bounds' comparisons becoming selects; other runs step by bytes.
 * The branchy loop this replaces ran at 10-14 ns an element on random data (mispredictions). */
#define CT_CLIP_BODY(NAME, SFX, T, C, OSFX, OT, TARGET, BODY, STORE_LOOP)                       \
  TARGET static CT_CPU_ISA_BODY void BODY(char** data, const int64_t* steps, int64_t n,         \
                                          const void* extra) {                                  \
    (void)extra;                                                                                \
    char *x = data[0], *lo = data[1], *hi = data[2], *o = data[3];                              \
    const int64_t sx = steps[0], sl = steps[1], sh = steps[2], so = steps[3];                   \
    const int64_t st = (int64_t)sizeof(T);                                                      \
    if (sx == st && so == st && sl == 0 && sh == 0) {                                           \
      const C l = ct_load_##SFX(*(const T*)lo), h = ct_load_##SFX(*(const T*)hi);               \
      const T* px = (const T*)x;                                                                \
      T* po = (T*)o;                                                                            \
      STORE_LOOP(                                                                               \
          T, po, n,                                                                             \
          ct_store_##SFX(ct_op_clip_max_##C(ct_op_clip_min_##C(ct_load_##SFX(px[i]), l), h)));  \
    } else if (sx == st && so == st && sl == st && sh == st) {                                  \
      const T *px = (const T*)x, *pl = (const T*)lo, *ph = (const T*)hi;                        \
      T* po = (T*)o;                                                                            \
      STORE_LOOP(T, po, n,                                                                      \
                 ct_store_##SFX(ct_op_clip_max_##C(                                             \
                     ct_op_clip_min_##C(ct_load_##SFX(px[i]), ct_load_##SFX(pl[i])),            \
                     ct_load_##SFX(ph[i]))));                                                   \
    } else {                                                                                    \
      for (int64_t i = 0; i < n; ++i) {                                                         \
        const C v = ct_load_##SFX(CT_AT(T, x, i, sx));                                          \
        const C l = ct_load_##SFX(CT_AT(T, lo, i, sl)), h = ct_load_##SFX(CT_AT(T, hi, i, sh)); \
        CT_AT(T, o, i, so) = ct_store_##SFX(ct_op_clip_max_##C(ct_op_clip_min_##C(v, l), h));   \
      }                                                                                         \
    }                                                                                           \
  }

typedef struct ct_clip_entries {
  const ct_cpu_loop_entry *both, *min, *max, *none;
} ct_clip_entries;

/* Both bounds: CT_CLIP_BODY; one bound: the binary template over clip_min or clip_max. */
#define CT_CLIP_X(NAME, SFX, T, C, U, ID)                                                         \
  CT_ELEMENTWISE_LOOP(CT_CLIP_BODY, clip, SFX, T, C, SFX, T)                                      \
  CT_BINARY_LOOP(clip_min, SFX, T, C, SFX, T)                                                     \
  CT_BINARY_LOOP(clip_max, SFX, T, C, SFX, T)                                                     \
  static void ct_cpu_clip_none_##SFX(char** data, const int64_t* steps, int64_t n,                \
                                     const void* extra) {                                         \
    (void)extra;                                                                                  \
    for (int64_t i = 0; i < n; ++i)                                                               \
      CT_AT(T, data[1], i, steps[1]) = CT_AT(T, data[0], i, steps[0]);                            \
  }                                                                                               \
  static const ct_cpu_loop_entry ct_cpu_clip_none_##SFX##_entry = {ct_cpu_clip_none_##SFX};       \
  static const ct_clip_entries ct_cpu_clip_##SFX##_entries = {                                    \
      &ct_cpu_clip_##SFX##_entry, &ct_cpu_clip_min_##SFX##_entry, &ct_cpu_clip_max_##SFX##_entry, \
      &ct_cpu_clip_none_##SFX##_entry};

static int ct_cpu_clip_run(const ct_kernel_call* call) {
  const ct_clip_entries* entries = call->kernel_data;
  const ct_tensor *lo = call->inputs[1], *hi = call->inputs[2];
  const ct_cpu_loop_entry* entry = lo && hi ? entries->both
                                   : lo     ? entries->min
                                   : hi     ? entries->max
                                            : entries->none;
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
  K(floor_divide, CT_CPU_INT_TYPES)       \
  K(floor_divide, CT_CPU_LOWP_TYPES)      \
  K(remainder, CT_CPU_INT_TYPES)          \
  K(remainder, CT_CPU_LOWP_TYPES)         \
  K(atan2, CT_CPU_LOWP_TYPES)             \
  K(hypot, CT_CPU_LOWP_TYPES)             \
  K(copysign, CT_CPU_FLOAT_TYPES)         \
  K(logaddexp, CT_CPU_FLOAT_TYPES)        \
  K(bitwise_and, CT_CPU_BOOL_TYPE)        \
  K(bitwise_and, CT_CPU_INT_TYPES)        \
  K(bitwise_or, CT_CPU_BOOL_TYPE)         \
  K(bitwise_or, CT_CPU_INT_TYPES)         \
  K(bitwise_xor, CT_CPU_BOOL_TYPE)        \
  K(bitwise_xor, CT_CPU_INT_TYPES)        \
  K(bitwise_left_shift, CT_CPU_INT_TYPES) \
  K(bitwise_right_shift, CT_CPU_INT_TYPES)

/* float32 and float64 in vectors: floor_divide and remainder (CT_FLOAT_DIVMOD_LOOP), and SLEEF's
 * functions (sleef_math.h); the template loops elsewhere (and as their fallbacks). */
#define CT_FLOAT_DIVMOD_KERNELS(K) \
  K(floor_divide)                  \
  K(remainder)
#define CT_BINARY_SLEEF_KERNELS(K) \
  K(atan2)                         \
  K(hypot)

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
#define K(NAME) CT_CPU_FULLP_TYPES(CT_FLOAT_DIVMOD_X, NAME)
CT_FLOAT_DIVMOD_KERNELS(K)
#undef K
#define K(NAME) CT_CPU_FULLP_TYPES(CT_BINARY_SAME_X, NAME) CT_SLEEF_BINARY_LOOPS(NAME)
CT_BINARY_SLEEF_KERNELS(K)
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
#define K(NAME) CT_SLEEF_BINARY_REG(NAME)
        CT_FLOAT_DIVMOD_KERNELS(K)
#undef K
#define K(NAME) CT_SLEEF_BINARY_REG(NAME)
            CT_BINARY_SLEEF_KERNELS(K)
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
