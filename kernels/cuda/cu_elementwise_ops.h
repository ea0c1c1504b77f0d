/* cu_elementwise_ops.h - the element-wise op table of the CUDA backend: one line per op with
 * its CUDA C++ expression per dtype class, the same semantics as the CPU and OpenCL backends.
 * The only place to edit to add an element-wise op.
 *
 * In an expression: inputs a, b, c in their compute types (float for float16/float32, double,
 * int for int32 and bool, long long for int64); T is the value input's compute type and U the
 * unsigned type of its width; P0, P1 the op's scalar parameters. CT_CU_NA: the class is not
 * supported (the op is not registered for its dtypes). */
#ifndef CTENSOR_CU_ELEMENTWISE_OPS_H_
#define CTENSOR_CU_ELEMENTWISE_OPS_H_

/* What the output dtype is. */
enum ct_cu_out_rule {
  CT_CU_OUT_SAME = 0,     /* the inputs' dtype */
  CT_CU_OUT_BOOL,         /* bool */
  CT_CU_OUT_F64_FOR_INTS, /* float64 for integer and bool inputs (true division) */
  CT_CU_OUT_F16_FOR_BOOL, /* float16 for bool input (round, as NumPy) */
  CT_CU_OUT_WHERE         /* inputs (bool, T, T), output T */
};

/* Where the scalar parameters P0, P1 come from. */
enum ct_cu_params {
  CT_CU_PARAMS_NONE = 0,
  CT_CU_PARAMS_FLOATS, /* the op's float attributes, in schema order */
  CT_CU_PARAMS_GELU    /* P0 = 1 for approximate="tanh" */
};

#define CT_CU_WRAP(op) (T)((U)a op(U) b)

/* X-macro rows: name, arity, float, int, bool, output rule, parameters. */
#define CT_CU_ELEMENTWISE_OPS(X)                                                                   \
  X(negative, 1, -a, (T)((U)0 - (U)a), CT_CU_NA, SAME, NONE)                                       \
  X(positive, 1, a, a, CT_CU_NA, SAME, NONE)                                                       \
  X(abs, 1, fabs(a), (a < 0 ? (T)((U)0 - (U)a) : a), a, SAME, NONE)                                \
  X(square, 1, a* a, (T)((U)a * (U)a), CT_CU_NA, SAME, NONE)                                       \
  X(sign, 1,                                                                                       \
    (a > 0    ? (T)1                                                                               \
     : a < 0  ? (T) - 1                                                                            \
     : a != a ? a                                                                                  \
              : (T)0),                                                                             \
    (T)((a > 0) - (a < 0)), CT_CU_NA, SAME, NONE)                                                  \
  X(relu, 1, ((a > 0 || a != a) ? a : (T)0), (a > 0 ? a : (T)0), CT_CU_NA, SAME, NONE)             \
  X(exp, 1, exp(a), CT_CU_NA, CT_CU_NA, SAME, NONE)                                                \
  X(expm1, 1, expm1(a), CT_CU_NA, CT_CU_NA, SAME, NONE)                                            \
  X(log, 1, log(a), CT_CU_NA, CT_CU_NA, SAME, NONE)                                                \
  X(log1p, 1, log1p(a), CT_CU_NA, CT_CU_NA, SAME, NONE)                                            \
  X(log2, 1, log2(a), CT_CU_NA, CT_CU_NA, SAME, NONE)                                              \
  X(log10, 1, log10(a), CT_CU_NA, CT_CU_NA, SAME, NONE)                                            \
  X(sqrt, 1, sqrt(a), CT_CU_NA, CT_CU_NA, SAME, NONE)                                              \
  X(reciprocal, 1, (T)1 / a, CT_CU_NA, CT_CU_NA, SAME, NONE)                                       \
  X(sin, 1, sin(a), CT_CU_NA, CT_CU_NA, SAME, NONE)                                                \
  X(cos, 1, cos(a), CT_CU_NA, CT_CU_NA, SAME, NONE)                                                \
  X(tan, 1, tan(a), CT_CU_NA, CT_CU_NA, SAME, NONE)                                                \
  X(asin, 1, asin(a), CT_CU_NA, CT_CU_NA, SAME, NONE)                                              \
  X(acos, 1, acos(a), CT_CU_NA, CT_CU_NA, SAME, NONE)                                              \
  X(atan, 1, atan(a), CT_CU_NA, CT_CU_NA, SAME, NONE)                                              \
  X(sinh, 1, sinh(a), CT_CU_NA, CT_CU_NA, SAME, NONE)                                              \
  X(cosh, 1, cosh(a), CT_CU_NA, CT_CU_NA, SAME, NONE)                                              \
  X(tanh, 1, tanh(a), CT_CU_NA, CT_CU_NA, SAME, NONE)                                              \
  X(asinh, 1, asinh(a), CT_CU_NA, CT_CU_NA, SAME, NONE)                                            \
  X(acosh, 1, acosh(a), CT_CU_NA, CT_CU_NA, SAME, NONE)                                            \
  X(atanh, 1, atanh(a), CT_CU_NA, CT_CU_NA, SAME, NONE)                                            \
  X(erf, 1, erf(a), CT_CU_NA, CT_CU_NA, SAME, NONE)                                                \
  X(floor, 1, floor(a), a, a, SAME, NONE)                                                          \
  X(ceil, 1, ceil(a), a, a, SAME, NONE)                                                            \
  X(trunc, 1, trunc(a), a, a, SAME, NONE)                                                          \
  X(round, 1, rint(a), a, a, F16_FOR_BOOL, NONE)                                                   \
  X(isnan, 1, (a != a), 0, 0, BOOL, NONE)                                                          \
  X(isinf, 1, isinf(a), 0, 0, BOOL, NONE)                                                          \
  X(isfinite, 1, isfinite(a), 1, 1, BOOL, NONE)                                                    \
  X(logical_not, 1, (a == 0), (a == 0), (a == 0), BOOL, NONE)                                      \
  X(bitwise_invert, 1, CT_CU_NA, ~a, !a, SAME, NONE)                                               \
  X(sigmoid, 1, (T)1 / ((T)1 + exp(-a)), CT_CU_NA, CT_CU_NA, SAME, NONE)                           \
  X(silu, 1, a / ((T)1 + exp(-a)), CT_CU_NA, CT_CU_NA, SAME, NONE)                                 \
  X(selu, 1, ct_cu_selu(a), CT_CU_NA, CT_CU_NA, SAME, NONE)                                        \
  X(hardswish, 1, ct_cu_hardswish(a), CT_CU_NA, CT_CU_NA, SAME, NONE)                              \
  X(leaky_relu, 1, (a > 0 ? a : a * P0), CT_CU_NA, CT_CU_NA, SAME, FLOATS)                         \
  X(elu, 1, (a > 0 ? a : P0 * expm1(a)), CT_CU_NA, CT_CU_NA, SAME, FLOATS)                         \
  X(softplus, 1, (a * P0 > P1 ? a : log1p(exp(a * P0)) / P0), CT_CU_NA, CT_CU_NA, SAME, FLOATS)    \
  X(gelu, 1, ct_cu_gelu(a, P0), CT_CU_NA, CT_CU_NA, SAME, GELU)                                    \
  X(add, 2, a + b, CT_CU_WRAP(+), (a | b), SAME, NONE)                                             \
  X(subtract, 2, a - b, CT_CU_WRAP(-), CT_CU_NA, SAME, NONE)                                       \
  X(multiply, 2, a* b, CT_CU_WRAP(*), (a & b), SAME, NONE)                                         \
  X(divide, 2, a / b, (double)a / (double)b, (double)a / (double)b, F64_FOR_INTS, NONE)            \
  X(maximum, 2, ((a >= b || a != a) ? a : b), (a > b ? a : b), (a | b), SAME, NONE)                \
  X(minimum, 2, ((a <= b || a != a) ? a : b), (a < b ? a : b), (a & b), SAME, NONE)                \
  X(pow, 2, pow(a, b), ct_cu_int_pow(a, b), CT_CU_NA, SAME, NONE)                                  \
  X(atan2, 2, atan2(a, b), CT_CU_NA, CT_CU_NA, SAME, NONE)                                         \
  X(hypot, 2, ct_cu_hypot(a, b), CT_CU_NA, CT_CU_NA, SAME, NONE)                                   \
  X(copysign, 2, copysign(a, b), CT_CU_NA, CT_CU_NA, SAME, NONE)                                   \
  X(floor_divide, 2, ct_cu_floor_divide(a, b), ct_cu_int_floor_divide(a, b), CT_CU_NA, SAME, NONE) \
  X(remainder, 2, ct_cu_remainder(a, b), ct_cu_int_remainder(a, b), CT_CU_NA, SAME, NONE)          \
  X(bitwise_and, 2, CT_CU_NA, (a & b), (a & b), SAME, NONE)                                        \
  X(bitwise_or, 2, CT_CU_NA, (a | b), (a | b), SAME, NONE)                                         \
  X(bitwise_xor, 2, CT_CU_NA, (a ^ b), (a ^ b), SAME, NONE)                                        \
  X(bitwise_left_shift, 2, CT_CU_NA, ((U)b < (U)(8 * sizeof(T)) ? (T)((U)a << (U)b) : (T)0),       \
    CT_CU_NA, SAME, NONE)                                                                          \
  X(bitwise_right_shift, 2, CT_CU_NA,                                                              \
    ((U)b < (U)(8 * sizeof(T)) ? (T)(a >> (U)b) : (T)(a < 0 ? -1 : 0)), CT_CU_NA, SAME, NONE)      \
  X(equal, 2, (a == b), (a == b), (a == b), BOOL, NONE)                                            \
  X(not_equal, 2, (a != b), (a != b), (a != b), BOOL, NONE)                                        \
  X(less, 2, (a < b), (a < b), (a < b), BOOL, NONE)                                                \
  X(less_equal, 2, (a <= b), (a <= b), (a <= b), BOOL, NONE)                                       \
  X(greater, 2, (a > b), (a > b), (a > b), BOOL, NONE)                                             \
  X(greater_equal, 2, (a >= b), (a >= b), (a >= b), BOOL, NONE)                                    \
  X(logical_and, 2, (a != 0 && b != 0), (a != 0 && b != 0), (a != 0 && b != 0), BOOL, NONE)        \
  X(logical_or, 2, (a != 0 || b != 0), (a != 0 || b != 0), (a != 0 || b != 0), BOOL, NONE)         \
  X(logical_xor, 2, ((a != 0) != (b != 0)), ((a != 0) != (b != 0)), ((a != 0) != (b != 0)), BOOL,  \
    NONE)                                                                                          \
  X(where, 3, (a ? b : c), (a ? b : c), (a ? b : c), WHERE, NONE)

#endif /* CTENSOR_CU_ELEMENTWISE_OPS_H_ */
