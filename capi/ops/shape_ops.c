/* shape_ops.c - permute_dims. */
#include "op_defs.h"

static const ct_attr_schema ct_permute_attrs[] = {CT_ATTR_SPEC_REQUIRED(
    "axes", "a permutation of (0, ..., ndim-1); output dim i is input dim axes[i]",
    CT_ATTR_INT_LIST)};

static int ct_infer_permute_dims(const ct_infer_call* call, ct_tensor_info* outputs,
                                 int32_t capacity, int32_t* num_outputs) {
  const ct_tensor* x = call->inputs[0];
  const ct_attr_value* axes = &call->attrs[0];
  if (axes->count != x->ndim) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                        "permute_dims: axes has %lld entries but x has %d dimensions",
                        (long long)axes->count, x->ndim);
  }
  bool seen[CT_MAX_NDIM] = {false};
  outputs[0].dtype = x->dtype;
  outputs[0].ndim = x->ndim;
  for (int32_t i = 0; i < x->ndim; ++i) {
    int32_t k;
    const int status = ct_normalize_axis("permute_dims", axes->value.ints[i], x->ndim, &k);
    if (status != CT_OK) return status;
    if (seen[k]) {
      return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "permute_dims: axis %d is repeated in axes",
                          k);
    }
    seen[k] = true;
    outputs[0].shape[i] = x->shape[k];
  }
  *num_outputs = 1;
  return CT_OK;
}

CT_DEFINE_OP(permute_dims,
             "Permutes the axes of x into a new compact array (the array API's permute_dims; "
             "a copy, not a view).",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_params_x, ct_params_out, ct_permute_attrs,
             ct_infer_permute_dims);
