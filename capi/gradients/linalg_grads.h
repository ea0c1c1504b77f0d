/* linalg_grads.h - gradient rows of matmul and of the linalg extras (linear, einsum, vecdot);
 * matrix_transpose's row is in shape_grads.h, its family's file. Format: gradient_rows.h. */
#ifndef CTENSOR_LINALG_GRADS_H_
#define CTENSOR_LINALG_GRADS_H_

#define CT_LINALG_GRADS(G)                                                                   \
  G(matmul, "grad_x1, grad_x2 = matmul_backward(grad_out, x1, x2)",                          \
    "broadcast batch dimensions are summed and 1-D operands undone, as torch.matmul")        \
  G(linear,                                                                                  \
    "wt = matrix_transpose(weight); grad_x, gwt = matmul_backward(grad_out, x, wt); "        \
    "grad_weight = matrix_transpose(gwt); grad_bias = sum_to_shape(grad_out, bias)",         \
    "")                                                                                      \
  G(vecdot,                                                                                  \
    "p = multiply(x1, x2); ge = sum_backward(grad_out, p; axis); t1 = multiply(ge, x2); "    \
    "grad_x1 = sum_to_shape(t1, x1); t2 = multiply(ge, x1); grad_x2 = sum_to_shape(t2, x2)", \
    "real dtypes (complex vecdot conjugates x1; its entry is not provided)")                 \
  G(einsum, "grad_operands = einsum_backward(grad_out, operands; subscripts)",               \
    "diagonals (repeated letters) get zeros off the diagonal; broadcast letters are summed")

#endif /* CTENSOR_LINALG_GRADS_H_ */
