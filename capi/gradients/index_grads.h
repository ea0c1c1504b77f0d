/* index_grads.h - gradient rows of the gathers and scatters by index arrays (capi/ops/index_ops.c).
 * Format: gradient_rows.h. */
#ifndef CTENSOR_INDEX_GRADS_H_
#define CTENSOR_INDEX_GRADS_H_

#define CT_INDEX_GRADS(G)                                                                         \
  G(put_along_axis,                                                                               \
    "grad_x, t = put_along_axis_backward(grad_out, x, indices, values, out; axis, reduction); "   \
    "grad_values = sum_to_shape(t, values)",                                                      \
    "indices are not differentiable. torch's scatter_reduce backward (include_self=True): "       \
    "\"multiply\" gives each factor the product of the others; \"max\"/\"min\" share the "        \
    "cotangent evenly among the tied candidates; for \"none\" only the value kept (the last one " \
    "in row-major order) gets its element's cotangent, where torch gives every repeated index "   \
    "one (the derivative of this deterministic forward)")                                         \
  G(gather_nd, "grad_x = gather_nd_backward(grad_out, x, indices; batch_dims)",                   \
    "indices are not differentiable; repeated tuples add up (deterministic order)")               \
  G(scatter_nd,                                                                                   \
    "grad_x, grad_updates = scatter_nd_backward(grad_out, x, indices, updates, out; reduction)",  \
    "indices are not differentiable; the reductions as put_along_axis's")                         \
  G(index_select, "grad_x = index_select_backward(grad_out, x, indices; axis)",                   \
    "indices are not differentiable; repeated indices add up (deterministic order)")              \
  G(index_add,                                                                                    \
    "grad_x, grad_source = index_add_backward(grad_out, x, indices, source; axis, alpha)",        \
    "indices are not differentiable")

#endif /* CTENSOR_INDEX_GRADS_H_ */
