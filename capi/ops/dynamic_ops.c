/* dynamic_ops.c - operators whose output extents depend on the data. */
#include "op_defs.h"

/* ----- nonzero ----- */

static const ct_param_schema ct_nonzero_outputs[1] = {
    {"indices", "one int64 index array per dimension of x, as NumPy's tuple", CT_PARAM_VARIADIC,
     0}};

static int ct_infer_nonzero(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                            int32_t* num_outputs) {
  const ct_tensor* x = call->inputs[0];
  if (x->ndim == 0) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                        "nonzero of a 0-d array is not defined (as NumPy 2); reshape it to 1-D");
  }
  if (capacity < x->ndim) {
    return ct_set_error(CT_ERROR_WRONG_ARITY, "nonzero: room for %d outputs, need %d", capacity,
                        x->ndim);
  }
  for (int32_t k = 0; k < x->ndim; ++k) {
    outputs[k].dtype = CT_DTYPE_I64_V;
    outputs[k].ndim = 1;
    outputs[k].shape[0] = -1;
  }
  *num_outputs = x->ndim;
  return CT_OK;
}

CT_DEFINE_OP_NO_ATTRS(nonzero,
                      "Indices of the non-zero elements of x, one int64 array per dimension, in "
                      "row-major order (numpy.nonzero). Dynamic: each index array is allocated "
                      "through the caller's allocator.",
                      CT_OP_DYNAMIC, CT_FLAGS_PURE & ~CT_OP_FLAG_GRAPH_SAFE, ct_params_x,
                      ct_nonzero_outputs, ct_infer_nonzero);

/* ----- unique_values ----- */

static int ct_infer_unique_values(const ct_infer_call* call, ct_tensor_info* outputs,
                                  int32_t capacity, int32_t* num_outputs) {
  outputs[0].dtype = call->inputs[0]->dtype;
  outputs[0].ndim = 1;
  outputs[0].shape[0] = -1;
  *num_outputs = 1;
  return CT_OK;
}

CT_DEFINE_OP_NO_ATTRS(unique_values,
                      "The distinct values of x, sorted ascending, as a 1-D array (the array "
                      "API's unique_values; nan values compare equal and come last, as NumPy 2). "
                      "Dynamic, with workspace for the sort.",
                      CT_OP_DYNAMIC, CT_FLAGS_PURE & ~CT_OP_FLAG_GRAPH_SAFE, ct_params_x,
                      ct_params_out, ct_infer_unique_values);

/* ----- boolean_mask ----- */

static const ct_param_schema ct_boolean_mask_inputs[2] = {
    {"x", "array to select from", 0, 0},
    {"mask", "bool array with the shape of x's leading dimensions", 0, 0}};

static int ct_infer_boolean_mask(const ct_infer_call* call, ct_tensor_info* outputs,
                                 int32_t capacity, int32_t* num_outputs) {
  const ct_tensor* x = call->inputs[0];
  const ct_tensor* mask = call->inputs[1];
  bool fits = mask->ndim <= x->ndim;
  for (int32_t k = 0; fits && k < mask->ndim; ++k) fits = mask->shape[k] == x->shape[k];
  if (!fits) {
    return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                        "boolean_mask: mask (%d-D) must match the leading dimensions of x (%d-D) "
                        "exactly",
                        mask->ndim, x->ndim);
  }
  if (1 + x->ndim - mask->ndim > CT_MAX_NDIM) {
    return ct_set_error(CT_ERROR_INVALID_SHAPE,
                        "boolean_mask: a %d-D mask on a %d-D array gives %d dimensions; ctensor "
                        "supports up to %d",
                        mask->ndim, x->ndim, 1 + x->ndim - mask->ndim, CT_MAX_NDIM);
  }
  ct_tensor_info* out = &outputs[0];
  out->dtype = x->dtype;
  out->ndim = 1 + x->ndim - mask->ndim;
  out->shape[0] = -1;
  for (int32_t k = mask->ndim; k < x->ndim; ++k) out->shape[1 + k - mask->ndim] = x->shape[k];
  *num_outputs = 1;
  return CT_OK;
}

CT_DEFINE_OP_NO_ATTRS(boolean_mask,
                      "x[mask] as NumPy: the elements (or sub-arrays) of x where mask is true, "
                      "in row-major order; shape (count,) + x.shape[mask.ndim:]. Dynamic.",
                      CT_OP_DYNAMIC, CT_FLAGS_PURE & ~CT_OP_FLAG_GRAPH_SAFE, ct_boolean_mask_inputs,
                      ct_params_out, ct_infer_boolean_mask);

/* ----- argwhere ----- */

static int ct_infer_argwhere(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                             int32_t* num_outputs) {
  outputs[0].dtype = CT_DTYPE_I64_V;
  outputs[0].ndim = 2;
  outputs[0].shape[0] = -1;
  outputs[0].shape[1] = call->inputs[0]->ndim;
  *num_outputs = 1;
  return CT_OK;
}

CT_DEFINE_OP_NO_ATTRS(argwhere,
                      "Indices of the non-zero elements of x as one (count, x.ndim) int64 array, "
                      "rows in row-major order (numpy.argwhere; a 0-d x gives (1, 0) or (0, 0)). "
                      "Dynamic.",
                      CT_OP_DYNAMIC, CT_FLAGS_PURE & ~CT_OP_FLAG_GRAPH_SAFE, ct_params_x,
                      ct_params_out, ct_infer_argwhere);

/* ----- unique_counts, unique_inverse, unique_all ----- */

static const ct_param_schema ct_unique_counts_outputs[2] = {
    {"values", "the distinct values, sorted ascending (nan last, once)", 0, 0},
    {"counts", "int64: how many times each value occurs in x", 0, 0}};
static const ct_param_schema ct_unique_inverse_outputs[2] = {
    {"values", "the distinct values, sorted ascending (nan last, once)", 0, 0},
    {"inverse_indices", "int64, shape of x: the position of each element of x in values", 0, 0}};
static const ct_param_schema ct_unique_all_outputs[4] = {
    {"values", "the distinct values, sorted ascending (nan last, once)", 0, 0},
    {"indices", "int64: the flat row-major index of each value's first occurrence in x", 0, 0},
    {"inverse_indices", "int64, shape of x: the position of each element of x in values", 0, 0},
    {"counts", "int64: how many times each value occurs in x", 0, 0}};

/* Fills the outputs named in `roles` ('v' values, 'c' counts/indices, 'i' inverse). */
static int ct_infer_unique_outputs(const ct_infer_call* call, const char* roles,
                                   ct_tensor_info* outputs, int32_t* num_outputs) {
  const ct_tensor* x = call->inputs[0];
  int32_t k = 0;
  for (; roles[k]; ++k) {
    if (roles[k] == 'i') {
      ct_info_from_tensor(x, CT_DTYPE_I64_V, &outputs[k]);
      continue;
    }
    outputs[k].dtype = roles[k] == 'v' ? x->dtype : CT_DTYPE_I64_V;
    outputs[k].ndim = 1;
    outputs[k].shape[0] = -1;
  }
  *num_outputs = k;
  return CT_OK;
}

static int ct_infer_unique_counts(const ct_infer_call* call, ct_tensor_info* outputs,
                                  int32_t capacity, int32_t* num_outputs) {
  return ct_infer_unique_outputs(call, "vc", outputs, num_outputs);
}
static int ct_infer_unique_inverse(const ct_infer_call* call, ct_tensor_info* outputs,
                                   int32_t capacity, int32_t* num_outputs) {
  return ct_infer_unique_outputs(call, "vi", outputs, num_outputs);
}
static int ct_infer_unique_all(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                               int32_t* num_outputs) {
  return ct_infer_unique_outputs(call, "vcic", outputs, num_outputs);
}

CT_DEFINE_OP_NO_ATTRS(unique_counts,
                      "The distinct values of x (sorted; nan once, last; -0.0 == 0.0) and their "
                      "int64 counts (array API unique_counts). Dynamic, with workspace.",
                      CT_OP_DYNAMIC, CT_FLAGS_PURE & ~CT_OP_FLAG_GRAPH_SAFE, ct_params_x,
                      ct_unique_counts_outputs, ct_infer_unique_counts);
CT_DEFINE_OP_NO_ATTRS(unique_inverse,
                      "The distinct values of x (sorted; nan once, last; -0.0 == 0.0) and, for "
                      "each element of x, its int64 position in them, shaped as x (array API "
                      "unique_inverse). Dynamic, with workspace.",
                      CT_OP_DYNAMIC, CT_FLAGS_PURE & ~CT_OP_FLAG_GRAPH_SAFE, ct_params_x,
                      ct_unique_inverse_outputs, ct_infer_unique_inverse);
CT_DEFINE_OP_NO_ATTRS(unique_all,
                      "values, indices (first occurrence, flat row-major), inverse_indices "
                      "(shape of x) and counts of the distinct values of x (array API "
                      "unique_all; sorted, nan once and last, -0.0 == 0.0). Dynamic, with "
                      "workspace.",
                      CT_OP_DYNAMIC, CT_FLAGS_PURE & ~CT_OP_FLAG_GRAPH_SAFE, ct_params_x,
                      ct_unique_all_outputs, ct_infer_unique_all);
