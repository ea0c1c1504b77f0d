/* elementwise_grad_float.c - the element-wise backward kernels computed in float (float16,
 * bfloat16, float32; elementwise_grad_impl.h), and the family's registration. */
/* everything included before T is defined (elementwise_grad_impl.h includes them too) */
#include <tgmath.h>

#include "cpu_register.h"
#include "engine/cpu_dtypes.h"
#include "engine/strided_iter.h"
#include "ops/elementwise_grad_table.h"
#include "ops/elementwise_table.h"
#include "math/vector_math.h"

/* The float exponentials of vector_math.h in the formulas (the C library's expf, erff and tanhf
 * are calls, one element at a time: gelu_backward took 34 ns an element, torch 2.6): ct_exp_f32
 * within an ulp, ct_erf_f32 and ct_tanh_f32 computed in double, plain arithmetic that the
 * compiler vectorises. */
#undef exp
#undef erf
#undef tanh
#define exp(x) ct_exp_f32(x)
#define erf(x) ct_erf_f32(x)
#define tanh(x) ct_tanh_f32(x)

CT_INTERNAL int ct_cpu_register_elementwise_grad_double(void);

#define T float
#define CT_EWG_STORAGE(M, ...)               \
  M(f16, uint16_t, CT_DT_F16, __VA_ARGS__)   \
  M(bf16, uint16_t, CT_DT_BF16, __VA_ARGS__) \
  M(f32, float, CT_DT_F32, __VA_ARGS__)
#define CT_EWG_REGISTER ct_cpu_register_elementwise_grad_float
#include "ops/elementwise_grad_impl.h"

/* float32 gelu_backward: CT_EWG_CHUNK elements at a time are read into buffers, erf or tanh (and
 * exp) run over the whole chunk through the vector_math set, and the gradient is finished
 * element by element with the table's formula (ct_gelu_erf_backward, ct_gelu_tanh_backward)
 * for the other operations. Element by element, erf and tanh in double do not vectorise: 24 ns
 * an element, against torch's 1.7 (the exact form) and 3.7 (tanh). Registered after the table's
 * kernels, it replaces the float32 one. */
#define CT_EWG_CHUNK 256

static void ct_cpu_gelu_backward_f32_chunks(char** data, const int64_t* steps, int64_t n,
                                            const void* extra) {
  const ct_ewg_params* params = (const ct_ewg_params*)extra;
  const bool tanh_form = params->v[0] != 0;
  const ct_vector_math* math = ct_vector_math_get();
  const float beta = 0.79788456080286535587989211986876373695f, kappa = 0.044715f;
  float x[CT_EWG_CHUNK], u[CT_EWG_CHUNK], e[CT_EWG_CHUNK];
  for (int64_t i0 = 0; i0 < n; i0 += CT_EWG_CHUNK) {
    const int64_t m = n - i0 < CT_EWG_CHUNK ? n - i0 : CT_EWG_CHUNK;
    for (int64_t j = 0; j < m; ++j) x[j] = *(const float*)(data[1] + (i0 + j) * steps[1]);
    if (tanh_form) {
      for (int64_t j = 0; j < m; ++j) u[j] = beta * (x[j] + kappa * (x[j] * x[j]) * x[j]);
      math->tanh_f32(u, e, m);
    } else {
      for (int64_t j = 0; j < m; ++j) u[j] = x[j] * 0.70710678118654752440084436210484903928f;
      math->erf_f32(u, e, m);
      for (int64_t j = 0; j < m; ++j) u[j] = -(x[j] * x[j]) * 0.5f;
      math->exp_f32(u, u, m, 0);
    }
    for (int64_t j = 0; j < m; ++j) {
      const float g = *(const float*)(data[0] + (i0 + j) * steps[0]);
      float result;
      if (tanh_form) { /* ct_gelu_tanh_backward with t = e[j] */
        const float x_sq = x[j] * x[j], t = e[j];
        const float left_derivative = 0.5f * (1.0f + t);
        const float right_derivative =
            0.5f * x[j] * (1.0f - t * t) * (beta * (1.0f + 3.0f * kappa * x_sq));
        result = g * (left_derivative + right_derivative);
      } else { /* ct_gelu_erf_backward with erf and exp from the chunk */
        const float cdf = 0.5f * (1.0f + e[j]);
        const float pdf = 0.39894228040143267793994605993438186848f * u[j];
        result = g * (cdf + x[j] * pdf);
      }
      *(float*)(data[2] + (i0 + j) * steps[2]) = result;
    }
  }
}

static const ct_ewg_kernel ct_cpu_gelu_backward_f32_chunks_kernel = {
    ct_cpu_gelu_backward_f32_chunks, CT_ELEMENTWISE_PARAMS_GELU};
static const ct_cpu_kernel ct_cpu_gelu_backward_f32_chunked[] = {
    {"gelu_backward",
     3,
     {CT_DT_F32, CT_DT_F32, CT_DT_F32},
     ct_cpu_elementwise_grad_run,
     NULL,
     &ct_cpu_gelu_backward_f32_chunks_kernel}};

int ct_cpu_register_elementwise_grad(void) {
  int status = ct_cpu_register_elementwise_grad_float();
  if (status == CT_OK) status = ct_cpu_register_elementwise_grad_double();
  if (status == CT_OK) status = ct_cpu_register_all(ct_cpu_gelu_backward_f32_chunked, 1);
  return status;
}
