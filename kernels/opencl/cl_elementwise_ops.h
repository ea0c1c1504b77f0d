/* cl_elementwise_ops.h - the element-wise op table of the OpenCL backend: one line per op with
 * its OpenCL C expression per dtype class. The only place to edit to add an element-wise op. */
#ifndef CTENSOR_CL_ELEMENTWISE_OPS_H_
#define CTENSOR_CL_ELEMENTWISE_OPS_H_

#include <stdint.h>

/* What the output dtype is. */
typedef enum ct_cl_out_rule {
  CT_CL_OUT_SAME = 0,     /* the inputs' dtype */
  CT_CL_OUT_BOOL,         /* bool */
  CT_CL_OUT_F64_FOR_INTS, /* float64 for integer and bool inputs (true division) */
  CT_CL_OUT_F16_FOR_BOOL, /* float16 for bool input (round, as NumPy) */
  CT_CL_OUT_WHERE         /* inputs (bool, T, T), output T */
} ct_cl_out_rule;

/* Where the extra scalar parameters P0, P1 come from. */
typedef enum ct_cl_params {
  CT_CL_PARAMS_NONE = 0,
  CT_CL_PARAMS_FLOATS, /* the op's float attributes, in schema order */
  CT_CL_PARAMS_GELU    /* P0 = 1 for approximate="tanh" */
} ct_cl_params;

/* One element-wise op: inputs a, b, c (compute types: float for float16/float32, double,
 * int for int32 and bool, long); T is the first input's compute type, U its unsigned type,
 * P0/P1 parameters. NULL: the class is not supported. */
typedef struct ct_cl_elementwise_op {
  const char* name;
  int32_t arity;
  const char* float_expr;
  const char* int_expr;
  const char* bool_expr;
  ct_cl_out_rule out;
  ct_cl_params params;
} ct_cl_elementwise_op;

#define CT_CL_WRAP(op) "(T)((U)a " op " (U)b)"

/* X-macro rows: name, arity, float, int, bool, output rule, parameters. */
#define CT_CL_ELEMENTWISE_OPS(X)                                                                   \
  X(negative, 1, "-a", "(T)((U)0 - (U)a)", NULL, SAME, NONE)                                       \
  X(positive, 1, "a", "a", NULL, SAME, NONE)                                                       \
  X(abs, 1, "fabs(a)", "(a < 0 ? (T)((U)0 - (U)a) : a)", "a", SAME, NONE)                          \
  X(square, 1, "a * a", "(T)((U)a * (U)a)", NULL, SAME, NONE)                                      \
  X(sign, 1, "(a > 0 ? (T)1 : a < 0 ? (T)-1 : a != a ? a : (T)0)", "(T)((a > 0) - (a < 0))", NULL, \
    SAME, NONE)                                                                                    \
  X(relu, 1, "((a > 0 || a != a) ? a : (T)0)", "(a > 0 ? a : (T)0)", NULL, SAME, NONE)             \
  X(exp, 1, "exp(a)", NULL, NULL, SAME, NONE)                                                      \
  X(expm1, 1, "expm1(a)", NULL, NULL, SAME, NONE)                                                  \
  X(log, 1, "log(a)", NULL, NULL, SAME, NONE)                                                      \
  X(log1p, 1, "log1p(a)", NULL, NULL, SAME, NONE)                                                  \
  X(log2, 1, "log2(a)", NULL, NULL, SAME, NONE)                                                    \
  X(log10, 1, "log10(a)", NULL, NULL, SAME, NONE)                                                  \
  X(sqrt, 1, "sqrt(a)", NULL, NULL, SAME, NONE)                                                    \
  X(reciprocal, 1, "(T)1 / a", NULL, NULL, SAME, NONE)                                             \
  X(sin, 1, "sin(a)", NULL, NULL, SAME, NONE)                                                      \
  X(cos, 1, "cos(a)", NULL, NULL, SAME, NONE)                                                      \
  X(tan, 1, "tan(a)", NULL, NULL, SAME, NONE)                                                      \
  X(asin, 1, "asin(a)", NULL, NULL, SAME, NONE)                                                    \
  X(acos, 1, "acos(a)", NULL, NULL, SAME, NONE)                                                    \
  X(atan, 1, "atan(a)", NULL, NULL, SAME, NONE)                                                    \
  X(sinh, 1, "sinh(a)", NULL, NULL, SAME, NONE)                                                    \
  X(cosh, 1, "cosh(a)", NULL, NULL, SAME, NONE)                                                    \
  X(tanh, 1, "tanh(a)", NULL, NULL, SAME, NONE)                                                    \
  X(asinh, 1, "asinh(a)", NULL, NULL, SAME, NONE)                                                  \
  X(acosh, 1, "acosh(a)", NULL, NULL, SAME, NONE)                                                  \
  X(atanh, 1, "atanh(a)", NULL, NULL, SAME, NONE)                                                  \
  X(erf, 1, "erf(a)", NULL, NULL, SAME, NONE)                                                      \
  X(floor, 1, "floor(a)", "a", "a", SAME, NONE)                                                    \
  X(ceil, 1, "ceil(a)", "a", "a", SAME, NONE)                                                      \
  X(trunc, 1, "trunc(a)", "a", "a", SAME, NONE)                                                    \
  X(round, 1, "rint(a)", "a", "a", F16_FOR_BOOL, NONE)                                             \
  X(isnan, 1, "(a != a)", "0", "0", BOOL, NONE)                                                    \
  X(isinf, 1, "isinf(a)", "0", "0", BOOL, NONE)                                                    \
  X(isfinite, 1, "isfinite(a)", "1", "1", BOOL, NONE)                                              \
  X(logical_not, 1, "(a == 0)", "(a == 0)", "(a == 0)", BOOL, NONE)                                \
  X(bitwise_invert, 1, NULL, "~a", "!a", SAME, NONE)                                               \
  X(sigmoid, 1, "(T)1 / ((T)1 + exp(-a))", NULL, NULL, SAME, NONE)                                 \
  X(silu, 1, "a / ((T)1 + exp(-a))", NULL, NULL, SAME, NONE)                                       \
  X(selu, 1, "ct_selu(a)", NULL, NULL, SAME, NONE)                                                 \
  X(hardswish, 1, "ct_hardswish(a)", NULL, NULL, SAME, NONE)                                       \
  X(leaky_relu, 1, "(a > 0 ? a : a * P0)", NULL, NULL, SAME, FLOATS)                               \
  X(elu, 1, "(a > 0 ? a : P0 * expm1(a))", NULL, NULL, SAME, FLOATS)                               \
  X(softplus, 1, "(a * P0 > P1 ? a : log1p(exp(a * P0)) / P0)", NULL, NULL, SAME, FLOATS)          \
  X(gelu, 1, "ct_gelu(a, P0)", NULL, NULL, SAME, GELU)                                             \
  X(add, 2, "a + b", CT_CL_WRAP("+"), "(a | b)", SAME, NONE)                                       \
  X(subtract, 2, "a - b", CT_CL_WRAP("-"), NULL, SAME, NONE)                                       \
  X(multiply, 2, "a * b", CT_CL_WRAP("*"), "(a & b)", SAME, NONE)                                  \
  X(divide, 2, "a / b", "(double)a / (double)b", "(double)a / (double)b", F64_FOR_INTS, NONE)      \
  X(maximum, 2, "((a >= b || a != a) ? a : b)", "(a > b ? a : b)", "(a | b)", SAME, NONE)          \
  X(minimum, 2, "((a <= b || a != a) ? a : b)", "(a < b ? a : b)", "(a & b)", SAME, NONE)          \
  X(pow, 2, "pow(a, b)", "ct_int_pow(a, b)", NULL, SAME, NONE)                                     \
  X(atan2, 2, "atan2(a, b)", NULL, NULL, SAME, NONE)                                               \
  X(hypot, 2, "hypot(a, b)", NULL, NULL, SAME, NONE)                                               \
  X(copysign, 2, "copysign(a, b)", NULL, NULL, SAME, NONE)                                         \
  X(floor_divide, 2, "ct_floor_divide(a, b)", "ct_int_floor_divide(a, b)", NULL, SAME, NONE)       \
  X(remainder, 2, "ct_remainder(a, b)", "ct_int_remainder(a, b)", NULL, SAME, NONE)                \
  X(bitwise_and, 2, NULL, "(a & b)", "(a & b)", SAME, NONE)                                        \
  X(bitwise_or, 2, NULL, "(a | b)", "(a | b)", SAME, NONE)                                         \
  X(bitwise_xor, 2, NULL, "(a ^ b)", "(a ^ b)", SAME, NONE)                                        \
  X(bitwise_left_shift, 2, NULL, "((U)b < (U)(8 * sizeof(T)) ? (T)((U)a << (U)b) : (T)0)", NULL,   \
    SAME, NONE)                                                                                    \
  X(bitwise_right_shift, 2, NULL,                                                                  \
    "((U)b < (U)(8 * sizeof(T)) ? (T)(a >> (U)b) : (T)(a < 0 ? -1 : 0))", NULL, SAME, NONE)        \
  X(equal, 2, "(a == b)", "(a == b)", "(a == b)", BOOL, NONE)                                      \
  X(not_equal, 2, "(a != b)", "(a != b)", "(a != b)", BOOL, NONE)                                  \
  X(less, 2, "(a < b)", "(a < b)", "(a < b)", BOOL, NONE)                                          \
  X(less_equal, 2, "(a <= b)", "(a <= b)", "(a <= b)", BOOL, NONE)                                 \
  X(greater, 2, "(a > b)", "(a > b)", "(a > b)", BOOL, NONE)                                       \
  X(greater_equal, 2, "(a >= b)", "(a >= b)", "(a >= b)", BOOL, NONE)                              \
  X(logical_and, 2, "(a != 0 && b != 0)", "(a != 0 && b != 0)", "(a != 0 && b != 0)", BOOL, NONE)  \
  X(logical_or, 2, "(a != 0 || b != 0)", "(a != 0 || b != 0)", "(a != 0 || b != 0)", BOOL, NONE)   \
  X(logical_xor, 2, "((a != 0) != (b != 0))", "((a != 0) != (b != 0))", "((a != 0) != (b != 0))",  \
    BOOL, NONE)                                                                                    \
  X(where, 3, "(a ? b : c)", "(a ? b : c)", "(a ? b : c)", WHERE, NONE)

#endif /* CTENSOR_CL_ELEMENTWISE_OPS_H_ */
