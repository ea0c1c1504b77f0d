/* linalg_grad_ops.c - backward operators of matmul and einsum (gradient rows:
 * gradients/linalg_grads.h). linear, vecdot and matrix_transpose compose existing ops. */
#include "einsum_spec.h"
#include "op_defs.h"

/* ----- matmul_backward ----- */

static const ct_param_schema ct_matmul_backward_inputs[3] = {
    {"grad_out", "cotangent of matmul's output", 0, 0},
    {"x1", "matmul's first operand", 0, 0},
    {"x2", "matmul's second operand", 0, 0}};
static const ct_param_schema ct_matmul_backward_outputs[2] = {
    {"grad_x1", "cotangent of x1 (x1's shape)", 0, 0},
    {"grad_x2", "cotangent of x2 (x2's shape)", 0, 0}};

static int ct_infer_matmul_backward(const ct_infer_call* call, ct_tensor_info* outputs,
                                    int32_t capacity, int32_t* num_outputs) {
  const ct_tensor* g = call->inputs[0];
  const ct_tensor* x1 = call->inputs[1];
  const ct_tensor* x2 = call->inputs[2];
  /* The forward's output shape, by matmul's own infer. */
  const ct_tensor* operands[2] = {x1, x2};
  const ct_infer_call forward = {&ct_op_def_matmul.schema, operands, 2, NULL};
  ct_tensor_info out;
  int32_t count = 0;
  const int status = ct_op_def_matmul.infer(&forward, &out, 1, &count);
  if (status != CT_OK) return status;
  bool same = g->ndim == out.ndim;
  for (int32_t k = 0; same && k < g->ndim; ++k) same = g->shape[k] == out.shape[k];
  if (!same) {
    return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                        "matmul_backward: grad_out (%d-D) does not have matmul(x1, x2)'s shape",
                        g->ndim);
  }
  if (!ct_dtype_equal(g->dtype, x1->dtype) || !ct_dtype_equal(x1->dtype, x2->dtype)) {
    return ct_set_error(CT_ERROR_UNSUPPORTED_DTYPE,
                        "matmul_backward: grad_out, x1 and x2 must share one dtype");
  }
  ct_info_from_tensor(x1, x1->dtype, &outputs[0]);
  ct_info_from_tensor(x2, x2->dtype, &outputs[1]);
  *num_outputs = 2;
  return CT_OK;
}

CT_DEFINE_OP_NO_ATTRS(matmul_backward,
                      "Cotangents of matmul: grad_x1 = grad_out @ x2^T and grad_x2 = x1^T @ "
                      "grad_out, summed over the batch dimensions each operand was broadcast "
                      "along, with NumPy's 1-D rules undone (torch.matmul's backward). Runs the "
                      "GEMM on transposed views (no copies); float16/bfloat16 accumulate in "
                      "float32.",
                      CT_OP_WORKSPACE, CT_FLAGS_PURE, ct_matmul_backward_inputs,
                      ct_matmul_backward_outputs, ct_infer_matmul_backward);

/* ----- einsum_backward ----- */

static const ct_param_schema ct_einsum_backward_inputs[2] = {
    {"grad_out", "cotangent of einsum's output", 0, 0},
    {"operands", "einsum's operands (1 to 16)", CT_PARAM_VARIADIC, 0}};
static const ct_param_schema ct_einsum_backward_outputs[1] = {
    {"grad_operands", "one cotangent per operand, in its shape", CT_PARAM_VARIADIC, 0}};

static const ct_attr_schema ct_einsum_backward_attrs[] = {
    CT_ATTR_SPEC_REQUIRED("subscripts", "einsum's subscripts", CT_ATTR_STRING)};

static int ct_infer_einsum_backward(const ct_infer_call* call, ct_tensor_info* outputs,
                                    int32_t capacity, int32_t* num_outputs) {
  const int32_t n = call->num_inputs - 1;
  if (n < 1 || n > CT_EINSUM_MAX_OPERANDS) {
    return ct_set_error(CT_ERROR_WRONG_ARITY, "einsum_backward: takes 1 to %d operands, got %d",
                        CT_EINSUM_MAX_OPERANDS, n);
  }
  if (capacity < n) return ct_set_error(CT_ERROR_WRONG_ARITY, "einsum_backward: too many outputs");
  const ct_tensor* const* operands = call->inputs + 1;
  ct_einsum_spec plan;
  const int status = ct_einsum_parse(call->attrs[0].value.s, operands, n, &plan);
  if (status != CT_OK) return status;
  const ct_tensor* g = call->inputs[0];
  bool same = g->ndim == plan.out_ndim;
  for (int32_t d = 0; same && d < g->ndim; ++d) {
    same = g->shape[d] == plan.extent[plan.out_letter[d]];
  }
  if (!same) {
    return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                        "einsum_backward: grad_out does not have einsum's output shape");
  }
  for (int32_t i = 0; i < n; ++i) {
    if (!ct_dtype_equal(operands[i]->dtype, g->dtype)) {
      return ct_set_error(CT_ERROR_UNSUPPORTED_DTYPE,
                          "einsum_backward: grad_out and the operands must share one dtype");
    }
    ct_info_from_tensor(operands[i], operands[i]->dtype, &outputs[i]);
  }
  *num_outputs = n;
  return CT_OK;
}

CT_DEFINE_OP(einsum_backward,
             "Cotangents of einsum, one per operand: each is the einsum of grad_out with the "
             "other operands onto the operand's subscripts (diagonals written back in place, "
             "zeros elsewhere; letters the operand broadcast over are summed, letters only it "
             "has are broadcast; \"...\" as einsum's, its broadcast dims summed). With three "
             "or more operands the others first contract (einsum's left-to-right order) into "
             "one intermediate holding the letters the operand or the output names, in the "
             "workspace. Runs on the strided GEMM as einsum does.",
             CT_OP_WORKSPACE, CT_FLAGS_PURE, ct_einsum_backward_inputs, ct_einsum_backward_outputs,
             ct_einsum_backward_attrs, ct_infer_einsum_backward);
