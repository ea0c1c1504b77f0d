/* shape_grads.h - gradient rows of shape and indexing ops, where, clip, embedding. Format:
 * gradient_rows.h. */
#ifndef CTENSOR_SHAPE_GRADS_H_
#define CTENSOR_SHAPE_GRADS_H_

/* Their backward ops: capi/ops/shape_grad_ops.c. */
#define CT_SHAPE_GRADS(G)                                                                         \
  G(permute_dims, "grad_x = permute_dims_backward(grad_out; axes)", "")                           \
  G(broadcast_to, "grad_x = sum_to_shape(grad_out, x)", "")                                       \
  G(concat, "grad_arrays = concat_backward(grad_out, arrays; axis)", "")                          \
  G(stack, "grad_arrays = stack_backward(grad_out, arrays; axis)", "")                            \
  G(slice, "grad_x = slice_backward(grad_out, x; start, stop, step)", "")                         \
  G(flip, "grad_x = flip(grad_out; axis)", "")                                                    \
  G(roll, "grad_x = roll_backward(grad_out; shift, axis)", "")                                    \
  G(tile, "grad_x = tile_backward(grad_out, x; repetitions)", "")                                 \
  G(repeat, "grad_x = repeat_backward(grad_out, x; repeats, axis)", "")                           \
  G(pad, "grad_x = pad_backward(grad_out, x; pad_width, mode)",                                   \
    "value is an attribute: no gradient. reflect and edge add the cotangents of the padded "      \
    "copies to their source elements")                                                            \
  G(take, "grad_x = take_backward(grad_out, x, indices; axis)",                                   \
    "indices are not differentiable; repeated indices add up (deterministic order)")              \
  G(take_along_axis, "grad_x = take_along_axis_backward(grad_out, x, indices; axis)",             \
    "indices are not differentiable; repeated indices add up (deterministic order)")              \
  G(clip,                                                                                         \
    "t_x = clip_backward(grad_out, x, min, max; wrt=\"x\"); grad_x = sum_to_shape(t_x, x); "      \
    "t_min = clip_backward(grad_out, x, min, max; wrt=\"min\"); "                                 \
    "grad_min = sum_to_shape(t_min, min); "                                                       \
    "t_max = clip_backward(grad_out, x, min, max; wrt=\"max\"); "                                 \
    "grad_max = sum_to_shape(t_max, max)",                                                        \
    "torch.clamp's subgradient: x gets the cotangent where min <= x <= max (ties go to x, nan x " \
    "gets none); min where x < min and min < max; max where x > max or max < min")                \
  G(tril, "grad_x = tril(grad_out; k)", "")                                                       \
  G(triu, "grad_x = triu(grad_out; k)", "")                                                       \
  G(embedding, "grad_weight = embedding_backward(grad_out, input, weight)",                       \
    "input holds indices: not differentiable. Rows are summed in index order (deterministic); "   \
    "the forward has no padding_idx, max_norm or scale_grad_by_freq")                             \
  G(one_hot, "", "integer indices in, an int64 one-hot array out: nothing to differentiate")

#endif /* CTENSOR_SHAPE_GRADS_H_ */
