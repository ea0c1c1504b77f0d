/* unary_kernels.c - negative, abs, exp, log, sqrt, tanh, relu. */
#include <math.h>

#include "cpu_register.h"
#include "engine/elementwise_loops.h"
#include "engine/stream_store.h"
#include "math/sleef_math.h"
#include "math/vector_math.h"

/* ----- operator functions per compute type ----- */

#define CT_DEF(A, SFX, T, C, U, ID)         \
  static inline C ct_op_negative_##C(C x) { \
    return (C)((U)0 - (U)x);                \
  }                                         \
  static inline C ct_op_abs_##C(C x) {      \
    return x < 0 ? (C)((U)0 - (U)x) : x;    \
  }                                         \
  static inline C ct_op_relu_##C(C x) {     \
    return x > 0 ? x : (C)0;                \
  }
CT_CPU_INT_TYPES(CT_DEF, _)
#undef CT_DEF

static inline ct_bool8 ct_op_abs_ct_bool8(ct_bool8 x) {
  return x;
}

static inline float ct_op_negative_float(float x) {
  return -x;
}
static inline double ct_op_negative_double(double x) {
  return -x;
}
static inline float ct_op_abs_float(float x) {
  return fabsf(x);
}
static inline double ct_op_abs_double(double x) {
  return fabs(x);
}
static inline float ct_op_relu_float(float x) {
  return x > 0 || x != x ? x : 0.0f;
}
static inline double ct_op_relu_double(double x) {
  return x > 0 || x != x ? x : 0.0;
}
static inline float ct_op_exp_float(float x) {
  return expf(x);
}
static inline double ct_op_exp_double(double x) {
  return exp(x);
}
static inline float ct_op_log_float(float x) {
  return logf(x);
}
static inline double ct_op_log_double(double x) {
  return log(x);
}
static inline float ct_op_sqrt_float(float x) {
  return sqrtf(x);
}
static inline double ct_op_sqrt_double(double x) {
  return sqrt(x);
}
static inline float ct_op_tanh_float(float x) {
  return tanhf(x);
}
static inline double ct_op_tanh_double(double x) {
  return tanh(x);
}

/* float32 exp: contiguous runs through the vector_math set of the CPU (written with
 * non-temporal stores where the engine streams this thread's output, ct_cpu_stream_output),
 * other runs through its scalar copy (the generic set's arithmetic). */
static void ct_cpu_exp_f32(char** data, const int64_t* steps, int64_t n, const void* extra) {
  (void)extra;
  char *src = data[0], *dst = data[1];
  const int64_t ss = steps[0], ds = steps[1];
  if (ss == (int64_t)sizeof(float) && ds == (int64_t)sizeof(float)) {
    ct_vector_math_get()->exp_f32((const float*)src, (float*)dst, n,
                                  ct_cpu_stream_output != CT_STREAM_OFF);
    return;
  }
  for (int64_t i = 0; i < n; ++i) CT_AT(float, dst, i, ds) = ct_exp_f32(CT_AT(float, src, i, ss));
}
static const ct_cpu_loop_entry ct_cpu_exp_f32_entry = {ct_cpu_exp_f32};

/* ----- the kernel list: (op, dtypes), the only place to edit ----- */

#define CT_UNARY_KERNELS(K)          \
  K(negative, CT_CPU_NUMERIC_TYPES)  \
  K(abs, CT_CPU_ALL_TYPES)           \
  K(relu, CT_CPU_NUMERIC_TYPES)      \
  K(exp, CT_CPU_FLOAT_TYPES_BUT_F32) \
  K(sqrt, CT_CPU_FLOAT_TYPES)

/* float32 and float64 through SLEEF where it runs (sleef_math.h), the template loop otherwise and
 * for float16 and bfloat16. */
#define CT_UNARY_SLEEF_KERNELS(K) K(log)

#define K(NAME, TYPES) TYPES(CT_UNARY_SAME_X, NAME)
CT_UNARY_KERNELS(K)
#undef K
#define K(NAME) CT_CPU_FLOAT_TYPES(CT_UNARY_SAME_X, NAME) CT_SLEEF_UNARY_LOOPS(NAME)
CT_UNARY_SLEEF_KERNELS(K)
#undef K
/* tanh: float32 computed in double by the vector_math set (0.5 ulp, vector_math.h), float64
 * through SLEEF (or the template loop), float16 and bfloat16 through the template loop. */
CT_DOUBLE_COMPUTED_F32_LOOPS(tanh)

static const ct_cpu_kernel ct_cpu_unary_kernels[] = {
#define K(NAME, TYPES) TYPES(CT_UNARY_SAME_REG_X, NAME)
    CT_UNARY_KERNELS(K)
#undef K
#define K(NAME) CT_CPU_LOWP_TYPES(CT_UNARY_SAME_REG_X, NAME) CT_SLEEF_UNARY_REG(NAME)
        CT_UNARY_SLEEF_KERNELS(K)
#undef K
            CT_UNARY_SAME_REG_X(exp, f32, float, float, float, CT_DT_F32)
                CT_DOUBLE_COMPUTED_F32_REG(tanh)};

int ct_cpu_register_unary(void) {
  return ct_cpu_register_all(ct_cpu_unary_kernels, CT_CPU_KERNEL_COUNT(ct_cpu_unary_kernels));
}
