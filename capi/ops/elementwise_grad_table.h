/* elementwise_grad_table.h - the backward operators of element-wise ops: one line per op, the
 * only place that lists them and their formulas. capi/ops/elementwise_grad_ops.c defines each
 * op's schema from its row (op_list.h adds them to the registry); the CPU backend
 * (kernels/cpu/ops/elementwise_grad_impl.h, the formula compiled as C with <tgmath.h>), the
 * OpenCL backend (kernels/opencl/cl_elementwise_grad.c, the formula as OpenCL C source) and the
 * CUDA backend (kernels/cuda/cu_elementwise_grad.cu, as CUDA C++) build their kernels from the
 * same text. The gradient rows (capi/gradients/elementwise_grads.h) say which forward op uses
 * which; a gradient that is plain arithmetic on existing ops composes them instead.
 *
 * A row: X(name, inputs, outputs, params, grad0, grad1, doc)
 *   inputs   the input parameters, each broadcast (NumPy rules) to the outputs' shape:
 *            FROM_X (grad_out, x), FROM_OUT (grad_out, out: the forward's result), FROM_X1_X2
 *            (grad_out, x1, x2), FROM_CONDITION (grad_out, condition: bool).
 *   outputs  GRAD_X (one output, grad_x), GRAD_X1 (grad_x1), GRAD_X1_X2 (grad_x1 and grad_x2),
 *            every one of grad_out's dtype and the broadcast shape of the inputs (a binary op's
 *            gradient is then reduced to each input's shape by sum_to_shape).
 *   params   where the scalars P0, P1 come from: NONE, FLOATS (the float attributes in schema
 *            order), GELU (P0 = 1 for approximate="tanh"); elementwise_grad_ops.c declares the
 *            attributes of a row with params as ct_<name>_attrs.
 *   grad0, grad1  the formula of each output (grad1: CT_NA with one output), in g (grad_out), a
 *            (the second input), b (the third), P0, P1 and the compute type T (float for
 *            float16/bfloat16/float32, double for float64). The same text must be valid C (with
 *            <tgmath.h>), CUDA C++ and OpenCL C: C99 math functions, conditionals, literals cast
 *            to T, and the helpers of CT_ELEMENTWISE_GRAD_HELPERS below.
 *   doc      the op's description (the schema's doc string).
 *
 * The formulas are PyTorch's (torch/csrc/autograd/FunctionsManual.cpp and the backward kernels
 * of aten/src/ATen/native/cpu), so that edge points agree: relu'(0) = 0, abs'(0) = 0, ties of
 * maximum and minimum split the gradient in half, hardswish' is 0 at -3 and 1 at 3,
 * leaky_relu'(0) = negative_slope, elu'(0) = alpha. One change: torch's 1 - x * x (asin, acos,
 * atanh, tanh) and x * x - 1 (acosh) are computed as (1 - x) * (1 + x) and (x - 1) * (x + 1),
 * within an ulp where torch's form loses the low digits of x * x near |x| = 1.
 */
#ifndef CTENSOR_ELEMENTWISE_GRAD_TABLE_H_
#define CTENSOR_ELEMENTWISE_GRAD_TABLE_H_

/* Helpers the formulas call: H(name, (parameters), body). Each device defines them from this
 * text: C as static inline functions of T, OpenCL C as inline functions (the body stringized),
 * CUDA as __device__ templates over T. Parameters are all of type T. */
#define CT_ELEMENTWISE_GRAD_HELPERS(H)                                                       \
  /* torch's silu_backward */                                                                \
  H(ct_silu_backward, (T g, T x), const T s = (T)1 / ((T)1 + exp(-x));                       \
    return g * s * ((T)1 + x * ((T)1 - s));)                                                 \
  /* torch's mish_backward; tanh saturates exactly from 20 (a runtime's tanh may stop an ulp \
   * short of 1, and x times that ulp is not small) */                                       \
  H(ct_mish_backward, (T g, T x), const T sigmoid = (T)1 / ((T)1 + exp(-x));                 \
    const T softplus = log1p(exp(x)); const T t = softplus >= (T)20 ? (T)1 : tanh(softplus); \
    return g * (t + x * sigmoid * ((T)1 - t * t));)                                          \
  /* torch's softplus_backward: the gradient itself above the threshold */                   \
  H(ct_softplus_backward, (T g, T x, T beta, T threshold), const T z = exp(x * beta);        \
    return x * beta > threshold ? g : g * z / (z + (T)1);)                                   \
  /* torch's GeluBackward, approximate="none" */                                             \
  H(ct_gelu_erf_backward, (T g, T x),                                                        \
    const T cdf = (T)0.5 * ((T)1 + erf(x * (T)0.70710678118654752440084436210484903928));    \
    const T pdf = (T)0.39894228040143267793994605993438186848 * exp(-(x * x) * (T)0.5);      \
    return g * (cdf + x * pdf);)                                                             \
  /* and approximate="tanh"; tanh saturates exactly from |u| = 20 (a runtime's tanh may stop \
   * an ulp short of 1, as the forward notes) */                                             \
  H(ct_gelu_tanh_backward, (T g, T x),                                                       \
    const T beta = (T)0.79788456080286535587989211986876373695; /* sqrt(2 / pi) */           \
    const T kappa = (T)0.044715; const T x_sq = x * x;                                       \
    const T inner = beta * (x + kappa * x_sq * x);                                           \
    const T t = fabs(inner) >= (T)20 ? copysign((T)1, inner) : tanh(inner);                  \
    const T left_derivative = (T)0.5 * ((T)1 + t);                                           \
    const T right_derivative =                                                               \
        (T)0.5 * x * ((T)1 - t * t) * (beta * ((T)1 + (T)3 * kappa * x_sq));                 \
    return g * (left_derivative + right_derivative);)

#define CT_ELEMENTWISE_GRAD_OPS(X)                                                                 \
  X(abs_backward, FROM_X, GRAD_X, NONE,                                                            \
    g*(a > 0   ? (T)1                                                                              \
       : a < 0 ? -(T)1                                                                             \
               : (T)0),                                                                            \
    CT_NA, "Gradient of abs: grad_out * sign(x), 0 at x = 0 and at nan (torch).")                  \
  X(relu_backward, FROM_OUT, GRAD_X, NONE, (a <= 0 ? (T)0 : g), CT_NA,                             \
    "Gradient of relu from its result: 0 where out <= 0 (relu'(0) = 0), grad_out elsewhere and "   \
    "at nan (torch's threshold_backward).")                                                        \
  X(expm1_backward, FROM_OUT, GRAD_X, NONE, g*(a + (T)1), CT_NA,                                   \
    "Gradient of expm1 from its result: grad_out * (out + 1).")                                    \
  X(log1p_backward, FROM_X, GRAD_X, NONE, g / (a + (T)1), CT_NA,                                   \
    "Gradient of log1p: grad_out / (x + 1).")                                                      \
  X(log2_backward, FROM_X, GRAD_X, NONE, g / (a * (T)0.69314718055994530941723212145817656808),    \
    CT_NA, "Gradient of log2: grad_out / (x * log(2)).")                                           \
  X(log10_backward, FROM_X, GRAD_X, NONE, g / (a * (T)2.30258509299404568401799145468436420760),   \
    CT_NA, "Gradient of log10: grad_out / (x * log(10)).")                                         \
  X(tan_backward, FROM_OUT, GRAD_X, NONE, g*((T)1 + a * a), CT_NA,                                 \
    "Gradient of tan from its result: grad_out * (1 + out * out).")                                \
  X(asin_backward, FROM_X, GRAD_X, NONE, g*((T)1 / sqrt(((T)1 - a) * ((T)1 + a))), CT_NA,          \
    "Gradient of asin: grad_out / sqrt(1 - x * x).")                                               \
  X(acos_backward, FROM_X, GRAD_X, NONE, g * (-((T)1 / sqrt(((T)1 - a) * ((T)1 + a)))), CT_NA,     \
    "Gradient of acos: -grad_out / sqrt(1 - x * x).")                                              \
  X(atan_backward, FROM_X, GRAD_X, NONE, g / (a * a + (T)1), CT_NA,                                \
    "Gradient of atan: grad_out / (x * x + 1).")                                                   \
  X(tanh_backward, FROM_OUT, GRAD_X, NONE, g*(((T)1 - a) * ((T)1 + a)), CT_NA,                     \
    "Gradient of tanh from its result: grad_out * (1 - out * out).")                               \
  X(asinh_backward, FROM_X, GRAD_X, NONE, g*((T)1 / sqrt(a * a + (T)1)), CT_NA,                    \
    "Gradient of asinh: grad_out / sqrt(x * x + 1).")                                              \
  X(acosh_backward, FROM_X, GRAD_X, NONE, g*((T)1 / sqrt((a - (T)1) * (a + (T)1))), CT_NA,         \
    "Gradient of acosh: grad_out / sqrt(x * x - 1).")                                              \
  X(atanh_backward, FROM_X, GRAD_X, NONE, g / (((T)1 - a) * ((T)1 + a)), CT_NA,                    \
    "Gradient of atanh: grad_out / (1 - x * x).")                                                  \
  X(erf_backward, FROM_X, GRAD_X, NONE,                                                            \
    g*((T)1.12837916709551257389615890312154517169 * exp(-(a * a))), CT_NA,                        \
    "Gradient of erf: grad_out * 2 / sqrt(pi) * exp(-x * x).")                                     \
  X(sigmoid_backward, FROM_OUT, GRAD_X, NONE, g*((T)1 - a) * a, CT_NA,                             \
    "Gradient of sigmoid from its result: grad_out * (1 - out) * out.")                            \
  X(silu_backward, FROM_X, GRAD_X, NONE, ct_silu_backward(g, a), CT_NA,                            \
    "Gradient of silu: grad_out * s * (1 + x * (1 - s)) with s = sigmoid(x).")                     \
  X(selu_backward, FROM_X, GRAD_X, NONE,                                                           \
    (a <= 0                                                                                        \
         ? g * (T)(1.6732632423543772848170429916717 * 1.0507009873554804934193349852946) * exp(a) \
         : g * (T)1.0507009873554804934193349852946),                                              \
    CT_NA,                                                                                         \
    "Gradient of selu: grad_out * scale for x > 0 (and nan), grad_out * scale * alpha * exp(x) "   \
    "for x <= 0 (torch's elu_backward).")                                                          \
  X(hardswish_backward, FROM_X, GRAD_X, NONE,                                                      \
    (a > (T) - 3 && a < (T)3 ? g * (a / (T)3 + (T)0.5)                                             \
     : a <= (T) - 3          ? (T)0                                                                \
                             : g),                                                                 \
    CT_NA,                                                                                         \
    "Gradient of hardswish: grad_out * (x / 3 + 0.5) for -3 < x < 3, 0 for x <= -3, grad_out "     \
    "for x >= 3 and nan (torch).")                                                                 \
  X(hardsigmoid_backward, FROM_X, GRAD_X, NONE, (a > (T) - 3 && a < (T)3 ? g / (T)6 : (T)0),       \
    CT_NA,                                                                                         \
    "Gradient of hardsigmoid: grad_out / 6 for -3 < x < 3, 0 elsewhere and at nan (torch).")       \
  X(mish_backward, FROM_X, GRAD_X, NONE, ct_mish_backward(g, a), CT_NA,                            \
    "Gradient of mish: grad_out * (t + x * sigmoid(x) * (1 - t * t)) with "                        \
    "t = tanh(softplus(x)) (torch's mish_backward).")                                              \
  X(leaky_relu_backward, FROM_X, GRAD_X, FLOATS, (a > 0 ? g : g * P0), CT_NA,                      \
    "Gradient of leaky_relu: grad_out for x > 0, grad_out * negative_slope for x <= 0 and nan "    \
    "(torch).")                                                                                    \
  X(elu_backward, FROM_X, GRAD_X, FLOATS, (a <= 0 ? g * P0 * exp(a) : g), CT_NA,                   \
    "Gradient of elu: grad_out for x > 0 (and nan), grad_out * alpha * exp(x) for x <= 0 "         \
    "(torch's elu_backward).")                                                                     \
  X(softplus_backward, FROM_X, GRAD_X, FLOATS, ct_softplus_backward(g, a, P0, P1), CT_NA,          \
    "Gradient of softplus: grad_out * z / (z + 1) with z = exp(beta * x), grad_out itself where "  \
    "beta * x > threshold (torch).")                                                               \
  X(gelu_backward, FROM_X, GRAD_X, GELU,                                                           \
    (P0 != 0 ? ct_gelu_tanh_backward(g, a) : ct_gelu_erf_backward(g, a)), CT_NA,                   \
    "Gradient of gelu, either form (approximate=\"none\": grad_out * (Phi(x) + x * phi(x)); "      \
    "\"tanh\": the derivative of the tanh formula), as torch's GeluBackward.")                     \
  X(maximum_backward, FROM_X1_X2, GRAD_X1_X2, NONE,                                                \
    (a == b  ? g / (T)2                                                                            \
     : a < b ? (T)0                                                                                \
             : g),                                                                                 \
    (a == b  ? g / (T)2                                                                            \
     : a > b ? (T)0                                                                                \
             : g),                                                                                 \
    "Gradients of maximum at the broadcast shape: grad_out to the larger input, half to each on "  \
    "ties, all of it to both where either is nan (torch).")                                        \
  X(minimum_backward, FROM_X1_X2, GRAD_X1_X2, NONE,                                                \
    (a == b  ? g / (T)2                                                                            \
     : a > b ? (T)0                                                                                \
             : g),                                                                                 \
    (a == b  ? g / (T)2                                                                            \
     : a < b ? (T)0                                                                                \
             : g),                                                                                 \
    "Gradients of minimum at the broadcast shape: grad_out to the smaller input, half to each on " \
    "ties, all of it to both where either is nan (torch).")                                        \
  X(pow_backward, FROM_X1_X2, GRAD_X1_X2, NONE, (b == 0 ? (T)0 : g * (b * pow(a, b - (T)1))),      \
    (a == 0 && b >= 0 ? (T)0 : g * (pow(a, b) * log(a))),                                          \
    "Gradients of pow at the broadcast shape: grad_out * x2 * x1 ** (x2 - 1) (0 where x2 = 0) "    \
    "and grad_out * x1 ** x2 * log(x1) (0 where x1 = 0 and x2 >= 0), as torch.")                   \
  X(atan2_backward, FROM_X1_X2, GRAD_X1_X2, NONE,                                                  \
    g * b * (a * a + b * b == 0 ? (T)0 : (T)1 / (a * a + b * b)),                                  \
    g * (-a) * (a * a + b * b == 0 ? (T)0 : (T)1 / (a * a + b * b)),                               \
    "Gradients of atan2 at the broadcast shape: grad_out * x2 / r and -grad_out * x1 / r with "    \
    "r = x1 * x1 + x2 * x2 (1 / r taken as 0 where r = 0, as torch).")                             \
  X(logaddexp_backward, FROM_X1_X2, GRAD_X1_X2, NONE, g / ((T)1 + exp(b - a)),                     \
    g / ((T)1 + exp(a - b)),                                                                       \
    "Gradients of logaddexp at the broadcast shape: grad_out / (1 + exp(x2 - x1)) and "            \
    "grad_out / (1 + exp(x1 - x2)) (torch).")                                                      \
  X(copysign_backward, FROM_X1_X2, GRAD_X1, NONE, g*(a == 0 ? (T)0 : copysign(a, b) / a), CT_NA,   \
    "Gradient of copysign for x1 at the broadcast shape: grad_out * copysign(x1, x2) / x1, 0 "     \
    "where x1 = 0 (torch).")                                                                       \
  X(where_backward, FROM_CONDITION, GRAD_X1_X2, NONE, (a ? g : (T)0), (a ? (T)0 : g),              \
    "Gradients of where for x1 and x2 at the broadcast shape: grad_out where condition is true "   \
    "(x1) or false (x2), 0 elsewhere.")

#endif /* CTENSOR_ELEMENTWISE_GRAD_TABLE_H_ */
