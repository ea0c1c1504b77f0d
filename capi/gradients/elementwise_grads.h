/* elementwise_grads.h - gradient rows of element-wise ops (elementwise_table.h). Format:
 * gradient_rows.h. Backward kernels: elementwise_grad_table.h. Subgradients and edge points
 * follow PyTorch (torch/csrc/autograd/FunctionsManual.cpp, derivatives.yaml). */
#ifndef CTENSOR_ELEMENTWISE_GRADS_H_
#define CTENSOR_ELEMENTWISE_GRADS_H_

/* Shared reasons of the rows that are not differentiable. */
#define CT_EWG_PIECEWISE_CONSTANT                                                              \
  "piecewise constant: the derivative is 0 wherever it exists (torch returns zeros); ctensor " \
  "marks it not differentiable"
#define CT_EWG_BOOL_RESULT "bool result: not differentiable"
#define CT_EWG_INTEGER_ONLY "bitwise ops take integers and bool only: not differentiable"

/* Binary ops whose backward kernel gives both cotangents at the broadcast shape. */
#define CT_EWG_BINARY_KERNEL(OP)                                  \
  "t1, t2 = " #OP                                                 \
  "_backward(grad_out, x1, x2); grad_x1 = sum_to_shape(t1, x1); " \
  "grad_x2 = sum_to_shape(t2, x2)"

#define CT_ELEMENTWISE_GRADS(G)                                                                    \
  G(negative, "grad_x = negative(grad_out)", "")                                                   \
  G(positive, "grad_x = positive(grad_out)", "")                                                   \
  G(abs, "grad_x = abs_backward(grad_out, x)",                                                     \
    "abs'(0) = 0, as torch (grad_out * sign(x)); 0 at nan too")                                    \
  G(square, "t = add(x, x); grad_x = multiply(grad_out, t)", "")                                   \
  G(sign, "", CT_EWG_PIECEWISE_CONSTANT)                                                           \
  G(relu, "grad_x = relu_backward(grad_out, out)",                                                 \
    "relu'(0) = 0, as torch (threshold_backward on the result); nan passes grad_out")              \
  G(exp, "grad_x = multiply(grad_out, out)", "")                                                   \
  G(expm1, "grad_x = expm1_backward(grad_out, out)", "")                                           \
  G(log, "grad_x = divide(grad_out, x)", "")                                                       \
  G(log1p, "grad_x = log1p_backward(grad_out, x)", "")                                             \
  G(log2, "grad_x = log2_backward(grad_out, x)", "")                                               \
  G(log10, "grad_x = log10_backward(grad_out, x)", "")                                             \
  G(sqrt, "t = add(out, out); grad_x = divide(grad_out, t)", "")                                   \
  G(reciprocal, "t1 = multiply(out, out); t2 = multiply(grad_out, t1); grad_x = negative(t2)", "") \
  G(sin, "t = cos(x); grad_x = multiply(grad_out, t)", "")                                         \
  G(cos, "t1 = sin(x); t2 = negative(t1); grad_x = multiply(grad_out, t2)", "")                    \
  G(tan, "grad_x = tan_backward(grad_out, out)", "")                                               \
  G(asin, "grad_x = asin_backward(grad_out, x)", "")                                               \
  G(acos, "grad_x = acos_backward(grad_out, x)", "")                                               \
  G(atan, "grad_x = atan_backward(grad_out, x)", "")                                               \
  G(sinh, "t = cosh(x); grad_x = multiply(grad_out, t)", "")                                       \
  G(cosh, "t = sinh(x); grad_x = multiply(grad_out, t)", "")                                       \
  G(tanh, "grad_x = tanh_backward(grad_out, out)", "")                                             \
  G(asinh, "grad_x = asinh_backward(grad_out, x)", "")                                             \
  G(acosh, "grad_x = acosh_backward(grad_out, x)", "")                                             \
  G(atanh, "grad_x = atanh_backward(grad_out, x)", "")                                             \
  G(erf, "grad_x = erf_backward(grad_out, x)", "")                                                 \
  G(floor, "", CT_EWG_PIECEWISE_CONSTANT)                                                          \
  G(ceil, "", CT_EWG_PIECEWISE_CONSTANT)                                                           \
  G(trunc, "", CT_EWG_PIECEWISE_CONSTANT)                                                          \
  G(round, "", CT_EWG_PIECEWISE_CONSTANT)                                                          \
  G(isnan, "", CT_EWG_BOOL_RESULT)                                                                 \
  G(isinf, "", CT_EWG_BOOL_RESULT)                                                                 \
  G(isfinite, "", CT_EWG_BOOL_RESULT)                                                              \
  G(logical_not, "", CT_EWG_BOOL_RESULT)                                                           \
  G(bitwise_invert, "", CT_EWG_INTEGER_ONLY)                                                       \
  G(sigmoid, "grad_x = sigmoid_backward(grad_out, out)", "")                                       \
  G(silu, "grad_x = silu_backward(grad_out, x)", "")                                               \
  G(selu, "grad_x = selu_backward(grad_out, x)", "selu'(0) = scale * alpha, as torch")             \
  G(hardswish, "grad_x = hardswish_backward(grad_out, x)",                                         \
    "as torch: 0 for x <= -3, 1 for x >= 3 (and nan), x / 3 + 0.5 between")                        \
  G(hardsigmoid, "grad_x = hardsigmoid_backward(grad_out, x)",                                     \
    "as torch: 1/6 strictly between -3 and 3, 0 at and beyond them and at nan")                    \
  G(mish, "grad_x = mish_backward(grad_out, x)", "")                                               \
  G(leaky_relu, "grad_x = leaky_relu_backward(grad_out, x; negative_slope)",                       \
    "leaky_relu'(0) = negative_slope, as torch")                                                   \
  G(elu, "grad_x = elu_backward(grad_out, x; alpha)", "elu'(0) = alpha, as torch")                 \
  G(softplus, "grad_x = softplus_backward(grad_out, x; beta, threshold)",                          \
    "1 where beta * x > threshold (the forward is x there), as torch")                             \
  G(gelu, "grad_x = gelu_backward(grad_out, x; approximate)",                                      \
    "the derivative of the form approximate names, as torch")                                      \
  G(add, "grad_x1 = sum_to_shape(grad_out, x1); grad_x2 = sum_to_shape(grad_out, x2)", "")         \
  G(subtract,                                                                                      \
    "grad_x1 = sum_to_shape(grad_out, x1); t = negative(grad_out); "                               \
    "grad_x2 = sum_to_shape(t, x2)",                                                               \
    "")                                                                                            \
  G(multiply,                                                                                      \
    "t1 = multiply(grad_out, x2); grad_x1 = sum_to_shape(t1, x1); "                                \
    "t2 = multiply(grad_out, x1); grad_x2 = sum_to_shape(t2, x2)",                                 \
    "")                                                                                            \
  G(divide,                                                                                        \
    "t1 = divide(grad_out, x2); grad_x1 = sum_to_shape(t1, x1); t2 = divide(out, x2); "            \
    "t3 = multiply(grad_out, t2); t4 = negative(t3); grad_x2 = sum_to_shape(t4, x2)",              \
    "x2's cotangent is -grad_out * (out / x2), as torch")                                          \
  G(maximum, CT_EWG_BINARY_KERNEL(maximum),                                                        \
    "ties split grad_out in half between x1 and x2; where either is nan both get all of it "       \
    "(torch)")                                                                                     \
  G(minimum, CT_EWG_BINARY_KERNEL(minimum),                                                        \
    "ties split grad_out in half between x1 and x2; where either is nan both get all of it "       \
    "(torch)")                                                                                     \
  G(pow, CT_EWG_BINARY_KERNEL(pow),                                                                \
    "as torch: 0 for x1 where x2 = 0; 0 for x2 where x1 = 0 and x2 >= 0 (else x1 ** x2 * "         \
    "log(x1), nan for negative x1)")                                                               \
  G(atan2, CT_EWG_BINARY_KERNEL(atan2), "0 at x1 = x2 = 0, as torch")                              \
  G(hypot,                                                                                         \
    "t1 = multiply(grad_out, x1); t2 = divide(t1, out); grad_x1 = sum_to_shape(t2, x1); "          \
    "t3 = multiply(grad_out, x2); t4 = divide(t3, out); grad_x2 = sum_to_shape(t4, x2)",           \
    "nan at x1 = x2 = 0, as torch")                                                                \
  G(logaddexp, CT_EWG_BINARY_KERNEL(logaddexp), "")                                                \
  G(copysign, "t = copysign_backward(grad_out, x1, x2); grad_x1 = sum_to_shape(t, x1)",            \
    "x1: 0 where x1 = 0, as torch; x2 only gives the sign: not differentiable (torch returns "     \
    "zeros)")                                                                                      \
  G(floor_divide, "", CT_EWG_PIECEWISE_CONSTANT)                                                   \
  G(remainder,                                                                                     \
    "grad_x1 = sum_to_shape(grad_out, x1); t1 = floor_divide(x1, x2); "                            \
    "t2 = multiply(grad_out, t1); t3 = negative(t2); grad_x2 = sum_to_shape(t3, x2)",              \
    "as torch: x1 gets grad_out, x2 gets -grad_out * floor(x1 / x2)")                              \
  G(bitwise_and, "", CT_EWG_INTEGER_ONLY)                                                          \
  G(bitwise_or, "", CT_EWG_INTEGER_ONLY)                                                           \
  G(bitwise_xor, "", CT_EWG_INTEGER_ONLY)                                                          \
  G(bitwise_left_shift, "", CT_EWG_INTEGER_ONLY)                                                   \
  G(bitwise_right_shift, "", CT_EWG_INTEGER_ONLY)                                                  \
  G(equal, "", CT_EWG_BOOL_RESULT)                                                                 \
  G(not_equal, "", CT_EWG_BOOL_RESULT)                                                             \
  G(less, "", CT_EWG_BOOL_RESULT)                                                                  \
  G(less_equal, "", CT_EWG_BOOL_RESULT)                                                            \
  G(greater, "", CT_EWG_BOOL_RESULT)                                                               \
  G(greater_equal, "", CT_EWG_BOOL_RESULT)                                                         \
  G(logical_and, "", CT_EWG_BOOL_RESULT)                                                           \
  G(logical_or, "", CT_EWG_BOOL_RESULT)                                                            \
  G(logical_xor, "", CT_EWG_BOOL_RESULT)                                                           \
  G(where,                                                                                         \
    "t1, t2 = where_backward(grad_out, condition); grad_x1 = sum_to_shape(t1, x1); "               \
    "grad_x2 = sum_to_shape(t2, x2)",                                                              \
    "condition is bool: not differentiable")

#endif /* CTENSOR_ELEMENTWISE_GRADS_H_ */
