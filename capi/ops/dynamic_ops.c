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
