/* linalg_extra_ops.c - vecdot, linear, einsum. */
#include "einsum_spec.h"
#include "op_defs.h"

/* ----- vecdot ----- */

static const ct_attr_schema ct_vecdot_attrs[] = {CT_ATTR_SPEC_INT(
    "axis", "axis of the broadcast shape to contract (negative counts from the end)", -1)};

/* The contracted axis of the broadcast shape (ndim dims), as an index into it. */
static int ct_vecdot_axis(const ct_infer_call* call, int32_t ndim, int32_t* axis) {
  const ct_tensor* x1 = call->inputs[0];
  const ct_tensor* x2 = call->inputs[1];
  if (x1->ndim == 0 || x2->ndim == 0) {
    return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                        "vecdot: operands must have at least one dimension");
  }
  int status = ct_normalize_axis("vecdot", call->attrs[0].value.i, ndim, axis);
  if (status != CT_OK) return status;
  const int32_t k1 = *axis - (ndim - x1->ndim), k2 = *axis - (ndim - x2->ndim);
  if (k1 < 0 || k2 < 0 || x1->shape[k1] != x2->shape[k2]) {
    return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                        "vecdot: both operands need the contracted axis %lld with the same "
                        "length (it does not broadcast)",
                        (long long)call->attrs[0].value.i);
  }
  return CT_OK;
}

static int ct_infer_vecdot(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                           int32_t* num_outputs) {
  ct_tensor_info* out = &outputs[0];
  int status = ct_infer_broadcast_shape("vecdot", call->inputs, 2, out);
  if (status != CT_OK) return status;
  int32_t axis;
  status = ct_vecdot_axis(call, out->ndim, &axis);
  if (status != CT_OK) return status;
  for (int32_t d = axis; d + 1 < out->ndim; ++d) out->shape[d] = out->shape[d + 1];
  --out->ndim;
  out->dtype = call->inputs[0]->dtype;
  *num_outputs = 1;
  return CT_OK;
}

CT_DEFINE_OP(vecdot,
             "Dot products of x1 and x2 along an axis, other dimensions broadcast (array API "
             "vecdot: complex x1 is conjugated, sum(conj(x1) * x2), as numpy.vecdot). The axis is "
             "not broadcast: both operands "
             "have it with the same length. float16/bfloat16 accumulate in float32; integers "
             "wrap; bool is or-of-ands.",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_params_x1_x2, ct_params_out, ct_vecdot_attrs,
             ct_infer_vecdot);

/* ----- linear ----- */

static const ct_param_schema ct_linear_inputs[3] = {
    {"x", "(..., in_features)", 0, 0},
    {"weight", "(out_features, in_features)", 0, 0},
    {"bias", "(out_features,), optional", CT_PARAM_OPTIONAL, 0}};

static int ct_infer_linear(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                           int32_t* num_outputs) {
  const ct_tensor* x = call->inputs[0];
  const ct_tensor* w = call->inputs[1];
  const ct_tensor* bias = call->num_inputs > 2 ? call->inputs[2] : NULL;
  if (x->ndim == 0 || w->ndim != 2) {
    return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                        "linear: x needs at least one dimension and weight two, got %d-D and "
                        "%d-D",
                        x->ndim, w->ndim);
  }
  if (x->shape[x->ndim - 1] != w->shape[1]) {
    return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                        "linear: x has %lld input features, weight expects %lld",
                        (long long)x->shape[x->ndim - 1], (long long)w->shape[1]);
  }
  if (bias && (bias->ndim != 1 || bias->shape[0] != w->shape[0])) {
    return ct_set_error(CT_ERROR_SHAPE_MISMATCH, "linear: bias must have shape (%lld,)",
                        (long long)w->shape[0]);
  }
  ct_info_from_tensor(x, x->dtype, &outputs[0]);
  outputs[0].shape[x->ndim - 1] = w->shape[0];
  *num_outputs = 1;
  return CT_OK;
}

CT_DEFINE_OP_NO_ATTRS(linear,
                      "x @ weight.T + bias (torch.nn.functional.linear); float16/bfloat16 "
                      "accumulate in float32 and round once.",
                      CT_OP_WORKSPACE, CT_FLAGS_PURE, ct_linear_inputs, ct_params_out,
                      ct_infer_linear);

/* ----- einsum ----- */

static const ct_param_schema ct_einsum_inputs[1] = {
    {"operands", "1 to 16 arrays, of one dtype", CT_PARAM_VARIADIC, 0}};

static const ct_attr_schema ct_einsum_attrs[] = {CT_ATTR_SPEC_REQUIRED(
    "subscripts",
    "e.g. \"ij,jk->ik\", \"ii->i\", \"...ij,...jk->...ik\", \"ij,jk,kl\" (implicit output)",
    CT_ATTR_STRING)};

static int ct_infer_einsum(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                           int32_t* num_outputs) {
  ct_einsum_spec plan;
  const int status = ct_einsum_parse(call->attrs[0].value.s, call->inputs, call->num_inputs, &plan);
  if (status != CT_OK) return status;
  for (int32_t i = 1; i < call->num_inputs; ++i) {
    if (!ct_dtype_equal(call->inputs[0]->dtype, call->inputs[i]->dtype)) {
      return ct_set_error(CT_ERROR_UNSUPPORTED_DTYPE, "einsum: the operands' dtypes differ");
    }
  }
  outputs[0].dtype = call->inputs[0]->dtype;
  outputs[0].ndim = plan.out_ndim;
  for (int32_t d = 0; d < plan.out_ndim; ++d) outputs[0].shape[d] = plan.extent[plan.out_letter[d]];
  *num_outputs = 1;
  return CT_OK;
}

CT_DEFINE_OP(einsum,
             "Einstein summation over 1 to 16 operands (numpy.einsum): explicit (\"->\") or "
             "implicit output (the ellipsis dims, then the letters used once, sorted), "
             "repeated letters take diagonals, letters not in the output are summed. \"...\" "
             "stands for the dims no letter names, right-aligned and broadcast across "
             "operands as NumPy's (extent-1 dims broadcast); with \"->\", the output names "
             "\"...\" when those dims are not empty. Two-operand contractions run as one "
             "strided batched GEMM (a loop of accumulating GEMMs when several letters are "
             "summed). More operands contract pairwise left to right (numpy.einsum_path's "
             "naive order): operands 0 and 1 into an intermediate keeping every letter a "
             "later operand or the output needs, that with operand 2, and so on; the "
             "intermediates live in the workspace (two buffers of the largest one).",
             CT_OP_WORKSPACE, CT_FLAGS_PURE, ct_einsum_inputs, ct_params_out, ct_einsum_attrs,
             ct_infer_einsum);
