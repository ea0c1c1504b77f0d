/* norm_grads.h - gradient rows of softmax, log_softmax and the normalisations. Format:
 * gradient_rows.h. */
#ifndef CTENSOR_NORM_GRADS_H_
#define CTENSOR_NORM_GRADS_H_

#define CT_NORM_GRADS(G)                                                                      \
  G(softmax, "grad_x = softmax_backward(grad_out, out; axis)", "")                            \
  G(log_softmax, "grad_x = log_softmax_backward(grad_out, out; axis)", "")                    \
  G(layer_norm,                                                                               \
    "grad_input, grad_weight, grad_bias = layer_norm_backward(grad_out, input, weight; "      \
    "normalized_shape, eps)",                                                                 \
    "the statistics are recomputed from input")                                               \
  G(rms_norm,                                                                                 \
    "grad_input, grad_weight = rms_norm_backward(grad_out, input, weight; normalized_shape, " \
    "eps)",                                                                                   \
    "the mean square is recomputed from input")                                               \
  G(group_norm,                                                                               \
    "grad_input, grad_weight, grad_bias = group_norm_backward(grad_out, input, weight; "      \
    "num_groups, eps)",                                                                       \
    "the statistics are recomputed from input")                                               \
  G(batch_norm,                                                                               \
    "grad_input, grad_weight, grad_bias = batch_norm_backward(grad_out, input, weight, "      \
    "running_mean, running_var; training=false, eps)",                                        \
    "running_mean and running_var are constants (torch in eval mode): not differentiable")    \
  G(batch_norm_training,                                                                      \
    "grad_input, grad_weight, grad_bias = batch_norm_backward(grad_out, input, weight, "      \
    "save_mean, save_invstd; training=true, eps)",                                            \
    "as torch: running_mean and running_var are not differentiable, and only out carries a "  \
    "gradient (the cotangents of save_mean, save_invstd and the running statistics are ignored)")

#endif /* CTENSOR_NORM_GRADS_H_ */
