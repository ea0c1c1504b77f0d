/* nn_ops.c - deep-learning operators: softmax, log_softmax, conv2d. */
#include "op_defs.h"

/* ----- softmax ----- */

static const ct_attr_schema ct_softmax_attrs[] = {
    CT_ATTR_SPEC_INT("axis", "axis along which the result sums to one", -1)};

static int ct_infer_softmax(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                            int32_t* num_outputs) {
  const ct_tensor* x = call->inputs[0];
  const int64_t axis = call->attrs[0].value.i;
  /* As torch: a 0-d tensor has one axis for this purpose. */
  int32_t k;
  const int status = ct_normalize_axis(call->schema->name, axis, x->ndim > 0 ? x->ndim : 1, &k);
  if (status != CT_OK) return status;
  return ct_infer_same_as_input(call, outputs, capacity, num_outputs);
}

CT_DEFINE_OP(softmax,
             "exp(x - max) / sum(exp(x - max)) along an axis (torch.nn.functional.softmax); "
             "float16/bfloat16 compute in float32.",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_params_x, ct_params_out, ct_softmax_attrs,
             ct_infer_softmax);

CT_DEFINE_OP(log_softmax,
             "x - max - log(sum(exp(x - max))) along an axis (torch.nn.functional.log_softmax); "
             "float16/bfloat16 compute in float32.",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_params_x, ct_params_out, ct_softmax_attrs,
             ct_infer_softmax);

/* ----- conv2d ----- */

static const ct_param_schema ct_conv2d_inputs[3] = {
    {"input", "(N, C_in, H, W)", 0, 0},
    {"weight", "(C_out, C_in / groups, kH, kW)", 0, 0},
    {"bias", "(C_out,), added to every output position", CT_PARAM_OPTIONAL, 0}};

static const int64_t ct_ones2[2] = {1, 1};
static const int64_t ct_zeros2[2] = {0, 0};

static const ct_attr_schema ct_conv2d_attrs[] = {
    CT_ATTR_SPEC_INT_LIST("stride", "(sH, sW), or one value for both", 2, ct_ones2),
    CT_ATTR_SPEC_INT_LIST("padding", "implicit zero padding (pH, pW) on both sides", 2, ct_zeros2),
    CT_ATTR_SPEC_INT_LIST("dilation", "spacing between kernel taps (dH, dW)", 2, ct_ones2),
    CT_ATTR_SPEC_INT("groups", "input and output channels split into this many groups", 1)};

int ct_conv2d_params(const ct_attr_value* attrs, int64_t stride[2], int64_t padding[2],
                     int64_t dilation[2], int64_t* groups) {
  int status = ct_attr_pair("conv2d", "stride", &attrs[0], NULL, 1, stride);
  if (status == CT_OK) status = ct_attr_pair("conv2d", "padding", &attrs[1], NULL, 0, padding);
  if (status == CT_OK) status = ct_attr_pair("conv2d", "dilation", &attrs[2], NULL, 1, dilation);
  if (status != CT_OK) return status;
  *groups = attrs[3].value.i;
  if (*groups < 1) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "conv2d: groups must be >= 1, got %lld",
                        (long long)*groups);
  }
  return CT_OK;
}

static int ct_infer_conv2d(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                           int32_t* num_outputs) {
  const ct_tensor* x = call->inputs[0];
  const ct_tensor* w = call->inputs[1];
  const ct_tensor* bias = call->inputs[2];
  int64_t stride[2], padding[2], dilation[2], groups;
  int status = ct_conv2d_params(call->attrs, stride, padding, dilation, &groups);
  if (status != CT_OK) return status;
  if (x->ndim != 4 || w->ndim != 4) {
    return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                        "conv2d: input must be 4-D (N, C, H, W) and weight 4-D (O, C/groups, kH, "
                        "kW); got %d-D and %d-D",
                        x->ndim, w->ndim);
  }
  const int64_t channels = x->shape[1], out_channels = w->shape[0];
  if (channels % groups != 0 || out_channels % groups != 0) {
    return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                        "conv2d: input channels (%lld) and output channels (%lld) must be "
                        "divisible by groups (%lld)",
                        (long long)channels, (long long)out_channels, (long long)groups);
  }
  if (w->shape[1] != channels / groups) {
    return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                        "conv2d: weight has %lld input channels per group; input gives %lld / "
                        "%lld groups = %lld",
                        (long long)w->shape[1], (long long)channels, (long long)groups,
                        (long long)(channels / groups));
  }
  if (bias && (bias->ndim != 1 || bias->shape[0] != out_channels)) {
    return ct_set_error(CT_ERROR_SHAPE_MISMATCH, "conv2d: bias must have shape (%lld,)",
                        (long long)out_channels);
  }
  if (!ct_dtype_equal(x->dtype, w->dtype) || (bias && !ct_dtype_equal(x->dtype, bias->dtype))) {
    return ct_set_error(CT_ERROR_UNSUPPORTED_DTYPE,
                        "conv2d: input, weight and bias must share one dtype");
  }
  ct_tensor_info* out = &outputs[0];
  out->dtype = x->dtype;
  out->ndim = 4;
  out->shape[0] = x->shape[0];
  out->shape[1] = out_channels;
  for (int k = 0; k < 2; ++k) {
    const int64_t in = x->shape[2 + k], kernel = w->shape[2 + k];
    int64_t padded, span;
    status = ct_window_extents("conv2d", k, in, kernel, padding[k], dilation[k], &padded, &span);
    if (status != CT_OK) return status;
    if (kernel == 0 || padded < span) {
      return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                          "conv2d: kernel extent %lld (dilated %lld) exceeds padded input extent "
                          "%lld in spatial dimension %d",
                          (long long)kernel, (long long)span, (long long)padded, k);
    }
    out->shape[2 + k] = (padded - span) / stride[k] + 1;
  }
  *num_outputs = 1;
  return CT_OK;
}

CT_DEFINE_OP(conv2d,
             "2-D cross-correlation over NCHW input with OIHW weight, as "
             "torch.nn.functional.conv2d (stride, padding, dilation, groups, optional bias). "
             "Workspace-requesting: the im2col buffer comes from the caller's workspace. "
             "float16/bfloat16 compute in float32.",
             CT_OP_WORKSPACE, CT_FLAGS_PURE, ct_conv2d_inputs, ct_params_out, ct_conv2d_attrs,
             ct_infer_conv2d);

/* ----- conv2d's backward operators ----- */

static const ct_param_schema ct_conv2d_backward_inputs[3] = {
    {"grad_out", "the cotangent of the forward's output (N, C_out, H_out, W_out)", 0, 0},
    {"input", "the forward's input (N, C_in, H, W)", 0, 0},
    {"weight", "the forward's weight (C_out, C_in / groups, kH, kW)", 0, 0}};

static const ct_param_schema ct_conv2d_backward_input_outputs[1] = {
    {"grad_input", "the cotangent of input", 0, 0}};
static const ct_param_schema ct_conv2d_backward_weight_outputs[1] = {
    {"grad_weight", "the cotangent of weight", 0, 0}};

/* conv2d's infer on (input, weight), then grad_out: conv2d's output shape, except that with
 * `partial` its (H, W) may be smaller (conv_transpose2d's weight cotangent reads only the
 * positions its output_padding leaves). */
static int ct_infer_conv2d_backward(const ct_infer_call* call, bool partial, const ct_tensor* like,
                                    ct_tensor_info* outputs, int32_t* num_outputs) {
  const char* op = call->schema->name;
  const ct_tensor* grad_out = call->inputs[0];
  const ct_tensor* forward_inputs[3] = {call->inputs[1], call->inputs[2], NULL};
  const ct_infer_call forward = {&ct_op_def_conv2d.schema, forward_inputs, 3, call->attrs};
  ct_tensor_info expected[1];
  int32_t count = 0;
  int status = ct_infer_conv2d(&forward, expected, 1, &count);
  if (status != CT_OK) return status;
  bool same = grad_out->ndim == 4 && grad_out->shape[0] == expected[0].shape[0] &&
              grad_out->shape[1] == expected[0].shape[1];
  for (int32_t k = 2; same && k < 4; ++k) {
    same = partial ? grad_out->shape[k] >= 1 && grad_out->shape[k] <= expected[0].shape[k]
                   : grad_out->shape[k] == expected[0].shape[k];
  }
  if (!same) {
    return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                        "%s: grad_out must have conv2d's output shape (%lld, %lld, %lld, %lld)", op,
                        (long long)expected[0].shape[0], (long long)expected[0].shape[1],
                        (long long)expected[0].shape[2], (long long)expected[0].shape[3]);
  }
  if (!ct_dtype_equal(grad_out->dtype, like->dtype)) {
    return ct_set_error(CT_ERROR_UNSUPPORTED_DTYPE,
                        "%s: grad_out, input and weight must share one dtype", op);
  }
  if (!ct_dtype_is_float(like->dtype)) {
    return ct_set_error(CT_ERROR_UNSUPPORTED_DTYPE, "%s: the arrays must be float, got %s", op,
                        ct_dtype_describe(like->dtype));
  }
  ct_info_from_tensor(like, like->dtype, &outputs[0]);
  *num_outputs = 1;
  return CT_OK;
}

static int ct_infer_conv2d_backward_input(const ct_infer_call* call, ct_tensor_info* outputs,
                                          int32_t capacity, int32_t* num_outputs) {
  (void)capacity;
  return ct_infer_conv2d_backward(call, false, call->inputs[1], outputs, num_outputs);
}

static int ct_infer_conv2d_backward_weight(const ct_infer_call* call, ct_tensor_info* outputs,
                                           int32_t capacity, int32_t* num_outputs) {
  (void)capacity;
  return ct_infer_conv2d_backward(call, true, call->inputs[2], outputs, num_outputs);
}

CT_DEFINE_OP(conv2d_backward_input,
             "The cotangent of conv2d's input (cuDNN's backward-data): the transposed "
             "convolution of grad_out with weight over the input's extent (input's data is not "
             "read). Workspace-requesting: GEMM then col2im in the caller's workspace. "
             "float16/bfloat16 compute in float32.",
             CT_OP_WORKSPACE, CT_FLAGS_PURE, ct_conv2d_backward_inputs,
             ct_conv2d_backward_input_outputs, ct_conv2d_attrs, ct_infer_conv2d_backward_input);

CT_DEFINE_OP(conv2d_backward_weight,
             "The cotangent of conv2d's weight (cuDNN's backward-filter): grad_out times the "
             "im2col matrix of input, summed over the images (weight's data is not read). "
             "grad_out's (H, W) may be smaller than conv2d's output: only those positions count "
             "(conv_transpose2d's weight cotangent). Workspace-requesting. float16/bfloat16 "
             "compute in float32.",
             CT_OP_WORKSPACE, CT_FLAGS_PURE, ct_conv2d_backward_inputs,
             ct_conv2d_backward_weight_outputs, ct_conv2d_attrs, ct_infer_conv2d_backward_weight);
