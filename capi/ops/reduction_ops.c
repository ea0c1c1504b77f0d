/* reduction_ops.c - sum, mean, logsumexp, prod, max, min, any, all, var, std, vector_norm, argmax,
 * argmin. */
#include <math.h>

#include "op_defs.h"

static const ct_attr_schema ct_reduce_attrs[] = {
    CT_ATTR_SPEC_NULLABLE("axis", "axis or axes to reduce; None reduces all", CT_ATTR_INT_LIST),
    CT_ATTR_SPEC_BOOL("keepdims", "keep reduced axes as extent 1", 0)};

enum { CT_REDUCE_AXIS, CT_REDUCE_KEEPDIMS };

/* NumPy's sum dtype: bool and signed integers accumulate in int64, unsigned in uint64. */
static ct_dtype ct_sum_dtype(ct_dtype x) {
  if (ct_dtype_is_bool(x) || ct_dtype_is_signed_integer(x)) return CT_DTYPE_I64_V;
  if (ct_dtype_is_integer(x)) return CT_DTYPE_U64_V;
  return x;
}

static int ct_infer_reduction(const ct_infer_call* call, ct_tensor_info* outputs, ct_dtype dtype,
                              bool needs_identity) {
  const ct_tensor* x = call->inputs[0];
  bool mask[CT_MAX_NDIM];
  const int status =
      ct_axes_to_mask(call->schema->name, &call->attrs[CT_REDUCE_AXIS], x->ndim, mask);
  if (status != CT_OK) return status;
  if (needs_identity) {
    for (int32_t k = 0; k < x->ndim; ++k) {
      if (mask[k] && x->shape[k] == 0) {
        return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                            "%s: zero-size reduction along axis %d, and %s has no identity",
                            call->schema->name, k, call->schema->name);
      }
    }
  }
  ct_reduced_info(x, mask, call->attrs[CT_REDUCE_KEEPDIMS].value.b != 0, dtype, &outputs[0]);
  return CT_OK;
}

static int ct_infer_sum(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                        int32_t* num_outputs) {
  *num_outputs = 1;
  return ct_infer_reduction(call, outputs, ct_sum_dtype(call->inputs[0]->dtype), false);
}

static int ct_infer_mean(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                         int32_t* num_outputs) {
  const ct_dtype x = call->inputs[0]->dtype;
  *num_outputs = 1;
  return ct_infer_reduction(
      call, outputs, ct_dtype_is_float(x) || ct_dtype_is_complex(x) ? x : CT_DTYPE_F64_V, false);
}

static int ct_infer_max(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                        int32_t* num_outputs) {
  *num_outputs = 1;
  return ct_infer_reduction(call, outputs, call->inputs[0]->dtype, true);
}

CT_DEFINE_OP(sum,
             "Sum over axes. bool and signed integers sum in int64, unsigned in uint64 (NumPy); "
             "floats accumulate in float64 (pairwise along runs), then round once; complex64 and "
             "complex128 in complex128, the same way. Empty sums are 0.",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_params_x, ct_params_out, ct_reduce_attrs,
             ct_infer_sum);
CT_DEFINE_OP(mean,
             "Arithmetic mean over axes; integer and bool inputs give float64, complex stays "
             "complex. An empty mean is nan.",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_params_x, ct_params_out, ct_reduce_attrs,
             ct_infer_mean);
CT_DEFINE_OP(max,
             "Maximum over axes; nan propagates. Reducing a zero-length axis is an error (no "
             "identity).",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_params_x, ct_params_out, ct_reduce_attrs,
             ct_infer_max);

CT_DEFINE_OP(min,
             "Minimum over axes; nan propagates. Reducing a zero-length axis is an error (no "
             "identity).",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_params_x, ct_params_out, ct_reduce_attrs,
             ct_infer_max);
CT_DEFINE_OP(logsumexp,
             "log(sum(exp(x))) over axes, computed as max + log(sum(exp(x - max))) in float64 "
             "(torch.logsumexp, scipy.special.logsumexp): all -inf gives -inf, any +inf gives "
             "+inf, nan propagates; an empty reduction is -inf. Floats only.",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_params_x, ct_params_out, ct_reduce_attrs,
             ct_infer_mean);
CT_DEFINE_OP(prod,
             "Product over axes. bool and signed integers multiply in int64, unsigned in uint64, "
             "wrapping (NumPy); floats accumulate in float64, complex in complex128 (plain "
             "complex products, as NumPy's multiply), then round once. Empty products are 1.",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_params_x, ct_params_out, ct_reduce_attrs,
             ct_infer_sum);

static int ct_infer_logical(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                            int32_t* num_outputs) {
  *num_outputs = 1;
  return ct_infer_reduction(call, outputs, CT_DTYPE_BOOL_V, false);
}

CT_DEFINE_OP(any,
             "Whether any element over axes is non-zero (nan counts as non-zero); bool result. "
             "An empty reduction is false.",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_params_x, ct_params_out, ct_reduce_attrs,
             ct_infer_logical);
CT_DEFINE_OP(all,
             "Whether every element over axes is non-zero (nan counts as non-zero); bool result. "
             "An empty reduction is true.",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_params_x, ct_params_out, ct_reduce_attrs,
             ct_infer_logical);

static const ct_attr_schema ct_moments_attrs[] = {
    CT_ATTR_SPEC_NULLABLE("axis", "axis or axes to reduce; None reduces all", CT_ATTR_INT_LIST),
    CT_ATTR_SPEC_BOOL("keepdims", "keep reduced axes as extent 1", 0),
    CT_ATTR_SPEC_FLOAT("correction",
                       "degrees of freedom subtracted from the count (0: population, 1: sample)",
                       0.0)};

static int ct_infer_moments(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                            int32_t* num_outputs) {
  const double correction = call->attrs[2].value.f;
  if (!(correction >= 0) || correction == (double)INFINITY) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                        "%s: correction must be a finite non-negative number, got %g",
                        call->schema->name, correction);
  }
  return ct_infer_mean(call, outputs, capacity, num_outputs);
}

CT_DEFINE_OP(var,
             "Variance over axes: sum((x - mean)^2) / max(N - correction, 0), as the array API "
             "(NumPy's ddof); integer and bool inputs give float64. Empty reductions are nan.",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_params_x, ct_params_out, ct_moments_attrs,
             ct_infer_moments);
CT_DEFINE_OP(std,
             "Standard deviation over axes: the square root of var (same correction and dtypes).",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_params_x, ct_params_out, ct_moments_attrs,
             ct_infer_moments);

static const ct_attr_schema ct_vector_norm_attrs[] = {
    CT_ATTR_SPEC_NULLABLE("axis", "axis or axes to reduce; None reduces all", CT_ATTR_INT_LIST),
    CT_ATTR_SPEC_BOOL("keepdims", "keep reduced axes as extent 1", 0),
    CT_ATTR_SPEC_FLOAT("ord",
                       "the order p: any number but nan; inf: max |x|, -inf: min |x|, 0: the "
                       "count of non-zero elements",
                       2.0)};

static int ct_infer_vector_norm(const ct_infer_call* call, ct_tensor_info* outputs,
                                int32_t capacity, int32_t* num_outputs) {
  const ct_tensor* x = call->inputs[0];
  const double ord = call->attrs[2].value.f;
  if (!ct_dtype_is_float(x->dtype) && !ct_dtype_is_complex(x->dtype)) {
    return ct_set_error(CT_ERROR_UNSUPPORTED_DTYPE,
                        "vector_norm: x must be a float or complex array, got %s",
                        ct_dtype_describe(x->dtype));
  }
  if (ord != ord) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "vector_norm: ord must not be nan");
  }
  *num_outputs = 1;
  /* no identity for max |x| and for negative orders (torch refuses them too) */
  return ct_infer_reduction(call, outputs, ct_dtype_real_part(x->dtype),
                            ord < 0 || ord == (double)INFINITY);
}

CT_DEFINE_OP(
    vector_norm,
    "The vector p-norm over axes (array API linalg.vector_norm, torch.linalg.vector_norm): "
    "(sum |x|^p)^(1/p); ord inf: max |x|, -inf: min |x|, 0: the number of non-zero "
    "elements (nan counts). Computed in float64 and rounded once; for p > 0 the sum is "
    "scaled by the running maximum (LAPACK's nrm2), so no square overflows or "
    "underflows where the norm does not; nan propagates, an inf element gives inf. "
    "Complex input: the norm of the moduli, a real result (float32 for complex64). "
    "An empty reduction is 0, refused for ord < 0 and inf (no identity).",
    CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_params_x, ct_params_out, ct_vector_norm_attrs,
    ct_infer_vector_norm);

static const ct_attr_schema ct_argmax_attrs[] = {
    CT_ATTR_SPEC_NULLABLE("axis", "axis to search; None searches the flattened array", CT_ATTR_INT),
    CT_ATTR_SPEC_BOOL("keepdims", "keep the searched axis as extent 1", 0)};

static int ct_infer_argmax(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                           int32_t* num_outputs) {
  const ct_tensor* x = call->inputs[0];
  bool mask[CT_MAX_NDIM];
  for (int32_t k = 0; k < x->ndim; ++k) mask[k] = true;
  const ct_attr_value* axis = &call->attrs[0];
  if (axis->type != CT_ATTR_NONE) {
    int32_t k;
    const int status = ct_normalize_axis(call->schema->name, axis->value.i, x->ndim, &k);
    if (status != CT_OK) return status;
    for (int32_t j = 0; j < x->ndim; ++j) mask[j] = j == k;
  }
  for (int32_t k = 0; k < x->ndim; ++k) {
    if (mask[k] && x->shape[k] == 0) {
      return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                          "%s: attempt to get %s of an empty sequence (axis %d)",
                          call->schema->name, call->schema->name, k);
    }
  }
  ct_reduced_info(x, mask, call->attrs[1].value.b != 0, CT_DTYPE_I64_V, &outputs[0]);
  *num_outputs = 1;
  return CT_OK;
}

CT_DEFINE_OP(argmax,
             "Index (int64) of the first maximum along an axis, or in the flattened array; the "
             "first nan counts as the maximum.",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_params_x, ct_params_out, ct_argmax_attrs,
             ct_infer_argmax);
CT_DEFINE_OP(argmin,
             "Index (int64) of the first minimum along an axis, or in the flattened array; the "
             "first nan counts as the minimum.",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_params_x, ct_params_out, ct_argmax_attrs,
             ct_infer_argmax);

/* ----- sum_to_shape: the reduction that undoes NumPy broadcasting (gradients of broadcasting
 * ops) ----- */

static const ct_param_schema ct_sum_to_shape_inputs[2] = {
    {"x", "the array to reduce", 0, 0},
    {"like", "an array of the target shape (only its shape is read), which broadcasts to x's", 0,
     0}};

static int ct_infer_sum_to_shape(const ct_infer_call* call, ct_tensor_info* outputs,
                                 int32_t capacity, int32_t* num_outputs) {
  const ct_tensor *x = call->inputs[0], *like = call->inputs[1];
  if (!ct_dtype_is_float(x->dtype) && !ct_dtype_is_complex(x->dtype)) {
    return ct_set_error(CT_ERROR_UNSUPPORTED_DTYPE,
                        "sum_to_shape: x must be a float or complex array, got %s",
                        ct_dtype_describe(x->dtype));
  }
  const int32_t lead = x->ndim - like->ndim;
  bool fits = lead >= 0;
  for (int32_t k = 0; fits && k < like->ndim; ++k) {
    fits = like->shape[k] == 1 || like->shape[k] == x->shape[lead + k];
  }
  if (!fits) {
    return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                        "sum_to_shape: like's shape does not broadcast to x's (%d dims onto %d)",
                        like->ndim, x->ndim);
  }
  ct_info_from_tensor(like, x->dtype, &outputs[0]);
  *num_outputs = 1;
  return CT_OK;
}

CT_DEFINE_OP_NO_ATTRS(sum_to_shape,
                      "Sums x down to like's shape: over x's leading dims that like lacks and over "
                      "the dims where like has extent 1 and x more (torch's sum_to_size), so the "
                      "cotangent of a broadcast input gets its own shape. Accumulates as sum.",
                      CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_sum_to_shape_inputs, ct_params_out,
                      ct_infer_sum_to_shape);
