/* scan_ops.c - cumulative (prefix) ops: cumulative_sum, cumulative_prod. */
#include "op_defs.h"

static const ct_attr_schema ct_scan_attrs[] = {
    CT_ATTR_SPEC_NULLABLE("axis",
                          "axis to accumulate along; None only for 0-d or 1-D x (a 0-d x is "
                          "treated as 1-D of length 1)",
                          CT_ATTR_INT),
    CT_ATTR_SPEC_BOOL("include_initial",
                      "prepend the identity (0 for sum, 1 for prod): the axis grows by one",
                      false)};

/* Output dtype as NumPy's sum/prod: bool and signed ints -> int64, unsigned -> uint64, floats
 * and complex keep theirs. */
static ct_dtype ct_scan_dtype(ct_dtype dtype) {
  if (ct_dtype_is_float(dtype) || ct_dtype_is_complex(dtype)) return dtype;
  if (ct_dtype_is_integer(dtype) && !ct_dtype_is_signed_integer(dtype)) return CT_DTYPE_U64_V;
  return CT_DTYPE_I64_V;
}

static int ct_infer_scan(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                         int32_t* num_outputs) {
  const ct_tensor* x = call->inputs[0];
  const char* op = call->schema->name;
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
  ct_info_from_tensor(x, ct_scan_dtype(x->dtype), &outputs[0]);
  if (x->ndim == 0) {
    outputs[0].ndim = 1;
    outputs[0].shape[0] = 1;
  }
  if (call->attrs[1].value.b &&
      !ct_checked_add_i64(outputs[0].shape[axis], 1, &outputs[0].shape[axis])) {
    return ct_set_error(CT_ERROR_SIZE_OVERFLOW,
                        "%s: extent %lld plus the initial entry overflows int64",
                        call->schema->name, (long long)outputs[0].shape[axis]);
  }
  *num_outputs = 1;
  return CT_OK;
}

CT_DEFINE_OP(cumulative_sum,
             "Cumulative sum of x along an axis (array API / numpy.cumulative_sum). bool and "
             "signed ints give int64 (wrapping), unsigned uint64, floats keep their dtype "
             "(float16/bfloat16 accumulate in float32, float32 in float64; sequential order). "
             "A 0-d x is treated as 1-D.",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_params_x, ct_params_out, ct_scan_attrs,
             ct_infer_scan);
CT_DEFINE_OP(cumulative_prod,
             "Cumulative product of x along an axis (array API / numpy.cumulative_prod). dtypes "
             "and accumulation as cumulative_sum.",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_params_x, ct_params_out, ct_scan_attrs,
             ct_infer_scan);
