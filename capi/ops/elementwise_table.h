/* elementwise_table.h - the element-wise op table: one line per op, the only place that lists
 * them. Every backend builds from it: capi/ops/elementwise_ops.c defines each op's schema (and
 * op_list.h adds the ops to the registry), the CUDA and OpenCL backends register a kernel per
 * dtype class with a formula and compile the formula (CUDA C++ as written, OpenCL C from the
 * same text stringized). The CPU backend registers its loops in its kernel files
 * (kernels/cpu/unary_kernels.c, binary_math_kernels.c, ...), where the vector code lives.
 *
 * A row: X(name, arity, schema, out, params, float, int, bool, doc)
 *   schema  how capi/ops/elementwise_ops.c defines the schema: UNARY (output like x), UNARY_BOOL
 *           (bool output of x's shape), BINARY (broadcast, the inputs' dtype), BINARY_CHECKED
 *           (as BINARY, not graph-safe: it checks values before writing), BINARY_BOOL
 *           (broadcast, bool), CUSTOM (written by hand there, with this row's doc).
 *   out     the output dtype on the GPU backends: SAME (the inputs'), BOOL, F64_FOR_INTS (float64
 *           for integer and bool inputs), F16_FOR_BOOL (float16 for bool input), WHERE (inputs
 *           bool, T, T; output T).
 *   params  where the scalars P0, P1 come from: NONE, FLOATS (the float attributes in schema
 *           order), GELU (P0 = 1 for approximate="tanh").
 *   float, int, bool  the GPU formula per dtype class (float16/float32/float64, int32/int64,
 *           bool), or CT_NA where the class has no GPU kernel. Inputs a, b, c in their compute
 *           types (float for float16/float32, double, int, long long / long); T is the value
 *           input's compute type and U the unsigned type of its width. The formula must be valid
 *           CUDA C++ and OpenCL C: use the C99 math functions both have, or a ct_* helper defined
 *           in both kernels/cuda/cu_elementwise_math.cuh and kernels/opencl/cl_elementwise.c.
 *   doc     the op's one-paragraph description (the schema's doc string).
 */
#ifndef CTENSOR_ELEMENTWISE_TABLE_H_
#define CTENSOR_ELEMENTWISE_TABLE_H_

/* Output dtype rules and scalar parameter sources of the GPU kernels (the out and params
 * columns). */
typedef enum ct_elementwise_out_rule {
  CT_ELEMENTWISE_OUT_SAME = 0,
  CT_ELEMENTWISE_OUT_BOOL,
  CT_ELEMENTWISE_OUT_F64_FOR_INTS,
  CT_ELEMENTWISE_OUT_F16_FOR_BOOL,
  CT_ELEMENTWISE_OUT_WHERE
} ct_elementwise_out_rule;

typedef enum ct_elementwise_params {
  CT_ELEMENTWISE_PARAMS_NONE = 0,
  CT_ELEMENTWISE_PARAMS_FLOATS,
  CT_ELEMENTWISE_PARAMS_GELU
} ct_elementwise_params;

/* Integer add, subtract and multiply wrap: computed in the unsigned type. */
#define CT_WRAP(op) (T)((U)a op(U) b)

#define CT_ELEMENTWISE_OPS(X)                                                                      \
  X(negative, 1, UNARY, SAME, NONE, -a, (T)((U)0 - (U)a), CT_NA,                                   \
    "Numerical negative, element-wise: -x (integers wrap).")                                       \
  X(positive, 1, UNARY, SAME, NONE, a, a, CT_NA, "Numerical positive, element-wise: +x (a copy).") \
  X(abs, 1, CUSTOM, SAME, NONE, fabs(a), (a < 0 ? (T)((U)0 - (U)a) : a), a,                        \
    "Absolute value, element-wise (abs of the most negative integer wraps, as NumPy). Complex "    \
    "gives the modulus hypot(re, im) as float32/float64.")                                         \
  X(square, 1, UNARY, SAME, NONE, a* a, (T)((U)a * (U)a), CT_NA,                                   \
    "x * x, element-wise (integers wrap).")                                                        \
  X(sign, 1, UNARY, SAME, NONE,                                                                    \
    (a > 0    ? (T)1                                                                               \
     : a < 0  ? (T) - 1                                                                            \
     : a != a ? a                                                                                  \
              : (T)0),                                                                             \
    (T)((a > 0) - (a < 0)), CT_NA,                                                                 \
    "Sign of x, element-wise: -1, 0 or 1 (nan stays nan; sign(-0.0) = 0.0); complex: x / |x| "     \
    "(NumPy 2), 0 for 0.")                                                                         \
  X(relu, 1, UNARY, SAME, NONE, ((a > 0 || a != a) ? a : (T)0), (a > 0 ? a : (T)0), CT_NA,         \
    "Rectified linear unit max(x, 0), element-wise; nan stays nan (torch.relu).")                  \
  X(exp, 1, UNARY, SAME, NONE, exp(a), CT_NA, CT_NA, "Exponential, element-wise.")                 \
  X(expm1, 1, UNARY, SAME, NONE, expm1(a), CT_NA, CT_NA,                                           \
    "exp(x) - 1, element-wise, accurate near zero.")                                               \
  X(log, 1, UNARY, SAME, NONE, log(a), CT_NA, CT_NA,                                               \
    "Natural logarithm, element-wise (log(0) = -inf, log(x<0) = nan).")                            \
  X(log1p, 1, UNARY, SAME, NONE, log1p(a), CT_NA, CT_NA,                                           \
    "log(1 + x), element-wise, accurate near zero.")                                               \
  X(log2, 1, UNARY, SAME, NONE, log2(a), CT_NA, CT_NA, "Base-2 logarithm, element-wise.")          \
  X(log10, 1, UNARY, SAME, NONE, log10(a), CT_NA, CT_NA, "Base-10 logarithm, element-wise.")       \
  X(sqrt, 1, UNARY, SAME, NONE, sqrt(a), CT_NA, CT_NA,                                             \
    "Square root, element-wise (sqrt(x<0) = nan).")                                                \
  X(reciprocal, 1, UNARY, SAME, NONE, (T)1 / a, CT_NA, CT_NA,                                      \
    "1 / x, element-wise; floats and complex only (integer and bool inputs promote to a float "    \
    "dtype).")                                                                                     \
  X(sin, 1, UNARY, SAME, NONE, sin(a), CT_NA, CT_NA, "Sine, element-wise (radians).")              \
  X(cos, 1, UNARY, SAME, NONE, cos(a), CT_NA, CT_NA, "Cosine, element-wise (radians).")            \
  X(tan, 1, UNARY, SAME, NONE, tan(a), CT_NA, CT_NA, "Tangent, element-wise (radians).")           \
  X(asin, 1, UNARY, SAME, NONE, asin(a), CT_NA, CT_NA,                                             \
    "Inverse sine, element-wise (nan outside [-1, 1]).")                                           \
  X(acos, 1, UNARY, SAME, NONE, acos(a), CT_NA, CT_NA,                                             \
    "Inverse cosine, element-wise (nan outside [-1, 1]).")                                         \
  X(atan, 1, UNARY, SAME, NONE, atan(a), CT_NA, CT_NA, "Inverse tangent, element-wise.")           \
  X(sinh, 1, UNARY, SAME, NONE, sinh(a), CT_NA, CT_NA, "Hyperbolic sine, element-wise.")           \
  X(cosh, 1, UNARY, SAME, NONE, cosh(a), CT_NA, CT_NA, "Hyperbolic cosine, element-wise.")         \
  X(tanh, 1, UNARY, SAME, NONE, tanh(a), CT_NA, CT_NA, "Hyperbolic tangent, element-wise.")        \
  X(asinh, 1, UNARY, SAME, NONE, asinh(a), CT_NA, CT_NA, "Inverse hyperbolic sine, element-wise.") \
  X(acosh, 1, UNARY, SAME, NONE, acosh(a), CT_NA, CT_NA,                                           \
    "Inverse hyperbolic cosine, element-wise (nan below 1).")                                      \
  X(atanh, 1, UNARY, SAME, NONE, atanh(a), CT_NA, CT_NA,                                           \
    "Inverse hyperbolic tangent, element-wise (+-inf at +-1, nan outside).")                       \
  X(erf, 1, UNARY, SAME, NONE, erf(a), CT_NA, CT_NA,                                               \
    "Gauss error function, element-wise (torch.erf).")                                             \
  X(floor, 1, UNARY, SAME, NONE, floor(a), a, a,                                                   \
    "Largest integer <= x, element-wise (integers and bool: unchanged).")                          \
  X(ceil, 1, UNARY, SAME, NONE, ceil(a), a, a,                                                     \
    "Smallest integer >= x, element-wise (integers and bool: unchanged).")                         \
  X(trunc, 1, UNARY, SAME, NONE, trunc(a), a, a,                                                   \
    "x rounded toward zero, element-wise (integers and bool: unchanged).")                         \
  X(round, 1, CUSTOM, F16_FOR_BOOL, NONE, rint(a), a, a,                                           \
    "x rounded to the nearest integer, halves to even (integers: unchanged; bool gives float16, "  \
    "as NumPy).")                                                                                  \
  X(isnan, 1, UNARY_BOOL, BOOL, NONE, (a != a), 0, 0,                                              \
    "Whether x is nan (complex: either part), element-wise, as bool (false for integers and "      \
    "bool).")                                                                                      \
  X(isinf, 1, UNARY_BOOL, BOOL, NONE, isinf(a), 0, 0,                                              \
    "Whether x is +-inf (complex: either part), element-wise, as bool (false for integers and "    \
    "bool).")                                                                                      \
  X(isfinite, 1, UNARY_BOOL, BOOL, NONE, isfinite(a), 1, 1,                                        \
    "Whether x is finite (not nan or +-inf; complex: both parts), element-wise, as bool (true "    \
    "for integers and bool).")                                                                     \
  X(logical_not, 1, UNARY_BOOL, BOOL, NONE, (a == 0), (a == 0), (a == 0),                          \
    "x == 0 (complex: both parts zero), element-wise, as bool.")                                   \
  X(bitwise_invert, 1, UNARY, SAME, NONE, CT_NA, ~a, !a,                                           \
    "Bitwise not ~x, element-wise (bool: logical not).")                                           \
  X(sigmoid, 1, UNARY, SAME, NONE, (T)1 / ((T)1 + exp(-a)), CT_NA, CT_NA,                          \
    "Logistic sigmoid 1 / (1 + exp(-x)), element-wise (torch.sigmoid).")                           \
  X(silu, 1, UNARY, SAME, NONE, a / ((T)1 + exp(-a)), CT_NA, CT_NA,                                \
    "x * sigmoid(x), element-wise (torch.nn.functional.silu).")                                    \
  X(selu, 1, UNARY, SAME, NONE, ct_selu(a), CT_NA, CT_NA,                                          \
    "Scaled exponential linear unit, element-wise (torch.nn.functional.selu): scale * (max(0, x) " \
    "+ min(0, alpha * (exp(x) - 1))).")                                                            \
  X(hardswish, 1, UNARY, SAME, NONE, ct_hardswish(a), CT_NA, CT_NA,                                \
    "x * relu6(x + 3) / 6, element-wise (torch.nn.functional.hardswish; x itself from 3 up, "      \
    "where torch's x * 6 / 6 can overflow).")                                                      \
  X(hardsigmoid, 1, UNARY, SAME, NONE,                                                             \
    (a + (T)3 < 0      ? (T)0                                                                      \
     : a + (T)3 > (T)6 ? (T)1                                                                      \
                       : (a + (T)3) / (T)6),                                                       \
    CT_NA, CT_NA,                                                                                  \
    "relu6(x + 3) / 6, element-wise (torch.nn.functional.hardsigmoid): 0 for x <= -3, 1 for "      \
    "x >= 3, nan stays nan.")                                                                      \
  X(mish, 1, UNARY, SAME, NONE, a*(log1p(exp(a)) >= (T)20 ? (T)1 : tanh(log1p(exp(a)))), CT_NA,    \
    CT_NA,                                                                                         \
    "x * tanh(softplus(x)), element-wise (torch.nn.functional.mish; torch's formula "              \
    "x * tanh(log1p(exp(x))), so x itself where exp(x) overflows; tanh saturates from 20).")       \
  X(leaky_relu, 1, CUSTOM, SAME, FLOATS, (a > 0 ? a : a * P0), CT_NA, CT_NA,                       \
    "x if x >= 0 else negative_slope * x, element-wise (torch.nn.functional.leaky_relu).")         \
  X(elu, 1, CUSTOM, SAME, FLOATS, (a > 0 ? a : P0 * expm1(a)), CT_NA, CT_NA,                       \
    "x if x > 0 else alpha * (exp(x) - 1), element-wise (torch.nn.functional.elu).")               \
  X(softplus, 1, CUSTOM, SAME, FLOATS, (a * P0 > P1 ? a : log1p(exp(a * P0)) / P0), CT_NA, CT_NA,  \
    "log(1 + exp(beta * x)) / beta, element-wise; x where beta * x > threshold "                   \
    "(torch.nn.functional.softplus).")                                                             \
  X(gelu, 1, CUSTOM, SAME, GELU, ct_gelu(a, P0), CT_NA, CT_NA,                                     \
    "Gaussian error linear unit x * Phi(x), element-wise (torch.nn.functional.gelu; "              \
    "approximate=\"tanh\" uses the tanh formula).")                                                \
  X(add, 2, BINARY, SAME, NONE, a + b, CT_WRAP(+), (a | b),                                        \
    "x1 + x2 with broadcasting (bool: logical or; integers wrap).")                                \
  X(subtract, 2, BINARY, SAME, NONE, a - b, CT_WRAP(-), CT_NA,                                     \
    "x1 - x2 with broadcasting (integers wrap).")                                                  \
  X(multiply, 2, BINARY, SAME, NONE, a* b, CT_WRAP(*), (a & b),                                    \
    "x1 * x2 with broadcasting (bool: logical and; integers wrap).")                               \
  X(divide, 2, CUSTOM, F64_FOR_INTS, NONE, a / b, (double)a / (double)b, (double)a / (double)b,    \
    "True division x1 / x2 with broadcasting; integer and bool inputs give float64. Complex "      \
    "division is Smith's algorithm, as NumPy.")                                                    \
  X(maximum, 2, BINARY, SAME, NONE, ((a >= b || a != a) ? a : b), (a > b ? a : b), (a | b),        \
    "Element-wise maximum with broadcasting; nan propagates.")                                     \
  X(minimum, 2, BINARY, SAME, NONE, ((a <= b || a != a) ? a : b), (a < b ? a : b), (a & b),        \
    "Element-wise minimum with broadcasting; nan propagates.")                                     \
  X(pow, 2, BINARY_CHECKED, SAME, NONE, pow(a, b), ct_int_pow(a, b), CT_NA,                        \
    "x1 ** x2 with broadcasting. Floats follow C99 pow, as NumPy's element-wise loop (pow(-inf, "  \
    "0.5) = inf). Integer bases with negative integer exponents are an error, as in NumPy; "       \
    "integer results wrap.")                                                                       \
  X(atan2, 2, BINARY, SAME, NONE, atan2(a, b), CT_NA, CT_NA,                                       \
    "Inverse tangent of x1 / x2 in the right quadrant, with broadcasting.")                        \
  X(hypot, 2, BINARY, SAME, NONE, ct_hypot(a, b), CT_NA, CT_NA,                                    \
    "sqrt(x1**2 + x2**2) without undue overflow, with broadcasting.")                              \
  X(logaddexp, 2, BINARY, SAME, NONE,                                                              \
    (a == b       ? a + (T)0.693147180559945309417232121458176568                                  \
     : a - b > 0  ? a + log1p(exp(b - a))                                                          \
     : a - b <= 0 ? b + log1p(exp(a - b))                                                          \
                  : a - b),                                                                        \
    CT_NA, CT_NA,                                                                                  \
    "log(exp(x1) + exp(x2)) with broadcasting, without overflow: the larger plus "                 \
    "log1p(exp(-|x1 - x2|)), as NumPy (logaddexp(inf, inf) = inf, logaddexp(-inf, -inf) = -inf; "  \
    "nan propagates). Float dtypes only (integer and bool inputs promote to a float dtype).")      \
  X(copysign, 2, BINARY, SAME, NONE, copysign(a, b), CT_NA, CT_NA,                                 \
    "Magnitude of x1 with the sign of x2, with broadcasting.")                                     \
  X(floor_divide, 2, BINARY, SAME, NONE, ct_floor_divide(a, b), ct_int_floor_divide(a, b), CT_NA,  \
    "floor(x1 / x2) with broadcasting, as NumPy (integer division by zero gives 0; the most "      \
    "negative integer // -1 wraps).")                                                              \
  X(remainder, 2, BINARY, SAME, NONE, ct_remainder(a, b), ct_int_remainder(a, b), CT_NA,           \
    "x1 - floor(x1 / x2) * x2 with broadcasting: the sign of x2, as NumPy (integer remainder by "  \
    "zero gives 0).")                                                                              \
  X(bitwise_and, 2, BINARY, SAME, NONE, CT_NA, (a & b), (a & b),                                   \
    "x1 & x2 with broadcasting (bool: logical and).")                                              \
  X(bitwise_or, 2, BINARY, SAME, NONE, CT_NA, (a | b), (a | b),                                    \
    "x1 | x2 with broadcasting (bool: logical or).")                                               \
  X(bitwise_xor, 2, BINARY, SAME, NONE, CT_NA, (a ^ b), (a ^ b),                                   \
    "x1 ^ x2 with broadcasting (bool: logical xor).")                                              \
  X(bitwise_left_shift, 2, BINARY, SAME, NONE, CT_NA,                                              \
    ((U)b < (U)(8 * sizeof(T)) ? (T)((U)a << (U)b) : (T)0), CT_NA,                                 \
    "x1 << x2 with broadcasting; shifts by negative amounts or by the bit width or more give 0, "  \
    "as NumPy (results wrap).")                                                                    \
  X(bitwise_right_shift, 2, BINARY, SAME, NONE, CT_NA,                                             \
    ((U)b < (U)(8 * sizeof(T)) ? (T)(a >> (U)b) : (T)(a < 0 ? -1 : 0)), CT_NA,                     \
    "x1 >> x2 (arithmetic for signed integers) with broadcasting; shifts by negative amounts or "  \
    "by the bit width or more give 0, or -1 for negative x1, as NumPy.")                           \
  X(equal, 2, BINARY_BOOL, BOOL, NONE, (a == b), (a == b), (a == b),                               \
    "x1 == x2 with broadcasting, as bool (nan == nan is false).")                                  \
  X(not_equal, 2, BINARY_BOOL, BOOL, NONE, (a != b), (a != b), (a != b),                           \
    "x1 != x2 with broadcasting, as bool (nan != nan is true).")                                   \
  X(less, 2, BINARY_BOOL, BOOL, NONE, (a < b), (a < b), (a < b),                                   \
    "x1 < x2 with broadcasting, as bool.")                                                         \
  X(less_equal, 2, BINARY_BOOL, BOOL, NONE, (a <= b), (a <= b), (a <= b),                          \
    "x1 <= x2 with broadcasting, as bool.")                                                        \
  X(greater, 2, BINARY_BOOL, BOOL, NONE, (a > b), (a > b), (a > b),                                \
    "x1 > x2 with broadcasting, as bool.")                                                         \
  X(greater_equal, 2, BINARY_BOOL, BOOL, NONE, (a >= b), (a >= b), (a >= b),                       \
    "x1 >= x2 with broadcasting, as bool.")                                                        \
  X(logical_and, 2, BINARY_BOOL, BOOL, NONE, (a != 0 && b != 0), (a != 0 && b != 0),               \
    (a != 0 && b != 0), "(x1 != 0) and (x2 != 0) with broadcasting, as bool.")                     \
  X(logical_or, 2, BINARY_BOOL, BOOL, NONE, (a != 0 || b != 0), (a != 0 || b != 0),                \
    (a != 0 || b != 0), "(x1 != 0) or (x2 != 0) with broadcasting, as bool.")                      \
  X(logical_xor, 2, BINARY_BOOL, BOOL, NONE, ((a != 0) != (b != 0)), ((a != 0) != (b != 0)),       \
    ((a != 0) != (b != 0)), "(x1 != 0) != (x2 != 0) with broadcasting, as bool.")                  \
  X(where, 3, CUSTOM, WHERE, NONE, (a ? b : c), (a ? b : c), (a ? b : c),                          \
    "condition ? x1 : x2, element-wise with broadcasting of all three.")

#endif /* CTENSOR_ELEMENTWISE_TABLE_H_ */
