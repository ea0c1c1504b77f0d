/* shape_ops.c - permute_dims and the shape/indexing ops: concat, stack, flip, roll, tile, repeat,
 * take, take_along_axis, slice, pad, broadcast_to, tril, triu, embedding, one_hot,
 * matrix_transpose. */
#include "op_defs.h"
#include "shape_params.h"

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

/* ----- shape and indexing ops (issue 3): every output is a new array ----- */

#define CT_ATTR_SPEC_NULLABLE_INT(NAME, DOC, VALUE) \
  {                                                 \
    NAME, DOC, CT_ATTR_INT, CT_ATTR_NULLABLE, {     \
      CT_ATTR_INT, 0, 0, {                          \
        .i = (VALUE)                                \
      }                                             \
    }                                               \
  }

static int ct_shape_too_big(const char* op, const ct_tensor_info* info) {
  for (int32_t k = 0; k < info->ndim; ++k) {
    if (info->shape[k] < 0) {
      return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "%s: negative output extent %lld", op,
                          (long long)info->shape[k]);
    }
  }
  int64_t total;
  if (!ct_checked_extent_product(info->shape, info->ndim, &total)) {
    return ct_set_error(CT_ERROR_SIZE_OVERFLOW,
                        "%s: the output would have more elements than int64 can count", op);
  }
  return CT_OK;
}

static int64_t ct_numel_of(const ct_tensor* t) {
  int64_t n = 1;
  for (int32_t k = 0; k < t->ndim; ++k) n *= t->shape[k];
  return n;
}

/* ----- concat / stack ----- */

static const ct_param_schema ct_params_arrays[1] = {
    {"arrays", "the arrays to join, all of one dtype", CT_PARAM_VARIADIC, 0}};

static const ct_attr_schema ct_concat_attrs[] = {
    CT_ATTR_SPEC_NULLABLE_INT("axis", "axis to join along; None joins the flattened arrays", 0)};

static int ct_infer_concat(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                           int32_t* num_outputs) {
  (void)capacity;
  const int32_t n = call->num_inputs;
  if (n < 1) return ct_set_error(CT_ERROR_WRONG_ARITY, "concat: needs at least one array");
  const ct_tensor* first = call->inputs[0];
  ct_tensor_info* out = &outputs[0];
  out->dtype = first->dtype;
  if (call->attrs[0].type == CT_ATTR_NONE) {
    int64_t total = 0;
    for (int32_t i = 0; i < n; ++i) {
      if (!ct_checked_add_i64(total, ct_numel_of(call->inputs[i]), &total)) {
        return ct_set_error(CT_ERROR_SIZE_OVERFLOW, "concat: the output extent overflows int64");
      }
    }
    out->ndim = 1;
    out->shape[0] = total;
    *num_outputs = 1;
    return CT_OK;
  }
  if (first->ndim == 0) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                        "concat: 0-d arrays cannot be concatenated along an axis");
  }
  int32_t axis;
  int status = ct_normalize_axis("concat", call->attrs[0].value.i, first->ndim, &axis);
  if (status != CT_OK) return status;
  ct_info_from_tensor(first, first->dtype, out);
  for (int32_t i = 1; i < n; ++i) {
    const ct_tensor* t = call->inputs[i];
    if (t->ndim != first->ndim) {
      return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                          "concat: array %d has %d dimensions, array 0 has %d", i, t->ndim,
                          first->ndim);
    }
    for (int32_t k = 0; k < t->ndim; ++k) {
      if (k == axis) {
        if (!ct_checked_add_i64(out->shape[k], t->shape[k], &out->shape[k])) {
          return ct_set_error(CT_ERROR_SIZE_OVERFLOW, "concat: the output extent overflows int64");
        }
      } else if (t->shape[k] != first->shape[k]) {
        return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                            "concat: array %d has extent %lld in dimension %d, array 0 has %lld", i,
                            (long long)t->shape[k], k, (long long)first->shape[k]);
      }
    }
  }
  *num_outputs = 1;
  return ct_shape_too_big("concat", out);
}

CT_DEFINE_OP(concat,
             "Joins arrays along an existing axis (the array API's concat; axis None joins the "
             "flattened arrays). All arrays share one dtype: the binding promotes them.",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_params_arrays, ct_params_out, ct_concat_attrs,
             ct_infer_concat);

static const ct_attr_schema ct_stack_attrs[] = {
    CT_ATTR_SPEC_INT("axis", "position of the new axis in the result", 0)};

static int ct_infer_stack(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                          int32_t* num_outputs) {
  (void)capacity;
  const int32_t n = call->num_inputs;
  if (n < 1) return ct_set_error(CT_ERROR_WRONG_ARITY, "stack: needs at least one array");
  const ct_tensor* first = call->inputs[0];
  if (first->ndim >= CT_MAX_NDIM) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "stack: the result would exceed %d dimensions",
                        CT_MAX_NDIM);
  }
  int32_t axis;
  int status = ct_normalize_axis("stack", call->attrs[0].value.i, first->ndim + 1, &axis);
  if (status != CT_OK) return status;
  for (int32_t i = 1; i < n; ++i) {
    const ct_tensor* t = call->inputs[i];
    bool same = t->ndim == first->ndim;
    for (int32_t k = 0; same && k < t->ndim; ++k) same = t->shape[k] == first->shape[k];
    if (!same) {
      return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                          "stack: array %d's shape differs from array 0's (all must match)", i);
    }
  }
  ct_tensor_info* out = &outputs[0];
  out->dtype = first->dtype;
  out->ndim = first->ndim + 1;
  for (int32_t k = 0, j = 0; k < out->ndim; ++k) {
    out->shape[k] = k == axis ? n : first->shape[j++];
  }
  *num_outputs = 1;
  return ct_shape_too_big("stack", out);
}

CT_DEFINE_OP(stack,
             "Joins arrays of one shape along a new axis (the array API's stack). All arrays "
             "share one dtype: the binding promotes them.",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_params_arrays, ct_params_out, ct_stack_attrs,
             ct_infer_stack);

/* ----- flip, roll, matrix_transpose: same shape (or swapped) ----- */

static const ct_attr_schema ct_flip_attrs[] = {
    CT_ATTR_SPEC_NULLABLE("axis", "axes to reverse; None reverses every axis", CT_ATTR_INT_LIST)};

static int ct_infer_flip(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                         int32_t* num_outputs) {
  (void)capacity;
  const ct_tensor* x = call->inputs[0];
  bool mask[CT_MAX_NDIM];
  const int status = ct_axes_to_mask("flip", &call->attrs[0], x->ndim, mask);
  if (status != CT_OK) return status;
  ct_info_from_tensor(x, x->dtype, &outputs[0]);
  *num_outputs = 1;
  return CT_OK;
}

CT_DEFINE_OP(flip, "Reverses the order of elements along the given axes (the array API's flip).",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_params_x, ct_params_out, ct_flip_attrs,
             ct_infer_flip);

static const ct_attr_schema ct_roll_attrs[] = {
    CT_ATTR_SPEC_REQUIRED("shift", "places to shift by, per entry of axis (broadcast)",
                          CT_ATTR_INT_LIST),
    CT_ATTR_SPEC_NULLABLE("axis", "axes to roll; None rolls the flattened array",
                          CT_ATTR_INT_LIST)};

static int ct_infer_roll(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                         int32_t* num_outputs) {
  (void)capacity;
  const ct_tensor* x = call->inputs[0];
  int64_t per_axis[CT_MAX_NDIM];
  const int status =
      ct_roll_params(&call->attrs[0], &call->attrs[1], x->ndim, x->shape, ct_numel_of(x), per_axis);
  if (status != CT_OK) return status;
  ct_info_from_tensor(x, x->dtype, &outputs[0]);
  *num_outputs = 1;
  return CT_OK;
}

CT_DEFINE_OP(roll,
             "Rolls elements along axes; those shifted past the end come back at the start (the "
             "array API's roll).",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_params_x, ct_params_out, ct_roll_attrs,
             ct_infer_roll);

static int ct_infer_matrix_transpose(const ct_infer_call* call, ct_tensor_info* outputs,
                                     int32_t capacity, int32_t* num_outputs) {
  (void)capacity;
  const ct_tensor* x = call->inputs[0];
  if (x->ndim < 2) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                        "matrix_transpose: x needs at least 2 dimensions, has %d", x->ndim);
  }
  ct_info_from_tensor(x, x->dtype, &outputs[0]);
  outputs[0].shape[x->ndim - 1] = x->shape[x->ndim - 2];
  outputs[0].shape[x->ndim - 2] = x->shape[x->ndim - 1];
  *num_outputs = 1;
  return CT_OK;
}

CT_DEFINE_OP_NO_ATTRS(matrix_transpose,
                      "Swaps the last two axes of x (the array API's matrix_transpose; a copy).",
                      CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_params_x, ct_params_out,
                      ct_infer_matrix_transpose);

/* ----- tril / triu ----- */

static const ct_attr_schema ct_tri_attrs[] = {
    CT_ATTR_SPEC_INT("k", "diagonal offset: 0 main, > 0 above, < 0 below", 0)};

static int ct_infer_tri(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                        int32_t* num_outputs) {
  (void)capacity;
  const ct_tensor* x = call->inputs[0];
  if (x->ndim < 2) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "%s: x needs at least 2 dimensions, has %d",
                        call->schema->name, x->ndim);
  }
  ct_info_from_tensor(x, x->dtype, &outputs[0]);
  *num_outputs = 1;
  return CT_OK;
}

CT_DEFINE_OP(tril,
             "Lower triangle of the last two axes: elements above diagonal k become zero "
             "(numpy.tril / torch.tril).",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_params_x, ct_params_out, ct_tri_attrs,
             ct_infer_tri);
CT_DEFINE_OP(triu,
             "Upper triangle of the last two axes: elements below diagonal k become zero "
             "(numpy.triu / torch.triu).",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_params_x, ct_params_out, ct_tri_attrs,
             ct_infer_tri);

/* ----- broadcast_to, tile, repeat, slice, pad: new shapes ----- */

static const ct_attr_schema ct_broadcast_to_attrs[] = {
    CT_ATTR_SPEC_REQUIRED("shape", "the target shape", CT_ATTR_INT_LIST)};

static int ct_infer_broadcast_to(const ct_infer_call* call, ct_tensor_info* outputs,
                                 int32_t capacity, int32_t* num_outputs) {
  (void)capacity;
  const ct_tensor* x = call->inputs[0];
  const ct_attr_value* shape = &call->attrs[0];
  if (shape->count > CT_MAX_NDIM || shape->count < x->ndim) {
    return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                        "broadcast_to: cannot broadcast %d dimensions to %lld", x->ndim,
                        (long long)shape->count);
  }
  ct_tensor_info* out = &outputs[0];
  out->dtype = x->dtype;
  out->ndim = (int32_t)shape->count;
  const int32_t shift = out->ndim - x->ndim;
  for (int32_t k = 0; k < out->ndim; ++k) {
    const int64_t want = shape->value.ints[k];
    if (want < 0) {
      return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "broadcast_to: negative extent %lld",
                          (long long)want);
    }
    if (k >= shift && x->shape[k - shift] != want && x->shape[k - shift] != 1) {
      return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                          "broadcast_to: extent %lld of x (dimension %d) cannot broadcast to %lld",
                          (long long)x->shape[k - shift], k - shift, (long long)want);
    }
    out->shape[k] = want;
  }
  *num_outputs = 1;
  return ct_shape_too_big("broadcast_to", out);
}

CT_DEFINE_OP(broadcast_to,
             "Broadcasts x to a shape (NumPy rules) into a new array (the array API's "
             "broadcast_to; a copy, not a view).",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_params_x, ct_params_out, ct_broadcast_to_attrs,
             ct_infer_broadcast_to);

static const ct_attr_schema ct_tile_attrs[] = {CT_ATTR_SPEC_REQUIRED(
    "repetitions", "copies per axis (aligned to the right, as numpy.tile)", CT_ATTR_INT_LIST)};

static int ct_infer_tile(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                         int32_t* num_outputs) {
  (void)capacity;
  const ct_tensor* x = call->inputs[0];
  int64_t reps[CT_MAX_NDIM];
  int32_t ndim = 0;
  const int status = ct_tile_params(&call->attrs[0], x->ndim, &ndim, reps);
  if (status != CT_OK) return status;
  ct_tensor_info* out = &outputs[0];
  out->dtype = x->dtype;
  out->ndim = ndim;
  for (int32_t k = 0; k < ndim; ++k) {
    const int32_t j = k - (ndim - x->ndim);
    const int64_t extent = j >= 0 ? x->shape[j] : 1;
    if (!ct_checked_mul_i64(extent, reps[k], &out->shape[k])) {
      return ct_set_error(CT_ERROR_SIZE_OVERFLOW, "tile: the output extent overflows int64");
    }
  }
  *num_outputs = 1;
  return ct_shape_too_big("tile", out);
}

CT_DEFINE_OP(tile, "Repeats x as a whole along each axis (the array API's tile / numpy.tile).",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_params_x, ct_params_out, ct_tile_attrs,
             ct_infer_tile);

static const ct_attr_schema ct_repeat_attrs[] = {
    CT_ATTR_SPEC_REQUIRED("repeats",
                          "copies of each element: one count for all, or one per element along "
                          "axis (per element of the flattened x when axis is None)",
                          CT_ATTR_INT_LIST),
    CT_ATTR_SPEC_NULLABLE("axis", "axis to repeat along; None repeats the flattened x",
                          CT_ATTR_INT)};

static int ct_infer_repeat(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                           int32_t* num_outputs) {
  (void)capacity;
  const ct_tensor* x = call->inputs[0];
  const ct_attr_value* repeats = &call->attrs[0];
  ct_tensor_info* out = &outputs[0];
  int64_t n;
  int32_t axis = -1;
  if (call->attrs[1].type == CT_ATTR_NONE) {
    n = ct_numel_of(x);
    out->ndim = 1;
  } else {
    const int status = ct_normalize_axis("repeat", call->attrs[1].value.i, x->ndim, &axis);
    if (status != CT_OK) return status;
    n = x->shape[axis];
    ct_info_from_tensor(x, x->dtype, out);
  }
  if (repeats->count != 1 && repeats->count != n) {
    return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                        "repeat: %lld repeats for %lld elements along the axis (need 1 or %lld)",
                        (long long)repeats->count, (long long)n, (long long)n);
  }
  int64_t total = 0;
  for (int64_t i = 0; i < repeats->count; ++i) {
    const int64_t r = repeats->value.ints[i];
    if (r < 0) {
      return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "repeat: negative repeat count %lld",
                          (long long)r);
    }
    int64_t add = r;
    if ((repeats->count == 1 && !ct_checked_mul_i64(r, n, &add)) ||
        !ct_checked_add_i64(total, add, &total)) {
      return ct_set_error(CT_ERROR_SIZE_OVERFLOW, "repeat: the output extent overflows int64");
    }
  }
  out->dtype = x->dtype;
  out->shape[axis < 0 ? 0 : axis] = total;
  *num_outputs = 1;
  return ct_shape_too_big("repeat", out);
}

CT_DEFINE_OP(repeat,
             "Repeats each element of x (the array API's repeat / numpy.repeat). repeats is an "
             "attribute (one count or one per element), so the output shape is static.",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_params_x, ct_params_out, ct_repeat_attrs,
             ct_infer_repeat);

static const int64_t ct_no_ints[1] = {0};
static const ct_attr_schema ct_slice_attrs[] = {
    CT_ATTR_SPEC_INT_LIST("start",
                          "first index per leading axis (Python slice rules; INT64_MIN or "
                          "INT64_MAX stand for a missing bound; missing entries: whole axis)",
                          0, ct_no_ints),
    CT_ATTR_SPEC_INT_LIST("stop", "end index per leading axis (exclusive, Python slice rules)", 0,
                          ct_no_ints),
    CT_ATTR_SPEC_INT_LIST("step", "step per leading axis (default 1; 0 is an error)", 0,
                          ct_no_ints)};

static int ct_infer_slice(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                          int32_t* num_outputs) {
  (void)capacity;
  const ct_tensor* x = call->inputs[0];
  int64_t first[CT_MAX_NDIM], steps[CT_MAX_NDIM];
  ct_tensor_info* out = &outputs[0];
  const int status = ct_slice_params(call->attrs, x->ndim, x->shape, first, steps, out->shape);
  if (status != CT_OK) return status;
  out->dtype = x->dtype;
  out->ndim = x->ndim;
  *num_outputs = 1;
  return CT_OK;
}

CT_DEFINE_OP(slice,
             "Basic slicing x[start:stop:step, ...] per axis with Python's clamping rules, into a "
             "new array.",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_params_x, ct_params_out, ct_slice_attrs,
             ct_infer_slice);

static const ct_attr_schema ct_pad_attrs[] = {
    CT_ATTR_SPEC_REQUIRED("pad_width",
                          "(before, after) per axis flattened, or one (before, after) pair, or "
                          "one width for every side",
                          CT_ATTR_INT_LIST),
    {"mode",
     "constant, reflect or edge (numpy.pad)",
     CT_ATTR_STRING,
     0,
     {CT_ATTR_STRING, 0, 0, {.s = "constant"}}},
    {"value",
     "fill value of mode constant (cast to x's dtype)",
     CT_ATTR_FLOAT,
     0,
     {CT_ATTR_FLOAT, 0, 0, {.f = 0.0}}}};

static int ct_infer_pad(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                        int32_t* num_outputs) {
  (void)capacity;
  const ct_tensor* x = call->inputs[0];
  int64_t before[CT_MAX_NDIM], after[CT_MAX_NDIM];
  int mode = 0;
  const int status = ct_pad_params(call->attrs, x->ndim, x->shape, before, after, &mode);
  if (status != CT_OK) return status;
  ct_tensor_info* out = &outputs[0];
  ct_info_from_tensor(x, x->dtype, out);
  for (int32_t k = 0; k < x->ndim; ++k) {
    if (!ct_checked_add_i64(out->shape[k], before[k], &out->shape[k]) ||
        !ct_checked_add_i64(out->shape[k], after[k], &out->shape[k])) {
      return ct_set_error(CT_ERROR_SIZE_OVERFLOW, "pad: the output extent overflows int64");
    }
  }
  *num_outputs = 1;
  return ct_shape_too_big("pad", out);
}

CT_DEFINE_OP(pad,
             "Pads x (numpy.pad with modes constant, reflect and edge; reflect continues "
             "periodically past the array's length, as NumPy does).",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_params_x, ct_params_out, ct_pad_attrs,
             ct_infer_pad);

/* ----- take, take_along_axis, embedding, one_hot: gathers by an int32/int64 index array ----- */

static const ct_param_schema ct_params_x_indices[2] = {{"x", "input array", 0, 0},
                                                       {"indices", "int32 or int64 indices", 0, 0}};

static const ct_attr_schema ct_take_attrs[] = {CT_ATTR_SPEC_NULLABLE(
    "axis", "axis to take along; None takes from the flattened x", CT_ATTR_INT)};

static int ct_infer_take(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                         int32_t* num_outputs) {
  (void)capacity;
  const ct_tensor *x = call->inputs[0], *idx = call->inputs[1];
  ct_tensor_info* out = &outputs[0];
  out->dtype = x->dtype;
  if (call->attrs[0].type == CT_ATTR_NONE) {
    ct_info_from_tensor(idx, x->dtype, out);
    *num_outputs = 1;
    return CT_OK;
  }
  int32_t axis;
  const int status = ct_normalize_axis("take", call->attrs[0].value.i, x->ndim, &axis);
  if (status != CT_OK) return status;
  if (x->ndim - 1 + idx->ndim > CT_MAX_NDIM) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "take: the result would exceed %d dimensions",
                        CT_MAX_NDIM);
  }
  out->ndim = 0;
  for (int32_t k = 0; k < axis; ++k) out->shape[out->ndim++] = x->shape[k];
  for (int32_t k = 0; k < idx->ndim; ++k) out->shape[out->ndim++] = idx->shape[k];
  for (int32_t k = axis + 1; k < x->ndim; ++k) out->shape[out->ndim++] = x->shape[k];
  *num_outputs = 1;
  return ct_shape_too_big("take", out);
}

CT_DEFINE_OP(take,
             "Elements of x at indices along an axis (numpy.take; negative indices count from "
             "the end, out-of-range indices are an error reported before anything is written).",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_params_x_indices, ct_params_out, ct_take_attrs,
             ct_infer_take);

static const ct_attr_schema ct_take_along_axis_attrs[] = {
    CT_ATTR_SPEC_INT("axis", "axis to take along", -1)};

static int ct_infer_take_along_axis(const ct_infer_call* call, ct_tensor_info* outputs,
                                    int32_t capacity, int32_t* num_outputs) {
  (void)capacity;
  const ct_tensor *x = call->inputs[0], *idx = call->inputs[1];
  if (idx->ndim != x->ndim || x->ndim == 0) {
    return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                        "take_along_axis: indices (%d dims) and x (%d dims) need the same "
                        "number of dimensions, at least 1",
                        idx->ndim, x->ndim);
  }
  int32_t axis;
  const int status = ct_normalize_axis("take_along_axis", call->attrs[0].value.i, x->ndim, &axis);
  if (status != CT_OK) return status;
  ct_tensor_info* out = &outputs[0];
  out->dtype = x->dtype;
  out->ndim = x->ndim;
  for (int32_t k = 0; k < x->ndim; ++k) {
    const int64_t a = k == axis ? 1 : x->shape[k], b = idx->shape[k];
    if (k == axis) {
      out->shape[k] = b;
    } else if (a == b || a == 1 || b == 1) {
      out->shape[k] = a == 1 ? b : a;
    } else {
      return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                          "take_along_axis: extent %lld of x and %lld of indices (dimension %d) "
                          "do not broadcast",
                          (long long)a, (long long)b, k);
    }
  }
  *num_outputs = 1;
  return CT_OK;
}

CT_DEFINE_OP(take_along_axis,
             "Takes values of x at indices along axis, matching them element by element in the "
             "other axes, which broadcast (the array API's take_along_axis).",
             CT_OP_SHAPE_STATIC, CT_FLAGS_INDEX_CHECKED, ct_params_x_indices, ct_params_out,
             ct_take_along_axis_attrs, ct_infer_take_along_axis);

static const ct_param_schema ct_embedding_inputs[2] = {
    {"input", "int32 or int64 indices into weight's rows", 0, 0},
    {"weight", "(num_embeddings, embedding_dim) table", 0, 0}};

static int ct_infer_embedding(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                              int32_t* num_outputs) {
  (void)capacity;
  const ct_tensor *idx = call->inputs[0], *w = call->inputs[1];
  if (w->ndim != 2) {
    return ct_set_error(CT_ERROR_SHAPE_MISMATCH, "embedding: weight must be 2-D, has %d dims",
                        w->ndim);
  }
  if (idx->ndim >= CT_MAX_NDIM) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                        "embedding: the result would exceed %d dimensions", CT_MAX_NDIM);
  }
  ct_info_from_tensor(idx, w->dtype, &outputs[0]);
  outputs[0].shape[outputs[0].ndim++] = w->shape[1];
  *num_outputs = 1;
  return ct_shape_too_big("embedding", &outputs[0]);
}

CT_DEFINE_OP_NO_ATTRS(embedding,
                      "Rows of weight at the indices: shape input.shape + (embedding_dim,) "
                      "(torch.nn.functional.embedding without max_norm; an index outside [0, "
                      "num_embeddings) is an error).",
                      CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_embedding_inputs, ct_params_out,
                      ct_infer_embedding);

static const ct_param_schema ct_one_hot_inputs[1] = {
    {"input", "int32 or int64 class indices in [0, num_classes)", 0, 0}};
static const ct_attr_schema ct_one_hot_attrs[] = {CT_ATTR_SPEC_REQUIRED(
    "num_classes",
    "length of the new last axis (-1, inferring it from the data, is refused: the op is "
    "shape-static)",
    CT_ATTR_INT)};

static int ct_infer_one_hot(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                            int32_t* num_outputs) {
  (void)capacity;
  const ct_tensor* idx = call->inputs[0];
  const int64_t classes = call->attrs[0].value.i;
  if (classes < 0) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                        "one_hot: num_classes must be given and >= 0 (got %lld); inferring it "
                        "from the data is not supported",
                        (long long)classes);
  }
  if (idx->ndim >= CT_MAX_NDIM) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "one_hot: the result would exceed %d dims",
                        CT_MAX_NDIM);
  }
  ct_info_from_tensor(idx, CT_DTYPE_I64_V, &outputs[0]);
  outputs[0].shape[outputs[0].ndim++] = classes;
  *num_outputs = 1;
  return ct_shape_too_big("one_hot", &outputs[0]);
}

CT_DEFINE_OP(one_hot,
             "int64 one-hot encoding: out[..., c] = (input[...] == c) "
             "(torch.nn.functional.one_hot; an index outside [0, num_classes) is an error).",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_one_hot_inputs, ct_params_out, ct_one_hot_attrs,
             ct_infer_one_hot);
