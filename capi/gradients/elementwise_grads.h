/* elementwise_grads.h - gradient rows of element-wise ops (elementwise_table.h). Format: gradient_rows.h. */
#ifndef CTENSOR_ELEMENTWISE_GRADS_H_
#define CTENSOR_ELEMENTWISE_GRADS_H_

#define CT_ELEMENTWISE_GRADS(G)

#endif /* CTENSOR_ELEMENTWISE_GRADS_H_ */
