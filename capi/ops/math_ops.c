/* math_ops.c - more element-wise operators: unary math, activations, binary math, logical and
 * bitwise ops, extra comparisons, clip. */
#include <string.h>

#include "op_defs.h"

/* ----- unary: out has x's shape and dtype ----- */

#define CT_UNARY_OP(NAME, DOC)                                                                     \
  CT_DEFINE_OP_NO_ATTRS(NAME, DOC, CT_OP_SHAPE_STATIC, CT_FLAGS_UNARY, ct_params_x, ct_params_out, \
                        ct_infer_same_as_input)

CT_UNARY_OP(positive, "Numerical positive, element-wise: +x (a copy).");
CT_UNARY_OP(sign,
            "Sign of x, element-wise: -1, 0 or 1 (nan stays nan; sign(-0.0) = 0.0); complex: "
            "x / |x| (NumPy 2), 0 for 0.");
CT_UNARY_OP(expm1, "exp(x) - 1, element-wise, accurate near zero.");
CT_UNARY_OP(log1p, "log(1 + x), element-wise, accurate near zero.");
CT_UNARY_OP(log2, "Base-2 logarithm, element-wise.");
CT_UNARY_OP(log10, "Base-10 logarithm, element-wise.");
CT_UNARY_OP(square, "x * x, element-wise (integers wrap).");
CT_UNARY_OP(reciprocal,
            "1 / x, element-wise; floats and complex only (integer and bool inputs promote to a "
            "float dtype).");
CT_UNARY_OP(sin, "Sine, element-wise (radians).");
CT_UNARY_OP(cos, "Cosine, element-wise (radians).");
CT_UNARY_OP(tan, "Tangent, element-wise (radians).");
CT_UNARY_OP(asin, "Inverse sine, element-wise (nan outside [-1, 1]).");
CT_UNARY_OP(acos, "Inverse cosine, element-wise (nan outside [-1, 1]).");
CT_UNARY_OP(atan, "Inverse tangent, element-wise.");
CT_UNARY_OP(sinh, "Hyperbolic sine, element-wise.");
CT_UNARY_OP(cosh, "Hyperbolic cosine, element-wise.");
CT_UNARY_OP(asinh, "Inverse hyperbolic sine, element-wise.");
CT_UNARY_OP(acosh, "Inverse hyperbolic cosine, element-wise (nan below 1).");
CT_UNARY_OP(atanh, "Inverse hyperbolic tangent, element-wise (+-inf at +-1, nan outside).");
CT_UNARY_OP(floor, "Largest integer <= x, element-wise (integers and bool: unchanged).");
CT_UNARY_OP(ceil, "Smallest integer >= x, element-wise (integers and bool: unchanged).");
CT_UNARY_OP(trunc, "x rounded toward zero, element-wise (integers and bool: unchanged).");
/* round(bool) is float16, as NumPy. */
static int ct_infer_round(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                          int32_t* num_outputs) {
  const int status = ct_infer_same_as_input(call, outputs, capacity, num_outputs);
  if (status == CT_OK && ct_dtype_is_bool(call->inputs[0]->dtype))
    outputs[0].dtype = (ct_dtype){CT_DTYPE_FLOAT, 16, 1};
  return status;
}

CT_DEFINE_OP_NO_ATTRS(round,
                      "x rounded to the nearest integer, halves to even (integers: unchanged; "
                      "bool gives float16, as NumPy).",
                      CT_OP_SHAPE_STATIC, CT_FLAGS_UNARY, ct_params_x, ct_params_out,
                      ct_infer_round);
CT_UNARY_OP(bitwise_invert, "Bitwise not ~x, element-wise (bool: logical not).");
CT_UNARY_OP(erf, "Gauss error function, element-wise (torch.erf).");
CT_UNARY_OP(selu,
            "Scaled exponential linear unit, element-wise (torch.nn.functional.selu): "
            "scale * (max(0, x) + min(0, alpha * (exp(x) - 1))).");
CT_UNARY_OP(silu, "x * sigmoid(x), element-wise (torch.nn.functional.silu).");
CT_UNARY_OP(hardswish,
            "x * relu6(x + 3) / 6, element-wise (torch.nn.functional.hardswish; x itself "
            "from 3 up, where torch's x * 6 / 6 can overflow).");

/* ----- unary with a bool result ----- */

static int ct_infer_unary_bool(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                               int32_t* num_outputs) {
  (void)capacity;
  ct_info_from_tensor(call->inputs[0], CT_DTYPE_BOOL_V, &outputs[0]);
  *num_outputs = 1;
  return CT_OK;
}

#define CT_UNARY_BOOL_OP(NAME, DOC)                                                            \
  CT_DEFINE_OP_NO_ATTRS(NAME, DOC, CT_OP_SHAPE_STATIC, CT_OP_FLAG_ELEMENTWISE | CT_FLAGS_PURE, \
                        ct_params_x, ct_params_out, ct_infer_unary_bool)

CT_UNARY_BOOL_OP(isnan,
                 "Whether x is nan (complex: either part), element-wise, as bool (false for "
                 "integers and bool).");
CT_UNARY_BOOL_OP(isinf,
                 "Whether x is +-inf (complex: either part), element-wise, as bool (false for "
                 "integers and bool).");
CT_UNARY_BOOL_OP(isfinite,
                 "Whether x is finite (not nan or +-inf; complex: both parts), element-wise, as "
                 "bool (true for integers and bool).");
CT_UNARY_BOOL_OP(logical_not, "x == 0 (complex: both parts zero), element-wise, as bool.");

/* ----- activations with attributes ----- */

#define CT_UNARY_ATTR_OP(NAME, DOC, ATTRS, INFER)                                                \
  CT_DEFINE_OP(NAME, DOC, CT_OP_SHAPE_STATIC, CT_FLAGS_UNARY, ct_params_x, ct_params_out, ATTRS, \
               INFER)

static const ct_attr_schema ct_leaky_relu_attrs[] = {
    CT_ATTR_SPEC_FLOAT("negative_slope", "slope for x < 0", 0.01)};
CT_UNARY_ATTR_OP(leaky_relu,
                 "x if x >= 0 else negative_slope * x, element-wise "
                 "(torch.nn.functional.leaky_relu).",
                 ct_leaky_relu_attrs, ct_infer_same_as_input);

static const ct_attr_schema ct_elu_attrs[] = {
    CT_ATTR_SPEC_FLOAT("alpha", "scale of the negative part", 1.0)};
CT_UNARY_ATTR_OP(elu,
                 "x if x > 0 else alpha * (exp(x) - 1), element-wise (torch.nn.functional.elu).",
                 ct_elu_attrs, ct_infer_same_as_input);

static const ct_attr_schema ct_softplus_attrs[] = {
    CT_ATTR_SPEC_FLOAT("beta", "sharpness", 1.0),
    CT_ATTR_SPEC_FLOAT("threshold", "above beta * x > threshold the result is x", 20.0)};
CT_UNARY_ATTR_OP(softplus,
                 "log(1 + exp(beta * x)) / beta, element-wise; x where beta * x > threshold "
                 "(torch.nn.functional.softplus).",
                 ct_softplus_attrs, ct_infer_same_as_input);

static const ct_attr_schema ct_gelu_attrs[] = {
    CT_ATTR_SPEC_STRING("approximate", "\"none\" (exact, with erf) or \"tanh\"", "none")};

static int ct_infer_gelu(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                         int32_t* num_outputs) {
  const char* mode = call->attrs[0].value.s;
  if (!mode || (strcmp(mode, "none") != 0 && strcmp(mode, "tanh") != 0)) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                        "gelu: approximate must be \"none\" or \"tanh\", got \"%s\"",
                        mode ? mode : "(null)");
  }
  return ct_infer_same_as_input(call, outputs, capacity, num_outputs);
}

CT_UNARY_ATTR_OP(gelu,
                 "Gaussian error linear unit x * Phi(x), element-wise "
                 "(torch.nn.functional.gelu; approximate=\"tanh\" uses the tanh formula).",
                 ct_gelu_attrs, ct_infer_gelu);

/* ----- binary with broadcasting ----- */

#define CT_BINARY_OP(NAME, DOC, INFER)                                                   \
  CT_DEFINE_OP_NO_ATTRS(NAME, DOC, CT_OP_SHAPE_STATIC, CT_FLAGS_BINARY, ct_params_x1_x2, \
                        ct_params_out, INFER)

CT_BINARY_OP(floor_divide,
             "floor(x1 / x2) with broadcasting, as NumPy (integer division by zero gives 0; "
             "the most negative integer // -1 wraps).",
             ct_infer_broadcast_same_dtype);
CT_BINARY_OP(remainder,
             "x1 - floor(x1 / x2) * x2 with broadcasting: the sign of x2, as NumPy (integer "
             "remainder by zero gives 0).",
             ct_infer_broadcast_same_dtype);
CT_BINARY_OP(atan2, "Inverse tangent of x1 / x2 in the right quadrant, with broadcasting.",
             ct_infer_broadcast_same_dtype);
CT_BINARY_OP(hypot, "sqrt(x1**2 + x2**2) without undue overflow, with broadcasting.",
             ct_infer_broadcast_same_dtype);
CT_BINARY_OP(copysign, "Magnitude of x1 with the sign of x2, with broadcasting.",
             ct_infer_broadcast_same_dtype);
CT_BINARY_OP(bitwise_and, "x1 & x2 with broadcasting (bool: logical and).",
             ct_infer_broadcast_same_dtype);
CT_BINARY_OP(bitwise_or, "x1 | x2 with broadcasting (bool: logical or).",
             ct_infer_broadcast_same_dtype);
CT_BINARY_OP(bitwise_xor, "x1 ^ x2 with broadcasting (bool: logical xor).",
             ct_infer_broadcast_same_dtype);
CT_BINARY_OP(bitwise_left_shift,
             "x1 << x2 with broadcasting; shifts by negative amounts or by the bit width or more "
             "give 0, as NumPy (results wrap).",
             ct_infer_broadcast_same_dtype);
CT_BINARY_OP(bitwise_right_shift,
             "x1 >> x2 (arithmetic for signed integers) with broadcasting; shifts by negative "
             "amounts or by the bit width or more give 0, or -1 for negative x1, as NumPy.",
             ct_infer_broadcast_same_dtype);

/* ----- binary with a bool result ----- */

#define CT_BINARY_BOOL_OP(NAME, DOC)                                                      \
  CT_DEFINE_OP_NO_ATTRS(NAME, DOC, CT_OP_SHAPE_STATIC,                                    \
                        CT_OP_FLAG_ELEMENTWISE | CT_OP_FLAG_BROADCASTING | CT_FLAGS_PURE, \
                        ct_params_x1_x2, ct_params_out, ct_infer_broadcast_bool)

CT_BINARY_BOOL_OP(not_equal, "x1 != x2 with broadcasting, as bool (nan != nan is true).");
CT_BINARY_BOOL_OP(less_equal, "x1 <= x2 with broadcasting, as bool.");
CT_BINARY_BOOL_OP(greater_equal, "x1 >= x2 with broadcasting, as bool.");
CT_BINARY_BOOL_OP(logical_and, "(x1 != 0) and (x2 != 0) with broadcasting, as bool.");
CT_BINARY_BOOL_OP(logical_or, "(x1 != 0) or (x2 != 0) with broadcasting, as bool.");
CT_BINARY_BOOL_OP(logical_xor, "(x1 != 0) != (x2 != 0) with broadcasting, as bool.");

/* ----- clip ----- */

static const ct_param_schema ct_clip_inputs[3] = {
    {"x", "values to clip", 0, 0},
    {"min", "lower bound (absent: none)", CT_PARAM_OPTIONAL, 0},
    {"max", "upper bound (absent: none)", CT_PARAM_OPTIONAL, 0}};

static int ct_infer_clip(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                         int32_t* num_outputs) {
  (void)capacity;
  outputs[0].dtype = call->inputs[0]->dtype;
  *num_outputs = 1;
  return ct_infer_broadcast_shape(call->schema->name, call->inputs, call->num_inputs, &outputs[0]);
}

CT_DEFINE_OP_NO_ATTRS(clip,
                      "min(max(x, min), max), element-wise with broadcasting of all three "
                      "(absent bounds are not applied); nan in any operand gives nan. Where "
                      "min > max the result is max, as NumPy.",
                      CT_OP_SHAPE_STATIC, CT_FLAGS_BINARY, ct_clip_inputs, ct_params_out,
                      ct_infer_clip);
