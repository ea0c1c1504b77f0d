/* other_grads.h - gradient rows of the ops of no family above: astype, sorting, searching and the
 * dynamic-output ops. Format: gradient_rows.h. */
#ifndef CTENSOR_OTHER_GRADS_H_
#define CTENSOR_OTHER_GRADS_H_

#define CT_OTHER_GRADS(G)                                                                          \
  G(astype, "grad_x = astype(grad_out; dtype=dtype(x))",                                           \
    "float to float only: the cotangent is cast back to x's dtype (torch's .to()); integer and "   \
    "bool sides take no cotangent")                                                                \
  G(sum_to_shape, "",                                                                              \
    "a gradient helper (undoes broadcasting); its own derivative, a broadcast back, is not "       \
    "provided")                                                                                    \
  G(sort,                                                                                          \
    "i = argsort(x; axis, descending, stable); grad_x = take_along_axis_backward(grad_out, x, i; " \
    "axis)",                                                                                       \
    "the cotangent goes back through the permutation (a stable argsort: the sort's own order), "   \
    "as torch")                                                                                    \
  G(topk, "grad_x = take_along_axis_backward(grad_values, x, indices; axis)",                      \
    "the cotangent of the values goes to the selected elements, as torch; the indices take none")  \
  G(argsort, "", "integer output (indices)")                                                       \
  G(argpartition, "", "integer output (indices)")                                                  \
  G(searchsorted, "", "integer output (indices)")                                                  \
  G(nonzero, "", "integer output (indices)")                                                       \
  G(argwhere, "", "integer output (indices)")                                                      \
  G(unique_values, "", "piecewise constant in x: not provided (torch has no gradient either)")     \
  G(unique_counts, "", "piecewise constant in x: not provided (torch has no gradient either)")     \
  G(unique_inverse, "", "piecewise constant in x: not provided (torch has no gradient either)")    \
  G(unique_all, "", "piecewise constant in x: not provided (torch has no gradient either)")        \
  G(boolean_mask, "", "not provided yet: torch's masked_select scatters the cotangent back")       \
  G(rotary_embedding,                                                                              \
    "t = negative(sin); grad_x = rotary_embedding(grad_out, cos, t, position_ids; interleaved)",   \
    "the transposed rotation is the rotation by -theta (sin negated); the entries past rot_dim "   \
    "pass the cotangent through. cos and sin are constant tables: not differentiable (torch "      \
    "models build them under no_grad)")

#endif /* CTENSOR_OTHER_GRADS_H_ */
