/* elementwise_ops.c - unary, binary, comparison, where and astype operators. */
#include "op_defs.h"

/* ----- unary: out has x's shape and dtype ----- */

#define CT_UNARY_OP(NAME, DOC)                                                                     \
  CT_DEFINE_OP_NO_ATTRS(NAME, DOC, CT_OP_SHAPE_STATIC, CT_FLAGS_UNARY, ct_params_x, ct_params_out, \
                        ct_infer_same_as_input)

CT_UNARY_OP(negative, "Numerical negative, element-wise: -x (integers wrap).");
/* abs: complex gives the real dtype of its parts, as NumPy. */
static int ct_infer_abs(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                        int32_t* num_outputs) {
  ct_info_from_tensor(call->inputs[0], ct_dtype_real_part(call->inputs[0]->dtype), &outputs[0]);
  *num_outputs = 1;
  return CT_OK;
}

CT_DEFINE_OP_NO_ATTRS(abs,
                      "Absolute value, element-wise (abs of the most negative integer wraps, as "
                      "NumPy). Complex gives the modulus hypot(re, im) as float32/float64.",
                      CT_OP_SHAPE_STATIC, CT_FLAGS_UNARY, ct_params_x, ct_params_out, ct_infer_abs);
CT_UNARY_OP(exp, "Exponential, element-wise.");
CT_UNARY_OP(log, "Natural logarithm, element-wise (log(0) = -inf, log(x<0) = nan).");
CT_UNARY_OP(sqrt, "Square root, element-wise (sqrt(x<0) = nan).");
CT_UNARY_OP(tanh, "Hyperbolic tangent, element-wise.");
CT_UNARY_OP(sigmoid, "Logistic sigmoid 1 / (1 + exp(-x)), element-wise (torch.sigmoid).");
CT_UNARY_OP(relu, "Rectified linear unit max(x, 0), element-wise; nan stays nan (torch.relu).");

/* ----- binary with broadcasting: out dtype is the (common) input dtype ----- */

#define CT_BINARY_OP(NAME, DOC, INFER)                                                   \
  CT_DEFINE_OP_NO_ATTRS(NAME, DOC, CT_OP_SHAPE_STATIC, CT_FLAGS_BINARY, ct_params_x1_x2, \
                        ct_params_out, INFER)

CT_BINARY_OP(add, "x1 + x2 with broadcasting (bool: logical or; integers wrap).",
             ct_infer_broadcast_same_dtype);
CT_BINARY_OP(subtract, "x1 - x2 with broadcasting (integers wrap).", ct_infer_broadcast_same_dtype);
CT_BINARY_OP(multiply, "x1 * x2 with broadcasting (bool: logical and; integers wrap).",
             ct_infer_broadcast_same_dtype);
CT_BINARY_OP(maximum, "Element-wise maximum with broadcasting; nan propagates.",
             ct_infer_broadcast_same_dtype);
CT_BINARY_OP(minimum, "Element-wise minimum with broadcasting; nan propagates.",
             ct_infer_broadcast_same_dtype);
CT_BINARY_OP(pow,
             "x1 ** x2 with broadcasting. Floats follow C99 pow, as NumPy's element-wise loop "
             "(pow(-inf, 0.5) = inf). Integer bases with negative integer exponents are an "
             "error, as in NumPy; integer results wrap.",
             ct_infer_broadcast_same_dtype);

/* True division: integers and bool divide in float64, as NumPy. */
static int ct_infer_divide(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                           int32_t* num_outputs) {
  const int status = ct_infer_broadcast_same_dtype(call, outputs, capacity, num_outputs);
  const ct_dtype x = call->inputs[0]->dtype;
  if (status == CT_OK && !ct_dtype_is_float(x) && !ct_dtype_is_complex(x))
    outputs[0].dtype = CT_DTYPE_F64_V;
  return status;
}

CT_BINARY_OP(divide,
             "True division x1 / x2 with broadcasting; integer and bool inputs give float64. "
             "Complex division is Smith's algorithm, as NumPy.",
             ct_infer_divide);

/* ----- comparisons: bool out ----- */

#define CT_COMPARE_OP(NAME, DOC)                                                          \
  CT_DEFINE_OP_NO_ATTRS(NAME, DOC, CT_OP_SHAPE_STATIC,                                    \
                        CT_OP_FLAG_ELEMENTWISE | CT_OP_FLAG_BROADCASTING | CT_FLAGS_PURE, \
                        ct_params_x1_x2, ct_params_out, ct_infer_broadcast_bool)

CT_COMPARE_OP(equal, "x1 == x2 with broadcasting, as bool (nan == nan is false).");
CT_COMPARE_OP(less, "x1 < x2 with broadcasting, as bool.");
CT_COMPARE_OP(greater, "x1 > x2 with broadcasting, as bool.");

/* ----- where ----- */

static const ct_param_schema ct_where_inputs[3] = {
    {"condition", "bool array choosing x1 (true) or x2 (false)", 0, 0},
    {"x1", "values where condition is true", 0, 0},
    {"x2", "values where condition is false", 0, 0}};

static int ct_infer_where(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                          int32_t* num_outputs) {
  outputs[0].dtype = call->inputs[1]->dtype;
  *num_outputs = 1;
  return ct_infer_broadcast_shape(call->schema->name, call->inputs, 3, &outputs[0]);
}

CT_DEFINE_OP_NO_ATTRS(where, "condition ? x1 : x2, element-wise with broadcasting of all three.",
                      CT_OP_SHAPE_STATIC, CT_FLAGS_BINARY, ct_where_inputs, ct_params_out,
                      ct_infer_where);

/* ----- astype ----- */

static const ct_attr_schema ct_astype_attrs[] = {
    CT_ATTR_SPEC_REQUIRED("dtype", "element type of the result", CT_ATTR_DTYPE)};

static int ct_infer_astype(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                           int32_t* num_outputs) {
  ct_info_from_tensor(call->inputs[0], call->attrs[0].value.dtype, &outputs[0]);
  *num_outputs = 1;
  return CT_OK;
}

CT_DEFINE_OP(astype,
             "Converts x to another dtype (a new array). Floats to integers truncate toward zero; "
             "nan becomes 0 and out-of-range values saturate (NumPy leaves these undefined). "
             "Anything non-zero becomes true for bool; float16/bfloat16 round to nearest even. "
             "Complex to a real dtype keeps the real part (NumPy, which also warns: the Python "
             "binding leaves warnings to the caller); complex to bool is true where either part "
             "is non-zero.",
             CT_OP_SHAPE_STATIC, CT_OP_FLAG_ELEMENTWISE | CT_FLAGS_PURE, ct_params_x, ct_params_out,
             ct_astype_attrs, ct_infer_astype);
