/* linalg_ops.c - matmul. */
#include "op_defs.h"

static int ct_infer_matmul(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                           int32_t* num_outputs) {
  const ct_tensor* a = call->inputs[0];
  const ct_tensor* b = call->inputs[1];
  if (a->ndim == 0 || b->ndim == 0) {
    return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                        "matmul: operands must have at least one dimension");
  }
  /* NumPy: a 1-D x1 is a row (1, k) and a 1-D x2 a column (k, 1); the added dim is removed. */
  const int64_t m = a->ndim == 1 ? 1 : a->shape[a->ndim - 2];
  const int64_t ka = a->shape[a->ndim - 1];
  const int64_t kb = b->ndim == 1 ? b->shape[0] : b->shape[b->ndim - 2];
  const int64_t n = b->ndim == 1 ? 1 : b->shape[b->ndim - 1];
  if (ka != kb) {
    return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                        "matmul: contracted dimensions differ: x1 has %lld, x2 has %lld",
                        (long long)ka, (long long)kb);
  }
  /* Broadcast the batch dimensions. */
  ct_tensor batch_a = *a, batch_b = *b;
  batch_a.ndim = a->ndim > 2 ? a->ndim - 2 : 0;
  batch_b.ndim = b->ndim > 2 ? b->ndim - 2 : 0;
  const ct_tensor* batches[2] = {&batch_a, &batch_b};
  ct_tensor_info* out = &outputs[0];
  const int status = ct_infer_broadcast_shape("matmul", batches, 2, out);
  if (status != CT_OK) return status;
  if (a->ndim > 1) out->shape[out->ndim++] = m;
  if (b->ndim > 1) out->shape[out->ndim++] = n;
  out->dtype = a->dtype;
  *num_outputs = 1;
  return CT_OK;
}

CT_DEFINE_OP_NO_ATTRS(matmul,
                      "Matrix product with NumPy's rules: batch dimensions broadcast, a 1-D x1 "
                      "is a row vector and a 1-D x2 a column vector (the added dimension is "
                      "removed). float16/bfloat16 accumulate in float32; integers wrap; bool "
                      "is or-of-ands.",
                      CT_OP_WORKSPACE, CT_FLAGS_PURE, ct_params_x1_x2, ct_params_out,
                      ct_infer_matmul);
