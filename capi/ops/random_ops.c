/* random_ops.c - counter-based random numbers (random_uniform, random_normal,
 * random_bernoulli, dropout and its backward) and arange: ops whose outputs are a pure
 * function of their attributes and of each element's index.
 *
 * The random ops share one stream, Philox-4x32-10 (kernels/common/philox.h, which every device
 * compiles): element i (the row-major linear index of the output, whatever its strides) of a
 * call with attributes seed and offset gets the 4 words of Philox with key (lo32(seed),
 * hi32(seed)) and counter (lo32(i), hi32(i), lo32(offset), hi32(offset)). Results are the same
 * bits on every device and for any number of threads. The ops without tensor inputs run on the
 * device of their output (ct_op_run picks the kernel from the outputs' device). */
#include <math.h>

#include "op_defs.h"

#define CT_ATTR_SPEC_DTYPE(NAME, DOC, CODE, BITS) \
  {                                               \
    NAME, DOC, CT_ATTR_DTYPE, 0, {                \
      CT_ATTR_DTYPE, 0, 0, {                      \
        .dtype = {CODE, BITS, 1}                  \
      }                                           \
    }                                             \
  }

#define CT_STREAM_DOC                                                                            \
  " The stream: Philox-4x32-10 with key (lo32(seed), hi32(seed)); element i (the row-major "     \
  "linear index of the output, whatever its strides) uses counter (lo32(i), hi32(i), "           \
  "lo32(offset), hi32(offset)) and gets the words x0..x3. Bit-identical on every device and "    \
  "thread count; calls with different offsets use disjoint counters. seed and offset are int64 " \
  "attributes holding the uint64 bits."

#define CT_SEED_ATTRS                                                                              \
  CT_ATTR_SPEC_REQUIRED("seed", "the Philox key: a uint64 passed as its int64 bits", CT_ATTR_INT), \
      CT_ATTR_SPEC_INT("offset", "the high half of every counter: a uint64 as its int64 bits", 0)

/* A float attribute (or the named float) must be finite. */
static int ct_random_finite(const char* op, const char* name, double value) {
  if (!isfinite(value)) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "%s: %s must be finite, got %g", op, name,
                        value);
  }
  return CT_OK;
}

/* The output shape from a `shape` attribute. */
static int ct_random_shape(const char* op, const ct_attr_value* shape, ct_tensor_info* out) {
  if (shape->count > CT_MAX_NDIM) {
    return ct_set_error(CT_ERROR_INVALID_SHAPE, "%s: shape has %lld dimensions (at most %d)", op,
                        (long long)shape->count, CT_MAX_NDIM);
  }
  out->ndim = (int32_t)shape->count;
  int64_t total = 1;
  for (int32_t k = 0; k < out->ndim; ++k) {
    const int64_t extent = shape->value.ints[k];
    if (extent < 0) {
      return ct_set_error(CT_ERROR_INVALID_SHAPE, "%s: negative extent %lld in shape", op,
                          (long long)extent);
    }
    if (!ct_checked_mul_i64(total, extent, &total)) {
      return ct_set_error(CT_ERROR_SIZE_OVERFLOW, "%s: the shape has too many elements", op);
    }
    out->shape[k] = extent;
  }
  return CT_OK;
}

static int ct_random_float_dtype(const char* op, ct_dtype dtype) {
  if (!ct_dtype_is_float(dtype)) {
    return ct_set_error(CT_ERROR_UNSUPPORTED_DTYPE,
                        "%s: dtype must be float16, bfloat16, float32 or float64, got %s", op,
                        ct_dtype_describe(dtype));
  }
  return CT_OK;
}

/* `value` rounded to nearest even with `bits` significant bits, subnormals in steps of
 * 2^min_exponent, overflowing to inf past `largest`: the value the kernels see for low and high
 * (float16: 11, -24; bfloat16: 8, -133; float32: 24, -149). */
static double ct_round_to_format(double value, int bits, int min_exponent, double largest) {
  if (value == 0 || !isfinite(value)) return value;
  int exponent = 0;
  (void)frexp(value, &exponent);
  int quantum = exponent - bits;
  if (quantum < min_exponent) quantum = min_exponent;
  const double rounded = ldexp(nearbyint(ldexp(value, -quantum)), quantum);
  if (fabs(rounded) > largest) return value > 0 ? INFINITY : -INFINITY;
  return rounded;
}

/* low and high as the kernels of `dtype` see them (float32 first for the 16-bit types). */
static double ct_random_in_dtype(double value, ct_dtype dtype) {
  if (dtype.code == CT_DTYPE_FLOAT && dtype.bits == 64) return value;
  const double f = ct_round_to_format(value, 24, -149, 3.4028234663852886e38);
  if (dtype.code == CT_DTYPE_BFLOAT) return ct_round_to_format(f, 8, -133, 3.3895313892515355e38);
  if (dtype.bits == 16) return ct_round_to_format(f, 11, -24, 65504.0);
  return f;
}

/* ----- random_uniform ----- */

static const ct_attr_schema ct_random_uniform_attrs[] = {
    CT_ATTR_SPEC_REQUIRED("shape", "the output shape", CT_ATTR_INT_LIST),
    CT_ATTR_SPEC_DTYPE("dtype", "float16, bfloat16, float32 or float64", CT_DTYPE_FLOAT, 32),
    CT_ATTR_SPEC_FLOAT("low", "lower bound (included), finite", 0.0),
    CT_ATTR_SPEC_FLOAT("high", "upper bound (excluded), finite, above low in dtype", 1.0),
    CT_SEED_ATTRS,
};

static int ct_infer_random_uniform(const ct_infer_call* call, ct_tensor_info* outputs,
                                   int32_t capacity, int32_t* num_outputs) {
  (void)capacity;
  static const char op[] = "random_uniform";
  const ct_dtype dtype = call->attrs[1].value.dtype;
  int status = ct_random_float_dtype(op, dtype);
  if (status == CT_OK) status = ct_random_shape(op, &call->attrs[0], &outputs[0]);
  const double low = call->attrs[2].value.f, high = call->attrs[3].value.f;
  if (status == CT_OK) status = ct_random_finite(op, "low", low);
  if (status == CT_OK) status = ct_random_finite(op, "high", high);
  if (status != CT_OK) return status;
  const double lo = ct_random_in_dtype(low, dtype), hi = ct_random_in_dtype(high, dtype);
  if (!(lo < hi) || !isfinite(lo) || !isfinite(hi)) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                        "%s: needs low < high, both finite, in %s (got low %g, high %g, which "
                        "are %g and %g there)",
                        op, ct_dtype_describe(dtype), low, high, lo, hi);
  }
  const double largest = dtype.bits == 64 ? 1.7976931348623157e308 : 3.4028234663852886e38;
  if (!(hi - lo <= largest)) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                        "%s: high - low (%g) overflows the compute type of %s", op, hi - lo,
                        ct_dtype_describe(dtype));
  }
  outputs[0].dtype = dtype;
  *num_outputs = 1;
  return CT_OK;
}

CT_DEFINE_OP_NO_INPUTS(
    random_uniform,
    "Uniform random numbers in [low, high) of the given shape and float dtype (torch.rand / "
    "Tensor.uniform_, jax.random.uniform), from the Philox stream." CT_STREAM_DOC
    " u in [0, 1) is float32: (x0 >> 8) 2^-24; float16: (x0 >> 21) 2^-11; bfloat16: (x0 >> 24) "
    "2^-8; float64: ((x0 << 32 | x1) >> 11) 2^-53. The result is low + (high - low) * u with "
    "low and high rounded to dtype (through float32 for the 16-bit types), computed in float32 "
    "(float64 for float64) as separately rounded operations, then rounded to dtype; a value "
    "that rounds up to high becomes the largest value below high, so high is never returned. "
    "Not differentiable.",
    CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_params_out, ct_random_uniform_attrs,
    ct_infer_random_uniform);

/* ----- random_normal ----- */

static const ct_attr_schema ct_random_normal_attrs[] = {
    CT_ATTR_SPEC_REQUIRED("shape", "the output shape", CT_ATTR_INT_LIST),
    CT_ATTR_SPEC_DTYPE("dtype", "float16, bfloat16, float32 or float64", CT_DTYPE_FLOAT, 32),
    CT_ATTR_SPEC_FLOAT("mean", "the mean, finite", 0.0),
    CT_ATTR_SPEC_FLOAT("std", "the standard deviation, finite and >= 0", 1.0),
    CT_SEED_ATTRS,
};

static int ct_infer_random_normal(const ct_infer_call* call, ct_tensor_info* outputs,
                                  int32_t capacity, int32_t* num_outputs) {
  (void)capacity;
  static const char op[] = "random_normal";
  const ct_dtype dtype = call->attrs[1].value.dtype;
  int status = ct_random_float_dtype(op, dtype);
  if (status == CT_OK) status = ct_random_shape(op, &call->attrs[0], &outputs[0]);
  if (status == CT_OK) status = ct_random_finite(op, "mean", call->attrs[2].value.f);
  if (status == CT_OK) status = ct_random_finite(op, "std", call->attrs[3].value.f);
  if (status != CT_OK) return status;
  if (call->attrs[3].value.f < 0) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "%s: std must be >= 0, got %g", op,
                        call->attrs[3].value.f);
  }
  outputs[0].dtype = dtype;
  *num_outputs = 1;
  return CT_OK;
}

CT_DEFINE_OP_NO_INPUTS(
    random_normal,
    "Normal random numbers mean + std * z of the given shape and float dtype (torch.randn / "
    "Tensor.normal_, jax.random.normal), from the Philox stream." CT_STREAM_DOC
    " z by Box-Muller, one value per element: float32, float16 and bfloat16 use "
    "u1 = ((x0 >> 8) + 1) 2^-24 in (0, 1] and u2 = (x1 >> 8) 2^-24, z = sqrt(-2 log u1) "
    "cos(2 pi u2) in float32 with philox.h's own log, sqrt and cosine (exactly rounded "
    "multiplications and additions only, within a few ulp), then mean + std * z in float32 "
    "rounded to dtype; float64 uses 53-bit u1 from (x0, x1) and u2 from (x2, x3), all in float64. "
    "Not differentiable.",
    CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_params_out, ct_random_normal_attrs,
    ct_infer_random_normal);

/* ----- random_bernoulli ----- */

static const ct_param_schema ct_random_bernoulli_inputs[] = {
    {"probs", "optional probabilities (float), broadcast to the output", CT_PARAM_OPTIONAL, 0}};

static const ct_attr_schema ct_random_bernoulli_attrs[] = {
    CT_ATTR_SPEC_NULLABLE("shape", "the output shape; None: the shape of probs", CT_ATTR_INT_LIST),
    CT_ATTR_SPEC_NULLABLE("p", "the probability of 1 (in [0, 1]) when probs is absent; None: 0.5",
                          CT_ATTR_FLOAT),
    CT_ATTR_SPEC_DTYPE("dtype", "bool or a float dtype (1 and 0)", CT_DTYPE_BOOL, 8),
    CT_SEED_ATTRS,
};

static int ct_infer_random_bernoulli(const ct_infer_call* call, ct_tensor_info* outputs,
                                     int32_t capacity, int32_t* num_outputs) {
  (void)capacity;
  static const char op[] = "random_bernoulli";
  const ct_tensor* probs = call->inputs[0];
  const ct_attr_value* shape = &call->attrs[0];
  const ct_attr_value* p = &call->attrs[1];
  const ct_dtype dtype = call->attrs[2].value.dtype;
  if (!ct_dtype_is_bool(dtype) && !ct_dtype_is_float(dtype)) {
    return ct_set_error(CT_ERROR_UNSUPPORTED_DTYPE,
                        "%s: dtype must be bool or a float dtype, got %s", op,
                        ct_dtype_describe(dtype));
  }
  if (probs && !ct_dtype_is_float(probs->dtype)) {
    return ct_set_error(CT_ERROR_UNSUPPORTED_DTYPE, "%s: probs must be a float array, got %s", op,
                        ct_dtype_describe(probs->dtype));
  }
  if (probs && p->type != CT_ATTR_NONE) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                        "%s: give the probability either as probs or as p, not both", op);
  }
  if (p->type != CT_ATTR_NONE && !(p->value.f >= 0 && p->value.f <= 1)) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "%s: p must be in [0, 1], got %g", op,
                        p->value.f);
  }
  ct_tensor_info* out = &outputs[0];
  if (shape->type == CT_ATTR_NONE) {
    if (!probs) {
      return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "%s: needs a shape or a probs array", op);
    }
    ct_info_from_tensor(probs, dtype, out);
  } else {
    int status = ct_random_shape(op, shape, out);
    if (status != CT_OK) return status;
    if (probs) {
      /* probs must broadcast to the shape without changing it */
      bool fits = probs->ndim <= out->ndim;
      for (int32_t k = 0; fits && k < probs->ndim; ++k) {
        const int64_t extent = probs->shape[probs->ndim - 1 - k];
        fits = extent == 1 || extent == out->shape[out->ndim - 1 - k];
      }
      if (!fits) {
        return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                            "%s: probs (%d dimensions) does not broadcast to the shape", op,
                            probs->ndim);
      }
    }
  }
  out->dtype = dtype;
  *num_outputs = 1;
  return CT_OK;
}

CT_DEFINE_OP(
    random_bernoulli,
    "Bernoulli draws: 1 with probability p, else 0 (torch.bernoulli, jax.random.bernoulli), from "
    "the Philox stream." CT_STREAM_DOC
    " Element i is 1 iff u < float32(p) with u = (x0 >> 8) 2^-24, so p = 0 never and p = 1 "
    "always gives 1. The probability is the attribute p (default 0.5) or the optional input "
    "probs (any float dtype, broadcast to the output; its values are used as they are: at most "
    "0 gives 0, at least 1 gives 1, nan gives 0), not both. shape None takes probs' shape. dtype "
    "bool (default, as JAX) or a float dtype (1.0 and 0.0, as torch). Not differentiable.",
    CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_random_bernoulli_inputs, ct_params_out,
    ct_random_bernoulli_attrs, ct_infer_random_bernoulli);

/* ----- dropout and dropout_backward ----- */

static const ct_param_schema ct_dropout_outputs[] = {
    {"out", "x with dropped elements zeroed and kept ones scaled by 1 / (1 - p)", 0, 0},
    {"mask", "bool, true where the element was kept", 0, 0}};

static const ct_attr_schema ct_dropout_attrs[] = {
    CT_ATTR_SPEC_FLOAT("p", "the probability of dropping an element, in [0, 1]", 0.5),
    CT_SEED_ATTRS,
    CT_ATTR_SPEC_BOOL("training", "false: the identity (mask all true)", 1),
};

static int ct_dropout_p(const char* op, double p) {
  if (!(p >= 0 && p <= 1)) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "%s: p must be in [0, 1], got %g", op, p);
  }
  return CT_OK;
}

static int ct_infer_dropout(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                            int32_t* num_outputs) {
  (void)capacity;
  const ct_tensor* x = call->inputs[0];
  if (!ct_dtype_is_float(x->dtype)) {
    return ct_set_error(CT_ERROR_UNSUPPORTED_DTYPE, "dropout: x must be a float array, got %s",
                        ct_dtype_describe(x->dtype));
  }
  const int status = ct_dropout_p("dropout", call->attrs[0].value.f);
  if (status != CT_OK) return status;
  ct_info_from_tensor(x, x->dtype, &outputs[0]);
  ct_info_from_tensor(x, (ct_dtype){CT_DTYPE_BOOL, 8, 1}, &outputs[1]);
  *num_outputs = 2;
  return CT_OK;
}

CT_DEFINE_OP(
    dropout,
    "Dropout (torch.nn.functional.dropout): each element of x is dropped with probability p; "
    "kept elements are scaled by 1 / (1 - p). Returns (out, mask), mask true where kept, so "
    "that the backward is grad * mask / (1 - p) (dropout_backward)." CT_STREAM_DOC
    " Element i (row-major index of x) is kept iff u >= float32(p) with u = (x0 >> 8) 2^-24. "
    "The scale is 1 / (1 - p) computed in float64 and rounded once to x's compute type "
    "(float32 for float16, bfloat16 and float32); out = x * scale rounded to x's dtype where "
    "kept, and exactly 0 where dropped (also for inf or nan x, where torch's multiply by the "
    "mask gives nan). p = 1 drops everything; p = 0 keeps everything (out = x). "
    "training=False: out = x and mask all true.",
    CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_params_x, ct_dropout_outputs, ct_dropout_attrs,
    ct_infer_dropout);

static const ct_param_schema ct_dropout_backward_inputs[] = {
    {"grad_out", "the cotangent of dropout's out", 0, 0},
    {"mask", "dropout's mask (bool, broadcast to grad_out)", 0, 0}};

static const ct_param_schema ct_dropout_backward_outputs[] = {
    {"grad_x", "the cotangent of x", 0, 0}};

static const ct_attr_schema ct_dropout_backward_attrs[] = {
    CT_ATTR_SPEC_FLOAT("p", "dropout's p, in [0, 1]", 0.5),
    CT_ATTR_SPEC_BOOL("training", "dropout's training: false gives grad_out (scale 1)", 1),
};

static int ct_infer_dropout_backward(const ct_infer_call* call, ct_tensor_info* outputs,
                                     int32_t capacity, int32_t* num_outputs) {
  (void)capacity;
  const ct_tensor* grad = call->inputs[0];
  const ct_tensor* mask = call->inputs[1];
  if (!ct_dtype_is_float(grad->dtype) || !ct_dtype_is_bool(mask->dtype)) {
    return ct_set_error(CT_ERROR_UNSUPPORTED_DTYPE,
                        "dropout_backward: needs a float grad_out and a bool mask, got %s and %s",
                        ct_dtype_describe(grad->dtype), ct_dtype_describe(mask->dtype));
  }
  int status = ct_dropout_p("dropout_backward", call->attrs[0].value.f);
  if (status != CT_OK) return status;
  status = ct_infer_broadcast_shape("dropout_backward", call->inputs, 2, &outputs[0]);
  if (status != CT_OK) return status;
  if (outputs[0].ndim != grad->ndim) {
    return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                        "dropout_backward: mask must broadcast to grad_out's shape");
  }
  for (int32_t k = 0; k < grad->ndim; ++k) {
    if (outputs[0].shape[k] != grad->shape[k]) {
      return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                          "dropout_backward: mask must broadcast to grad_out's shape");
    }
  }
  outputs[0].dtype = grad->dtype;
  *num_outputs = 1;
  return CT_OK;
}

CT_DEFINE_OP(dropout_backward,
             "The gradient of dropout with respect to x: grad_out * scale where mask, else 0, with "
             "dropout's scale (1 / (1 - p) in float64 rounded once to the compute type; 0 for "
             "p = 1; 1 with training=False), computed as dropout computes out.",
             CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_dropout_backward_inputs,
             ct_dropout_backward_outputs, ct_dropout_backward_attrs, ct_infer_dropout_backward);

/* ----- arange ----- */

static const ct_attr_schema ct_arange_attrs[] = {
    CT_ATTR_SPEC_REQUIRED("start", "the first value (or the end, when stop is None)",
                          CT_ATTR_FLOAT),
    CT_ATTR_SPEC_NULLABLE("stop", "the end (excluded); None: start is the end, from 0",
                          CT_ATTR_FLOAT),
    CT_ATTR_SPEC_FLOAT("step", "the spacing, not 0", 1.0),
    CT_ATTR_SPEC_REQUIRED("dtype", "a float or integer dtype", CT_ATTR_DTYPE),
};

/* arange's (start, step, length), checked; the kernels read them through this too. */
static int ct_arange_params(const ct_attr_value* attrs, ct_tensor_info* out) {
  static const char op[] = "arange";
  double start = attrs[0].value.f;
  double stop = attrs[1].type == CT_ATTR_NONE ? start : attrs[1].value.f;
  if (attrs[1].type == CT_ATTR_NONE) start = 0;
  const double step = attrs[2].value.f;
  const ct_dtype dtype = attrs[3].value.dtype;
  int status = ct_random_finite(op, "start", start);
  if (status == CT_OK) status = ct_random_finite(op, "stop", stop);
  if (status == CT_OK) status = ct_random_finite(op, "step", step);
  if (status != CT_OK) return status;
  if (step == 0) return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "arange: step must not be 0");
  if (!ct_dtype_is_float(dtype) && !ct_dtype_is_integer(dtype)) {
    return ct_set_error(CT_ERROR_UNSUPPORTED_DTYPE,
                        "arange: dtype must be a float or integer dtype, got %s",
                        ct_dtype_describe(dtype));
  }
  double length = ceil((stop - start) / step);
  if (ct_dtype_is_integer(dtype)) {
    if (start != floor(start) || stop != floor(stop) || step != floor(step)) {
      return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                          "arange: start, stop and step must be integers for %s (got %g, %g, %g)",
                          ct_dtype_describe(dtype), start, stop, step);
    }
  }
  if (!(length > 0)) length = 0;
  if (length > 9.007199254740992e15) {
    return ct_set_error(CT_ERROR_SIZE_OVERFLOW, "arange: %g elements are too many", length);
  }
  if (ct_dtype_is_integer(dtype) && length > 0) {
    /* every value must fit the dtype: the first and the last are the extremes */
    const double last = start + (length - 1) * step;
    const int bits = dtype.bits;
    const bool is_signed = ct_dtype_is_signed_integer(dtype);
    /* [lowest, above): above is 2^63 or 2^64 exactly (the largest value plus one, which
     * rounds to it in float64 for 64 bits and so cannot bound it inclusively) */
    const double lowest = is_signed ? -ldexp(1, bits - 1) : 0;
    const double above = is_signed ? ldexp(1, bits - 1) : ldexp(1, bits);
    const double lo = start < last ? start : last, hi = start < last ? last : start;
    if (lo < lowest || hi >= above) {
      return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "arange: values from %g to %g overflow %s",
                          start, last, ct_dtype_describe(dtype));
    }
  }
  out->dtype = dtype;
  out->ndim = 1;
  out->shape[0] = (int64_t)length;
  return CT_OK;
}

static int ct_infer_arange(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                           int32_t* num_outputs) {
  (void)capacity;
  const int status = ct_arange_params(call->attrs, &outputs[0]);
  if (status != CT_OK) return status;
  *num_outputs = 1;
  return CT_OK;
}

CT_DEFINE_OP_NO_INPUTS(
    arange,
    "Evenly spaced values start, start + step, ... up to stop (excluded) (the array API's "
    "arange; numpy.arange, torch.arange). stop None: the values 0, step, ... below start. "
    "Length ceil((stop - start) / step) computed in float64 (0 when negative); step 0 is an "
    "error. Float dtypes: element i is start + i * step in float64 (two rounded operations), "
    "rounded to dtype (float16 and bfloat16 through float32). Integer dtypes: start, stop and "
    "step must be integers and every value must fit the dtype; element i is start + i * step "
    "exactly. start, stop and step are float64 attributes (integers above 2^53 lose "
    "precision). Not differentiable.",
    CT_OP_SHAPE_STATIC, CT_FLAGS_PURE, ct_params_out, ct_arange_attrs, ct_infer_arange);
