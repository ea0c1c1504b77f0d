/* elementwise_grad_float.c - the element-wise backward kernels computed in float (float16,
 * bfloat16, float32; elementwise_grad_impl.h), and the family's registration. */
/* everything included before T is defined (elementwise_grad_impl.h includes them too) */
#include <tgmath.h>

#include "cpu_register.h"
#include "engine/cpu_dtypes.h"
#include "engine/strided_iter.h"
#include "ops/elementwise_grad_table.h"
#include "ops/elementwise_table.h"

CT_INTERNAL int ct_cpu_register_elementwise_grad_double(void);

#define T float
#define CT_EWG_STORAGE(M, ...)               \
  M(f16, uint16_t, CT_DT_F16, __VA_ARGS__)   \
  M(bf16, uint16_t, CT_DT_BF16, __VA_ARGS__) \
  M(f32, float, CT_DT_F32, __VA_ARGS__)
#define CT_EWG_REGISTER ct_cpu_register_elementwise_grad_float
#include "ops/elementwise_grad_impl.h"

int ct_cpu_register_elementwise_grad(void) {
  const int status = ct_cpu_register_elementwise_grad_float();
  return status != CT_OK ? status : ct_cpu_register_elementwise_grad_double();
}
