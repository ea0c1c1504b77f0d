/* random_grads.h - gradient rows of the random ops, dropout and arange. Format:
 * gradient_rows.h. */
#ifndef CTENSOR_RANDOM_GRADS_H_
#define CTENSOR_RANDOM_GRADS_H_

#define CT_RANDOM_GRADS(G)                                                                        \
  G(dropout, "grad_x = dropout_backward(grad_out, mask; p, training)",                            \
    "grad_out * mask / (1 - p) (0 where dropped; grad_out itself with training=False), from the " \
    "mask the forward returned: the stream is not drawn again")                                   \
  G(random_uniform, "", "no tensor inputs: the values depend on the attributes only")             \
  G(random_normal, "", "no tensor inputs: the values depend on the attributes only")              \
  G(random_bernoulli, "", "piecewise constant in probs (torch.bernoulli has no gradient either)") \
  G(arange, "", "no tensor inputs: the values depend on the attributes only")

#endif /* CTENSOR_RANDOM_GRADS_H_ */
