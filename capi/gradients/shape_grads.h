/* shape_grads.h - gradient rows of shape and indexing ops, where, clip, embedding. Format: gradient_rows.h. */
#ifndef CTENSOR_SHAPE_GRADS_H_
#define CTENSOR_SHAPE_GRADS_H_

#define CT_SHAPE_GRADS(G)

#endif /* CTENSOR_SHAPE_GRADS_H_ */
