/* reduction_grad_ops.c - backward operators of the reductions and scans: sum, mean, prod, max,
 * min, logsumexp, var, std, cumulative_sum, cumulative_prod (gradient rows:
 * gradients/reduction_grads.h). Each takes the cotangent of the forward output (grad_out, in the
 * reduced shape), the forward input x (and, where the formula needs it, the forward output out)
 * with the forward's attributes, and returns the cotangent of x in x's shape and dtype: the
 * reduced dimensions are re-inserted and broadcast inside the kernel (ctensor has no reshape). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "op_defs.h"

static const ct_param_schema ct_rgrad_inputs_gx[2] = {
    {"grad_out", "cotangent of the forward output (the reduced shape)", 0, 0},
    {"x", "the forward input", 0, 0}};
static const ct_param_schema ct_rgrad_inputs_gxo[3] = {
    {"grad_out", "cotangent of the forward output (the reduced shape)", 0, 0},
    {"x", "the forward input", 0, 0},
    {"out", "the forward output", 0, 0}};
static const ct_param_schema ct_rgrad_outputs[1] = {
    {"grad_x", "cotangent of x (x's shape and dtype)", 0, 0}};

static const ct_attr_schema ct_rgrad_attrs[] = {
    CT_ATTR_SPEC_NULLABLE("axis", "the forward's axis or axes; None: all", CT_ATTR_INT_LIST),
    CT_ATTR_SPEC_BOOL("keepdims", "the forward's keepdims", 0)};
static const ct_attr_schema ct_rgrad_moments_attrs[] = {
    CT_ATTR_SPEC_NULLABLE("axis", "the forward's axis or axes; None: all", CT_ATTR_INT_LIST),
    CT_ATTR_SPEC_BOOL("keepdims", "the forward's keepdims", 0),
    CT_ATTR_SPEC_FLOAT("correction", "the forward's correction", 0.0)};

static bool ct_info_matches(const ct_tensor* t, const ct_tensor_info* info) {
  if (t->ndim != info->ndim) return false;
  for (int32_t k = 0; k < t->ndim; ++k) {
    if (t->shape[k] != info->shape[k]) return false;
  }
  return true;
}

static int ct_shape_error(const char* op, const char* what, const ct_tensor* t,
                          const ct_tensor_info* want) {
  char got[256], expected[256];
  int n = 0;
  n += snprintf(got + n, sizeof got - (size_t)n, "(");
  for (int32_t k = 0; k < t->ndim && n < 200; ++k) {
    n += snprintf(got + n, sizeof got - (size_t)n, k ? ", %lld" : "%lld", (long long)t->shape[k]);
  }
  snprintf(got + n, sizeof got - (size_t)n, ")");
  n = 0;
  n += snprintf(expected + n, sizeof expected - (size_t)n, "(");
  for (int32_t k = 0; k < want->ndim && n < 200; ++k) {
    n += snprintf(expected + n, sizeof expected - (size_t)n, k ? ", %lld" : "%lld",
                  (long long)want->shape[k]);
  }
  snprintf(expected + n, sizeof expected - (size_t)n, ")");
  return ct_set_error(CT_ERROR_SHAPE_MISMATCH, "%s: %s has shape %s, the forward gives %s", op,
                      what, got, expected);
}

/* Checks that grad_out (and out, when given) have the reduced shape of x, and that every tensor
 * has x's dtype; the output is x's shape and dtype. */
static int ct_infer_reduce_backward(const ct_infer_call* call, ct_tensor_info* outputs,
                                    int32_t capacity, int32_t* num_outputs) {
  const char* op = call->schema->name;
  const ct_tensor* x = call->inputs[1];
  bool mask[CT_MAX_NDIM];
  const int status = ct_axes_to_mask(op, &call->attrs[0], x->ndim, mask);
  if (status != CT_OK) return status;
  ct_tensor_info reduced;
  ct_reduced_info(x, mask, call->attrs[1].value.b != 0, x->dtype, &reduced);
  for (int32_t i = 0; i < call->num_inputs; ++i) {
    if (i == 1) continue;
    const ct_tensor* t = call->inputs[i];
    if (!ct_info_matches(t, &reduced)) {
      return ct_shape_error(op, call->schema->inputs[i].name, t, &reduced);
    }
    if (!ct_dtype_equal(t->dtype, x->dtype)) {
      return ct_set_error(CT_ERROR_UNSUPPORTED_DTYPE, "%s: %s is %s but x is %s", op,
                          call->schema->inputs[i].name, ct_dtype_describe(t->dtype),
                          ct_dtype_describe(x->dtype));
    }
  }
  /* vector_norm_backward takes the forward's ord, which vector_norm refuses as nan */
  if (call->schema->num_attrs > 2 && strcmp(call->schema->attrs[2].name, "ord") == 0 &&
      call->attrs[2].value.f != call->attrs[2].value.f) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "%s: ord must not be nan", op);
  }
  ct_info_from_tensor(x, x->dtype, &outputs[0]);
  *num_outputs = 1;
  return CT_OK;
}

#define CT_DEFINE_REDUCE_BACKWARD(NAME, INPUTS, ATTRS, DOC)                                   \
  CT_DEFINE_OP(NAME, DOC, CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, INPUTS, ct_rgrad_outputs, ATTRS, \
               ct_infer_reduce_backward)

CT_DEFINE_REDUCE_BACKWARD(sum_backward, ct_rgrad_inputs_gx, ct_rgrad_attrs,
                          "Cotangent of sum: grad_out broadcast back to x's shape (the reduced "
                          "dimensions re-inserted). x's data is not read.");
CT_DEFINE_REDUCE_BACKWARD(mean_backward, ct_rgrad_inputs_gx, ct_rgrad_attrs,
                          "Cotangent of mean: grad_out / N broadcast back to x's shape (N: the "
                          "number of elements reduced into each output). x's data is not read.");
CT_DEFINE_REDUCE_BACKWARD(prod_backward, ct_rgrad_inputs_gx, ct_rgrad_attrs,
                          "Cotangent of prod: grad_out times the product of the other elements "
                          "of x's group, exact with zeros (torch: one zero gets the product of "
                          "the others, the rest 0; two or more zeros give 0). Products in "
                          "float64.");
CT_DEFINE_REDUCE_BACKWARD(max_backward, ct_rgrad_inputs_gxo, ct_rgrad_attrs,
                          "Cotangent of max (torch.amax): grad_out split evenly among the "
                          "elements equal to the maximum; a nan maximum splits it among the "
                          "nans (as torch.max without dim).");
CT_DEFINE_REDUCE_BACKWARD(min_backward, ct_rgrad_inputs_gxo, ct_rgrad_attrs,
                          "Cotangent of min (torch.amin): grad_out split evenly among the "
                          "elements equal to the minimum; a nan minimum splits it among the "
                          "nans (as torch.min without dim).");
CT_DEFINE_REDUCE_BACKWARD(logsumexp_backward, ct_rgrad_inputs_gxo, ct_rgrad_attrs,
                          "Cotangent of logsumexp: grad_out * exp(x - out) (torch).");
CT_DEFINE_REDUCE_BACKWARD(var_backward, ct_rgrad_inputs_gx, ct_rgrad_moments_attrs,
                          "Cotangent of var: grad_out * 2 (x - mean) / (N - correction), as "
                          "torch also where N - correction <= 0: a reduction without axis then "
                          "gives nan where x equals the mean and inf elsewhere. Means in "
                          "float64.");
CT_DEFINE_REDUCE_BACKWARD(std_backward, ct_rgrad_inputs_gxo, ct_rgrad_moments_attrs,
                          "Cotangent of std: grad_out * (x - mean) / ((N - correction) out), "
                          "0 where out is 0 (torch). Means in float64.");

static const ct_attr_schema ct_rgrad_vector_norm_attrs[] = {
    CT_ATTR_SPEC_NULLABLE("axis", "the forward's axis or axes; None: all", CT_ATTR_INT_LIST),
    CT_ATTR_SPEC_BOOL("keepdims", "the forward's keepdims", 0),
    CT_ATTR_SPEC_FLOAT("ord", "the forward's ord (not nan)", 2.0)};

CT_DEFINE_REDUCE_BACKWARD(vector_norm_backward, ct_rgrad_inputs_gxo, ct_rgrad_vector_norm_attrs,
                          "Cotangent of vector_norm from x and out (the norm), torch's formulas "
                          "(linalg_vector_norm_backward): ord 0 gives 0; 1: grad_out * sign(x); "
                          "2: grad_out * x / out; inf and -inf: grad_out * sign(x) split evenly "
                          "among the elements with |x| == out (or nan); p < 1: grad_out * "
                          "sign(x) |x|^(p-1) out^(1-p), 0 at x = 0; other p: grad_out * sign(x) "
                          "|x|^(p-1) / out^(p-1). Where out is 0 the gradient is 0 (torch's "
                          "subgradient). Real floats; computed in float64.");

/* ----- scans ----- */

static const ct_attr_schema ct_sgrad_attrs[] = {
    CT_ATTR_SPEC_NULLABLE("axis", "the forward's axis", CT_ATTR_INT),
    CT_ATTR_SPEC_BOOL("include_initial", "the forward's include_initial", false)};

static int ct_infer_scan_backward(const ct_infer_call* call, ct_tensor_info* outputs,
                                  int32_t capacity, int32_t* num_outputs) {
  const char* op = call->schema->name;
  const ct_tensor* x = call->inputs[1];
  const int32_t ndim = x->ndim == 0 ? 1 : x->ndim;
  int32_t axis = 0;
  if (call->attrs[0].type == CT_ATTR_NONE) {
    if (x->ndim > 1) {
      return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                          "%s: axis is required for an x of more than one dimension (got %d-D)", op,
                          x->ndim);
    }
  } else {
    const int status = ct_normalize_axis(op, call->attrs[0].value.i, ndim, &axis);
    if (status != CT_OK) return status;
  }
  ct_tensor_info scanned;
  ct_info_from_tensor(x, x->dtype, &scanned);
  if (x->ndim == 0) {
    scanned.ndim = 1;
    scanned.shape[0] = 1;
  }
  if (call->attrs[1].value.b && !ct_checked_add_i64(scanned.shape[axis], 1, &scanned.shape[axis])) {
    return ct_set_error(CT_ERROR_SIZE_OVERFLOW, "%s: extent %lld plus the initial entry overflows",
                        op, (long long)scanned.shape[axis]);
  }
  for (int32_t i = 0; i < call->num_inputs; ++i) {
    if (i == 1) continue;
    const ct_tensor* t = call->inputs[i];
    if (!ct_info_matches(t, &scanned)) {
      return ct_shape_error(op, call->schema->inputs[i].name, t, &scanned);
    }
    if (!ct_dtype_equal(t->dtype, x->dtype)) {
      return ct_set_error(CT_ERROR_UNSUPPORTED_DTYPE, "%s: %s is %s but x is %s", op,
                          call->schema->inputs[i].name, ct_dtype_describe(t->dtype),
                          ct_dtype_describe(x->dtype));
    }
  }
  ct_info_from_tensor(x, x->dtype, &outputs[0]);
  *num_outputs = 1;
  return CT_OK;
}

static const ct_param_schema ct_sgrad_inputs_gx[2] = {
    {"grad_out", "cotangent of the forward output", 0, 0}, {"x", "the forward input", 0, 0}};
static const ct_param_schema ct_sgrad_inputs_gxo[3] = {
    {"grad_out", "cotangent of the forward output", 0, 0},
    {"x", "the forward input", 0, 0},
    {"out", "the forward output", 0, 0}};

CT_DEFINE_OP(cumulative_sum_backward,
             "Cotangent of cumulative_sum: the reversed cumulative sum of grad_out along the axis "
             "(without its first element when include_initial). x's data is not read; sums in "
             "float64.",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_sgrad_inputs_gx, ct_rgrad_outputs,
             ct_sgrad_attrs, ct_infer_scan_backward);
CT_DEFINE_OP(cumulative_prod_backward,
             "Cotangent of cumulative_prod: grad_x[i] = out[i-1] * s[i] with s[i] = g[i] + "
             "x[i+1] s[i+1] (no division, so exact with zeros, as torch's zero-aware formula). "
             "In float64.",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_sgrad_inputs_gxo, ct_rgrad_outputs,
             ct_sgrad_attrs, ct_infer_scan_backward);
