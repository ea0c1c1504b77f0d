/* infer_helpers.c - broadcasting, axes and the infer functions many ops share. */
#include <math.h>
#include <string.h>

#include "op_defs.h"

const ct_param_schema ct_params_x[1] = {{"x", "input array", 0, 0}};
const ct_param_schema ct_params_x1_x2[2] = {{"x1", "first input array", 0, 0},
                                            {"x2", "second input array", 0, 0}};
const ct_param_schema ct_params_out[1] = {{"out", "result", 0, 0}};

int ct_infer_broadcast_shape(const char* op_name, const ct_tensor* const* tensors, int32_t count,
                             ct_tensor_info* info) {
  int32_t ndim = 0;
  for (int32_t i = 0; i < count; ++i) {
    if (tensors[i] && tensors[i]->ndim > ndim) ndim = tensors[i]->ndim;
  }
  info->ndim = ndim;
  for (int32_t k = 0; k < ndim; ++k) info->shape[k] = 1;
  for (int32_t i = 0; i < count; ++i) {
    const ct_tensor* t = tensors[i];
    if (!t) continue;
    const int32_t shift = ndim - t->ndim;
    for (int32_t k = 0; k < t->ndim; ++k) {
      const int64_t have = info->shape[shift + k], extent = t->shape[k];
      if (extent == have || extent == 1) continue;
      if (have == 1) {
        info->shape[shift + k] = extent;
        continue;
      }
      return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                          "%s: operands could not be broadcast together: extent %lld of input %d "
                          "(dimension %d) against %lld",
                          op_name, (long long)extent, i, k, (long long)have);
    }
  }
  return CT_OK;
}

void ct_info_from_tensor(const ct_tensor* t, ct_dtype dtype, ct_tensor_info* info) {
  info->dtype = dtype;
  info->ndim = t->ndim;
  for (int32_t k = 0; k < t->ndim; ++k) info->shape[k] = t->shape[k];
}

int ct_normalize_axis(const char* op_name, int64_t axis, int32_t ndim, int32_t* out) {
  if (axis < -(int64_t)ndim || axis >= (int64_t)ndim) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                        "%s: axis %lld is out of bounds for an array of dimension %d", op_name,
                        (long long)axis, ndim);
  }
  *out = (int32_t)(axis < 0 ? axis + ndim : axis);
  return CT_OK;
}

int ct_axes_to_mask(const char* op_name, const ct_attr_value* axis, int32_t ndim, bool* mask) {
  if (axis->type == CT_ATTR_NONE) {
    for (int32_t k = 0; k < ndim; ++k) mask[k] = true;
    return CT_OK;
  }
  for (int32_t k = 0; k < ndim; ++k) mask[k] = false;
  const int64_t count = axis->type == CT_ATTR_INT_LIST ? axis->count : 1;
  for (int64_t j = 0; j < count; ++j) {
    const int64_t value = axis->type == CT_ATTR_INT_LIST ? axis->value.ints[j] : axis->value.i;
    int32_t k = 0;
    const int status = ct_normalize_axis(op_name, value, ndim, &k);
    if (status != CT_OK) return status;
    if (mask[k]) {
      return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "%s: axis %lld is repeated", op_name,
                          (long long)value);
    }
    mask[k] = true;
  }
  return CT_OK;
}

void ct_reduced_info(const ct_tensor* x, const bool* mask, bool keepdims, ct_dtype dtype,
                     ct_tensor_info* info) {
  info->dtype = dtype;
  info->ndim = 0;
  for (int32_t k = 0; k < x->ndim; ++k) {
    if (!mask[k])
      info->shape[info->ndim++] = x->shape[k];
    else if (keepdims)
      info->shape[info->ndim++] = 1;
  }
}

int ct_infer_same_as_input(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                           int32_t* num_outputs) {
  ct_info_from_tensor(call->inputs[0], call->inputs[0]->dtype, &outputs[0]);
  *num_outputs = 1;
  return CT_OK;
}

int ct_infer_broadcast_same_dtype(const ct_infer_call* call, ct_tensor_info* outputs,
                                  int32_t capacity, int32_t* num_outputs) {
  outputs[0].dtype = call->inputs[0]->dtype;
  *num_outputs = 1;
  return ct_infer_broadcast_shape(call->schema->name, call->inputs, call->num_inputs, &outputs[0]);
}

int ct_infer_broadcast_bool(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                            int32_t* num_outputs) {
  outputs[0].dtype = CT_DTYPE_BOOL_V;
  *num_outputs = 1;
  return ct_infer_broadcast_shape(call->schema->name, call->inputs, call->num_inputs, &outputs[0]);
}

int ct_window_extents(const char* op, int dim, int64_t in, int64_t kernel, int64_t padding,
                      int64_t dilation, int64_t* padded, int64_t* span) {
  int64_t twice;
  if (__builtin_mul_overflow(padding, 2, &twice) || __builtin_add_overflow(in, twice, padded)) {
    return ct_set_error(CT_ERROR_SIZE_OVERFLOW,
                        "%s: padding %lld on both sides of extent %lld in spatial dim %d "
                        "overflows int64",
                        op, (long long)padding, (long long)in, dim);
  }
  const int64_t taps = kernel > 0 ? kernel - 1 : 0;
  if (__builtin_mul_overflow(dilation, taps, span) || __builtin_add_overflow(*span, 1, span)) {
    return ct_set_error(CT_ERROR_SIZE_OVERFLOW,
                        "%s: dilation %lld times kernel extent %lld in spatial dim %d overflows "
                        "int64",
                        op, (long long)dilation, (long long)kernel, dim);
  }
  return CT_OK;
}

int ct_attr_pair(const char* op, const char* name, const ct_attr_value* value,
                 const int64_t* fallback, int64_t minimum, int64_t out[2]) {
  if (fallback && (value->type == CT_ATTR_NONE || value->count == 0)) {
    out[0] = fallback[0];
    out[1] = fallback[1];
    return CT_OK;
  }
  if (value->type != CT_ATTR_INT_LIST || (value->count != 1 && value->count != 2)) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "%s: %s takes 1 or 2 values, got %lld", op, name,
                        (long long)value->count);
  }
  out[0] = value->value.ints[0];
  out[1] = value->value.ints[value->count - 1];
  if (out[0] < minimum || out[1] < minimum) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "%s: %s must be >= %lld, got (%lld, %lld)", op,
                        name, (long long)minimum, (long long)out[0], (long long)out[1]);
  }
  return CT_OK;
}

int ct_check_float_attr_precision(const char* op, const char* name, double value, ct_dtype dtype) {
  if (!ct_dtype_is_float(dtype) || dtype.bits == 64 || !isfinite(value) || value == 0.0) {
    return CT_OK;
  }
  const float narrow = (float)value;
  if (isinf(narrow) || narrow == 0.0f) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                        "%s: attribute '%s' = %g is out of the range of float32, the precision "
                        "%s inputs are computed in",
                        op, name, value, ct_dtype_describe(dtype));
  }
  return CT_OK;
}
