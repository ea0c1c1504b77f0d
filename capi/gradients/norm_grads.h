/* norm_grads.h - gradient rows of softmax, log_softmax and the normalisations. Format: gradient_rows.h. */
#ifndef CTENSOR_NORM_GRADS_H_
#define CTENSOR_NORM_GRADS_H_

#define CT_NORM_GRADS(G)

#endif /* CTENSOR_NORM_GRADS_H_ */
