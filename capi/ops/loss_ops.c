/* loss_ops.c - the losses of torch.nn.functional: cross_entropy, nll_loss,
 * binary_cross_entropy_with_logits, mse_loss, smooth_l1_loss, and their backward operators
 * (gradient rows: gradients/loss_grads.h).
 *
 * reduction is "mean", "sum" or "none" as torch's: "none" gives one loss per sample (per element
 * for the element-wise losses), "sum" their sum and "mean" their mean (a 0-d result), where the
 * mean of nothing is nan (0 / 0), as torch. The class-axis losses (cross_entropy, nll_loss) take
 * the class axis as an attribute (torch's is 1, or 0 for an unbatched 1-D input). */
#include <string.h>

#include "op_defs.h"

/* ----- shared checks ----- */

static int ct_loss_reduction(const char* op, const ct_attr_value* value, int* mode) {
  const char* s = value->value.s;
  if (s && strcmp(s, "none") == 0) {
    *mode = 0;
  } else if (s && strcmp(s, "mean") == 0) {
    *mode = 1;
  } else if (s && strcmp(s, "sum") == 0) {
    *mode = 2;
  } else {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                        "%s: reduction must be \"mean\", \"sum\" or \"none\", got \"%s\"", op,
                        s ? s : "");
  }
  return CT_OK;
}

static int ct_loss_float(const char* op, const char* name, const ct_tensor* t, ct_dtype dtype) {
  if (!t) return CT_OK;
  if (!ct_dtype_is_float(t->dtype)) {
    return ct_set_error(CT_ERROR_UNSUPPORTED_DTYPE, "%s: %s must be a float array, got %s", op,
                        name, ct_dtype_describe(t->dtype));
  }
  if (!ct_dtype_equal(t->dtype, dtype)) {
    return ct_set_error(CT_ERROR_UNSUPPORTED_DTYPE, "%s: %s is %s but must share the dtype %s", op,
                        name, ct_dtype_describe(t->dtype), ct_dtype_describe(dtype));
  }
  return CT_OK;
}

static bool ct_loss_same_shape(const ct_tensor* t, const ct_tensor_info* info) {
  if (t->ndim != info->ndim) return false;
  for (int32_t k = 0; k < t->ndim; ++k) {
    if (t->shape[k] != info->shape[k]) return false;
  }
  return true;
}

static int ct_loss_shape_error(const char* op, const char* name) {
  return ct_set_error(CT_ERROR_SHAPE_MISMATCH, "%s: %s has the wrong shape", op, name);
}

/* The class axis of an ndim-D input: axis normalised; a 1-D input (torch's unbatched (C,)) takes
 * axis 0, 1 or -1 as its only axis. */
static int ct_loss_class_axis(const char* op, int64_t axis, int32_t ndim, int32_t* out) {
  if (ndim < 1) {
    return ct_set_error(CT_ERROR_SHAPE_MISMATCH, "%s: the input needs a class axis (>= 1-D)", op);
  }
  if (ndim == 1 && (axis == 0 || axis == 1 || axis == -1)) {
    *out = 0;
    return CT_OK;
  }
  return ct_normalize_axis(op, axis, ndim, out);
}

/* The (dtype, shape) of a class-axis loss's samples: x's shape without the class axis. */
static void ct_loss_sample_info(const ct_tensor* x, int32_t axis, ct_tensor_info* info) {
  info->dtype = x->dtype;
  info->ndim = 0;
  for (int32_t k = 0; k < x->ndim; ++k) {
    if (k != axis) info->shape[info->ndim++] = x->shape[k];
  }
}

/* A reduced loss is 0-d; "none" keeps `samples`. */
static void ct_loss_output(int mode, const ct_tensor_info* samples, ct_tensor_info* out) {
  *out = *samples;
  if (mode != 0) out->ndim = 0;
}

/* ----- cross_entropy, nll_loss ----- */

static const ct_param_schema ct_cross_entropy_inputs[3] = {
    {"logits", "(N, C, d1, ...) unnormalised scores, the classes along axis", 0, 0},
    {"target",
     "class indices (int32/int64, logits' shape without the class axis) or class probabilities "
     "(logits' shape and dtype)",
     0, 0},
    {"weight", "(C,) per-class rescaling (logits' dtype)", CT_PARAM_OPTIONAL, 0}};

static const ct_param_schema ct_nll_loss_inputs[3] = {
    {"log_probs", "(N, C, d1, ...) log-probabilities, the classes along axis", 0, 0},
    {"target", "class indices (int32/int64, log_probs' shape without the class axis)", 0, 0},
    {"weight", "(C,) per-class rescaling (log_probs' dtype)", CT_PARAM_OPTIONAL, 0}};

#define CT_LOSS_REDUCTION_ATTR \
  CT_ATTR_SPEC_STRING("reduction", "\"mean\", \"sum\" or \"none\" (per sample)", "mean")
#define CT_LOSS_IGNORE_ATTR                                                                      \
  CT_ATTR_SPEC_NULLABLE("ignore_index",                                                          \
                        "class-index targets equal to it add nothing (nor weight to the mean); " \
                        "None: none ignored (torch's -100 default ignores -100)",                \
                        CT_ATTR_INT)

static const ct_attr_schema ct_cross_entropy_attrs[] = {
    CT_ATTR_SPEC_INT("axis", "the class axis (a 1-D input's only axis: 0, 1 or -1)", 1),
    CT_LOSS_REDUCTION_ATTR, CT_LOSS_IGNORE_ATTR,
    CT_ATTR_SPEC_FLOAT("label_smoothing",
                       "in [0, 1]: the target mixed with the uniform distribution, as torch", 0.0)};

static const ct_attr_schema ct_nll_loss_attrs[] = {
    CT_ATTR_SPEC_INT("axis", "the class axis (a 1-D input's only axis: 0, 1 or -1)", 1),
    CT_LOSS_REDUCTION_ATTR, CT_LOSS_IGNORE_ATTR};

/* Checks a class-axis loss call whose (logits, target, weight) are inputs[first..first+2] and
 * whose attributes start at attrs[0] (axis, reduction, ignore_index, [label_smoothing]); gives
 * the samples' info (logits' shape without the class axis) and the reduction mode. */
static int ct_class_loss_check(const ct_infer_call* call, int32_t first, bool probabilities_ok,
                               ct_tensor_info* samples, int* mode) {
  const char* op = call->schema->name;
  const ct_tensor* x = call->inputs[first];
  const ct_tensor* target = call->inputs[first + 1];
  const ct_tensor* weight = call->inputs[first + 2];
  int status = ct_loss_float(op, call->schema->inputs[first].name, x, x->dtype);
  if (status == CT_OK) status = ct_loss_reduction(op, &call->attrs[1], mode);
  int32_t axis = 0;
  if (status == CT_OK) status = ct_loss_class_axis(op, call->attrs[0].value.i, x->ndim, &axis);
  if (status != CT_OK) return status;
  ct_loss_sample_info(x, axis, samples);
  const int64_t classes = x->shape[axis];
  const bool probabilities = ct_dtype_is_float(target->dtype);
  if (probabilities) {
    if (!probabilities_ok) {
      return ct_set_error(CT_ERROR_UNSUPPORTED_DTYPE,
                          "%s: target must hold class indices (int32 or int64), got %s", op,
                          ct_dtype_describe(target->dtype));
    }
    status = ct_loss_float(op, "a probability target", target, x->dtype);
    if (status != CT_OK) return status;
    bool same = target->ndim == x->ndim;
    for (int32_t k = 0; same && k < x->ndim; ++k) same = target->shape[k] == x->shape[k];
    if (!same) {
      return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                          "%s: a probability target must have the logits' shape", op);
    }
    if (call->attrs[2].type != CT_ATTR_NONE) {
      return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                          "%s: ignore_index is not supported for probability targets (as torch)",
                          op);
    }
  } else {
    const int bits = target->dtype.bits;
    if (!ct_dtype_is_signed_integer(target->dtype) || (bits != 32 && bits != 64)) {
      return ct_set_error(
          CT_ERROR_UNSUPPORTED_DTYPE, "%s: target must be int32 or int64 class indices%s, got %s",
          op, probabilities_ok ? " or float probabilities" : "", ct_dtype_describe(target->dtype));
    }
    if (!ct_loss_same_shape(target, samples)) {
      return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                          "%s: class-index target must have the input's shape without the class "
                          "axis",
                          op);
    }
  }
  if (weight) {
    status = ct_loss_float(op, "weight", weight, x->dtype);
    if (status != CT_OK) return status;
    if (weight->ndim != 1 || weight->shape[0] != classes) {
      return ct_set_error(CT_ERROR_SHAPE_MISMATCH, "%s: weight must have shape (%lld,)", op,
                          (long long)classes);
    }
  }
  if (call->schema->num_attrs > 3) {
    const double smoothing = call->attrs[3].value.f;
    if (!(smoothing >= 0.0 && smoothing <= 1.0)) {
      return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "%s: label_smoothing must be in [0, 1]", op);
    }
  }
  return CT_OK;
}

static int ct_infer_class_loss(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                               int32_t* num_outputs) {
  (void)capacity;
  ct_tensor_info samples;
  int mode = 0;
  const bool probabilities_ok = strcmp(call->schema->name, "cross_entropy") == 0;
  const int status = ct_class_loss_check(call, 0, probabilities_ok, &samples, &mode);
  if (status != CT_OK) return status;
  ct_loss_output(mode, &samples, &outputs[0]);
  *num_outputs = 1;
  return CT_OK;
}

CT_DEFINE_OP(cross_entropy,
             "torch.nn.functional.cross_entropy: per sample, with lse = logsumexp of the logits "
             "along axis, a class-index target y gives (1 - s) w[y] (lse - x[y]) + (s / C) sum_c "
             "w[c] (lse - x[c]) (s = label_smoothing, w = weight or ones; 0 where y == "
             "ignore_index), a probability target p gives sum_c w[c] q[c] (lse - x[c]) with q = "
             "(1 - s) p + s / C. \"mean\" divides the sum by the summed w[y] of the samples not "
             "ignored (class indices) or by the number of samples (probabilities); nan when that "
             "is 0, as torch. A class index outside [0, C) that is not ignore_index is an error. "
             "Stable: the exponentials are shifted by the row's maximum (float32 class-index rows: "
             "by the target's logit, one pass, the maximum only where that overflows); float16/"
             "bfloat16 compute in float32, sums accumulate in float64 (float32 blocks of a row "
             "first), and the reduction sums fixed blocks of samples, so results do not depend "
             "on the thread count.",
             CT_OP_SHAPE_STATIC, CT_FLAGS_INDEX_CHECKED, ct_cross_entropy_inputs, ct_params_out,
             ct_cross_entropy_attrs, ct_infer_class_loss);

CT_DEFINE_OP(nll_loss,
             "torch.nn.functional.nll_loss: per sample -w[y] log_probs[y] along axis (w = weight "
             "or ones; 0 where y == ignore_index); \"mean\" divides the sum by the summed w[y] of "
             "the samples not ignored (nan when that is 0, as torch). A class index outside [0, "
             "C) that is not ignore_index is an error.",
             CT_OP_SHAPE_STATIC, CT_FLAGS_INDEX_CHECKED, ct_nll_loss_inputs, ct_params_out,
             ct_nll_loss_attrs, ct_infer_class_loss);

/* ----- binary_cross_entropy_with_logits, mse_loss, smooth_l1_loss ----- */

static const ct_param_schema ct_bce_inputs[4] = {
    {"logits", "unnormalised scores", 0, 0},
    {"target", "probabilities of the positive class (logits' shape and dtype)", 0, 0},
    {"weight", "rescales each element's loss; broadcasts to logits' shape", CT_PARAM_OPTIONAL, 0},
    {"pos_weight", "weight of the positive term; broadcasts to logits' shape", CT_PARAM_OPTIONAL,
     0}};

static const ct_param_schema ct_pair_loss_inputs[2] = {
    {"x", "the input", 0, 0}, {"target", "the target; broadcasts with x (as torch)", 0, 0}};

static const ct_attr_schema ct_pair_loss_attrs[] = {CT_LOSS_REDUCTION_ATTR};

static const ct_attr_schema ct_smooth_l1_attrs[] = {
    CT_LOSS_REDUCTION_ATTR,
    CT_ATTR_SPEC_FLOAT("beta", "below |x - target| < beta the loss is quadratic; 0: L1", 1.0)};

/* The element shape of an element-wise loss (inputs[first..]: x, target, weight, pos_weight) and
 * the reduction (attrs[0]). */
static int ct_pointwise_loss_check(const ct_infer_call* call, int32_t first, int32_t count,
                                   ct_tensor_info* elements, int* mode) {
  const char* op = call->schema->name;
  const ct_tensor* x = call->inputs[first];
  int status = CT_OK;
  for (int32_t i = first; i < first + count && status == CT_OK; ++i) {
    status = ct_loss_float(op, call->schema->inputs[i].name, call->inputs[i], x->dtype);
  }
  if (status == CT_OK) status = ct_loss_reduction(op, &call->attrs[0], mode);
  if (status != CT_OK) return status;
  const bool bce = strncmp(op, "binary_cross_entropy_with_logits", 32) == 0;
  if (bce) {
    /* target has logits' shape; weight and pos_weight broadcast to it without growing it */
    const ct_tensor* target = call->inputs[first + 1];
    ct_info_from_tensor(x, x->dtype, elements);
    if (!ct_loss_same_shape(target, elements)) {
      return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                          "%s: target must have the logits' shape (as torch)", op);
    }
    for (int32_t i = first + 2; i < first + count; ++i) {
      const ct_tensor* pair[2] = {x, call->inputs[i]};
      if (!pair[1]) continue;
      ct_tensor_info both;
      status = ct_infer_broadcast_shape(op, pair, 2, &both);
      if (status != CT_OK) return status;
      if (!ct_loss_same_shape(x, &both)) {
        return ct_set_error(CT_ERROR_SHAPE_MISMATCH, "%s: %s must broadcast to the logits' shape",
                            op, call->schema->inputs[i].name);
      }
    }
    return CT_OK;
  }
  status = ct_infer_broadcast_shape(op, call->inputs + first, 2, elements);
  elements->dtype = x->dtype;
  if (status == CT_OK && call->schema->num_attrs > 1 && !(call->attrs[1].value.f >= 0.0)) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "%s: beta must be >= 0 (as torch)", op);
  }
  return status;
}

static int ct_infer_pointwise_loss(const ct_infer_call* call, ct_tensor_info* outputs,
                                   int32_t capacity, int32_t* num_outputs) {
  (void)capacity;
  ct_tensor_info elements;
  int mode = 0;
  const int status = ct_pointwise_loss_check(call, 0, call->schema->num_inputs, &elements, &mode);
  if (status != CT_OK) return status;
  ct_loss_output(mode, &elements, &outputs[0]);
  *num_outputs = 1;
  return CT_OK;
}

CT_DEFINE_OP(binary_cross_entropy_with_logits,
             "torch.nn.functional.binary_cross_entropy_with_logits: per element w (-p t "
             "log(sigmoid(x)) - (1 - t) log(1 - sigmoid(x))) with w = weight and p = pos_weight "
             "(ones when absent), computed as w ((1 - t) x - (1 + (p - 1) t) log_sigmoid(x)) "
             "with a stable log_sigmoid; float16/bfloat16 compute in float32, sums accumulate in "
             "float64 over fixed blocks.",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_bce_inputs, ct_params_out, ct_pair_loss_attrs,
             ct_infer_pointwise_loss);

CT_DEFINE_OP(mse_loss,
             "torch.nn.functional.mse_loss: (x - target)^2 per element of their broadcast "
             "shape; float16/bfloat16 compute in float32, sums accumulate in float64 over fixed "
             "blocks.",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_pair_loss_inputs, ct_params_out,
             ct_pair_loss_attrs, ct_infer_pointwise_loss);

CT_DEFINE_OP(smooth_l1_loss,
             "torch.nn.functional.smooth_l1_loss: with d = |x - target| over their broadcast "
             "shape, 0.5 d^2 / beta where d < beta, else d - 0.5 beta (beta = 0: d, the L1 "
             "loss); float16/bfloat16 compute in float32, sums accumulate in float64 over fixed "
             "blocks.",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_pair_loss_inputs, ct_params_out,
             ct_smooth_l1_attrs, ct_infer_pointwise_loss);

/* ----- backward operators ----- */

/* grad_out has the forward output's shape (0-d when reduced, the samples' shape for "none") and
 * the input's dtype. */
static int ct_loss_check_grad_out(const ct_infer_call* call, int mode,
                                  const ct_tensor_info* samples) {
  const char* op = call->schema->name;
  const ct_tensor* g = call->inputs[0];
  int status = ct_loss_float(op, "grad_out", g, samples->dtype);
  if (status != CT_OK) return status;
  ct_tensor_info want;
  ct_loss_output(mode, samples, &want);
  if (!ct_loss_same_shape(g, &want)) return ct_loss_shape_error(op, "grad_out");
  return CT_OK;
}

static const ct_param_schema ct_cross_entropy_backward_inputs[4] = {
    {"grad_out", "cotangent of the loss (0-d when reduced, per sample for \"none\")", 0, 0},
    {"logits", "the forward's logits", 0, 0},
    {"target", "the forward's target", 0, 0},
    {"weight", "the forward's weight", CT_PARAM_OPTIONAL, 0}};
static const ct_param_schema ct_cross_entropy_backward_outputs[2] = {
    {"grad_logits", "cotangent of logits", 0, 0},
    {"grad_target",
     "cotangent of a probability target (target's shape, logits' dtype); zeros for class "
     "indices, which are not differentiable",
     0, 0}};

static const ct_param_schema ct_nll_loss_backward_inputs[4] = {
    {"grad_out", "cotangent of the loss (0-d when reduced, per sample for \"none\")", 0, 0},
    {"log_probs", "the forward's log_probs", 0, 0},
    {"target", "the forward's target", 0, 0},
    {"weight", "the forward's weight", CT_PARAM_OPTIONAL, 0}};
static const ct_param_schema ct_nll_loss_backward_outputs[1] = {
    {"grad_log_probs", "cotangent of log_probs", 0, 0}};

static int ct_infer_class_loss_backward(const ct_infer_call* call, ct_tensor_info* outputs,
                                        int32_t capacity, int32_t* num_outputs) {
  (void)capacity;
  ct_tensor_info samples;
  int mode = 0;
  const bool ce = strcmp(call->schema->name, "cross_entropy_backward") == 0;
  int status = ct_class_loss_check(call, 1, ce, &samples, &mode);
  if (status == CT_OK) status = ct_loss_check_grad_out(call, mode, &samples);
  if (status != CT_OK) return status;
  const ct_tensor* x = call->inputs[1];
  ct_info_from_tensor(x, x->dtype, &outputs[0]);
  *num_outputs = 1;
  if (ce) {
    ct_info_from_tensor(call->inputs[2], x->dtype, &outputs[1]);
    *num_outputs = 2;
  }
  return CT_OK;
}

CT_DEFINE_OP(cross_entropy_backward,
             "Cotangents of cross_entropy (same attributes): grad_logits = g (softmax(x) sum_c "
             "w[c] q[c] - w q) per sample, q the (smoothed) target distribution and g the "
             "sample's cotangent (divided by the mean's denominator for \"mean\"); ignored "
             "samples get 0. grad_target, for probability targets, is g (1 - s) w (lse - x); for "
             "class indices it is zeros. float16/bfloat16 compute in float32.",
             CT_OP_SHAPE_STATIC, CT_FLAGS_INDEX_CHECKED, ct_cross_entropy_backward_inputs,
             ct_cross_entropy_backward_outputs, ct_cross_entropy_attrs,
             ct_infer_class_loss_backward);

CT_DEFINE_OP(nll_loss_backward,
             "Cotangent of nll_loss's log_probs (same attributes): -g w[y] at the target class "
             "of each sample not ignored, 0 elsewhere; g the sample's cotangent (divided by the "
             "mean's denominator for \"mean\").",
             CT_OP_SHAPE_STATIC, CT_FLAGS_INDEX_CHECKED, ct_nll_loss_backward_inputs,
             ct_nll_loss_backward_outputs, ct_nll_loss_attrs, ct_infer_class_loss_backward);

static const ct_param_schema ct_bce_backward_inputs[5] = {
    {"grad_out", "cotangent of the loss (0-d when reduced, logits' shape for \"none\")", 0, 0},
    {"logits", "the forward's logits", 0, 0},
    {"target", "the forward's target", 0, 0},
    {"weight", "the forward's weight", CT_PARAM_OPTIONAL, 0},
    {"pos_weight", "the forward's pos_weight", CT_PARAM_OPTIONAL, 0}};
static const ct_param_schema ct_bce_backward_outputs[2] = {
    {"grad_logits", "cotangent of logits", 0, 0}, {"grad_target", "cotangent of target", 0, 0}};

static const ct_param_schema ct_pair_loss_backward_inputs[3] = {
    {"grad_out", "cotangent of the loss (0-d when reduced, the broadcast shape for \"none\")", 0,
     0},
    {"x", "the forward's x", 0, 0},
    {"target", "the forward's target", 0, 0}};
static const ct_param_schema ct_pair_loss_backward_outputs[1] = {
    {"grad",
     "cotangent of x at the broadcast shape of x and target (that of target is its "
     "negation); sum_to_shape reduces it to each input's shape",
     0, 0}};

static int ct_infer_pointwise_loss_backward(const ct_infer_call* call, ct_tensor_info* outputs,
                                            int32_t capacity, int32_t* num_outputs) {
  (void)capacity;
  ct_tensor_info elements;
  int mode = 0;
  int status = ct_pointwise_loss_check(call, 1, call->schema->num_inputs - 1, &elements, &mode);
  if (status == CT_OK) status = ct_loss_check_grad_out(call, mode, &elements);
  if (status != CT_OK) return status;
  *num_outputs = call->schema->num_outputs;
  for (int32_t k = 0; k < *num_outputs; ++k) outputs[k] = elements;
  return CT_OK;
}

CT_DEFINE_OP(binary_cross_entropy_with_logits_backward,
             "Cotangents of binary_cross_entropy_with_logits (same attributes), at logits' "
             "shape: grad_logits = g w ((1 + (p - 1) t) sigmoid(x) - p t), grad_target = g w "
             "(-x - (p - 1) log_sigmoid(x)), g the element's cotangent (divided by the element "
             "count for \"mean\").",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_bce_backward_inputs, ct_bce_backward_outputs,
             ct_pair_loss_attrs, ct_infer_pointwise_loss_backward);

CT_DEFINE_OP(mse_loss_backward,
             "Cotangent of mse_loss's x at the broadcast shape: 2 g (x - target), g the "
             "element's cotangent (divided by the element count for \"mean\").",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_pair_loss_backward_inputs,
             ct_pair_loss_backward_outputs, ct_pair_loss_attrs, ct_infer_pointwise_loss_backward);

CT_DEFINE_OP(smooth_l1_loss_backward,
             "Cotangent of smooth_l1_loss's x at the broadcast shape: g d / beta where |d| < "
             "beta, else g sign(d) (d = x - target; sign(0) = 0), g the element's cotangent "
             "(divided by the element count for \"mean\"), as torch.",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_pair_loss_backward_inputs,
             ct_pair_loss_backward_outputs, ct_smooth_l1_attrs, ct_infer_pointwise_loss_backward);
