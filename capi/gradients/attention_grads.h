/* attention_grads.h - gradient rows of the attention operators (format: gradient_rows.h). */
#ifndef CTENSOR_ATTENTION_GRADS_H_
#define CTENSOR_ATTENTION_GRADS_H_

#define CT_ATTENTION_GRADS(G)                                                                    \
  G(scaled_dot_product_attention,                                                                \
    "grad_query, grad_key, grad_value = scaled_dot_product_attention_backward(grad_out, query, " \
    "key, value, attn_mask, out, logsumexp; is_causal, scale, enable_gqa, dropout_p, seed, "     \
    "offset)",                                                                                   \
    "the weights are recomputed from logsumexp and the dropout mask from seed and offset; "      \
    "attn_mask gets no gradient, and the cotangent of logsumexp is ignored (only out carries "   \
    "one, as torch's SDPA)")

#endif /* CTENSOR_ATTENTION_GRADS_H_ */
