/* shape_grad_ops.c - backward operators of the shape and indexing ops, and of clip and embedding
 * (their gradient rows: capi/gradients/shape_grads.h). Each takes the output cotangent grad_out
 * first, then the forward inputs whose shapes (or indices) it needs: their data is not read
 * unless the doc says so. grad_out must have the forward output's shape: every infer runs the
 * forward's infer on the forward inputs and attributes and compares. */
#include <stdio.h>
#include <string.h>

#include "op_defs.h"
#include "shape_params.h"

/* "(2, 3)" into buffer. */
static const char* ct_shape_text(int32_t ndim, const int64_t* shape, char* buffer, size_t size) {
  size_t used = (size_t)snprintf(buffer, size, "(");
  for (int32_t k = 0; k < ndim && used < size; ++k) {
    used +=
        (size_t)snprintf(buffer + used, size - used, k ? ", %lld" : "%lld", (long long)shape[k]);
  }
  if (used < size) snprintf(buffer + used, size - used, ndim == 1 ? ",)" : ")");
  return buffer;
}

/* Checks that grad has the shape of output `index` of the forward op on (inputs, attrs). */
static int ct_check_grad_shape(const char* op, const ct_op_def* forward,
                               const ct_tensor* const* inputs, int32_t num_inputs,
                               const ct_attr_value* attrs, const ct_tensor* grad) {
  ct_tensor_info info[1];
  int32_t count = 0;
  const ct_infer_call call = {&forward->schema, inputs, num_inputs, attrs};
  const int status = forward->infer(&call, info, 1, &count);
  if (status != CT_OK) return status;
  bool same = grad->ndim == info[0].ndim;
  for (int32_t k = 0; same && k < grad->ndim; ++k) same = grad->shape[k] == info[0].shape[k];
  if (!same) {
    char have[256], want[256];
    return ct_set_error(
        CT_ERROR_SHAPE_MISMATCH, "%s: grad_out has shape %s but %s's output has shape %s", op,
        ct_shape_text(grad->ndim, grad->shape, have, sizeof have), forward->schema.name,
        ct_shape_text(info[0].ndim, info[0].shape, want, sizeof want));
  }
  return CT_OK;
}

static const ct_param_schema ct_params_grad_out[1] = {
    {"grad_out", "cotangent of the forward output", 0, 0}};
static const ct_param_schema ct_params_grad_x[1] = {
    {"grad_x", "cotangent of the forward input x", 0, 0}};
static const ct_param_schema ct_params_grad_x_like[2] = {
    {"grad_out", "cotangent of the forward output", 0, 0},
    {"x", "the forward input x (only its shape is read)", 0, 0}};

/* Output: x's shape in grad_out's dtype, after checking grad_out against forward(x; attrs). */
static int ct_infer_like_x(const ct_infer_call* call, const ct_op_def* forward,
                           const ct_attr_value* forward_attrs, ct_tensor_info* outputs,
                           int32_t* num_outputs) {
  const ct_tensor *grad = call->inputs[0], *x = call->inputs[1];
  const int status = ct_check_grad_shape(call->schema->name, forward, call->inputs + 1,
                                         call->num_inputs - 1, forward_attrs, grad);
  if (status != CT_OK) return status;
  ct_info_from_tensor(x, grad->dtype, &outputs[0]);
  *num_outputs = 1;
  return CT_OK;
}

/* ----- permute_dims_backward, roll_backward: same data, moved back ----- */

static const ct_attr_schema ct_permute_backward_attrs[] = {
    CT_ATTR_SPEC_REQUIRED("axes", "the forward's permutation", CT_ATTR_INT_LIST)};

static int ct_infer_permute_dims_backward(const ct_infer_call* call, ct_tensor_info* outputs,
                                          int32_t capacity, int32_t* num_outputs) {
  (void)capacity;
  const ct_tensor* grad = call->inputs[0];
  /* The forward's infer validates axes as a permutation of grad_out's dimensions. */
  ct_tensor_info check[1];
  int32_t count = 0;
  const ct_infer_call forward = {&ct_op_def_permute_dims.schema, call->inputs, 1, call->attrs};
  const int status = ct_op_def_permute_dims.infer(&forward, check, 1, &count);
  if (status != CT_OK) return status;
  outputs[0].dtype = grad->dtype;
  outputs[0].ndim = grad->ndim;
  for (int32_t i = 0; i < grad->ndim; ++i) {
    const int64_t a = call->attrs[0].value.ints[i];
    outputs[0].shape[a < 0 ? a + grad->ndim : a] = grad->shape[i];
  }
  *num_outputs = 1;
  return CT_OK;
}

CT_DEFINE_OP(permute_dims_backward,
             "Gradient of permute_dims: grad_out permuted by the inverse of axes.",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_params_grad_out, ct_params_grad_x,
             ct_permute_backward_attrs, ct_infer_permute_dims_backward);

static const ct_attr_schema ct_roll_backward_attrs[] = {
    CT_ATTR_SPEC_REQUIRED("shift", "the forward's shift", CT_ATTR_INT_LIST),
    CT_ATTR_SPEC_NULLABLE("axis", "the forward's axis", CT_ATTR_INT_LIST)};

static int ct_infer_roll_backward(const ct_infer_call* call, ct_tensor_info* outputs,
                                  int32_t capacity, int32_t* num_outputs) {
  const ct_infer_call forward = {&ct_op_def_roll.schema, call->inputs, 1, call->attrs};
  return ct_op_def_roll.infer(&forward, outputs, capacity, num_outputs);
}

CT_DEFINE_OP(roll_backward, "Gradient of roll: grad_out rolled back by the forward's shift.",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_params_grad_out, ct_params_grad_x,
             ct_roll_backward_attrs, ct_infer_roll_backward);

/* ----- concat_backward, stack_backward: one slab of grad_out per array ----- */

static const ct_param_schema ct_params_grad_arrays_in[2] = {
    {"grad_out", "cotangent of the forward output", 0, 0},
    {"arrays", "the forward's arrays (only their shapes are read)", CT_PARAM_VARIADIC, 0}};
static const ct_param_schema ct_params_grad_arrays[1] = {
    {"grad_arrays", "cotangent of each forward array", CT_PARAM_VARIADIC, 0}};

static int ct_infer_join_backward(const ct_infer_call* call, const ct_op_def* forward,
                                  ct_tensor_info* outputs, int32_t capacity, int32_t* num_outputs) {
  const int32_t n = call->num_inputs - 1;
  if (n < 1) {
    return ct_set_error(CT_ERROR_WRONG_ARITY, "%s: needs at least one array", call->schema->name);
  }
  if (n > capacity) {
    return ct_set_error(CT_ERROR_WRONG_ARITY, "%s: %d arrays exceed the %d outputs a call may have",
                        call->schema->name, n, capacity);
  }
  const ct_tensor* grad = call->inputs[0];
  const int status =
      ct_check_grad_shape(call->schema->name, forward, call->inputs + 1, n, call->attrs, grad);
  if (status != CT_OK) return status;
  for (int32_t i = 0; i < n; ++i)
    ct_info_from_tensor(call->inputs[1 + i], grad->dtype, &outputs[i]);
  *num_outputs = n;
  return CT_OK;
}

static const ct_attr_schema ct_concat_backward_attrs[] = {
    {"axis",
     "the forward's axis (None: the arrays were joined flattened)",
     CT_ATTR_INT,
     CT_ATTR_NULLABLE,
     {CT_ATTR_INT, 0, 0, {.i = 0}}}};

static int ct_infer_concat_backward(const ct_infer_call* call, ct_tensor_info* outputs,
                                    int32_t capacity, int32_t* num_outputs) {
  return ct_infer_join_backward(call, &ct_op_def_concat, outputs, capacity, num_outputs);
}

CT_DEFINE_OP(concat_backward,
             "Gradient of concat: grad_out split back into one array per forward array.",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_params_grad_arrays_in, ct_params_grad_arrays,
             ct_concat_backward_attrs, ct_infer_concat_backward);

static const ct_attr_schema ct_stack_backward_attrs[] = {
    CT_ATTR_SPEC_INT("axis", "the forward's axis", 0)};

static int ct_infer_stack_backward(const ct_infer_call* call, ct_tensor_info* outputs,
                                   int32_t capacity, int32_t* num_outputs) {
  return ct_infer_join_backward(call, &ct_op_def_stack, outputs, capacity, num_outputs);
}

CT_DEFINE_OP(stack_backward,
             "Gradient of stack: grad_out unstacked along axis, one array per forward array.",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_params_grad_arrays_in, ct_params_grad_arrays,
             ct_stack_backward_attrs, ct_infer_stack_backward);

/* ----- slice_backward, tile_backward, repeat_backward, pad_backward: x's shape ----- */

static const int64_t ct_no_ints[1] = {0};
static const ct_attr_schema ct_slice_backward_attrs[] = {
    CT_ATTR_SPEC_INT_LIST("start", "the forward's start", 0, ct_no_ints),
    CT_ATTR_SPEC_INT_LIST("stop", "the forward's stop", 0, ct_no_ints),
    CT_ATTR_SPEC_INT_LIST("step", "the forward's step", 0, ct_no_ints)};

static int ct_infer_slice_backward(const ct_infer_call* call, ct_tensor_info* outputs,
                                   int32_t capacity, int32_t* num_outputs) {
  (void)capacity;
  return ct_infer_like_x(call, &ct_op_def_slice, call->attrs, outputs, num_outputs);
}

CT_DEFINE_OP(slice_backward,
             "Gradient of slice: zeros of x's shape with grad_out written at the sliced "
             "positions.",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_params_grad_x_like, ct_params_grad_x,
             ct_slice_backward_attrs, ct_infer_slice_backward);

static const ct_attr_schema ct_tile_backward_attrs[] = {
    CT_ATTR_SPEC_REQUIRED("repetitions", "the forward's repetitions", CT_ATTR_INT_LIST)};

static int ct_infer_tile_backward(const ct_infer_call* call, ct_tensor_info* outputs,
                                  int32_t capacity, int32_t* num_outputs) {
  (void)capacity;
  return ct_infer_like_x(call, &ct_op_def_tile, call->attrs, outputs, num_outputs);
}

CT_DEFINE_OP(tile_backward,
             "Gradient of tile: the sum of grad_out over the copies of x (accumulated in float32 "
             "for float16 and bfloat16, in workspace).",
             CT_OP_WORKSPACE, CT_FLAGS_PURE, ct_params_grad_x_like, ct_params_grad_x,
             ct_tile_backward_attrs, ct_infer_tile_backward);

static const ct_attr_schema ct_repeat_backward_attrs[] = {
    CT_ATTR_SPEC_REQUIRED("repeats", "the forward's repeats", CT_ATTR_INT_LIST),
    CT_ATTR_SPEC_NULLABLE("axis", "the forward's axis", CT_ATTR_INT)};

static int ct_infer_repeat_backward(const ct_infer_call* call, ct_tensor_info* outputs,
                                    int32_t capacity, int32_t* num_outputs) {
  (void)capacity;
  return ct_infer_like_x(call, &ct_op_def_repeat, call->attrs, outputs, num_outputs);
}

CT_DEFINE_OP(repeat_backward,
             "Gradient of repeat: the sum of grad_out over the copies of each element.",
             CT_OP_WORKSPACE, CT_FLAGS_PURE, ct_params_grad_x_like, ct_params_grad_x,
             ct_repeat_backward_attrs, ct_infer_repeat_backward);

static const ct_attr_schema ct_pad_backward_attrs[] = {
    CT_ATTR_SPEC_REQUIRED("pad_width", "the forward's pad_width", CT_ATTR_INT_LIST),
    CT_ATTR_SPEC_STRING("mode", "the forward's mode: constant, reflect or edge", "constant")};

static int ct_infer_pad_backward(const ct_infer_call* call, ct_tensor_info* outputs,
                                 int32_t capacity, int32_t* num_outputs) {
  (void)capacity;
  const ct_attr_value forward_attrs[3] = {
      call->attrs[0], call->attrs[1], {CT_ATTR_FLOAT, 0, 0, {.f = 0.0}}};
  return ct_infer_like_x(call, &ct_op_def_pad, forward_attrs, outputs, num_outputs);
}

CT_DEFINE_OP(pad_backward,
             "Gradient of pad: the interior of grad_out (mode constant), plus, for reflect and "
             "edge, the sum of grad_out over every padded position copied from each element.",
             CT_OP_WORKSPACE, CT_FLAGS_PURE, ct_params_grad_x_like, ct_params_grad_x,
             ct_pad_backward_attrs, ct_infer_pad_backward);

/* ----- take_backward, take_along_axis_backward, embedding_backward: scatter-adds ----- */

static const ct_param_schema ct_params_grad_x_indices[3] = {
    {"grad_out", "cotangent of the forward output", 0, 0},
    {"x", "the forward input x (only its shape is read)", 0, 0},
    {"indices", "the forward's int32 or int64 indices", 0, 0}};

static const ct_attr_schema ct_take_backward_attrs[] = {
    CT_ATTR_SPEC_NULLABLE("axis", "the forward's axis", CT_ATTR_INT)};

static int ct_infer_take_backward(const ct_infer_call* call, ct_tensor_info* outputs,
                                  int32_t capacity, int32_t* num_outputs) {
  (void)capacity;
  return ct_infer_like_x(call, &ct_op_def_take, call->attrs, outputs, num_outputs);
}

CT_DEFINE_OP(take_backward,
             "Gradient of take: grad_out added into zeros of x's shape at the indices (repeated "
             "indices add up, in a fixed order: deterministic).",
             CT_OP_WORKSPACE, CT_FLAGS_PURE, ct_params_grad_x_indices, ct_params_grad_x,
             ct_take_backward_attrs, ct_infer_take_backward);

static const ct_attr_schema ct_take_along_axis_backward_attrs[] = {
    CT_ATTR_SPEC_INT("axis", "the forward's axis", -1)};

static int ct_infer_take_along_axis_backward(const ct_infer_call* call, ct_tensor_info* outputs,
                                             int32_t capacity, int32_t* num_outputs) {
  (void)capacity;
  return ct_infer_like_x(call, &ct_op_def_take_along_axis, call->attrs, outputs, num_outputs);
}

CT_DEFINE_OP(take_along_axis_backward,
             "Gradient of take_along_axis: grad_out added into zeros of x's shape at the indices "
             "along axis, summed over the axes where x broadcast (deterministic).",
             CT_OP_WORKSPACE, CT_FLAGS_INDEX_CHECKED, ct_params_grad_x_indices, ct_params_grad_x,
             ct_take_along_axis_backward_attrs, ct_infer_take_along_axis_backward);

static const ct_param_schema ct_embedding_backward_inputs[3] = {
    {"grad_out", "cotangent of the forward output", 0, 0},
    {"input", "the forward's int32 or int64 indices", 0, 0},
    {"weight", "the forward's table (only its shape is read)", 0, 0}};
static const ct_param_schema ct_embedding_backward_outputs[1] = {
    {"grad_weight", "cotangent of weight", 0, 0}};

static int ct_infer_embedding_backward(const ct_infer_call* call, ct_tensor_info* outputs,
                                       int32_t capacity, int32_t* num_outputs) {
  (void)capacity;
  const ct_tensor* grad = call->inputs[0];
  const int status = ct_check_grad_shape("embedding_backward", &ct_op_def_embedding,
                                         call->inputs + 1, 2, call->attrs, grad);
  if (status != CT_OK) return status;
  ct_info_from_tensor(call->inputs[2], grad->dtype, &outputs[0]);
  *num_outputs = 1;
  return CT_OK;
}

CT_DEFINE_OP_NO_ATTRS(embedding_backward,
                      "Gradient of embedding for weight: row i is the sum of the rows of "
                      "grad_out whose index is i, added in index order (deterministic); rows "
                      "never indexed are zero.",
                      CT_OP_WORKSPACE, CT_FLAGS_PURE, ct_embedding_backward_inputs,
                      ct_embedding_backward_outputs, ct_infer_embedding_backward);

/* ----- clip_backward: one cotangent per call, chosen by wrt ----- */

static const ct_param_schema ct_clip_backward_inputs[4] = {
    {"grad_out", "cotangent of the forward output", 0, 0},
    {"x", "the forward's x", 0, 0},
    {"min", "the forward's min (absent: none)", CT_PARAM_OPTIONAL, 0},
    {"max", "the forward's max (absent: none)", CT_PARAM_OPTIONAL, 0}};
static const ct_param_schema ct_clip_backward_outputs[1] = {
    {"grad", "the cotangent of input wrt, in the broadcast shape (sum_to_shape reduces it)", 0, 0}};
static const ct_attr_schema ct_clip_backward_attrs[] = {
    CT_ATTR_SPEC_STRING("wrt", "the input to differentiate: x, min or max", "x")};

/* 0 x, 1 min, 2 max; kernels use it too. */
static int ct_clip_wrt(const ct_infer_call* call) {
  const char* wrt = call->attrs[0].value.s;
  const int which = strcmp(wrt, "x") == 0     ? 0
                    : strcmp(wrt, "min") == 0 ? 1
                    : strcmp(wrt, "max") == 0 ? 2
                                              : -1;
  if (which < 0) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                        "clip_backward: wrt is '%s', not one of x, min, max", wrt);
  }
  if (which > 0 && (call->num_inputs <= which + 1 || !call->inputs[which + 1])) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                        "clip_backward: wrt is '%s' but that input is absent", wrt);
  }
  return which;
}

static int ct_infer_clip_backward(const ct_infer_call* call, ct_tensor_info* outputs,
                                  int32_t capacity, int32_t* num_outputs) {
  (void)capacity;
  const int which = ct_clip_wrt(call);
  if (which < 0) return which;
  const ct_tensor* grad = call->inputs[0];
  const int status = ct_check_grad_shape("clip_backward", &ct_op_def_clip, call->inputs + 1,
                                         call->num_inputs - 1, NULL, grad);
  if (status != CT_OK) return status;
  ct_info_from_tensor(grad, grad->dtype, &outputs[0]);
  *num_outputs = 1;
  return CT_OK;
}

CT_DEFINE_OP(clip_backward,
             "Gradient of clip for one input (torch.clamp's): x gets grad_out where min <= x <= "
             "max; min where x < min and min < max (x < min without max); max where x > max or "
             "max < min (x > max without min); zero elsewhere, nan x included.",
             CT_OP_SHAPE_STATIC, CT_FLAGS_BINARY, ct_clip_backward_inputs, ct_clip_backward_outputs,
             ct_clip_backward_attrs, ct_infer_clip_backward);
