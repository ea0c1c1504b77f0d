/* loss_grads.h - gradient rows of the losses (cross_entropy, nll_loss,
 * binary_cross_entropy_with_logits, mse_loss, smooth_l1_loss). Format: gradient_rows.h. */
#ifndef CTENSOR_LOSS_GRADS_H_
#define CTENSOR_LOSS_GRADS_H_

#define CT_LOSS_GRADS(G)                                                                         \
  G(cross_entropy,                                                                               \
    "grad_logits, grad_target = cross_entropy_backward(grad_out, logits, target, weight; axis, " \
    "reduction, ignore_index, label_smoothing)",                                                 \
    "as torch: weight is a constant (torch has no derivative for it); class-index targets are "  \
    "not differentiable (their grad_target is zeros), probability targets are")                  \
  G(nll_loss,                                                                                    \
    "grad_log_probs = nll_loss_backward(grad_out, log_probs, target, weight; axis, reduction, "  \
    "ignore_index)",                                                                             \
    "as torch: weight is a constant and the class indices are not differentiable")               \
  G(binary_cross_entropy_with_logits,                                                            \
    "grad_logits, grad_target = binary_cross_entropy_with_logits_backward(grad_out, logits, "    \
    "target, weight, pos_weight; reduction)",                                                    \
    "as torch: weight and pos_weight are constants (torch has no derivative for them)")          \
  G(mse_loss,                                                                                    \
    "d = mse_loss_backward(grad_out, x, target; reduction); grad_x = sum_to_shape(d, x); "       \
    "n = negative(d); grad_target = sum_to_shape(n, target)",                                    \
    "")                                                                                          \
  G(smooth_l1_loss,                                                                              \
    "d = smooth_l1_loss_backward(grad_out, x, target; reduction, beta); grad_x = "               \
    "sum_to_shape(d, x); n = negative(d); grad_target = sum_to_shape(n, target)",                \
    "as torch: where |x - target| >= beta the slope is sign(x - target), 0 at x == target")

#endif /* CTENSOR_LOSS_GRADS_H_ */
