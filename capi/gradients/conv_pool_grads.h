/* conv_pool_grads.h - gradient rows of convolutions, pooling and interpolate. Format: gradient_rows.h. */
#ifndef CTENSOR_CONV_POOL_GRADS_H_
#define CTENSOR_CONV_POOL_GRADS_H_

#define CT_CONV_POOL_GRADS(G)

#endif /* CTENSOR_CONV_POOL_GRADS_H_ */
