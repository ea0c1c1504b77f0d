/* activation_kernels.c - sigmoid, silu, hardswish, selu, and the activations with attributes:
 * leaky_relu, elu, softplus, gelu.
 *
 * Built with -fno-trapping-math (meson.build: its own static library): activations pick between
 * two computed values by the sign of x, and with trapping math GCC keeps the floating-point
 * operation of one side inside a branch (it may not raise an exception the branch would not),
 * which leaves the loop scalar. Nothing here reads or sets the floating-point exception flags,
 * and no value changes: the same IEEE operations, both sides computed. */
#include <math.h>
#include <string.h>

#include "cpu_register.h"
#include "engine/elementwise_loops.h"
#include "math/sleef_math.h"
#include "math/vector_math.h"

/* Attribute values of the activations that take some (leaky_relu, elu, softplus: numbers), in
 * schema order, handed to the loops as `extra`. gelu's string attribute picks its loop instead
 * (ct_cpu_gelu_run). */
typedef struct ct_math_params {
  double v[4];
} ct_math_params;

/* ----- operator functions per compute type ----- */

/* Forced inline, as the scalar functions of vector_math.h they call: the loops over them
 * vectorise only with everything inlined, which GCC's size limits stop in a file of this many
 * loops (sigmoid stayed a call per element). */
#define CT_ACTIVATION_OP static inline __attribute__((always_inline))

/* The exponentials of the activations below: in float, ct_exp_f32 (within an ulp) and
 * ct_expm1_f32 (computed in double, within half an ulp), whose plain arithmetic the compiler
 * vectorises in every copy of a loop, where expf and expm1f are calls, one element at a time
 * (sigmoid, silu, elu and selu ran at 3.6, 3.6, 12.4 and 13 ns an element against torch's 1.1,
 * 1.1, 2.7 and 2.7); in double, the C library's. */
#define CT_ACTIVATION_FN(NAME, FLOAT_FN, DOUBLE_FN)                 \
  CT_ACTIVATION_OP float ct_activation_##NAME##_float(float x) {    \
    return FLOAT_FN(x);                                             \
  }                                                                 \
  CT_ACTIVATION_OP double ct_activation_##NAME##_double(double x) { \
    return DOUBLE_FN(x);                                            \
  }
CT_ACTIVATION_FN(exp, ct_exp_f32, exp)
CT_ACTIVATION_FN(expm1, ct_expm1_f32, expm1)
/* gelu's: in float computed in double (vector_math.h, within half an ulp) */
CT_ACTIVATION_FN(erf, ct_erf_f32, erf)
CT_ACTIVATION_FN(tanh, ct_tanh_f32, tanh)
#undef CT_ACTIVATION_FN

#define CT_DEF(C, F)                                                                            \
  CT_ACTIVATION_OP C ct_op_sigmoid_##C(C x) {                                                   \
    return (C)1 / ((C)1 + ct_activation_exp_##C(-x));                                           \
  }                                                                                             \
  CT_ACTIVATION_OP C ct_op_selu_##C(C x) {                                                      \
    const C alpha = (C)1.6732632423543772848170429916717;                                       \
    const C scale = (C)1.0507009873554804934193349852946;                                       \
    return x > 0 ? scale * x : scale * alpha * ct_activation_expm1_##C(x);                      \
  }                                                                                             \
  CT_ACTIVATION_OP C ct_op_silu_##C(C x) {                                                      \
    return x / ((C)1 + ct_activation_exp_##C(-x));                                              \
  }                                                                                             \
  CT_ACTIVATION_OP C ct_op_hardswish_##C(C x) {                                                 \
    /* torch's formula (nan stays nan), but x itself from 3 up: x * 6 / 6 can overflow; a       \
     * select, not a branch, so that the loop vectorises */                                     \
    const C t = x + (C)3 < 0 ? (C)0 : x + (C)3;                                                 \
    const C y = x * t / (C)6;                                                                   \
    return x >= 3 ? x : y;                                                                      \
  }                                                                                             \
  CT_ACTIVATION_OP C ct_op_hardsigmoid_##C(C x) {                                               \
    /* torch's min(max(x + 3, 0), 6) / 6, nan staying nan; selects, so that it vectorises */    \
    const C t = x + (C)3;                                                                       \
    const C u = t < 0 ? (C)0 : t;                                                               \
    return (u > (C)6 ? (C)6 : u) / (C)6;                                                        \
  }                                                                                             \
  CT_ACTIVATION_OP C ct_op_mish_##C(C x) {                                                      \
    /* torch's x * tanh(log1p(exp(x))) */                                                       \
    return x * ct_activation_tanh_##C(log1p##F(ct_activation_exp_##C(x)));                      \
  }                                                                                             \
  CT_ACTIVATION_OP C ct_op_leaky_relu_##C(C x, const ct_math_params* p) {                       \
    return x > 0 ? x : x * (C)p->v[0];                                                          \
  }                                                                                             \
  CT_ACTIVATION_OP C ct_op_elu_##C(C x, const ct_math_params* p) {                              \
    return x > 0 ? x : (C)p->v[0] * ct_activation_expm1_##C(x);                                 \
  }                                                                                             \
  CT_ACTIVATION_OP C ct_op_softplus_##C(C x, const ct_math_params* p) {                         \
    const C beta = (C)p->v[0];                                                                  \
    return x * beta > (C)p->v[1] ? x : log1p##F(exp##F(x * beta)) / beta;                       \
  }                                                                                             \
  /* gelu's two forms (approximate="none" and "tanh"), each its own loop (ct_cpu_gelu_run picks \
   * one per call): a test of the attribute inside the loop left it computing both */           \
  CT_ACTIVATION_OP C ct_op_gelu_erf_##C(C x) {                                                  \
    return (C)0.5 * x * ((C)1 + ct_activation_erf_##C(x * (C)0.70710678118654752440));          \
  }                                                                                             \
  CT_ACTIVATION_OP C ct_op_gelu_tanh_##C(C x) {                                                 \
    const C k = (C)0.7978845608028654; /* sqrt(2 / pi) */                                       \
    return (C)0.5 * x * ((C)1 + ct_activation_tanh_##C(k * (x + (C)0.044715 * x * x * x)));     \
  }
CT_DEF(float, f)
CT_DEF(double, )
#undef CT_DEF

/* ----- loops with attributes: `extra` is a ct_math_params ----- */

/* out = op(x, params): a body for CT_ELEMENTWISE_LOOP, as CT_UNARY_BODY (elementwise_loops.h)
 * with the attributes copied into a local first, so that the compiler keeps them in registers
 * and vectorises the loop (read through `extra`, they may alias the output: leaky_relu ran at
 * 6.5 ns an element against torch's 0.5). */
#define CT_UNARY_PARAM_BODY(NAME, SFX, T, C, OSFX, OT, TARGET, BODY, STORE_LOOP)               \
  TARGET static CT_CPU_ISA_BODY void BODY(char** data, const int64_t* steps, int64_t n,        \
                                          const void* extra) {                                 \
    const ct_math_params params = *(const ct_math_params*)extra;                               \
    char *src = data[0], *dst = data[1];                                                       \
    const int64_t ss = steps[0], ds = steps[1];                                                \
    if (ss == (int64_t)sizeof(T) && ds == (int64_t)sizeof(OT)) {                               \
      const T* s = (const T*)src;                                                              \
      OT* d = (OT*)dst;                                                                        \
      STORE_LOOP(OT, d, n, ct_store_##OSFX(ct_op_##NAME##_##C(ct_load_##SFX(s[i]), &params))); \
    } else {                                                                                   \
      for (int64_t i = 0; i < n; ++i)                                                          \
        CT_AT(OT, dst, i, ds) =                                                                \
            ct_store_##OSFX(ct_op_##NAME##_##C(ct_load_##SFX(CT_AT(T, src, i, ss)), &params)); \
    }                                                                                          \
  }
#define CT_UNARY_PARAM_X(NAME, SFX, T, C, U, ID) \
  CT_ELEMENTWISE_LOOP(CT_UNARY_PARAM_BODY, NAME, SFX, T, C, SFX, T)

static int ct_cpu_unary_param_run(const ct_kernel_call* call) {
  ct_math_params params = {{0}};
  const int32_t count = call->schema->num_attrs < 4 ? call->schema->num_attrs : 4;
  for (int32_t k = 0; k < count; ++k) {
    const ct_attr_value* a = &call->attrs[k];
    if (a->type == CT_ATTR_FLOAT) params.v[k] = a->value.f;
    if (a->type == CT_ATTR_INT) params.v[k] = (double)a->value.i;
  }
  const ct_tensor* operands[2] = {call->inputs[0], call->outputs[0]};
  const ct_cpu_loop_entry* entry = call->kernel_data;
  ct_cpu_iterate(2, operands, entry->loop, &params);
  return CT_OK;
}

/* gelu: the loop of the form `approximate` names ("tanh", or the exact one), run as any
 * element-wise kernel. kernel_data is a ct_gelu_entries. */
typedef struct ct_gelu_entries {
  const ct_cpu_loop_entry* exact;
  const ct_cpu_loop_entry* tanh;
} ct_gelu_entries;

static int ct_cpu_gelu_run(const ct_kernel_call* call) {
  const ct_gelu_entries* entries = call->kernel_data;
  const ct_attr_value* a = call->schema->num_attrs > 0 ? &call->attrs[0] : NULL;
  const int tanh_form =
      a && a->type == CT_ATTR_STRING && a->value.s && strcmp(a->value.s, "tanh") == 0;
  ct_kernel_call form = *call;
  /* (the call's kernel_data is void*, as the registry hands it out; the entry is only read) */
  form.kernel_data = (void*)(tanh_form ? entries->tanh : entries->exact);
  return ct_cpu_elementwise_run(&form);
}
#define CT_GELU_X(NAME, SFX, T, C, U, ID)                                                     \
  CT_UNARY_SAME_X(gelu_erf, SFX, T, C, U, ID)                                                 \
  CT_UNARY_SAME_X(gelu_tanh, SFX, T, C, U, ID)                                                \
  static const ct_gelu_entries ct_cpu_gelu_##SFX##_entries = {&ct_cpu_gelu_erf_##SFX##_entry, \
                                                              &ct_cpu_gelu_tanh_##SFX##_entry};
#define CT_GELU_REG_X(NAME, SFX, T, C, U, ID) \
  {"gelu", 2, {ID, ID}, ct_cpu_gelu_run, NULL, &ct_cpu_gelu_##SFX##_entries},

#define CT_UNARY_PARAM_REG_X(NAME, SFX, T, C, U, ID) \
  {#NAME, 2, {ID, ID}, ct_cpu_unary_param_run, NULL, &ct_cpu_##NAME##_##SFX##_entry},

/* float32 softplus: CT_ACTIVATION_CHUNK elements at a time are read into a buffer, their
 * elementary functions run over the whole chunk (exp through the vector_math set,
 * vector_math.h; log1p through SLEEF, sleef_math.h), and the activation is finished element by
 * element with the scalar formula's own operations. One element at a time through the C library,
 * softplus took 28 ns an element. */
#define CT_ACTIVATION_CHUNK 256

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
#define CT_SOFTPLUS_F32_REG \
  {"softplus",              \
   2,                       \
   {CT_DT_F32, CT_DT_F32},  \
   ct_cpu_unary_param_run,  \
   NULL,                    \
   &ct_cpu_softplus_f32_chunks_entry},

/* ----- the kernel lists: (op, dtypes), the only place to edit ----- */

/* Output dtype equal to the input's. */
#define CT_ACTIVATION_KERNELS(K)     \
  K(sigmoid, CT_CPU_FLOAT_TYPES)     \
  K(selu, CT_CPU_FLOAT_TYPES)        \
  K(silu, CT_CPU_FLOAT_TYPES)        \
  K(hardswish, CT_CPU_FLOAT_TYPES)   \
  K(hardsigmoid, CT_CPU_FLOAT_TYPES) \
  K(mish, CT_CPU_FLOAT_TYPES)

/* Output dtype equal to the input's; attributes passed to the operator function (float32
 * softplus: the chunked loop above). */
#define CT_ACTIVATION_PARAM_KERNELS(K) \
  K(leaky_relu, CT_CPU_FLOAT_TYPES)    \
  K(elu, CT_CPU_FLOAT_TYPES)           \
  K(softplus, CT_CPU_FLOAT_TYPES_BUT_F32)

#define K(NAME, TYPES) TYPES(CT_UNARY_SAME_X, NAME)
CT_ACTIVATION_KERNELS(K)
#undef K
#define K(NAME, TYPES) TYPES(CT_UNARY_PARAM_X, NAME)
CT_ACTIVATION_PARAM_KERNELS(K)
#undef K
CT_CPU_FLOAT_TYPES(CT_GELU_X, gelu)

static const ct_cpu_kernel ct_cpu_activation_kernels[] = {
#define K(NAME, TYPES) TYPES(CT_UNARY_SAME_REG_X, NAME)
    CT_ACTIVATION_KERNELS(K)
#undef K
#define K(NAME, TYPES) TYPES(CT_UNARY_PARAM_REG_X, NAME)
        CT_ACTIVATION_PARAM_KERNELS(K)
#undef K
            CT_CPU_FLOAT_TYPES(CT_GELU_REG_X, gelu) CT_SOFTPLUS_F32_REG};

int ct_cpu_register_activation(void) {
  return ct_cpu_register_all(ct_cpu_activation_kernels,
                             CT_CPU_KERNEL_COUNT(ct_cpu_activation_kernels));
}
