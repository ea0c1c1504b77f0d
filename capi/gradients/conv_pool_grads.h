/* conv_pool_grads.h - gradient rows of convolutions, pooling and interpolate. Format:
 * gradient_rows.h. */
#ifndef CTENSOR_CONV_POOL_GRADS_H_
#define CTENSOR_CONV_POOL_GRADS_H_

#define CT_CONV_POOL_GRADS(G)                                                                     \
  G(conv2d,                                                                                       \
    "grad_input = conv2d_backward_input(grad_out, input, weight; stride, padding, dilation, "     \
    "groups); "                                                                                   \
    "grad_weight = conv2d_backward_weight(grad_out, input, weight; stride, padding, dilation, "   \
    "groups); "                                                                                   \
    "grad_bias = sum(grad_out; axis=[0, 2, 3])",                                                  \
    "")                                                                                           \
  G(conv_transpose2d,                                                                             \
    "grad_input = conv_transpose2d_backward_input(grad_out, input, weight; stride, padding, "     \
    "output_padding, groups, dilation); "                                                         \
    "grad_weight = conv2d_backward_weight(input, grad_out, weight; stride, padding, dilation, "   \
    "groups); "                                                                                   \
    "grad_bias = sum(grad_out; axis=[0, 2, 3])",                                                  \
    "the weight's cotangent is conv2d's with the roles of input and grad_out swapped")            \
  G(max_pool2d,                                                                                   \
    "grad_input = max_pool2d_backward(grad_out, input; kernel_size, stride, padding, dilation, "  \
    "ceil_mode)",                                                                                 \
    "as torch: each window's cotangent goes to its first maximum in row-major order (ties: the "  \
    "first), or to its last NaN; a window of padding only (output -inf) passes nothing")          \
  G(avg_pool2d,                                                                                   \
    "grad_input = avg_pool2d_backward(grad_out, input; kernel_size, stride, padding, ceil_mode, " \
    "count_include_pad, divisor_override)",                                                       \
    "")                                                                                           \
  G(adaptive_avg_pool2d, "grad_input = adaptive_avg_pool2d_backward(grad_out, input)", "")        \
  G(interpolate,                                                                                  \
    "grad_input = interpolate_backward(grad_out, input; size, scale_factor, mode, "               \
    "align_corners)",                                                                             \
    "nearest: each output's cotangent goes to the pixel it copies; bilinear: to the four "        \
    "source pixels, times the forward's weights")

#endif /* CTENSOR_CONV_POOL_GRADS_H_ */
