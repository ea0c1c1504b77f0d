/* unary_math_kernels.c - positive, sign, expm1, log1p, log2, log10, square, reciprocal, the
 * trigonometric and hyperbolic functions, floor, ceil, trunc, round, isnan, isinf, isfinite,
 * logical_not, bitwise_invert, erf and the activations leaky_relu, elu, selu, gelu, silu,
 * softplus, hardswish. */
#include <math.h>
#include <string.h>

#include "cpu_register.h"
#include "elementwise_loops.h"
#include "logical_ops.h"
#include "sleef_math.h"
#include "vector_math.h"

/* Attribute values of the activations that take some, in schema order (strings: 1 for "tanh"),
 * handed to the loops as `extra`. */
typedef struct ct_math_params {
  double v[4];
} ct_math_params;

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
#define CT_DEF(C, F)                                                                      \
  static inline C ct_op_positive_##C(C x) {                                               \
    return x;                                                                             \
  }                                                                                       \
  static inline C ct_op_sign_##C(C x) {                                                   \
    return x > 0 ? (C)1 : x < 0 ? (C) - 1 : x != x ? x : (C)0;                            \
  }                                                                                       \
  static inline C ct_op_expm1_##C(C x) {                                                  \
    return expm1##F(x);                                                                   \
  }                                                                                       \
  static inline C ct_op_log1p_##C(C x) {                                                  \
    return log1p##F(x);                                                                   \
  }                                                                                       \
  static inline C ct_op_log2_##C(C x) {                                                   \
    return log2##F(x);                                                                    \
  }                                                                                       \
  static inline C ct_op_log10_##C(C x) {                                                  \
    return log10##F(x);                                                                   \
  }                                                                                       \
  static inline C ct_op_square_##C(C x) {                                                 \
    return x * x;                                                                         \
  }                                                                                       \
  static inline C ct_op_reciprocal_##C(C x) {                                             \
    return (C)1 / x;                                                                      \
  }                                                                                       \
  static inline C ct_op_sin_##C(C x) {                                                    \
    return sin##F(x);                                                                     \
  }                                                                                       \
  static inline C ct_op_cos_##C(C x) {                                                    \
    return cos##F(x);                                                                     \
  }                                                                                       \
  static inline C ct_op_tan_##C(C x) {                                                    \
    return tan##F(x);                                                                     \
  }                                                                                       \
  static inline C ct_op_asin_##C(C x) {                                                   \
    return asin##F(x);                                                                    \
  }                                                                                       \
  static inline C ct_op_acos_##C(C x) {                                                   \
    return acos##F(x);                                                                    \
  }                                                                                       \
  static inline C ct_op_atan_##C(C x) {                                                   \
    return atan##F(x);                                                                    \
  }                                                                                       \
  static inline C ct_op_sinh_##C(C x) {                                                   \
    return sinh##F(x);                                                                    \
  }                                                                                       \
  static inline C ct_op_cosh_##C(C x) {                                                   \
    return cosh##F(x);                                                                    \
  }                                                                                       \
  static inline C ct_op_asinh_##C(C x) {                                                  \
    return asinh##F(x);                                                                   \
  }                                                                                       \
  static inline C ct_op_acosh_##C(C x) {                                                  \
    return acosh##F(x);                                                                   \
  }                                                                                       \
  static inline C ct_op_atanh_##C(C x) {                                                  \
    return atanh##F(x);                                                                   \
  }                                                                                       \
  static inline C ct_op_floor_##C(C x) {                                                  \
    return floor##F(x);                                                                   \
  }                                                                                       \
  static inline C ct_op_ceil_##C(C x) {                                                   \
    return ceil##F(x);                                                                    \
  }                                                                                       \
  static inline C ct_op_trunc_##C(C x) {                                                  \
    return trunc##F(x);                                                                   \
  }                                                                                       \
  static inline C ct_op_round_##C(C x) { /* the default rounding mode: halves to even */  \
    return nearbyint##F(x);                                                               \
  }                                                                                       \
  static inline ct_bool8 ct_op_isnan_##C(C x) {                                           \
    return x != x;                                                                        \
  }                                                                                       \
  static inline ct_bool8 ct_op_isinf_##C(C x) {                                           \
    return isinf(x) != 0;                                                                 \
  }                                                                                       \
  static inline ct_bool8 ct_op_isfinite_##C(C x) {                                        \
    return isfinite(x) != 0;                                                              \
  }                                                                                       \
  static inline C ct_op_erf_##C(C x) {                                                    \
    return erf##F(x);                                                                     \
  }                                                                                       \
  static inline C ct_op_selu_##C(C x) {                                                   \
    const C alpha = (C)1.6732632423543772848170429916717;                                 \
    const C scale = (C)1.0507009873554804934193349852946;                                 \
    return x > 0 ? scale * x : scale * alpha * expm1##F(x);                               \
  }                                                                                       \
  static inline C ct_op_silu_##C(C x) {                                                   \
    return x / ((C)1 + exp##F(-x));                                                       \
  }                                                                                       \
  static inline C ct_op_hardswish_##C(C x) {                                              \
    /* torch's formula (nan stays nan), but x itself from 3 up: x * 6 / 6 can overflow */ \
    if (x >= 3) return x;                                                                 \
    const C t = x + (C)3 < 0 ? (C)0 : x + (C)3;                                           \
    return x * t / (C)6;                                                                  \
  }                                                                                       \
  static inline C ct_op_leaky_relu_##C(C x, const ct_math_params* p) {                    \
    return x > 0 ? x : x * (C)p->v[0];                                                    \
  }                                                                                       \
  static inline C ct_op_elu_##C(C x, const ct_math_params* p) {                           \
    return x > 0 ? x : (C)p->v[0] * expm1##F(x);                                          \
  }                                                                                       \
  static inline C ct_op_softplus_##C(C x, const ct_math_params* p) {                      \
    const C beta = (C)p->v[0];                                                            \
    return x * beta > (C)p->v[1] ? x : log1p##F(exp##F(x * beta)) / beta;                 \
  }                                                                                       \
  static inline C ct_op_gelu_##C(C x, const ct_math_params* p) {                          \
    if (p->v[0] != 0) {                                                                   \
      const C k = (C)0.7978845608028654; /* sqrt(2 / pi) */                               \
      return (C)0.5 * x * ((C)1 + tanh##F(k * (x + (C)0.044715 * x * x * x)));            \
    }                                                                                     \
    return (C)0.5 * x * ((C)1 + erf##F(x * (C)0.70710678118654752440));                   \
  }
CT_DEF(float, f)
CT_DEF(double, )
#undef CT_DEF

/* ----- loops with attributes: `extra` is a ct_math_params ----- */

#define CT_UNARY_PARAM_X(NAME, SFX, T, C, U, ID)                                      \
  static void ct_cpu_##NAME##_##SFX(char** data, const int64_t* steps, int64_t n,     \
                                    const void* extra) {                              \
    const ct_math_params* p = (const ct_math_params*)extra;                           \
    char *src = data[0], *dst = data[1];                                              \
    const int64_t ss = steps[0], ds = steps[1];                                       \
    for (int64_t i = 0; i < n; ++i)                                                   \
      CT_AT(T, dst, i, ds) =                                                          \
          ct_store_##SFX(ct_op_##NAME##_##C(ct_load_##SFX(CT_AT(T, src, i, ss)), p)); \
  }                                                                                   \
  static const ct_cpu_loop_entry ct_cpu_##NAME##_##SFX##_entry = {ct_cpu_##NAME##_##SFX};

static int ct_cpu_unary_param_run(const ct_kernel_call* call) {
  ct_math_params params = {{0}};
  const int32_t count = call->schema->num_attrs < 4 ? call->schema->num_attrs : 4;
  for (int32_t k = 0; k < count; ++k) {
    const ct_attr_value* a = &call->attrs[k];
    if (a->type == CT_ATTR_FLOAT) params.v[k] = a->value.f;
    if (a->type == CT_ATTR_INT) params.v[k] = (double)a->value.i;
    if (a->type == CT_ATTR_STRING) params.v[k] = a->value.s && strcmp(a->value.s, "tanh") == 0;
  }
  const ct_tensor* operands[2] = {call->inputs[0], call->outputs[0]};
  const ct_cpu_loop_entry* entry = call->kernel_data;
  ct_cpu_iterate(2, operands, entry->loop, &params);
  return CT_OK;
}

#define CT_UNARY_PARAM_REG_X(NAME, SFX, T, C, U, ID) \
  {#NAME, 2, {ID, ID}, ct_cpu_unary_param_run, NULL, &ct_cpu_##NAME##_##SFX##_entry},

/* float32 gelu and softplus: CT_ACTIVATION_CHUNK elements at a time are read into a buffer, their
 * elementary function runs over the whole chunk (erf, tanh and exp through the vector_math set,
 * vector_math.h; log1p through SLEEF, sleef_math.h), and the activation is finished element by
 * element with the scalar formula's own operations. One element at a time through the C library,
 * gelu took 22 ns an element and softplus 28. */
#define CT_ACTIVATION_CHUNK 256

static void ct_cpu_gelu_f32_chunks(char** data, const int64_t* steps, int64_t n,
                                   const void* extra) {
  const ct_math_params* p = (const ct_math_params*)extra;
  char *src = data[0], *dst = data[1];
  const int64_t ss = steps[0], ds = steps[1];
  float x[CT_ACTIVATION_CHUNK], f[CT_ACTIVATION_CHUNK];
  for (int64_t i0 = 0; i0 < n; i0 += CT_ACTIVATION_CHUNK) {
    const int64_t m = n - i0 < CT_ACTIVATION_CHUNK ? n - i0 : CT_ACTIVATION_CHUNK;
    for (int64_t j = 0; j < m; ++j) x[j] = CT_AT(float, src, i0 + j, ss);
    if (p->v[0] != 0) {
      for (int64_t j = 0; j < m; ++j) {
        f[j] = 0.7978845608028654f * (x[j] + 0.044715f * x[j] * x[j] * x[j]);
      }
      ct_vector_math_get()->tanh_f32(f, f, m);
    } else {
      for (int64_t j = 0; j < m; ++j) f[j] = x[j] * 0.70710678118654752440f;
      ct_vector_math_get()->erf_f32(f, f, m);
    }
    for (int64_t j = 0; j < m; ++j) CT_AT(float, dst, i0 + j, ds) = 0.5f * x[j] * (1.0f + f[j]);
  }
}
static const ct_cpu_loop_entry ct_cpu_gelu_f32_chunks_entry = {ct_cpu_gelu_f32_chunks};

static void ct_cpu_softplus_f32_chunks(char** data, const int64_t* steps, int64_t n,
                                       const void* extra) {
  const ct_math_params* p = (const ct_math_params*)extra;
  const float beta = (float)p->v[0], threshold = (float)p->v[1];
  char *src = data[0], *dst = data[1];
  const int64_t ss = steps[0], ds = steps[1];
  float x[CT_ACTIVATION_CHUNK], f[CT_ACTIVATION_CHUNK];
  for (int64_t i0 = 0; i0 < n; i0 += CT_ACTIVATION_CHUNK) {
    const int64_t m = n - i0 < CT_ACTIVATION_CHUNK ? n - i0 : CT_ACTIVATION_CHUNK;
    for (int64_t j = 0; j < m; ++j) {
      x[j] = CT_AT(float, src, i0 + j, ss);
      f[j] = x[j] * beta;
    }
    ct_vector_math_get()->exp_f32(f, f, m, 0);
    if (!ct_sleef_unary_f32(CT_SLEEF_log1p, (char*)f, sizeof(float), (char*)f, sizeof(float), m)) {
      for (int64_t j = 0; j < m; ++j) f[j] = log1pf(f[j]);
    }
    for (int64_t j = 0; j < m; ++j) {
      CT_AT(float, dst, i0 + j, ds) = x[j] * beta > threshold ? x[j] : f[j] / beta;
    }
  }
}
static const ct_cpu_loop_entry ct_cpu_softplus_f32_chunks_entry = {ct_cpu_softplus_f32_chunks};

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
  K(bitwise_invert, CT_CPU_INT_TYPES) \
  K(selu, CT_CPU_FLOAT_TYPES)         \
  K(silu, CT_CPU_FLOAT_TYPES)         \
  K(hardswish, CT_CPU_FLOAT_TYPES)

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

/* Output dtype equal to the input's; attributes passed to the operator function (float32 gelu and
 * softplus: the chunked loops above). */
#define CT_UNARY_MATH_PARAM_KERNELS(K)    \
  K(leaky_relu, CT_CPU_FLOAT_TYPES)       \
  K(elu, CT_CPU_FLOAT_TYPES)              \
  K(softplus, CT_CPU_FLOAT_TYPES_BUT_F32) \
  K(gelu, CT_CPU_FLOAT_TYPES_BUT_F32)

#define K(NAME, TYPES) TYPES(CT_UNARY_SAME_X, NAME)
CT_UNARY_MATH_KERNELS(K)
#undef K
#define K(NAME) CT_CPU_FLOAT_TYPES(CT_UNARY_SAME_X, NAME) CT_SLEEF_UNARY_LOOPS(NAME)
CT_UNARY_MATH_SLEEF_KERNELS(K)
#undef K
/* erf: float32 computed in double by the vector_math set (0.5 ulp, vector_math.h), float64
 * through SLEEF (or the template loop), float16 and bfloat16 through the template loop. */
CT_CPU_FLOAT_TYPES_BUT_F32(CT_UNARY_SAME_X, erf)
CT_SLEEF_UNARY_LOOP_OF(erf, f64)
CT_VECTOR_MATH_F32_LOOP(erf)
#define K(NAME, TYPES) TYPES(CT_UNARY_BOOL_X, NAME)
CT_UNARY_MATH_BOOL_KERNELS(K)
#undef K
#define K(NAME, TYPES) TYPES(CT_UNARY_PARAM_X, NAME)
CT_UNARY_MATH_PARAM_KERNELS(K)
#undef K
CT_UNARY_LOOP(round, b8, uint8_t, ct_bool8, f16, uint16_t)

static const ct_cpu_kernel ct_cpu_unary_math_kernels[] = {
#define K(NAME, TYPES) TYPES(CT_UNARY_SAME_REG_X, NAME)
    CT_UNARY_MATH_KERNELS(K)
#undef K
#define K(NAME) CT_CPU_LOWP_TYPES(CT_UNARY_SAME_REG_X, NAME) CT_SLEEF_UNARY_REG(NAME)
        CT_UNARY_MATH_SLEEF_KERNELS(K)
#undef K
            CT_CPU_LOWP_TYPES(CT_UNARY_SAME_REG_X, erf) CT_VECTOR_MATH_F32_REG(erf)
                CT_SLEEF_UNARY_REG_OF(erf, f64, CT_DT_F64)
#define K(NAME, TYPES) TYPES(CT_UNARY_BOOL_REG_X, NAME)
                    CT_UNARY_MATH_BOOL_KERNELS(K)
#undef K
#define K(NAME, TYPES) TYPES(CT_UNARY_PARAM_REG_X, NAME)
                        CT_UNARY_MATH_PARAM_KERNELS(K)
#undef K
                            {"round",
                             2,
                             {CT_DT_BOOL, CT_DT_F16},
                             ct_cpu_elementwise_run,
                             NULL,
                             &ct_cpu_round_b8_entry},
    {"gelu",
     2,
     {CT_DT_F32, CT_DT_F32},
     ct_cpu_unary_param_run,
     NULL,
     &ct_cpu_gelu_f32_chunks_entry},
    {"softplus",
     2,
     {CT_DT_F32, CT_DT_F32},
     ct_cpu_unary_param_run,
     NULL,
     &ct_cpu_softplus_f32_chunks_entry},
};

int ct_cpu_register_unary_math(void) {
  return ct_cpu_register_all(ct_cpu_unary_math_kernels,
                             CT_CPU_KERNEL_COUNT(ct_cpu_unary_math_kernels));
}
