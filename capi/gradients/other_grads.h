/* other_grads.h - gradient rows of the ops of no family above (sorting, unique, nonzero, astype, ...). Format: gradient_rows.h. */
#ifndef CTENSOR_OTHER_GRADS_H_
#define CTENSOR_OTHER_GRADS_H_

#define CT_OTHER_GRADS(G)

#endif /* CTENSOR_OTHER_GRADS_H_ */
