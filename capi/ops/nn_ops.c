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
    const int64_t span = dilation[k] * (kernel - 1) + 1;
    const int64_t padded = in + 2 * padding[k];
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
