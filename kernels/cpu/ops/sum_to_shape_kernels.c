/* sum_to_shape_kernels.c - sum_to_shape(x, like): the sum kernel over the dims broadcasting
 * added, writing through a view of the output with those dims kept as extent 1. */
#include "cpu_register.h"

static int ct_cpu_sum_to_shape_run(const ct_kernel_call* call) {
  const ct_tensor* x = call->inputs[0];
  const ct_tensor* out = call->outputs[0];
  const int32_t lead = x->ndim - out->ndim;
  int64_t shape[CT_MAX_NDIM], strides[CT_MAX_NDIM], axes[CT_MAX_NDIM];
  int64_t num_axes = 0;
  for (int32_t k = 0; k < x->ndim; ++k) {
    const int32_t j = k - lead;
    shape[k] = j < 0 ? 1 : out->shape[j];
    strides[k] = j < 0 ? 0 : ct_tensor_stride(out, j);
    if (j < 0 || (out->shape[j] == 1 && x->shape[k] != 1)) axes[num_axes++] = k;
  }
  ct_tensor view = *out;
  view.ndim = x->ndim;
  view.shape = shape;
  view.strides = strides;
  const ct_tensor* outputs[1] = {&view};
  const ct_attr attrs[2] = {
      {"axis", {CT_ATTR_INT_LIST, 0, num_axes, {.ints = axes}}},
      {"keepdims", {CT_ATTR_BOOL, 0, 0, {.b = 1}}},
  };
  const ct_context context = {.struct_size = sizeof context, .backend = "cpu"};
  const ct_op* sum = NULL;
  const int status = ct_op_find("sum", &sum);
  if (status != CT_OK) return status;
  return ct_op_run(sum, &x, 1, outputs, 1, attrs, 2, &context);
}

#define CT_SUM_TO_SHAPE_KERNEL(ID) \
  {"sum_to_shape", 3, {ID, ID, ID}, ct_cpu_sum_to_shape_run, NULL, NULL}

static const ct_cpu_kernel ct_cpu_sum_to_shape_kernels[] = {
    CT_SUM_TO_SHAPE_KERNEL(CT_DT_F16), CT_SUM_TO_SHAPE_KERNEL(CT_DT_BF16),
    CT_SUM_TO_SHAPE_KERNEL(CT_DT_F32), CT_SUM_TO_SHAPE_KERNEL(CT_DT_F64),
    CT_SUM_TO_SHAPE_KERNEL(CT_DT_C64), CT_SUM_TO_SHAPE_KERNEL(CT_DT_C128),
};

int ct_cpu_register_sum_to_shape(void) {
  return ct_cpu_register_all(ct_cpu_sum_to_shape_kernels,
                             CT_CPU_KERNEL_COUNT(ct_cpu_sum_to_shape_kernels));
}
