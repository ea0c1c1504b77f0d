/* nn_norm_grad_ops.c - the backward operators of softmax, log_softmax and the normalisations,
 * and batch_norm_training (torch.nn.functional.batch_norm with training=True). */
#include "op_defs.h"

/* Every tensor given shares the first input's dtype, which is a float. */
static int ct_norm_grad_check_dtypes(const ct_infer_call* call) {
  const char* op = call->schema->name;
  const ct_dtype dtype = call->inputs[0]->dtype;
  if (!ct_dtype_is_float(dtype)) {
    return ct_set_error(CT_ERROR_UNSUPPORTED_DTYPE, "%s: %s must be a float array, got %s", op,
                        call->schema->inputs[0].name, ct_dtype_describe(dtype));
  }
  for (int32_t i = 1; i < call->num_inputs; ++i) {
    if (call->inputs[i] && !ct_dtype_equal(call->inputs[i]->dtype, dtype)) {
      return ct_set_error(CT_ERROR_UNSUPPORTED_DTYPE,
                          "%s: every input must share %s's dtype %s (%s is %s)", op,
                          call->schema->inputs[0].name, ct_dtype_describe(dtype),
                          call->schema->inputs[i].name, ct_dtype_describe(call->inputs[i]->dtype));
    }
  }
  return CT_OK;
}

/* a and b have the same shape. */
static int ct_norm_grad_same_shape(const ct_infer_call* call, int32_t a, int32_t b) {
  const ct_tensor* x = call->inputs[a];
  const ct_tensor* y = call->inputs[b];
  bool same = x->ndim == y->ndim;
  for (int32_t k = 0; same && k < x->ndim; ++k) same = x->shape[k] == y->shape[k];
  if (!same) {
    return ct_set_error(CT_ERROR_SHAPE_MISMATCH, "%s: %s and %s must have the same shape",
                        call->schema->name, call->schema->inputs[a].name,
                        call->schema->inputs[b].name);
  }
  return CT_OK;
}

/* Input i, when given, is 1-D of extent n. */
static int ct_norm_grad_vector(const ct_infer_call* call, int32_t i, int64_t n) {
  const ct_tensor* t = call->inputs[i];
  if (t && (t->ndim != 1 || t->shape[0] != n)) {
    return ct_set_error(CT_ERROR_SHAPE_MISMATCH, "%s: %s must have shape (%lld,)",
                        call->schema->name, call->schema->inputs[i].name, (long long)n);
  }
  return CT_OK;
}

static int ct_norm_grad_eps(const ct_infer_call* call, const ct_attr_value* eps) {
  if (eps->type == CT_ATTR_FLOAT && !(eps->value.f >= 0)) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "%s: eps must be >= 0", call->schema->name);
  }
  return CT_OK;
}

/* outputs[k] = (dtype, shape of t) */
static void ct_norm_grad_output(const ct_tensor* t, ct_dtype dtype, ct_tensor_info* info) {
  ct_info_from_tensor(t, dtype, info);
}

/* outputs[k] = (dtype, (n,)) */
static void ct_norm_grad_vector_output(int64_t n, ct_dtype dtype, ct_tensor_info* info) {
  info->dtype = dtype;
  info->ndim = 1;
  info->shape[0] = n;
}

/* ----- softmax_backward, log_softmax_backward ----- */

static const ct_param_schema ct_softmax_backward_inputs[2] = {
    {"grad_out", "cotangent of the forward's output", 0, 0}, {"out", "the forward's output", 0, 0}};

static const ct_param_schema ct_grad_input_outputs[1] = {
    {"grad_input", "cotangent of the forward's input", 0, 0}};

static const ct_attr_schema ct_softmax_backward_attrs[] = {
    CT_ATTR_SPEC_INT("axis", "the forward's axis", -1)};

static int ct_infer_softmax_backward(const ct_infer_call* call, ct_tensor_info* outputs,
                                     int32_t capacity, int32_t* num_outputs) {
  int status = ct_norm_grad_check_dtypes(call);
  if (status == CT_OK) status = ct_norm_grad_same_shape(call, 0, 1);
  if (status != CT_OK) return status;
  const ct_tensor* x = call->inputs[0];
  int32_t k;
  status =
      ct_normalize_axis(call->schema->name, call->attrs[0].value.i, x->ndim > 0 ? x->ndim : 1, &k);
  if (status != CT_OK) return status;
  return ct_infer_same_as_input(call, outputs, capacity, num_outputs);
}

CT_DEFINE_OP(softmax_backward,
             "grad_input = out * (grad_out - sum(grad_out * out, axis)): the vector-Jacobian "
             "product of softmax from its output (torch's _softmax_backward_data); sums "
             "accumulate in float64, float16/bfloat16 compute in float32.",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_softmax_backward_inputs, ct_grad_input_outputs,
             ct_softmax_backward_attrs, ct_infer_softmax_backward);

CT_DEFINE_OP(log_softmax_backward,
             "grad_input = grad_out - exp(out) * sum(grad_out, axis): the vector-Jacobian product "
             "of log_softmax from its output (torch's _log_softmax_backward_data); sums "
             "accumulate in float64, float16/bfloat16 compute in float32.",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_softmax_backward_inputs, ct_grad_input_outputs,
             ct_softmax_backward_attrs, ct_infer_softmax_backward);

/* ----- layer_norm_backward, rms_norm_backward ----- */

static const ct_param_schema ct_trailing_norm_backward_inputs[3] = {
    {"grad_out", "(*, normalized_shape), cotangent of the forward's output", 0, 0},
    {"input", "(*, normalized_shape), the forward's input", 0, 0},
    {"weight", "normalized_shape, the forward's weight (absent: ones)", CT_PARAM_OPTIONAL, 0}};

static const ct_param_schema ct_layer_norm_backward_outputs[3] = {
    {"grad_input", "cotangent of input", 0, 0},
    {"grad_weight", "normalized_shape: sum of grad_out * normalized input over the leading dims", 0,
     0},
    {"grad_bias", "normalized_shape: sum of grad_out over the leading dims", 0, 0}};

static const ct_param_schema ct_rms_norm_backward_outputs[2] = {
    {"grad_input", "cotangent of input", 0, 0},
    {"grad_weight", "normalized_shape: sum of grad_out * normalized input over the leading dims", 0,
     0}};

static const ct_attr_schema ct_layer_norm_backward_attrs[] = {
    CT_ATTR_SPEC_REQUIRED("normalized_shape", "the forward's normalized_shape", CT_ATTR_INT_LIST),
    CT_ATTR_SPEC_FLOAT("eps", "the forward's eps", 1e-5)};

static const ct_attr_schema ct_rms_norm_backward_attrs[] = {
    CT_ATTR_SPEC_REQUIRED("normalized_shape", "the forward's normalized_shape", CT_ATTR_INT_LIST),
    CT_ATTR_SPEC_NULLABLE("eps", "the forward's eps (None: the machine epsilon, as the forward)",
                          CT_ATTR_FLOAT)};

static int ct_infer_trailing_norm_backward(const ct_infer_call* call, ct_tensor_info* outputs,
                                           int32_t capacity, int32_t* num_outputs, int32_t count) {
  const char* op = call->schema->name;
  int status = ct_norm_grad_check_dtypes(call);
  if (status == CT_OK) status = ct_norm_grad_same_shape(call, 0, 1);
  if (status == CT_OK) status = ct_norm_grad_eps(call, &call->attrs[1]);
  if (status != CT_OK) return status;
  const ct_tensor* x = call->inputs[1];
  const ct_attr_value* shape = &call->attrs[0];
  if (shape->count < 1 || shape->count > x->ndim) {
    return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                        "%s: normalized_shape must have 1 to input.ndim (%d) entries, got %lld", op,
                        x->ndim, (long long)shape->count);
  }
  const int32_t lead = x->ndim - (int32_t)shape->count;
  for (int32_t k = 0; k < (int32_t)shape->count; ++k) {
    if (shape->value.ints[k] != x->shape[lead + k]) {
      return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                          "%s: normalized_shape must equal the input's trailing dims", op);
    }
  }
  const ct_tensor* w = call->inputs[2];
  if (w) {
    bool ok = w->ndim == (int32_t)shape->count;
    for (int32_t k = 0; ok && k < w->ndim; ++k) ok = w->shape[k] == shape->value.ints[k];
    if (!ok) {
      return ct_set_error(CT_ERROR_SHAPE_MISMATCH, "%s: weight must have shape normalized_shape",
                          op);
    }
  }
  if (capacity < count) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "%s: room for %d outputs needed", op, count);
  }
  ct_norm_grad_output(x, x->dtype, &outputs[0]);
  for (int32_t i = 1; i < count; ++i) {
    outputs[i].dtype = x->dtype;
    outputs[i].ndim = (int32_t)shape->count;
    for (int32_t k = 0; k < (int32_t)shape->count; ++k) {
      outputs[i].shape[k] = shape->value.ints[k];
    }
  }
  *num_outputs = count;
  return CT_OK;
}

static int ct_infer_layer_norm_backward(const ct_infer_call* call, ct_tensor_info* outputs,
                                        int32_t capacity, int32_t* num_outputs) {
  return ct_infer_trailing_norm_backward(call, outputs, capacity, num_outputs, 3);
}

static int ct_infer_rms_norm_backward(const ct_infer_call* call, ct_tensor_info* outputs,
                                      int32_t capacity, int32_t* num_outputs) {
  return ct_infer_trailing_norm_backward(call, outputs, capacity, num_outputs, 2);
}

CT_DEFINE_OP(layer_norm_backward,
             "The vector-Jacobian product of layer_norm for input, weight and bias (torch's "
             "native_layer_norm_backward); the statistics are recomputed from input as the "
             "forward computes them (float64). grad_weight and grad_bias are always computed; "
             "row sums accumulate in float64, float16/bfloat16 compute in float32.",
             CT_OP_WORKSPACE, CT_FLAGS_PURE, ct_trailing_norm_backward_inputs,
             ct_layer_norm_backward_outputs, ct_layer_norm_backward_attrs,
             ct_infer_layer_norm_backward);

CT_DEFINE_OP(rms_norm_backward,
             "The vector-Jacobian product of rms_norm for input and weight; the mean square is "
             "recomputed from input as the forward computes it (float64). grad_weight is always "
             "computed; row sums accumulate in float64, float16/bfloat16 compute in float32.",
             CT_OP_WORKSPACE, CT_FLAGS_PURE, ct_trailing_norm_backward_inputs,
             ct_rms_norm_backward_outputs, ct_rms_norm_backward_attrs, ct_infer_rms_norm_backward);

/* ----- group_norm_backward ----- */

static const ct_param_schema ct_group_norm_backward_inputs[3] = {
    {"grad_out", "(N, C, *), cotangent of the forward's output", 0, 0},
    {"input", "(N, C, *), the forward's input", 0, 0},
    {"weight", "(C,), the forward's weight (absent: ones)", CT_PARAM_OPTIONAL, 0}};

static const ct_param_schema ct_channel_norm_backward_outputs[3] = {
    {"grad_input", "cotangent of input", 0, 0},
    {"grad_weight", "(C,): sum of grad_out * normalized input per channel", 0, 0},
    {"grad_bias", "(C,): sum of grad_out per channel", 0, 0}};

static const ct_attr_schema ct_group_norm_backward_attrs[] = {
    CT_ATTR_SPEC_REQUIRED("num_groups", "the forward's num_groups", CT_ATTR_INT),
    CT_ATTR_SPEC_FLOAT("eps", "the forward's eps", 1e-5)};

/* input (N, C, *) with at least 2 dims. */
static int ct_norm_grad_channels(const ct_infer_call* call, int32_t i) {
  const ct_tensor* x = call->inputs[i];
  if (x->ndim < 2) {
    return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                        "%s: input must be (N, C, *) with at least 2 dims, got %d-D",
                        call->schema->name, x->ndim);
  }
  return CT_OK;
}

static int ct_infer_group_norm_backward(const ct_infer_call* call, ct_tensor_info* outputs,
                                        int32_t capacity, int32_t* num_outputs) {
  int status = ct_norm_grad_check_dtypes(call);
  if (status == CT_OK) status = ct_norm_grad_same_shape(call, 0, 1);
  if (status == CT_OK) status = ct_norm_grad_channels(call, 1);
  if (status == CT_OK) status = ct_norm_grad_eps(call, &call->attrs[1]);
  if (status != CT_OK) return status;
  const ct_tensor* x = call->inputs[1];
  const int64_t groups = call->attrs[0].value.i, c = x->shape[1];
  if (groups < 1 || c % groups != 0) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                        "group_norm_backward: num_groups (%lld) must be >= 1 and divide the "
                        "channels (%lld)",
                        (long long)groups, (long long)c);
  }
  status = ct_norm_grad_vector(call, 2, c);
  if (status != CT_OK) return status;
  if (capacity < 3) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "group_norm_backward: room for 3 outputs");
  }
  ct_norm_grad_output(x, x->dtype, &outputs[0]);
  ct_norm_grad_vector_output(c, x->dtype, &outputs[1]);
  ct_norm_grad_vector_output(c, x->dtype, &outputs[2]);
  *num_outputs = 3;
  return CT_OK;
}

CT_DEFINE_OP(group_norm_backward,
             "The vector-Jacobian product of group_norm for input, weight and bias (torch's "
             "native_group_norm_backward); the statistics are recomputed from input as the "
             "forward computes them (float64). grad_weight and grad_bias are always computed; "
             "sums accumulate in float64, float16/bfloat16 compute in float32.",
             CT_OP_WORKSPACE, CT_FLAGS_PURE, ct_group_norm_backward_inputs,
             ct_channel_norm_backward_outputs, ct_group_norm_backward_attrs,
             ct_infer_group_norm_backward);

/* ----- batch_norm_training ----- */

static const ct_param_schema ct_batch_norm_training_inputs[5] = {
    {"input", "(N, C, *)", 0, 0},
    {"running_mean", "(C,); with running_var, or both absent (then zeros)", CT_PARAM_OPTIONAL, 0},
    {"running_var", "(C,); with running_mean, or both absent (then ones)", CT_PARAM_OPTIONAL, 0},
    {"weight", "(C,), multiplies the result per channel", CT_PARAM_OPTIONAL, 0},
    {"bias", "(C,), added to the result per channel", CT_PARAM_OPTIONAL, 0}};

static const ct_param_schema ct_batch_norm_training_outputs[5] = {
    {"out", "the normalised input, as input", 0, 0},
    {"save_mean", "(C,): the batch mean per channel", 0, 0},
    {"save_invstd", "(C,): 1 / sqrt(biased batch variance + eps) per channel", 0, 0},
    {"new_running_mean",
     "(C,): (1 - momentum) * running_mean + momentum * mean; may be the same view as "
     "running_mean (updated in place)",
     0, 0},
    {"new_running_var",
     "(C,): (1 - momentum) * running_var + momentum * unbiased batch variance; may be the same "
     "view as running_var",
     0, 0}};

static const ct_attr_schema ct_batch_norm_training_attrs[] = {
    CT_ATTR_SPEC_FLOAT("momentum", "weight of the batch statistics in the running ones", 0.1),
    CT_ATTR_SPEC_FLOAT("eps", "added to the variance", 1e-5)};

static int ct_infer_batch_norm_training(const ct_infer_call* call, ct_tensor_info* outputs,
                                        int32_t capacity, int32_t* num_outputs) {
  int status = ct_norm_grad_check_dtypes(call);
  if (status == CT_OK) status = ct_norm_grad_channels(call, 0);
  if (status == CT_OK) status = ct_norm_grad_eps(call, &call->attrs[1]);
  if (status != CT_OK) return status;
  const ct_tensor* x = call->inputs[0];
  const int64_t c = x->shape[1];
  for (int32_t i = 1; i < 5 && status == CT_OK; ++i) status = ct_norm_grad_vector(call, i, c);
  if (status != CT_OK) return status;
  const bool running = call->inputs[1] != NULL;
  if (running != (call->inputs[2] != NULL)) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                        "batch_norm_training: give both running_mean and running_var, or "
                        "neither");
  }
  int64_t per_channel = 1;
  for (int32_t k = 0; k < x->ndim; ++k) per_channel *= k == 1 ? 1 : x->shape[k];
  if (per_channel <= 1 && c > 0) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                        "batch_norm_training: expected more than 1 value per channel when "
                        "training, got input shape with %lld",
                        (long long)per_channel);
  }
  const int32_t count = 5;
  if (capacity < count) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "batch_norm_training: room for %d outputs",
                        count);
  }
  ct_norm_grad_output(x, x->dtype, &outputs[0]);
  for (int32_t i = 1; i < count; ++i) ct_norm_grad_vector_output(c, x->dtype, &outputs[i]);
  *num_outputs = count;
  return CT_OK;
}

CT_DEFINE_OP(batch_norm_training,
             "torch.nn.functional.batch_norm with training=True: normalises each channel (dim 1) "
             "with the batch's mean and biased variance, returns them as save_mean and "
             "save_invstd (for batch_norm_backward), and the momentum update of running_mean and "
             "running_var (with the unbiased variance) as new_running_mean and new_running_var, "
             "which may be the same views as running_mean and running_var to update them in "
             "place; absent running statistics are taken as zeros and ones (a fresh "
             "torch.nn.BatchNorm's buffers). Statistics accumulate in float64, float16/bfloat16 "
             "compute in float32.",
             CT_OP_SHAPE_STATIC,
             CT_OP_FLAG_INPLACE | CT_OP_FLAG_DETERMINISTIC | CT_OP_FLAG_GRAPH_SAFE,
             ct_batch_norm_training_inputs, ct_batch_norm_training_outputs,
             ct_batch_norm_training_attrs, ct_infer_batch_norm_training);

/* ----- batch_norm_backward ----- */

static const ct_param_schema ct_batch_norm_backward_inputs[5] = {
    {"grad_out", "(N, C, *), cotangent of the forward's output", 0, 0},
    {"input", "(N, C, *), the forward's input", 0, 0},
    {"weight", "(C,), the forward's weight (absent: ones)", CT_PARAM_OPTIONAL, 0},
    {"save_mean", "(C,): training: batch_norm_training's save_mean; else the running_mean", 0, 0},
    {"save_invstd",
     "(C,): training: batch_norm_training's save_invstd; else the running_var (the inverse "
     "standard deviation is then 1 / sqrt(running_var + eps))",
     0, 0}};

static const ct_attr_schema ct_batch_norm_backward_attrs[] = {
    CT_ATTR_SPEC_BOOL("training",
                      "true: the statistics were the batch's (their gradient is included); "
                      "false: running statistics, constants (batch_norm in inference)",
                      true),
    CT_ATTR_SPEC_FLOAT("eps", "the forward's eps (used when training is false)", 1e-5)};

static int ct_infer_batch_norm_backward(const ct_infer_call* call, ct_tensor_info* outputs,
                                        int32_t capacity, int32_t* num_outputs) {
  int status = ct_norm_grad_check_dtypes(call);
  if (status == CT_OK) status = ct_norm_grad_same_shape(call, 0, 1);
  if (status == CT_OK) status = ct_norm_grad_channels(call, 1);
  if (status == CT_OK) status = ct_norm_grad_eps(call, &call->attrs[1]);
  if (status != CT_OK) return status;
  const ct_tensor* x = call->inputs[1];
  const int64_t c = x->shape[1];
  for (int32_t i = 2; i < 5 && status == CT_OK; ++i) status = ct_norm_grad_vector(call, i, c);
  if (status != CT_OK) return status;
  if (capacity < 3) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "batch_norm_backward: room for 3 outputs");
  }
  ct_norm_grad_output(x, x->dtype, &outputs[0]);
  ct_norm_grad_vector_output(c, x->dtype, &outputs[1]);
  ct_norm_grad_vector_output(c, x->dtype, &outputs[2]);
  *num_outputs = 3;
  return CT_OK;
}

CT_DEFINE_OP(batch_norm_backward,
             "The vector-Jacobian product of batch_norm_training (training true) or of the "
             "inference batch_norm (training false) for input, weight and bias, as torch's "
             "native_batch_norm_backward. grad_weight and grad_bias are always computed; sums "
             "accumulate in float64, float16/bfloat16 compute in float32.",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_batch_norm_backward_inputs,
             ct_channel_norm_backward_outputs, ct_batch_norm_backward_attrs,
             ct_infer_batch_norm_backward);
