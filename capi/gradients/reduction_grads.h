/* reduction_grads.h - gradient rows of reductions and scans. Format: gradient_rows.h. */
#ifndef CTENSOR_REDUCTION_GRADS_H_
#define CTENSOR_REDUCTION_GRADS_H_

#define CT_REDUCTION_GRADS(G)                                                                      \
  G(sum, "grad_x = sum_backward(grad_out, x; axis, keepdims)", "")                                 \
  G(mean, "grad_x = mean_backward(grad_out, x; axis, keepdims)", "")                               \
  G(prod, "grad_x = prod_backward(grad_out, x; axis, keepdims)",                                   \
    "zeros as torch: with one zero in a group it takes the product of the others and the rest "    \
    "0; with two or more the group's gradient is 0")                                               \
  G(max, "grad_x = max_backward(grad_out, x, out; axis, keepdims)",                                \
    "ties as torch.amax (ctensor's max reduces axis lists and returns values only, as amax): "     \
    "the gradient is split evenly among the elements equal to the maximum; a nan maximum "         \
    "splits it among the nans (as torch.max without dim)")                                         \
  G(min, "grad_x = min_backward(grad_out, x, out; axis, keepdims)",                                \
    "ties as torch.amin: the gradient is split evenly among the elements equal to the "            \
    "minimum; a nan minimum splits it among the nans (as torch.min without dim)")                  \
  G(logsumexp, "grad_x = logsumexp_backward(grad_out, x, out; axis, keepdims)", "")                \
  G(var, "grad_x = var_backward(grad_out, x; axis, keepdims, correction)",                         \
    "N - correction <= 0 as torch: 2 (x - mean) / (N - correction), or without axis nan "          \
    "where x equals the mean and inf elsewhere")                                                   \
  G(std, "grad_x = std_backward(grad_out, x, out; axis, keepdims, correction)",                    \
    "a zero std gives a zero gradient (torch)")                                                    \
  G(vector_norm, "grad_x = vector_norm_backward(grad_out, x, out; axis, keepdims, ord)",           \
    "torch's formulas per ord; 0 where the norm is 0 (torch's subgradient); ties of ord inf and "  \
    "-inf share the gradient evenly")                                                              \
  G(cumulative_sum, "grad_x = cumulative_sum_backward(grad_out, x; axis, include_initial)", "")    \
  G(cumulative_prod, "grad_x = cumulative_prod_backward(grad_out, x, out; axis, include_initial)", \
    "exact with zeros (no division), as torch's zero-aware formula")                               \
  G(any, "", "bool output: not differentiable")                                                    \
  G(all, "", "bool output: not differentiable")                                                    \
  G(argmax, "", "integer output (an index): not differentiable")                                   \
  G(argmin, "", "integer output (an index): not differentiable")

#endif /* CTENSOR_REDUCTION_GRADS_H_ */
