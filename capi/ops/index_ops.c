/* index_ops.c - gathers and scatters by index arrays: put_along_axis, gather_nd, scatter_nd,
 * index_select, index_add, and their backward ops (gradient rows: capi/gradients/index_grads.h).
 * Their geometry, shared by every device's kernels, is index_plan.h. Every scatter returns a new
 * array (x is not modified). Indices are int32 or int64; negative ones count from the end (NumPy's
 * rule); an index out of range is an error naming the op, the index and its bound, reported before
 * anything is written. */
#include <math.h>
#include <stdio.h>

#include "index_plan.h"
#include "op_defs.h"

/* ----- shared checks ----- */

static int ct_check_index_dtype(const char* op, const ct_tensor* indices) {
  const ct_dtype d = indices->dtype;
  if (d.code == CT_DTYPE_INT && d.lanes == 1 && (d.bits == 32 || d.bits == 64)) return CT_OK;
  return ct_set_error(CT_ERROR_UNSUPPORTED_DTYPE, "%s: indices must be int32 or int64, not %s", op,
                      ct_dtype_describe(d));
}

static int ct_check_same_dtype(const char* op, const char* name, const ct_tensor* x,
                               const ct_tensor* other) {
  if (ct_dtype_equal(x->dtype, other->dtype)) return CT_OK;
  return ct_set_error(CT_ERROR_UNSUPPORTED_DTYPE, "%s: %s is %s but x is %s", op, name,
                      ct_dtype_describe(other->dtype), ct_dtype_describe(x->dtype));
}

/* The reduction attribute, checked against x's dtype: bool takes none, max and min. */
static int ct_reduction_attr(const char* op, const ct_attr_value* value, ct_dtype dtype,
                             int* reduction) {
  *reduction = ct_index_reduction_of(value->value.s);
  if (*reduction < 0) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                        "%s: reduction must be \"none\", \"add\", \"multiply\", \"max\" or "
                        "\"min\", not \"%s\"",
                        op, value->value.s);
  }
  if (ct_dtype_is_bool(dtype) && (*reduction == CT_IP_ADD || *reduction == CT_IP_MULTIPLY)) {
    return ct_set_error(CT_ERROR_UNSUPPORTED_DTYPE,
                        "%s: reduction \"%s\" is not defined for bool arrays (use \"max\" for "
                        "or, \"min\" for and)",
                        op, value->value.s);
  }
  return CT_OK;
}

/* Checks that `t` has exactly `ndim` dims of `shape`. */
static int ct_check_shape(const char* op, const char* name, const ct_tensor* t, int32_t ndim,
                          const int64_t* shape) {
  bool same = t->ndim == ndim;
  for (int32_t k = 0; same && k < ndim; ++k) same = t->shape[k] == shape[k];
  if (same) return CT_OK;
  char have[200], want[200];
  size_t a = 0, b = 0;
  for (int32_t k = 0; k < t->ndim && a < sizeof have; ++k) {
    a += (size_t)snprintf(have + a, sizeof have - a, k ? ", %lld" : "%lld", (long long)t->shape[k]);
  }
  if (!t->ndim) have[0] = '\0';
  for (int32_t k = 0; k < ndim && b < sizeof want; ++k) {
    b += (size_t)snprintf(want + b, sizeof want - b, k ? ", %lld" : "%lld", (long long)shape[k]);
  }
  if (!ndim) want[0] = '\0';
  return ct_set_error(CT_ERROR_SHAPE_MISMATCH, "%s: %s has shape (%s) but must have shape (%s)", op,
                      name, have, want);
}

/* Checks that `t` broadcasts to `shape` (right-aligned, NumPy rules, without growing it). */
static int ct_check_broadcasts_to(const char* op, const char* name, const ct_tensor* t,
                                  int32_t ndim, const int64_t* shape) {
  bool ok = t->ndim <= ndim;
  for (int32_t k = 0; ok && k < t->ndim; ++k) {
    const int64_t e = t->shape[k], want = shape[ndim - t->ndim + k];
    ok = e == want || e == 1;
  }
  if (ok) return CT_OK;
  return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                      "%s: %s (%d dims) does not broadcast to the shape of the indexed positions "
                      "(%d dims)",
                      op, name, t->ndim, ndim);
}

/* ----- put_along_axis ----- */

static const ct_param_schema ct_put_along_axis_inputs[3] = {
    {"x", "array to scatter into (not modified)", 0, 0},
    {"indices", "int32 or int64 indices along axis, of x's ndim", 0, 0},
    {"values", "values of x's dtype, broadcast to the indexed positions", 0, 0}};

#define CT_REDUCTION_DOC                                                                        \
  "how each value combines with the element it lands on: \"none\" (replace; the last value in " \
  "row-major order of the indices wins), \"add\", \"multiply\", \"max\", \"min\" (x's element " \
  "included, as torch's include_self=True)"

static const ct_attr_schema ct_put_along_axis_attrs[] = {
    CT_ATTR_SPEC_REQUIRED("axis", "axis along which the indices select elements", CT_ATTR_INT),
    CT_ATTR_SPEC_STRING("reduction", CT_REDUCTION_DOC, "none")};

/* Positions W of put_along_axis: x's shape with the axis at extent 1, broadcast with the
 * indices' shape (NumPy's put_along_axis); the values broadcast to it. */
static int ct_along_axis_positions(const char* op, const ct_tensor* x, const ct_tensor* indices,
                                   const ct_attr_value* axis_attr, int32_t* axis,
                                   ct_tensor_info* w) {
  int status = ct_check_index_dtype(op, indices);
  if (status != CT_OK) return status;
  if (indices->ndim != x->ndim || x->ndim == 0) {
    return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                        "%s: indices (%d dims) and x (%d dims) need the same number of "
                        "dimensions, at least 1",
                        op, indices->ndim, x->ndim);
  }
  status = ct_normalize_axis(op, axis_attr->value.i, x->ndim, axis);
  if (status != CT_OK) return status;
  w->ndim = x->ndim;
  for (int32_t k = 0; k < x->ndim; ++k) {
    const int64_t a = k == *axis ? 1 : x->shape[k], b = indices->shape[k];
    if (a != b && a != 1 && b != 1) {
      return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                          "%s: extent %lld of x and %lld of indices (dimension %d) do not "
                          "broadcast",
                          op, (long long)a, (long long)b, k);
    }
    w->shape[k] = a == 1 ? b : a;
  }
  /* broadcast (stride-0) x and indices can name more positions than int64 counts */
  int64_t total = 1;
  for (int32_t k = 0; k < w->ndim; ++k) {
    if (!ct_checked_mul_i64(total, w->shape[k], &total)) {
      return ct_set_error(CT_ERROR_SIZE_OVERFLOW,
                          "%s: x broadcast with indices names too many positions", op);
    }
  }
  return CT_OK;
}

static int ct_infer_put_along_axis(const ct_infer_call* call, ct_tensor_info* outputs,
                                   int32_t capacity, int32_t* num_outputs) {
  (void)capacity;
  const ct_tensor *x = call->inputs[0], *indices = call->inputs[1], *values = call->inputs[2];
  const char* op = "put_along_axis";
  int32_t axis;
  ct_tensor_info w;
  int reduction;
  int status = ct_along_axis_positions(op, x, indices, &call->attrs[0], &axis, &w);
  if (status == CT_OK) status = ct_check_same_dtype(op, "values", x, values);
  if (status == CT_OK) status = ct_check_broadcasts_to(op, "values", values, w.ndim, w.shape);
  if (status == CT_OK) status = ct_reduction_attr(op, &call->attrs[1], x->dtype, &reduction);
  if (status != CT_OK) return status;
  ct_info_from_tensor(x, x->dtype, &outputs[0]);
  *num_outputs = 1;
  return CT_OK;
}

CT_DEFINE_OP(put_along_axis,
             "A copy of x with values put at indices along axis (numpy.put_along_axis, returning "
             "a new array; torch.scatter and torch.scatter_reduce with include_self=True; ONNX "
             "ScatterElements). The indexed positions are x's shape with the axis at extent 1 "
             "broadcast with the indices' shape (NumPy's rule, so an indices extent of 1 repeats "
             "along x); values broadcast to them. out[..., indices[i...], ...] = "
             "reduce(out[...], values[i...]) in row-major order of the positions: with repeated "
             "indices \"none\" keeps the last value, and sums and products accumulate in that "
             "order on every device (deterministic). Integer and bool x take none, max and min "
             "(integers add and multiply too, wrapping).",
             CT_OP_SHAPE_STATIC, CT_FLAGS_INDEX_CHECKED, ct_put_along_axis_inputs, ct_params_out,
             ct_put_along_axis_attrs, ct_infer_put_along_axis);

/* ----- gather_nd ----- */

static const ct_param_schema ct_gather_nd_inputs[2] = {
    {"x", "array to gather from", 0, 0},
    {"indices", "int32 or int64 index tuples in the last dim (length K)", 0, 0}};

static const ct_attr_schema ct_gather_nd_attrs[] = {CT_ATTR_SPEC_INT(
    "batch_dims", "leading dims shared by x and indices (ONNX GatherND's batch_dims)", 0)};

/* Checks gather_nd's / scatter_nd's shapes; sets W (the gathered or scattered positions). */
static int ct_nd_positions(const char* op, const ct_tensor* x, const ct_tensor* indices,
                           int64_t batch_dims, ct_tensor_info* w) {
  int status = ct_check_index_dtype(op, indices);
  if (status != CT_OK) return status;
  if (batch_dims < 0 || batch_dims >= indices->ndim || batch_dims > x->ndim) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                        "%s: batch_dims %lld must be >= 0 and less than the indices' %d "
                        "dimensions",
                        op, (long long)batch_dims, indices->ndim);
  }
  const int64_t q = indices->ndim, k = indices->shape[q - 1];
  if (k < 1 || k > x->ndim - batch_dims) {
    return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                        "%s: the index tuples (last dim of indices) have length %lld; it must be "
                        "in [1, %lld] (x's dims after the batch dims)",
                        op, (long long)k, (long long)(x->ndim - batch_dims));
  }
  for (int64_t d = 0; d < batch_dims; ++d) {
    if (indices->shape[d] != x->shape[d]) {
      return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                          "%s: batch dimension %lld has extent %lld in indices but %lld in x", op,
                          (long long)d, (long long)indices->shape[d], (long long)x->shape[d]);
    }
  }
  w->ndim = (int32_t)(q - 1 + x->ndim - batch_dims - k);
  if (w->ndim > CT_MAX_NDIM) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "%s: the result would exceed %d dimensions", op,
                        CT_MAX_NDIM);
  }
  int32_t n = 0;
  for (int64_t d = 0; d < q - 1; ++d) w->shape[n++] = indices->shape[d];
  for (int64_t d = batch_dims + k; d < x->ndim; ++d) w->shape[n++] = x->shape[d];
  int64_t total = 1;
  for (int32_t d = 0; d < w->ndim; ++d) {
    if (!ct_checked_mul_i64(total, w->shape[d], &total)) {
      return ct_set_error(CT_ERROR_SIZE_OVERFLOW,
                          "%s: the result would have more elements than int64 can count", op);
    }
  }
  return CT_OK;
}

static int ct_infer_gather_nd(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                              int32_t* num_outputs) {
  (void)capacity;
  const ct_tensor *x = call->inputs[0], *indices = call->inputs[1];
  const int status = ct_nd_positions("gather_nd", x, indices, call->attrs[0].value.i, &outputs[0]);
  if (status != CT_OK) return status;
  outputs[0].dtype = x->dtype;
  *num_outputs = 1;
  return CT_OK;
}

CT_DEFINE_OP(gather_nd,
             "Slices of x at index tuples (ONNX GatherND): with b = batch_dims and K the length "
             "of the tuples (indices' last dim), out[i..., r...] = x[i[:b]..., indices[i...], "
             "r...], of shape indices.shape[:-1] + x.shape[b + K:]. The first b dims of indices "
             "and x must be equal.",
             CT_OP_SHAPE_STATIC, CT_FLAGS_INDEX_CHECKED, ct_gather_nd_inputs, ct_params_out,
             ct_gather_nd_attrs, ct_infer_gather_nd);

/* ----- scatter_nd ----- */

static const ct_param_schema ct_scatter_nd_inputs[3] = {
    {"x", "array to scatter into (not modified)", 0, 0},
    {"indices", "int32 or int64 index tuples in the last dim (length K)", 0, 0},
    {"updates", "x's dtype, of shape indices.shape[:-1] + x.shape[K:]", 0, 0}};

static const ct_attr_schema ct_scatter_nd_attrs[] = {
    CT_ATTR_SPEC_STRING("reduction", CT_REDUCTION_DOC, "none")};

static int ct_infer_scatter_nd(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                               int32_t* num_outputs) {
  (void)capacity;
  const ct_tensor *x = call->inputs[0], *indices = call->inputs[1], *updates = call->inputs[2];
  const char* op = "scatter_nd";
  ct_tensor_info w;
  int reduction;
  int status = ct_nd_positions(op, x, indices, 0, &w);
  if (status == CT_OK) status = ct_check_same_dtype(op, "updates", x, updates);
  if (status == CT_OK) status = ct_check_shape(op, "updates", updates, w.ndim, w.shape);
  if (status == CT_OK) status = ct_reduction_attr(op, &call->attrs[0], x->dtype, &reduction);
  if (status != CT_OK) return status;
  ct_info_from_tensor(x, x->dtype, &outputs[0]);
  *num_outputs = 1;
  return CT_OK;
}

CT_DEFINE_OP(scatter_nd,
             "A copy of x with updates put at index tuples (ONNX ScatterND, returning a new "
             "array): out[indices[i...], r...] = reduce(out[...], updates[i..., r...]), applied "
             "in row-major order of the updates, so that with repeated tuples \"none\" keeps the "
             "last update and sums and products accumulate in that order on every device "
             "(deterministic). Integer and bool x take none, max and min (integers add and "
             "multiply too, wrapping).",
             CT_OP_SHAPE_STATIC, CT_FLAGS_INDEX_CHECKED, ct_scatter_nd_inputs, ct_params_out,
             ct_scatter_nd_attrs, ct_infer_scatter_nd);

/* ----- index_select, index_add ----- */

static int ct_select_positions(const char* op, const ct_tensor* x, const ct_tensor* indices,
                               const ct_attr_value* axis_attr, int32_t* axis, ct_tensor_info* w) {
  int status = ct_check_index_dtype(op, indices);
  if (status != CT_OK) return status;
  if (indices->ndim > 1) {
    return ct_set_error(CT_ERROR_SHAPE_MISMATCH, "%s: indices must be 0-d or 1-d, not %d-d", op,
                        indices->ndim);
  }
  if (x->ndim == 0) {
    return ct_set_error(CT_ERROR_SHAPE_MISMATCH, "%s: x must have at least one dimension", op);
  }
  status = ct_normalize_axis(op, axis_attr->value.i, x->ndim, axis);
  if (status != CT_OK) return status;
  ct_info_from_tensor(x, x->dtype, w);
  w->shape[*axis] = indices->ndim ? indices->shape[0] : 1;
  return CT_OK;
}

static const ct_param_schema ct_index_select_inputs[2] = {
    {"x", "array to select from", 0, 0}, {"indices", "0-d or 1-d int32 or int64 indices", 0, 0}};

static const ct_attr_schema ct_index_select_attrs[] = {
    CT_ATTR_SPEC_REQUIRED("axis", "axis to select along", CT_ATTR_INT)};

static int ct_infer_index_select(const ct_infer_call* call, ct_tensor_info* outputs,
                                 int32_t capacity, int32_t* num_outputs) {
  (void)capacity;
  int32_t axis;
  const int status = ct_select_positions("index_select", call->inputs[0], call->inputs[1],
                                         &call->attrs[0], &axis, &outputs[0]);
  if (status != CT_OK) return status;
  *num_outputs = 1;
  return CT_OK;
}

CT_DEFINE_OP(index_select,
             "The entries of x at indices along axis (torch.index_select): x's shape with the "
             "axis' extent replaced by the number of indices.",
             CT_OP_SHAPE_STATIC, CT_FLAGS_INDEX_CHECKED, ct_index_select_inputs, ct_params_out,
             ct_index_select_attrs, ct_infer_index_select);

static const ct_param_schema ct_index_add_inputs[3] = {
    {"x", "array to add into (not modified)", 0, 0},
    {"indices", "0-d or 1-d int32 or int64 indices", 0, 0},
    {"source", "x's dtype and shape but along axis, where its extent is the number of indices", 0,
     0}};

static const ct_attr_schema ct_index_add_attrs[] = {
    CT_ATTR_SPEC_REQUIRED("axis", "axis to add along", CT_ATTR_INT),
    CT_ATTR_SPEC_FLOAT("alpha", "scale of source (a whole number for integer x)", 1.0)};

static int ct_infer_index_add(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                              int32_t* num_outputs) {
  (void)capacity;
  const ct_tensor *x = call->inputs[0], *indices = call->inputs[1], *source = call->inputs[2];
  const char* op = "index_add";
  int32_t axis;
  ct_tensor_info w;
  int status = ct_select_positions(op, x, indices, &call->attrs[0], &axis, &w);
  if (status == CT_OK) status = ct_check_same_dtype(op, "source", x, source);
  if (status == CT_OK) status = ct_check_shape(op, "source", source, w.ndim, w.shape);
  if (status != CT_OK) return status;
  const double alpha = call->attrs[1].value.f;
  if (ct_dtype_is_bool(x->dtype)) {
    return ct_set_error(CT_ERROR_UNSUPPORTED_DTYPE, "index_add: x must not be bool");
  }
  /* the kernels convert alpha to int64 for integer x: it must be whole and in int64's range */
  if (!ct_dtype_is_float(x->dtype) &&
      (alpha != floor(alpha) || !(alpha >= -0x1p63 && alpha < 0x1p63))) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                        "index_add: alpha %g must be a whole number in int64's range for "
                        "integer x",
                        alpha);
  }
  status = ct_check_float_attr_precision(op, "alpha", alpha, x->dtype);
  if (status != CT_OK) return status;
  ct_info_from_tensor(x, x->dtype, &outputs[0]);
  *num_outputs = 1;
  return CT_OK;
}

/* alpha * source is computed and added in the output's type: for float32 a product beyond
 * float32's range (alpha 3e38, |source| > 1.2) is inf, as torch's index_add gives; the result
 * could not hold the float64 value either. */
CT_DEFINE_OP(index_add,
             "A copy of x with alpha * source added at indices along axis (torch.index_add, "
             "returning a new array): out[..., indices[i], ...] += alpha * source[..., i, ...]. "
             "Repeated indices add up in index order on every device (deterministic).",
             CT_OP_SHAPE_STATIC, CT_FLAGS_INDEX_CHECKED, ct_index_add_inputs, ct_params_out,
             ct_index_add_attrs, ct_infer_index_add);

/* ----- backward ops: grad_out first, then the forward's inputs (and output) ----- */

/* Checks grad_out against the forward's output and that it is a float array of x's dtype. */
static int ct_check_grad(const char* op, const ct_tensor* grad, const ct_tensor* x, int32_t ndim,
                         const int64_t* shape) {
  if (!ct_dtype_is_float(grad->dtype)) {
    return ct_set_error(CT_ERROR_UNSUPPORTED_DTYPE, "%s: grad_out must be a float array, not %s",
                        op, ct_dtype_describe(grad->dtype));
  }
  const int status = ct_check_same_dtype(op, "grad_out", x, grad);
  if (status != CT_OK) return status;
  return ct_check_shape(op, "grad_out", grad, ndim, shape);
}

static const ct_param_schema ct_params_grad_x_only[1] = {
    {"grad_x", "cotangent of the forward input x", 0, 0}};

static const ct_param_schema ct_put_along_axis_backward_inputs[5] = {
    {"grad_out", "cotangent of the forward output", 0, 0},
    {"x", "the forward input x", 0, 0},
    {"indices", "the forward's indices", 0, 0},
    {"values", "the forward's values", 0, 0},
    {"out", "the forward's output", 0, 0}};
static const ct_param_schema ct_put_along_axis_backward_outputs[2] = {
    {"grad_x", "cotangent of x", 0, 0},
    {"grad_values",
     "cotangent of values at the indexed positions (before reducing the values' "
     "broadcast dims)",
     0, 0}};

static int ct_infer_put_along_axis_backward(const ct_infer_call* call, ct_tensor_info* outputs,
                                            int32_t capacity, int32_t* num_outputs) {
  (void)capacity;
  const ct_tensor *grad = call->inputs[0], *x = call->inputs[1], *out = call->inputs[4];
  const char* op = "put_along_axis_backward";
  const ct_infer_call forward = {&ct_op_def_put_along_axis.schema, call->inputs + 1, 3,
                                 call->attrs};
  int status = ct_op_def_put_along_axis.infer(&forward, outputs, 1, num_outputs);
  if (status == CT_OK) status = ct_check_grad(op, grad, x, x->ndim, x->shape);
  if (status == CT_OK) status = ct_check_same_dtype(op, "out", x, out);
  if (status == CT_OK) status = ct_check_shape(op, "out", out, x->ndim, x->shape);
  int32_t axis;
  if (status == CT_OK) {
    status = ct_along_axis_positions(op, x, call->inputs[2], &call->attrs[0], &axis, &outputs[1]);
  }
  if (status != CT_OK) return status;
  outputs[1].dtype = x->dtype;
  *num_outputs = 2;
  return CT_OK;
}

#define CT_SCATTER_BACKWARD_DOC                                                                 \
  "torch's scatter_reduce backward: \"none\" gives x's element the cotangent where no value "   \
  "lands and each value the cotangent of its element where it is the one kept (the last in "    \
  "row-major order; the derivative of this deterministic forward); \"add\" passes the "         \
  "cotangent to both; \"multiply\" gives each factor the product of the others (out / factor, " \
  "or the product without it where it is a single zero); \"max\" and \"min\" share the "        \
  "cotangent evenly among the candidates (x's element and the values) equal to the result"

CT_DEFINE_OP(put_along_axis_backward,
             "Gradients of put_along_axis: grad_x of x's shape and grad_values at the indexed "
             "positions (the gradient row sums them to the values' shape). " CT_SCATTER_BACKWARD_DOC
             ".",
             CT_OP_SHAPE_STATIC, CT_FLAGS_INDEX_CHECKED, ct_put_along_axis_backward_inputs,
             ct_put_along_axis_backward_outputs, ct_put_along_axis_attrs,
             ct_infer_put_along_axis_backward);

static const ct_param_schema ct_scatter_nd_backward_inputs[5] = {
    {"grad_out", "cotangent of the forward output", 0, 0},
    {"x", "the forward input x", 0, 0},
    {"indices", "the forward's index tuples", 0, 0},
    {"updates", "the forward's updates", 0, 0},
    {"out", "the forward's output", 0, 0}};
static const ct_param_schema ct_scatter_nd_backward_outputs[2] = {
    {"grad_x", "cotangent of x", 0, 0}, {"grad_updates", "cotangent of updates", 0, 0}};

static int ct_infer_scatter_nd_backward(const ct_infer_call* call, ct_tensor_info* outputs,
                                        int32_t capacity, int32_t* num_outputs) {
  (void)capacity;
  const ct_tensor *grad = call->inputs[0], *x = call->inputs[1], *out = call->inputs[4];
  const char* op = "scatter_nd_backward";
  const ct_infer_call forward = {&ct_op_def_scatter_nd.schema, call->inputs + 1, 3, call->attrs};
  int status = ct_op_def_scatter_nd.infer(&forward, outputs, 1, num_outputs);
  if (status == CT_OK) status = ct_check_grad(op, grad, x, x->ndim, x->shape);
  if (status == CT_OK) status = ct_check_same_dtype(op, "out", x, out);
  if (status == CT_OK) status = ct_check_shape(op, "out", out, x->ndim, x->shape);
  if (status != CT_OK) return status;
  ct_info_from_tensor(call->inputs[3], x->dtype, &outputs[1]);
  *num_outputs = 2;
  return CT_OK;
}

CT_DEFINE_OP(scatter_nd_backward,
             "Gradients of scatter_nd: grad_x of x's shape and grad_updates of the updates' "
             "shape. " CT_SCATTER_BACKWARD_DOC ".",
             CT_OP_SHAPE_STATIC, CT_FLAGS_INDEX_CHECKED, ct_scatter_nd_backward_inputs,
             ct_scatter_nd_backward_outputs, ct_scatter_nd_attrs, ct_infer_scatter_nd_backward);

static const ct_param_schema ct_gather_backward_inputs[3] = {
    {"grad_out", "cotangent of the forward output", 0, 0},
    {"x", "the forward input x (only its shape is read)", 0, 0},
    {"indices", "the forward's indices", 0, 0}};

static int ct_infer_gather_nd_backward(const ct_infer_call* call, ct_tensor_info* outputs,
                                       int32_t capacity, int32_t* num_outputs) {
  (void)capacity;
  const ct_tensor *grad = call->inputs[0], *x = call->inputs[1];
  ct_tensor_info w;
  int status =
      ct_nd_positions("gather_nd_backward", x, call->inputs[2], call->attrs[0].value.i, &w);
  if (status == CT_OK) status = ct_check_grad("gather_nd_backward", grad, x, w.ndim, w.shape);
  if (status != CT_OK) return status;
  ct_info_from_tensor(x, x->dtype, &outputs[0]);
  *num_outputs = 1;
  return CT_OK;
}

CT_DEFINE_OP(gather_nd_backward,
             "Gradient of gather_nd: grad_out added into zeros of x's shape at the index tuples "
             "(scatter_nd with \"add\"; repeated tuples add up in row-major order: "
             "deterministic).",
             CT_OP_SHAPE_STATIC, CT_FLAGS_INDEX_CHECKED, ct_gather_backward_inputs,
             ct_params_grad_x_only, ct_gather_nd_attrs, ct_infer_gather_nd_backward);

static int ct_infer_index_select_backward(const ct_infer_call* call, ct_tensor_info* outputs,
                                          int32_t capacity, int32_t* num_outputs) {
  (void)capacity;
  const ct_tensor *grad = call->inputs[0], *x = call->inputs[1];
  int32_t axis;
  ct_tensor_info w;
  int status =
      ct_select_positions("index_select_backward", x, call->inputs[2], &call->attrs[0], &axis, &w);
  if (status == CT_OK) status = ct_check_grad("index_select_backward", grad, x, w.ndim, w.shape);
  if (status != CT_OK) return status;
  ct_info_from_tensor(x, x->dtype, &outputs[0]);
  *num_outputs = 1;
  return CT_OK;
}

CT_DEFINE_OP(index_select_backward,
             "Gradient of index_select: grad_out added into zeros of x's shape at the indices "
             "along axis (index_add into zeros; repeated indices add up in index order: "
             "deterministic).",
             CT_OP_SHAPE_STATIC, CT_FLAGS_INDEX_CHECKED, ct_gather_backward_inputs,
             ct_params_grad_x_only, ct_index_select_attrs, ct_infer_index_select_backward);

static const ct_param_schema ct_index_add_backward_inputs[4] = {
    {"grad_out", "cotangent of the forward output", 0, 0},
    {"x", "the forward input x (only its shape is read)", 0, 0},
    {"indices", "the forward's indices", 0, 0},
    {"source", "the forward's source (only its shape is read)", 0, 0}};
static const ct_param_schema ct_index_add_backward_outputs[2] = {
    {"grad_x", "cotangent of x (grad_out)", 0, 0},
    {"grad_source", "cotangent of source: alpha * index_select(grad_out)", 0, 0}};

static int ct_infer_index_add_backward(const ct_infer_call* call, ct_tensor_info* outputs,
                                       int32_t capacity, int32_t* num_outputs) {
  (void)capacity;
  const ct_tensor *grad = call->inputs[0], *x = call->inputs[1];
  const ct_infer_call forward = {&ct_op_def_index_add.schema, call->inputs + 1, 3, call->attrs};
  int status = ct_op_def_index_add.infer(&forward, outputs, 1, num_outputs);
  if (status == CT_OK) status = ct_check_grad("index_add_backward", grad, x, x->ndim, x->shape);
  if (status != CT_OK) return status;
  ct_info_from_tensor(call->inputs[3], x->dtype, &outputs[1]);
  *num_outputs = 2;
  return CT_OK;
}

CT_DEFINE_OP(index_add_backward,
             "Gradients of index_add: grad_x = grad_out, grad_source = alpha * "
             "index_select(grad_out, indices; axis).",
             CT_OP_SHAPE_STATIC, CT_FLAGS_INDEX_CHECKED, ct_index_add_backward_inputs,
             ct_index_add_backward_outputs, ct_index_add_attrs, ct_infer_index_add_backward);
