/* reduction_grads.h - gradient rows of reductions and scans. Format: gradient_rows.h. */
#ifndef CTENSOR_REDUCTION_GRADS_H_
#define CTENSOR_REDUCTION_GRADS_H_

#define CT_REDUCTION_GRADS(G)

#endif /* CTENSOR_REDUCTION_GRADS_H_ */
