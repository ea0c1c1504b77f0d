/* sort_ops.c - sorting and selection: sort, argsort, topk, searchsorted. */
#include <string.h>

#include "op_defs.h"

/* x must be at least 1-D; axis normalised into *axis. */
static int ct_sort_axis(const char* op, const ct_tensor* x, int64_t axis_attr, int32_t* axis) {
  if (x->ndim == 0) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                        "%s: x is 0-d; it needs at least one dimension to sort along", op);
  }
  return ct_normalize_axis(op, axis_attr, x->ndim, axis);
}

/* ----- sort, argsort ----- */

static const ct_attr_schema ct_sort_attrs[] = {
    CT_ATTR_SPEC_INT("axis", "axis to sort along", -1),
    CT_ATTR_SPEC_BOOL("descending", "largest first (nan first); equal values keep their order",
                      false),
    CT_ATTR_SPEC_BOOL("stable", "accepted for the array API; the sort is always stable", true)};

static int ct_infer_sort(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                         int32_t* num_outputs) {
  int32_t axis;
  const int status = ct_sort_axis("sort", call->inputs[0], call->attrs[0].value.i, &axis);
  if (status != CT_OK) return status;
  ct_info_from_tensor(call->inputs[0], call->inputs[0]->dtype, &outputs[0]);
  *num_outputs = 1;
  return CT_OK;
}

static int ct_infer_argsort(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                            int32_t* num_outputs) {
  int32_t axis;
  const int status = ct_sort_axis("argsort", call->inputs[0], call->attrs[0].value.i, &axis);
  if (status != CT_OK) return status;
  ct_info_from_tensor(call->inputs[0], CT_DTYPE_I64_V, &outputs[0]);
  *num_outputs = 1;
  return CT_OK;
}

CT_DEFINE_OP(sort,
             "x sorted along an axis (array API sort). Always stable. Ascending as numpy.sort: "
             "nan last; descending: the reverse order with nan first, equal values keeping "
             "their order (torch.sort(stable=True)). -0.0 and 0.0 are equal. Workspace for keys.",
             CT_OP_WORKSPACE, CT_FLAGS_PURE, ct_params_x, ct_params_out, ct_sort_attrs,
             ct_infer_sort);
CT_DEFINE_OP(argsort,
             "int64 indices that sort x along an axis (array API argsort), in the order of sort: "
             "always stable, nan last ascending and first descending.",
             CT_OP_WORKSPACE, CT_FLAGS_PURE, ct_params_x, ct_params_out, ct_sort_attrs,
             ct_infer_argsort);

/* ----- argpartition ----- */

/* axis comes first, as sort's and argsort's, so that the argsort kernels read it in place. */
static const ct_attr_schema ct_argpartition_attrs[] = {
    CT_ATTR_SPEC_INT("axis", "axis to partition along", -1),
    CT_ATTR_SPEC_REQUIRED("kth",
                          "element index or indices (negative from the end) that end up in "
                          "sorted position, each in [-n, n) for an axis of length n",
                          CT_ATTR_INT_LIST)};

static int ct_infer_argpartition(const ct_infer_call* call, ct_tensor_info* outputs,
                                 int32_t capacity, int32_t* num_outputs) {
  const ct_tensor* x = call->inputs[0];
  int32_t axis;
  const int status = ct_sort_axis("argpartition", x, call->attrs[0].value.i, &axis);
  if (status != CT_OK) return status;
  const ct_attr_value* kth = &call->attrs[1];
  if (kth->type != CT_ATTR_INT && kth->type != CT_ATTR_INT_LIST) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                        "argpartition: kth must be an int or a list of ints");
  }
  const int64_t n = x->shape[axis];
  const int64_t count = kth->type == CT_ATTR_INT ? 1 : kth->count;
  for (int64_t j = 0; j < count; ++j) {
    const int64_t k = kth->type == CT_ATTR_INT ? kth->value.i : kth->value.ints[j];
    if (k < -n || k >= n) {
      return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                          "argpartition: kth(=%lld) out of bounds for an axis of length %lld",
                          (long long)k, (long long)n);
    }
  }
  ct_info_from_tensor(x, CT_DTYPE_I64_V, &outputs[0]);
  *num_outputs = 1;
  return CT_OK;
}

CT_DEFINE_OP(argpartition,
             "int64 indices that partition x along an axis (numpy.argpartition): for every kth "
             "k, the element at position k is the one a sort would put there, those before it "
             "are <= it and those after it >= it, nan sorting last. Any such partition is valid "
             "and the order within the parts is unspecified; every device returns the stable "
             "ascending argsort, a partition for every kth at once (O(n log n), not "
             "introselect's O(n)). Not differentiable (int64 result).",
             CT_OP_WORKSPACE, CT_FLAGS_PURE, ct_params_x, ct_params_out, ct_argpartition_attrs,
             ct_infer_argpartition);

/* ----- topk ----- */

static const ct_attr_schema ct_topk_attrs[] = {
    CT_ATTR_SPEC_REQUIRED("k", "how many elements to select, 0 <= k <= x.shape[axis]", CT_ATTR_INT),
    CT_ATTR_SPEC_INT("axis", "axis to select along", -1),
    CT_ATTR_SPEC_BOOL("largest", "the k largest (nan counts as largest); false: the k smallest",
                      true),
    CT_ATTR_SPEC_BOOL("sorted", "accepted for torch; the result is always sorted", true)};

static const ct_param_schema ct_topk_outputs[2] = {
    {"values", "the selected values, in order", 0, 0},
    {"indices", "their int64 indices along axis", 0, 0}};

static int ct_infer_topk(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                         int32_t* num_outputs) {
  const ct_tensor* x = call->inputs[0];
  int32_t axis;
  const int status = ct_sort_axis("topk", x, call->attrs[1].value.i, &axis);
  if (status != CT_OK) return status;
  const int64_t k = call->attrs[0].value.i;
  if (k < 0 || k > x->shape[axis]) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                        "topk: k=%lld is out of range for an axis of length %lld", (long long)k,
                        (long long)x->shape[axis]);
  }
  ct_info_from_tensor(x, x->dtype, &outputs[0]);
  outputs[0].shape[axis] = k;
  ct_info_from_tensor(x, CT_DTYPE_I64_V, &outputs[1]);
  outputs[1].shape[axis] = k;
  *num_outputs = 2;
  return CT_OK;
}

CT_DEFINE_OP(topk,
             "The k largest (or smallest) elements of x along an axis and their int64 indices "
             "(torch.topk), sorted; ties go to the lower index; nan counts as the largest value.",
             CT_OP_WORKSPACE, CT_FLAGS_PURE, ct_params_x, ct_topk_outputs, ct_topk_attrs,
             ct_infer_topk);

/* ----- searchsorted ----- */

static const ct_attr_schema ct_searchsorted_attrs[] = {CT_ATTR_SPEC_STRING(
    "side", "\"left\": first index i with x2 <= x1[i]; \"right\": first with x2 < x1[i]", "left")};

static const ct_param_schema ct_searchsorted_inputs[2] = {
    {"x1", "1-D array sorted ascending (nan last)", 0, 0}, {"x2", "values to look up", 0, 0}};

/* The side attribute: 0 left, 1 right, -1 invalid. */
static int ct_searchsorted_side(const char* side) {
  if (side && strcmp(side, "left") == 0) return 0;
  if (side && strcmp(side, "right") == 0) return 1;
  return -1;
}

static int ct_infer_searchsorted(const ct_infer_call* call, ct_tensor_info* outputs,
                                 int32_t capacity, int32_t* num_outputs) {
  const ct_tensor* x1 = call->inputs[0];
  if (x1->ndim != 1) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "searchsorted: x1 must be 1-D, got %d-D",
                        x1->ndim);
  }
  if (ct_searchsorted_side(call->attrs[0].value.s) < 0) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                        "searchsorted: side must be \"left\" or \"right\", got \"%s\"",
                        call->attrs[0].value.s ? call->attrs[0].value.s : "");
  }
  ct_info_from_tensor(call->inputs[1], CT_DTYPE_I64_V, &outputs[0]);
  *num_outputs = 1;
  return CT_OK;
}

CT_DEFINE_OP(searchsorted,
             "int64 insertion indices of x2 into the sorted 1-D x1 (array API searchsorted; "
             "numpy order: nan last, -0.0 equals 0.0). x1 and x2 share a dtype.",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_searchsorted_inputs, ct_params_out,
             ct_searchsorted_attrs, ct_infer_searchsorted);
