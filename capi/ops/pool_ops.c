/* pool_ops.c - 2-D pooling over (N, C, H, W) or (C, H, W) input: max_pool2d, avg_pool2d,
 * adaptive_avg_pool2d; interpolate (resizing NCHW input) and conv_transpose2d; as
 * torch.nn.functional. */
#include <math.h>
#include <string.h>

#include "op_defs.h"

static const int64_t ct_pool_ones2[2] = {1, 1};
static const int64_t ct_pool_zeros2[2] = {0, 0};

static const ct_param_schema ct_pool_inputs[1] = {{"input", "(N, C, H, W) or (C, H, W)", 0, 0}};

/* Input is 3-D or 4-D with non-zero non-batch dims (as torch); float, or (max_pool2d) any
 * integer dtype. */
static int ct_pool_check_input(const char* op, const ct_tensor* x) {
  if (x->ndim != 3 && x->ndim != 4) {
    return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                        "%s: input must be (N, C, H, W) or (C, H, W), got %d-D", op, x->ndim);
  }
  for (int32_t k = x->ndim - 3; k < x->ndim; ++k) {
    if (x->shape[k] == 0) {
      return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                          "%s: input must have non-zero size in its non-batch dims", op);
    }
  }
  const bool integer_max = strcmp(op, "max_pool2d") == 0 && ct_dtype_is_integer(x->dtype);
  if (!ct_dtype_is_float(x->dtype) && !integer_max) {
    return ct_set_error(CT_ERROR_UNSUPPORTED_DTYPE, "%s: input must be a float array, got %s", op,
                        ct_dtype_describe(x->dtype));
  }
  return CT_OK;
}

/* Output extent, as torch's pooling_output_shape, in *out; CT_ERROR_SIZE_OVERFLOW when the
 * padded extent or the dilated window does not fit in int64. */
static int ct_pool_out_size(const char* op, int dim, int64_t in, int64_t kernel, int64_t pad,
                            int64_t stride, int64_t dilation, bool ceil_mode, int64_t* out) {
  int64_t padded, span;
  const int status = ct_window_extents(op, dim, in, kernel, pad, dilation, &padded, &span);
  if (status != CT_OK) return status;
  /* padded >= 0 and span >= 1, so the difference fits. floor((numerator + (ceil_mode ? stride -
   * 1 : 0)) / stride) without forming the sum, which may overflow for a large stride. */
  const int64_t numerator = padded - span;
  int64_t size;
  if (numerator >= 0) {
    size = numerator / stride + (ceil_mode && numerator % stride != 0) + 1;
  } else {
    const int64_t rounded = numerator + (ceil_mode ? stride - 1 : 0); /* below stride - 1 */
    size = (rounded >= 0 ? rounded / stride : -((-rounded - 1) / stride + 1)) + 1;
  }
  /* ceil_mode drops a last window that would start in the right padding; a start past int64
   * lies there too. in + pad <= padded fits. */
  int64_t last_start;
  if (ceil_mode &&
      (__builtin_mul_overflow(size - 1, stride, &last_start) || last_start >= in + pad))
    --size;
  *out = size;
  return CT_OK;
}

/* Shared by max_pool2d (dilation given) and avg_pool2d (dilation NULL: 1). */
static int ct_infer_pool(const char* op, const ct_infer_call* call,
                         const ct_attr_value* dilation_attr, bool ceil_mode,
                         ct_tensor_info* outputs, int32_t* num_outputs) {
  const ct_tensor* x = call->inputs[0];
  int64_t kernel[2], stride[2], padding[2], dilation[2] = {1, 1};
  int status = ct_pool_check_input(op, x);
  if (status == CT_OK) status = ct_attr_pair(op, "kernel_size", &call->attrs[0], NULL, 1, kernel);
  if (status == CT_OK) status = ct_attr_pair(op, "stride", &call->attrs[1], kernel, 1, stride);
  if (status == CT_OK) status = ct_attr_pair(op, "padding", &call->attrs[2], NULL, 0, padding);
  if (status == CT_OK && dilation_attr) {
    status = ct_attr_pair(op, "dilation", dilation_attr, NULL, 1, dilation);
  }
  if (status != CT_OK) return status;
  /* Any padding, as ONNX's MaxPool and AveragePool allow (torch refuses more than half the
   * kernel): a window that lies entirely in the padding gives max_pool2d's padding value (-inf,
   * the dtype's minimum for integers) and avg_pool2d 0 (with count_include_pad too, where no
   * element of the input is in it). The output extents grow with it, as torch's formula. */
  ct_info_from_tensor(x, x->dtype, &outputs[0]);
  for (int k = 0; k < 2; ++k) {
    const int64_t in = x->shape[x->ndim - 2 + k];
    int64_t out;
    status =
        ct_pool_out_size(op, k, in, kernel[k], padding[k], stride[k], dilation[k], ceil_mode, &out);
    if (status != CT_OK) return status;
    if (out < 1) {
      return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                          "%s: output size is too small (input extent %lld in spatial dim %d)", op,
                          (long long)in, k);
    }
    outputs[0].shape[x->ndim - 2 + k] = out;
  }
  *num_outputs = 1;
  return CT_OK;
}

/* ----- max_pool2d ----- */

static const ct_attr_schema ct_max_pool2d_attrs[] = {
    CT_ATTR_SPEC_REQUIRED("kernel_size", "(kH, kW), or one value for both", CT_ATTR_INT_LIST),
    CT_ATTR_SPEC_NULLABLE("stride", "(sH, sW); None or [] means kernel_size", CT_ATTR_INT_LIST),
    CT_ATTR_SPEC_INT_LIST("padding", "implicit -inf padding (pH, pW) on both sides", 2,
                          ct_pool_zeros2),
    CT_ATTR_SPEC_INT_LIST("dilation", "spacing between window taps (dH, dW)", 2, ct_pool_ones2),
    CT_ATTR_SPEC_BOOL("ceil_mode", "round the output extent up instead of down", false)};

static int ct_infer_max_pool2d(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                               int32_t* num_outputs) {
  (void)capacity;
  return ct_infer_pool("max_pool2d", call, &call->attrs[3], call->attrs[4].value.b != 0, outputs,
                       num_outputs);
}

CT_DEFINE_OP(max_pool2d,
             "Maximum over sliding windows (torch.nn.functional.max_pool2d without indices); NaN "
             "propagates. Any padding (ONNX MaxPool; torch allows at most half the kernel): a "
             "window entirely in the padding gives -inf. Integer inputs too (ONNX MaxPool's "
             "int8/uint8; torch's CPU max_pool2d takes integers): the padding is the dtype's "
             "minimum. Not differentiable for integers.",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_pool_inputs, ct_params_out, ct_max_pool2d_attrs,
             ct_infer_max_pool2d);

/* ----- avg_pool2d ----- */

static const ct_attr_schema ct_avg_pool2d_attrs[] = {
    CT_ATTR_SPEC_REQUIRED("kernel_size", "(kH, kW), or one value for both", CT_ATTR_INT_LIST),
    CT_ATTR_SPEC_NULLABLE("stride", "(sH, sW); None or [] means kernel_size", CT_ATTR_INT_LIST),
    CT_ATTR_SPEC_INT_LIST("padding", "implicit zero padding (pH, pW) on both sides", 2,
                          ct_pool_zeros2),
    CT_ATTR_SPEC_BOOL("ceil_mode", "round the output extent up instead of down", false),
    CT_ATTR_SPEC_BOOL("count_include_pad", "the padding counts in the divisor", true),
    CT_ATTR_SPEC_NULLABLE("divisor_override", "divide by this instead of the window size",
                          CT_ATTR_INT)};

static int ct_infer_avg_pool2d(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                               int32_t* num_outputs) {
  (void)capacity;
  if (call->attrs[5].type == CT_ATTR_INT && call->attrs[5].value.i == 0) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "avg_pool2d: divisor_override must be non-zero");
  }
  return ct_infer_pool("avg_pool2d", call, NULL, call->attrs[3].value.b != 0, outputs, num_outputs);
}

CT_DEFINE_OP(avg_pool2d,
             "Mean over sliding windows (torch.nn.functional.avg_pool2d); sums in float32 for "
             "float16/bfloat16/float32, float64 for float64. Any padding (ONNX AveragePool; "
             "torch allows at most half the kernel): a window entirely in the padding gives 0, "
             "also with count_include_pad=False (no 0 / 0).",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_pool_inputs, ct_params_out, ct_avg_pool2d_attrs,
             ct_infer_avg_pool2d);

/* ----- adaptive_avg_pool2d ----- */

static const ct_attr_schema ct_adaptive_avg_pool2d_attrs[] = {CT_ATTR_SPEC_REQUIRED(
    "output_size", "(H_out, W_out), or one value for both", CT_ATTR_INT_LIST)};

static int ct_infer_adaptive_avg_pool2d(const ct_infer_call* call, ct_tensor_info* outputs,
                                        int32_t capacity, int32_t* num_outputs) {
  (void)capacity;
  const ct_tensor* x = call->inputs[0];
  int64_t size[2] = {0, 0};
  int status = ct_pool_check_input("adaptive_avg_pool2d", x);
  if (status == CT_OK) {
    status = ct_attr_pair("adaptive_avg_pool2d", "output_size", &call->attrs[0], NULL, 0, size);
  }
  if (status != CT_OK) return status;
  ct_info_from_tensor(x, x->dtype, &outputs[0]);
  outputs[0].shape[x->ndim - 2] = size[0];
  outputs[0].shape[x->ndim - 1] = size[1];
  *num_outputs = 1;
  return CT_OK;
}

CT_DEFINE_OP(adaptive_avg_pool2d,
             "Mean over windows [floor(i·H/H_out), ceil((i+1)·H/H_out)) per output index "
             "(torch.nn.functional.adaptive_avg_pool2d); sums in float32 for "
             "float16/bfloat16/float32, float64 for float64.",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_pool_inputs, ct_params_out,
             ct_adaptive_avg_pool2d_attrs, ct_infer_adaptive_avg_pool2d);

/* ----- interpolate ----- */

static const ct_param_schema ct_interpolate_inputs[1] = {{"input", "(N, C, H, W)", 0, 0}};

static const ct_attr_schema ct_interpolate_attrs[] = {
    CT_ATTR_SPEC_NULLABLE("size", "output (H_out, W_out), or one value for both; or None",
                          CT_ATTR_INT_LIST),
    CT_ATTR_SPEC_NULLABLE("scale_factor",
                          "multipliers (sH, sW), or one for both: H_out = floor(H · sH); the "
                          "source index uses 1 / sH, as torch",
                          CT_ATTR_FLOAT_LIST),
    CT_ATTR_SPEC_STRING("mode", "\"nearest\" or \"bilinear\"", "nearest"),
    CT_ATTR_SPEC_NULLABLE("align_corners",
                          "bilinear only: corner pixels' centres align (None means False)",
                          CT_ATTR_BOOL)};

static int ct_infer_interpolate(const ct_infer_call* call, ct_tensor_info* outputs,
                                int32_t capacity, int32_t* num_outputs) {
  (void)capacity;
  const ct_tensor* x = call->inputs[0];
  const ct_attr_value* size = &call->attrs[0];
  const ct_attr_value* scale = &call->attrs[1];
  const char* mode = call->attrs[2].value.s;
  const bool nearest = strcmp(mode, "nearest") == 0;
  if (!nearest && strcmp(mode, "bilinear") != 0) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                        "interpolate: mode must be \"nearest\" or \"bilinear\", got \"%s\"", mode);
  }
  if (nearest && call->attrs[3].type != CT_ATTR_NONE) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                        "interpolate: align_corners can only be set with mode \"bilinear\"");
  }
  if (x->ndim != 4) {
    return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                        "interpolate: input must be (N, C, H, W), got %d-D", x->ndim);
  }
  if (!ct_dtype_is_float(x->dtype)) {
    return ct_set_error(CT_ERROR_UNSUPPORTED_DTYPE,
                        "interpolate: input must be a float array, got %s",
                        ct_dtype_describe(x->dtype));
  }
  if ((size->type == CT_ATTR_NONE) == (scale->type == CT_ATTR_NONE)) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                        "interpolate: give exactly one of size and scale_factor");
  }
  const ct_attr_value* given = size->type != CT_ATTR_NONE ? size : scale;
  if (given->count != 1 && given->count != 2) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "interpolate: %s takes 1 or 2 values, got %lld",
                        given == size ? "size" : "scale_factor", (long long)given->count);
  }
  ct_info_from_tensor(x, x->dtype, &outputs[0]);
  for (int k = 0; k < 2; ++k) {
    const int64_t in = x->shape[2 + k];
    int64_t out;
    if (given == size) {
      out = size->value.ints[k < size->count ? k : 0];
    } else {
      const double factor = scale->value.floats[k < scale->count ? k : 0];
      if (!(factor > 0) || !(factor * (double)in < 9.0e18)) {
        return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                            "interpolate: scale_factor must be positive and finite, got %g",
                            factor);
      }
      out = (int64_t)floor((double)in * factor);
    }
    if (in <= 0 || out <= 0) {
      return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                          "interpolate: input and output sizes must be > 0 (spatial dim %d: "
                          "%lld -> %lld)",
                          k, (long long)in, (long long)out);
    }
    outputs[0].shape[2 + k] = out;
  }
  if (x->shape[1] == 0) {
    return ct_set_error(CT_ERROR_SHAPE_MISMATCH, "interpolate: input must have channels");
  }
  *num_outputs = 1;
  return CT_OK;
}

CT_DEFINE_OP(interpolate,
             "Resizes the (H, W) dims of NCHW input, as torch.nn.functional.interpolate with mode "
             "\"nearest\" or \"bilinear\" (antialias=False, recompute_scale_factor=None): the same "
             "source-index arithmetic, in float32 for float16/bfloat16/float32 and float64 for "
             "float64.",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_interpolate_inputs, ct_params_out,
             ct_interpolate_attrs, ct_infer_interpolate);

/* ----- conv_transpose2d ----- */

static const ct_param_schema ct_conv_transpose2d_inputs[3] = {
    {"input", "(N, C_in, H, W)", 0, 0},
    {"weight", "(C_in, C_out / groups, kH, kW)", 0, 0},
    {"bias", "(C_out,), added to every output position", CT_PARAM_OPTIONAL, 0}};

static const ct_attr_schema ct_conv_transpose2d_attrs[] = {
    CT_ATTR_SPEC_INT_LIST("stride", "(sH, sW), or one value for both", 2, ct_pool_ones2),
    CT_ATTR_SPEC_INT_LIST("padding", "rows/columns (pH, pW) cut from each side of the full output",
                          2, ct_pool_zeros2),
    CT_ATTR_SPEC_INT_LIST("output_padding", "extra rows/columns on one side of the output", 2,
                          ct_pool_zeros2),
    CT_ATTR_SPEC_INT("groups", "input and output channels split into this many groups", 1),
    CT_ATTR_SPEC_INT_LIST("dilation", "spacing between kernel taps (dH, dW)", 2, ct_pool_ones2)};

static int ct_infer_conv_transpose2d(const ct_infer_call* call, ct_tensor_info* outputs,
                                     int32_t capacity, int32_t* num_outputs) {
  (void)capacity;
  static const char op[] = "conv_transpose2d";
  const ct_tensor* x = call->inputs[0];
  const ct_tensor* w = call->inputs[1];
  const ct_tensor* bias = call->inputs[2];
  int64_t stride[2], padding[2], output_padding[2], dilation[2];
  const int64_t groups = call->attrs[3].value.i;
  int status = ct_attr_pair(op, "stride", &call->attrs[0], NULL, 1, stride);
  if (status == CT_OK) status = ct_attr_pair(op, "padding", &call->attrs[1], NULL, 0, padding);
  if (status == CT_OK) {
    status = ct_attr_pair(op, "output_padding", &call->attrs[2], NULL, 0, output_padding);
  }
  if (status == CT_OK) status = ct_attr_pair(op, "dilation", &call->attrs[4], NULL, 1, dilation);
  if (status != CT_OK) return status;
  if (groups < 1) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "%s: groups must be >= 1, got %lld", op,
                        (long long)groups);
  }
  for (int k = 0; k < 2; ++k) {
    if (output_padding[k] >= stride[k] && output_padding[k] >= dilation[k]) {
      return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                          "%s: output_padding must be smaller than either stride or dilation", op);
    }
  }
  if (x->ndim != 4 || w->ndim != 4) {
    return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                        "%s: input must be 4-D (N, C_in, H, W) and weight 4-D (C_in, "
                        "C_out/groups, kH, kW); got %d-D and %d-D",
                        op, x->ndim, w->ndim);
  }
  if (x->shape[1] % groups != 0 || w->shape[0] != x->shape[1]) {
    return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                        "%s: weight must have C_in (%lld) rows, divisible by groups (%lld); got "
                        "%lld",
                        op, (long long)x->shape[1], (long long)groups, (long long)w->shape[0]);
  }
  if (w->shape[0] == 0 || w->shape[1] == 0) {
    return ct_set_error(CT_ERROR_SHAPE_MISMATCH, "%s: the weight must be non-empty (as torch)", op);
  }
  int64_t out_channels;
  if (!ct_checked_mul_i64(w->shape[1], groups, &out_channels)) {
    return ct_set_error(CT_ERROR_SIZE_OVERFLOW,
                        "%s: %lld output channels per group times %lld groups overflows int64", op,
                        (long long)w->shape[1], (long long)groups);
  }
  if (bias && (bias->ndim != 1 || bias->shape[0] != out_channels)) {
    return ct_set_error(CT_ERROR_SHAPE_MISMATCH, "%s: bias must have shape (%lld,)", op,
                        (long long)out_channels);
  }
  if (!ct_dtype_is_float(x->dtype)) {
    return ct_set_error(CT_ERROR_UNSUPPORTED_DTYPE, "%s: input must be a float array, got %s", op,
                        ct_dtype_describe(x->dtype));
  }
  if (!ct_dtype_equal(x->dtype, w->dtype) || (bias && !ct_dtype_equal(x->dtype, bias->dtype))) {
    return ct_set_error(CT_ERROR_UNSUPPORTED_DTYPE,
                        "%s: input, weight and bias must share one dtype", op);
  }
  ct_tensor_info* out = &outputs[0];
  out->dtype = x->dtype;
  out->ndim = 4;
  out->shape[0] = x->shape[0];
  out->shape[1] = out_channels;
  for (int k = 0; k < 2; ++k) {
    const int64_t in = x->shape[2 + k], kernel = w->shape[2 + k];
    /* The full extent (in - 1) * stride + dilation * (kernel - 1) + output_padding + 1 is where
     * the kernel writes before cropping the padding: it must fit in int64, and so must 2 *
     * padding. */
    int64_t full = 0, term, twice = 0, size = 0;
    const bool overflow =
        in >= 1 && kernel >= 1 &&
        (__builtin_mul_overflow(in - 1, stride[k], &full) ||
         __builtin_mul_overflow(dilation[k], kernel - 1, &term) ||
         __builtin_add_overflow(full, term, &full) ||
         __builtin_add_overflow(full, output_padding[k], &full) ||
         __builtin_add_overflow(full, 1, &full) || __builtin_mul_overflow(padding[k], 2, &twice));
    if (overflow) {
      return ct_set_error(CT_ERROR_SIZE_OVERFLOW,
                          "%s: stride, padding, output_padding and dilation in spatial dim %d "
                          "make the output extent overflow int64",
                          op, k);
    }
    size = full - twice;
    if (in < 1 || kernel < 1 || size < 1) {
      return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                          "%s: output size %lld is too small in spatial dim %d (input %lld, kernel "
                          "%lld)",
                          op, (long long)size, k, (long long)in, (long long)kernel);
    }
    out->shape[2 + k] = size;
  }
  *num_outputs = 1;
  return CT_OK;
}

CT_DEFINE_OP(conv_transpose2d,
             "2-D transposed convolution (the gradient of conv2d with respect to its input) over "
             "NCHW input with (C_in, C_out/groups, kH, kW) weight, as "
             "torch.nn.functional.conv_transpose2d (stride, padding, output_padding, groups, "
             "dilation, optional bias). Workspace-requesting: GEMM then col2im in the caller's "
             "workspace. float16/bfloat16 compute in float32.",
             CT_OP_WORKSPACE, CT_FLAGS_PURE, ct_conv_transpose2d_inputs, ct_params_out,
             ct_conv_transpose2d_attrs, ct_infer_conv_transpose2d);

/* ----- backward operators: the cotangent of the forward's input ----- */

static const ct_param_schema ct_pool_backward_inputs[2] = {
    {"grad_out", "the cotangent of the forward's output", 0, 0},
    {"input", "the forward's input (N, C, H, W) or (C, H, W)", 0, 0}};

static const ct_param_schema ct_pool_backward_outputs[1] = {
    {"grad_input", "the cotangent of the forward's input", 0, 0}};

/* Runs the forward's infer on `input` with the same attributes and checks that grad_out has the
 * forward output's shape and input's dtype; the output is like input. */
static int ct_infer_backward_of(const ct_op_def* forward, const ct_infer_call* call,
                                const ct_tensor* const* forward_inputs, int32_t num_forward_inputs,
                                ct_tensor_info* outputs, int32_t* num_outputs) {
  const char* op = call->schema->name;
  const ct_tensor* grad_out = call->inputs[0];
  const ct_tensor* x = call->inputs[1];
  const ct_infer_call forward_call = {&forward->schema, forward_inputs, num_forward_inputs,
                                      call->attrs};
  ct_tensor_info expected[1];
  int32_t count = 0;
  const int status = forward->infer(&forward_call, expected, 1, &count);
  if (status != CT_OK) return status;
  bool same = grad_out->ndim == expected[0].ndim;
  for (int32_t k = 0; same && k < grad_out->ndim; ++k)
    same = grad_out->shape[k] == expected[0].shape[k];
  if (!same) {
    return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                        "%s: grad_out must have the forward output's shape (%d-D, last dims %lld "
                        "x %lld)",
                        op, expected[0].ndim, (long long)expected[0].shape[expected[0].ndim - 2],
                        (long long)expected[0].shape[expected[0].ndim - 1]);
  }
  if (!ct_dtype_equal(grad_out->dtype, x->dtype)) {
    return ct_set_error(CT_ERROR_UNSUPPORTED_DTYPE, "%s: grad_out and input must share one dtype",
                        op);
  }
  ct_info_from_tensor(x, x->dtype, &outputs[0]);
  *num_outputs = 1;
  return CT_OK;
}

static int ct_infer_pool_backward(const ct_op_def* forward, const ct_infer_call* call,
                                  ct_tensor_info* outputs, int32_t* num_outputs) {
  const ct_tensor* forward_inputs[1] = {call->inputs[1]};
  return ct_infer_backward_of(forward, call, forward_inputs, 1, outputs, num_outputs);
}

static int ct_infer_max_pool2d_backward(const ct_infer_call* call, ct_tensor_info* outputs,
                                        int32_t capacity, int32_t* num_outputs) {
  (void)capacity;
  return ct_infer_pool_backward(&ct_op_def_max_pool2d, call, outputs, num_outputs);
}

CT_DEFINE_OP(max_pool2d_backward,
             "The cotangent of max_pool2d's input: each window's grad_out goes to the first "
             "maximum of the window in row-major order, or to its last NaN (torch's choice). "
             "Workspace-requesting: float16/bfloat16 accumulate in a float32 copy of grad_input.",
             CT_OP_WORKSPACE, CT_FLAGS_PURE, ct_pool_backward_inputs, ct_pool_backward_outputs,
             ct_max_pool2d_attrs, ct_infer_max_pool2d_backward);

static int ct_infer_avg_pool2d_backward(const ct_infer_call* call, ct_tensor_info* outputs,
                                        int32_t capacity, int32_t* num_outputs) {
  (void)capacity;
  return ct_infer_pool_backward(&ct_op_def_avg_pool2d, call, outputs, num_outputs);
}

CT_DEFINE_OP(avg_pool2d_backward,
             "The cotangent of avg_pool2d's input: each window's grad_out divided by the "
             "forward's divisor, added to the window's input positions (input's data is not "
             "read). Workspace as max_pool2d_backward.",
             CT_OP_WORKSPACE, CT_FLAGS_PURE, ct_pool_backward_inputs, ct_pool_backward_outputs,
             ct_avg_pool2d_attrs, ct_infer_avg_pool2d_backward);

static int ct_infer_adaptive_avg_pool2d_backward(const ct_infer_call* call, ct_tensor_info* outputs,
                                                 int32_t capacity, int32_t* num_outputs) {
  (void)capacity;
  const ct_tensor* grad_out = call->inputs[0];
  const ct_tensor* x = call->inputs[1];
  int status = ct_pool_check_input("adaptive_avg_pool2d_backward", x);
  if (status != CT_OK) return status;
  bool same = grad_out->ndim == x->ndim;
  for (int32_t k = 0; same && k < x->ndim - 2; ++k) same = grad_out->shape[k] == x->shape[k];
  if (!same) {
    return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                        "adaptive_avg_pool2d_backward: grad_out must be (N, C, H_out, W_out) or "
                        "(C, H_out, W_out) with input's leading dims");
  }
  if (!ct_dtype_equal(grad_out->dtype, x->dtype)) {
    return ct_set_error(CT_ERROR_UNSUPPORTED_DTYPE,
                        "adaptive_avg_pool2d_backward: grad_out and input must share one dtype");
  }
  ct_info_from_tensor(x, x->dtype, &outputs[0]);
  *num_outputs = 1;
  return CT_OK;
}

CT_DEFINE_OP_NO_ATTRS(
    adaptive_avg_pool2d_backward,
    "The cotangent of adaptive_avg_pool2d's input, the output size being "
    "grad_out's (H_out, W_out): each window's grad_out divided by its size, added "
    "to the window's input positions (input's data is not read).",
    CT_OP_WORKSPACE, CT_FLAGS_PURE, ct_pool_backward_inputs, ct_pool_backward_outputs,
    ct_infer_adaptive_avg_pool2d_backward);

static int ct_infer_interpolate_backward(const ct_infer_call* call, ct_tensor_info* outputs,
                                         int32_t capacity, int32_t* num_outputs) {
  (void)capacity;
  return ct_infer_pool_backward(&ct_op_def_interpolate, call, outputs, num_outputs);
}

CT_DEFINE_OP(interpolate_backward,
             "The cotangent of interpolate's input: each output element's grad_out added to the "
             "source pixels it was read from, times their weights (input's data is not read). "
             "Accumulates in float32 for float16/bfloat16/float32 and float64 for float64.",
             CT_OP_WORKSPACE, CT_FLAGS_PURE, ct_pool_backward_inputs, ct_pool_backward_outputs,
             ct_interpolate_attrs, ct_infer_interpolate_backward);

/* conv_transpose2d's input cotangent: conv2d(grad_out, weight) over the input's extent. */
static const ct_param_schema ct_conv_transpose2d_backward_inputs[3] = {
    {"grad_out", "the cotangent of the forward's output (N, C_out, H_out, W_out)", 0, 0},
    {"input", "the forward's input (N, C_in, H, W); only its shape is read", 0, 0},
    {"weight", "the forward's weight (C_in, C_out / groups, kH, kW)", 0, 0}};

static int ct_infer_conv_transpose2d_backward_input(const ct_infer_call* call,
                                                    ct_tensor_info* outputs, int32_t capacity,
                                                    int32_t* num_outputs) {
  (void)capacity;
  const ct_tensor* forward_inputs[3] = {call->inputs[1], call->inputs[2], NULL};
  return ct_infer_backward_of(&ct_op_def_conv_transpose2d, call, forward_inputs, 3, outputs,
                              num_outputs);
}

CT_DEFINE_OP(conv_transpose2d_backward_input,
             "The cotangent of conv_transpose2d's input: conv2d(grad_out, weight) with the same "
             "stride, padding, dilation and groups, over the input's (H, W) (output_padding rows "
             "and columns are never read). Workspace-requesting, as conv2d.",
             CT_OP_WORKSPACE, CT_FLAGS_PURE, ct_conv_transpose2d_backward_inputs,
             ct_pool_backward_outputs, ct_conv_transpose2d_attrs,
             ct_infer_conv_transpose2d_backward_input);
