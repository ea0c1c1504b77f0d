/* nn_norm_ops.c - normalisation operators: layer_norm, rms_norm, group_norm, batch_norm
 * (inference), as torch.nn.functional. */
#include "op_defs.h"

/* Every tensor given shares x's dtype, which is a float. */
static int ct_norm_check_dtypes(const char* op, const ct_infer_call* call) {
  const ct_dtype dtype = call->inputs[0]->dtype;
  if (!ct_dtype_is_float(dtype)) {
    return ct_set_error(CT_ERROR_UNSUPPORTED_DTYPE, "%s: input must be a float array, got %s", op,
                        ct_dtype_describe(dtype));
  }
  for (int32_t i = 1; i < call->num_inputs; ++i) {
    if (call->inputs[i] && !ct_dtype_equal(call->inputs[i]->dtype, dtype)) {
      return ct_set_error(CT_ERROR_UNSUPPORTED_DTYPE,
                          "%s: every input must share the input's dtype %s", op,
                          ct_dtype_describe(dtype));
    }
  }
  return CT_OK;
}

/* t is 1-D of extent n. */
static int ct_norm_check_vector(const char* op, const char* name, const ct_tensor* t, int64_t n) {
  if (t && (t->ndim != 1 || t->shape[0] != n)) {
    return ct_set_error(CT_ERROR_SHAPE_MISMATCH, "%s: %s must have shape (%lld,)", op, name,
                        (long long)n);
  }
  return CT_OK;
}

/* ----- layer_norm, rms_norm ----- */

static const ct_param_schema ct_layer_norm_inputs[3] = {
    {"input", "(*, normalized_shape)", 0, 0},
    {"weight", "normalized_shape, multiplies the result", CT_PARAM_OPTIONAL, 0},
    {"bias", "normalized_shape, added to the result", CT_PARAM_OPTIONAL, 0}};

static const ct_attr_schema ct_layer_norm_attrs[] = {
    CT_ATTR_SPEC_REQUIRED("normalized_shape", "the trailing dims normalised over",
                          CT_ATTR_INT_LIST),
    CT_ATTR_SPEC_FLOAT("eps", "added to the variance", 1e-5)};

static const ct_param_schema ct_rms_norm_inputs[2] = {
    {"input", "(*, normalized_shape)", 0, 0},
    {"weight", "normalized_shape, multiplies the result", CT_PARAM_OPTIONAL, 0}};

static const ct_attr_schema ct_rms_norm_attrs[] = {
    CT_ATTR_SPEC_REQUIRED("normalized_shape", "the trailing dims normalised over",
                          CT_ATTR_INT_LIST),
    CT_ATTR_SPEC_NULLABLE("eps",
                          "added to the mean square; None: the machine epsilon of the compute "
                          "type (float32 for float16/bfloat16), as torch",
                          CT_ATTR_FLOAT)};

static int ct_infer_trailing_norm(const char* op, const ct_infer_call* call,
                                  ct_tensor_info* outputs, int32_t capacity, int32_t* num_outputs) {
  const ct_tensor* x = call->inputs[0];
  const ct_attr_value* shape = &call->attrs[0];
  int status = ct_norm_check_dtypes(op, call);
  if (status != CT_OK) return status;
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
  for (int32_t i = 1; i < call->num_inputs; ++i) {
    const ct_tensor* p = call->inputs[i];
    if (!p) continue;
    bool ok = p->ndim == (int32_t)shape->count;
    for (int32_t k = 0; ok && k < p->ndim; ++k) ok = p->shape[k] == shape->value.ints[k];
    if (!ok) {
      return ct_set_error(CT_ERROR_SHAPE_MISMATCH, "%s: %s must have shape normalized_shape", op,
                          call->schema->inputs[i].name);
    }
  }
  if (call->attrs[1].type == CT_ATTR_FLOAT && !(call->attrs[1].value.f >= 0)) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "%s: eps must be >= 0", op);
  }
  return ct_infer_same_as_input(call, outputs, capacity, num_outputs);
}

static int ct_infer_layer_norm(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                               int32_t* num_outputs) {
  return ct_infer_trailing_norm("layer_norm", call, outputs, capacity, num_outputs);
}

static int ct_infer_rms_norm(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                             int32_t* num_outputs) {
  return ct_infer_trailing_norm("rms_norm", call, outputs, capacity, num_outputs);
}

CT_DEFINE_OP(layer_norm,
             "(x - mean) / sqrt(var + eps) * weight + bias over the trailing normalized_shape "
             "dims, biased variance (torch.nn.functional.layer_norm); statistics accumulate in "
             "float64, float16/bfloat16 compute in float32.",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_layer_norm_inputs, ct_params_out,
             ct_layer_norm_attrs, ct_infer_layer_norm);

CT_DEFINE_OP(rms_norm,
             "x / sqrt(mean(x^2) + eps) * weight over the trailing normalized_shape dims "
             "(torch.nn.functional.rms_norm); the mean square accumulates in float64, "
             "float16/bfloat16 compute in float32.",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_rms_norm_inputs, ct_params_out,
             ct_rms_norm_attrs, ct_infer_rms_norm);

/* ----- group_norm ----- */

static const ct_param_schema ct_group_norm_inputs[3] = {
    {"input", "(N, C, *)", 0, 0},
    {"weight", "(C,), multiplies the result per channel", CT_PARAM_OPTIONAL, 0},
    {"bias", "(C,), added to the result per channel", CT_PARAM_OPTIONAL, 0}};

static const ct_attr_schema ct_group_norm_attrs[] = {
    CT_ATTR_SPEC_REQUIRED("num_groups", "channels split into this many groups", CT_ATTR_INT),
    CT_ATTR_SPEC_FLOAT("eps", "added to the variance", 1e-5)};

static int ct_infer_group_norm(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                               int32_t* num_outputs) {
  const ct_tensor* x = call->inputs[0];
  const int64_t groups = call->attrs[0].value.i;
  int status = ct_norm_check_dtypes("group_norm", call);
  if (status != CT_OK) return status;
  if (x->ndim < 2) {
    return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                        "group_norm: input must be (N, C, *) with at least 2 dims, got %d-D",
                        x->ndim);
  }
  if (groups < 1 || x->shape[1] % groups != 0) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                        "group_norm: num_groups (%lld) must be >= 1 and divide the channels "
                        "(%lld)",
                        (long long)groups, (long long)x->shape[1]);
  }
  status = ct_norm_check_vector("group_norm", "weight", call->inputs[1], x->shape[1]);
  if (status == CT_OK) {
    status = ct_norm_check_vector("group_norm", "bias", call->inputs[2], x->shape[1]);
  }
  if (status != CT_OK) return status;
  if (!(call->attrs[1].value.f >= 0)) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "group_norm: eps must be >= 0");
  }
  return ct_infer_same_as_input(call, outputs, capacity, num_outputs);
}

CT_DEFINE_OP(group_norm,
             "(x - mean) / sqrt(var + eps) * weight + bias, statistics per (sample, group of "
             "channels), biased variance (torch.nn.functional.group_norm); statistics "
             "accumulate in float64, float16/bfloat16 compute in float32.",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_group_norm_inputs, ct_params_out,
             ct_group_norm_attrs, ct_infer_group_norm);

/* ----- batch_norm (inference) ----- */

static const ct_param_schema ct_batch_norm_inputs[5] = {
    {"input", "(N, C, *)", 0, 0},
    {"running_mean", "(C,)", 0, 0},
    {"running_var", "(C,)", 0, 0},
    {"weight", "(C,), multiplies the result per channel", CT_PARAM_OPTIONAL, 0},
    {"bias", "(C,), added to the result per channel", CT_PARAM_OPTIONAL, 0}};

static const ct_attr_schema ct_batch_norm_attrs[] = {
    CT_ATTR_SPEC_FLOAT("eps", "added to the variance", 1e-5)};

static int ct_infer_batch_norm(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                               int32_t* num_outputs) {
  const ct_tensor* x = call->inputs[0];
  int status = ct_norm_check_dtypes("batch_norm", call);
  if (status != CT_OK) return status;
  if (x->ndim < 2) {
    return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                        "batch_norm: input must be (N, C, *) with at least 2 dims, got %d-D",
                        x->ndim);
  }
  for (int32_t i = 1; i < 5 && status == CT_OK; ++i) {
    status = ct_norm_check_vector("batch_norm", call->schema->inputs[i].name, call->inputs[i],
                                  x->shape[1]);
  }
  if (status != CT_OK) return status;
  if (!(call->attrs[0].value.f >= 0)) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "batch_norm: eps must be >= 0");
  }
  return ct_infer_same_as_input(call, outputs, capacity, num_outputs);
}

CT_DEFINE_OP(batch_norm,
             "(x - running_mean) / sqrt(running_var + eps) * weight + bias per channel (dim 1): "
             "torch.nn.functional.batch_norm with training=False; float16/bfloat16 compute in "
             "float32.",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_batch_norm_inputs, ct_params_out,
             ct_batch_norm_attrs, ct_infer_batch_norm);
