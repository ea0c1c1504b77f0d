/* attention_ops.c - scaled_dot_product_attention (torch.nn.functional.
 * scaled_dot_product_attention, returning the row log-sum-exp too) and its backward op. */
#include <math.h>

#include "op_defs.h"

/* The log-sum-exp's dtype: float64 for float64 inputs, float32 for the others. */
static ct_dtype ct_attention_lse_dtype(ct_dtype dtype) {
  return dtype.bits == 64 ? CT_DTYPE_F64_V : (ct_dtype){CT_DTYPE_FLOAT, 32, 1};
}

static bool ct_attention_same_dims(const ct_tensor* a, const ct_tensor* b, int32_t from, int32_t to,
                                   int32_t skip) {
  for (int32_t k = from; k < to; ++k) {
    if (k != skip && a->shape[k] != b->shape[k]) return false;
  }
  return true;
}

/* Checks query, key, value, attn_mask (inputs first .. first + 3) and the attributes (attrs[0]
 * is_causal, [1] scale, [2] enable_gqa, [3] dropout_p), as torch does. */
static int ct_attention_check(const ct_infer_call* call, int32_t first) {
  const char* op = call->schema->name;
  const ct_tensor* q = call->inputs[first];
  const ct_tensor* k = call->inputs[first + 1];
  const ct_tensor* v = call->inputs[first + 2];
  const ct_tensor* mask = call->inputs[first + 3];
  const ct_dtype dtype = q->dtype;
  if (!ct_dtype_is_float(dtype)) {
    return ct_set_error(CT_ERROR_UNSUPPORTED_DTYPE, "%s: query must be a float array, got %s", op,
                        ct_dtype_describe(dtype));
  }
  if (!ct_dtype_equal(k->dtype, dtype) || !ct_dtype_equal(v->dtype, dtype)) {
    return ct_set_error(CT_ERROR_UNSUPPORTED_DTYPE,
                        "%s: query, key and value must share one dtype, got %s, %s and %s", op,
                        ct_dtype_describe(dtype), ct_dtype_describe(k->dtype),
                        ct_dtype_describe(v->dtype));
  }
  const bool gqa = call->attrs[2].value.b != 0;
  const int32_t nd = q->ndim;
  if (nd < 2 || k->ndim != nd || v->ndim != nd || (gqa && nd < 3)) {
    return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                        "%s: query, key and value must have the same number of dims, at least 2 "
                        "(3 with enable_gqa): (..., L, E); got %d, %d and %d",
                        op, q->ndim, k->ndim, v->ndim);
  }
  if (q->shape[nd - 1] != k->shape[nd - 1]) {
    return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                        "%s: query and key must have the same last dim (E), got %lld and %lld", op,
                        (long long)q->shape[nd - 1], (long long)k->shape[nd - 1]);
  }
  if (k->shape[nd - 2] != v->shape[nd - 2] || !ct_attention_same_dims(k, v, 0, nd - 2, -1)) {
    return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                        "%s: key and value must have the same leading dims and sequence length",
                        op);
  }
  const int32_t head = gqa ? nd - 3 : -1;
  if (!ct_attention_same_dims(q, k, 0, nd - 2, head)) {
    return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                        "%s: query and key must have the same batch dims%s", op,
                        gqa ? " (except the heads, with enable_gqa)" : "");
  }
  if (gqa) {
    const int64_t hq = q->shape[head], hkv = k->shape[head];
    if (hkv == 0 ? hq != 0 : hq % hkv != 0) {
      return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                          "%s: with enable_gqa the query heads (%lld) must be a multiple of the "
                          "key/value heads (%lld)",
                          op, (long long)hq, (long long)hkv);
    }
  }
  if (mask) {
    if (!ct_dtype_is_bool(mask->dtype) && !ct_dtype_equal(mask->dtype, dtype)) {
      return ct_set_error(CT_ERROR_UNSUPPORTED_DTYPE,
                          "%s: attn_mask must be bool or query's dtype %s, got %s", op,
                          ct_dtype_describe(dtype), ct_dtype_describe(mask->dtype));
    }
    if (mask->ndim > nd) {
      return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                          "%s: attn_mask has %d dims, more than query's %d", op, mask->ndim, nd);
    }
    const int32_t shift = nd - mask->ndim;
    for (int32_t d = 0; d < mask->ndim; ++d) {
      const int64_t want = d + shift == nd - 1 ? k->shape[nd - 2] : q->shape[d + shift];
      if (mask->shape[d] != 1 && mask->shape[d] != want) {
        return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                            "%s: attn_mask must broadcast to (..., L_q, L_k); its dim %d is %lld, "
                            "not 1 or %lld",
                            op, d, (long long)mask->shape[d], (long long)want);
      }
    }
    if (call->attrs[0].value.b) {
      return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                          "%s: give attn_mask or is_causal, not both (as torch)", op);
    }
  }
  if (call->attrs[1].type == CT_ATTR_FLOAT && !isfinite(call->attrs[1].value.f)) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "%s: scale must be finite", op);
  }
  if (call->attrs[1].type == CT_ATTR_FLOAT) {
    const int status = ct_check_float_attr_precision(op, "scale", call->attrs[1].value.f, dtype);
    if (status != CT_OK) return status;
  }
  const double p = call->attrs[3].value.f;
  if (!(p >= 0.0 && p <= 1.0)) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "%s: dropout_p must be in [0, 1], got %g", op,
                        p);
  }
  return CT_OK;
}

/* info = (dtype, q's shape with the last dim `last`), or without the last dim when last < 0. */
static void ct_attention_info(const ct_tensor* q, ct_dtype dtype, int64_t last,
                              ct_tensor_info* info) {
  ct_info_from_tensor(q, dtype, info);
  if (last < 0) {
    info->ndim -= 1;
  } else {
    info->shape[q->ndim - 1] = last;
  }
}

static const ct_attr_schema ct_attention_attrs[] = {
    CT_ATTR_SPEC_BOOL("is_causal",
                      "mask with tril(ones(L_q, L_k)): query i attends to keys j <= i (top-left "
                      "aligned when L_q != L_k, as torch); an error together with attn_mask",
                      false),
    CT_ATTR_SPEC_NULLABLE("scale", "factor of q k^T; None: 1 / sqrt(E)", CT_ATTR_FLOAT),
    CT_ATTR_SPEC_BOOL("enable_gqa",
                      "grouped-query attention: dim -3 of query (H_q heads) may be a multiple of "
                      "key's and value's (H_kv); key/value head h serves the query heads "
                      "h * H_q / H_kv to (h + 1) * H_q / H_kv - 1 (torch's repeat_interleave)",
                      false),
    CT_ATTR_SPEC_FLOAT("dropout_p",
                       "probability of zeroing each attention weight (after the softmax); the "
                       "kept weights are scaled by 1 / (1 - dropout_p)",
                       0.0),
    CT_ATTR_SPEC_INT(
        "seed", "Philox-4x32-10 key of the dropout stream: a uint64 passed as its int64 bits", 0),
    CT_ATTR_SPEC_INT(
        "offset", "the high half of every dropout counter: a uint64 passed as its int64 bits", 0)};

/* ----- scaled_dot_product_attention ----- */

static const ct_param_schema ct_attention_inputs[4] = {
    {"query", "(..., H_q, L_q, E)", 0, 0},
    {"key", "(..., H_kv, L_k, E)", 0, 0},
    {"value", "(..., H_kv, L_k, E_v)", 0, 0},
    {"attn_mask",
     "broadcastable to (..., H_q, L_q, L_k): bool (true: the key takes part, as torch) or "
     "query's dtype (added to the scores)",
     CT_PARAM_OPTIONAL, 0}};

static const ct_param_schema ct_attention_outputs[2] = {
    {"out", "(..., H_q, L_q, E_v), query's dtype", 0, 0},
    {"logsumexp",
     "(..., H_q, L_q): log(sum_j exp(score_ij)) per query row of the masked, scaled scores "
     "(before dropout), float32 (float64 for float64 inputs); -inf for a row with no key",
     0, 0}};

static int ct_infer_attention(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                              int32_t* num_outputs) {
  int status = ct_attention_check(call, 0);
  if (status != CT_OK) return status;
  if (capacity < 2) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                        "scaled_dot_product_attention: room for 2 outputs needed");
  }
  const ct_tensor* q = call->inputs[0];
  const ct_tensor* v = call->inputs[2];
  ct_attention_info(q, q->dtype, v->shape[v->ndim - 1], &outputs[0]);
  ct_attention_info(q, ct_attention_lse_dtype(q->dtype), -1, &outputs[1]);
  *num_outputs = 2;
  return CT_OK;
}

/* A finite float32 scale is taken as it is, and float32 inputs compute in float32: scale * query
 * (the kernels pre-scale the query, as torch's float32 path) overflows to inf, and the weights to
 * nan, once it leaves float32's range (scale 3e38 with |query| > 1.2), as torch gives. Widening
 * the product would cost the float32 path; float64 inputs take such scales. */
CT_DEFINE_OP(scaled_dot_product_attention,
             "softmax(query key^T * scale + mask) value per batch and head, as "
             "torch.nn.functional.scaled_dot_product_attention (no O(L_q L_k) buffer: tiles with "
             "an online softmax, the scratch comes from the workspace). A boolean attn_mask "
             "keeps the keys where it is true; a float one is added to the scores. A query row "
             "with no key left (masked out entirely) gives zeros, as torch 2.5+, and logsumexp "
             "-inf. Dropout (dropout_p > 0) zeroes attention weight i (its row-major index in "
             "the (..., H_q, L_q, L_k) weights) unless the Philox-4x32-10 draw with counter "
             "(lo(i), hi(i), lo(offset), hi(offset)) and key (lo(seed), hi(seed)) gives "
             "(x0 >> 8) * 2^-24 >= (float)dropout_p, and scales the rest by 1 / (1 - dropout_p): "
             "the same as dropout(softmax(...), dropout_p, seed, offset). float16 and bfloat16 "
             "compute in float32, float32 in float32, float64 in float64.",
             CT_OP_WORKSPACE, CT_FLAGS_PURE, ct_attention_inputs, ct_attention_outputs,
             ct_attention_attrs, ct_infer_attention);

/* ----- scaled_dot_product_attention_backward ----- */

static const ct_param_schema ct_attention_backward_inputs[7] = {
    {"grad_out", "(..., H_q, L_q, E_v), cotangent of out", 0, 0},
    {"query", "the forward's query", 0, 0},
    {"key", "the forward's key", 0, 0},
    {"value", "the forward's value", 0, 0},
    {"attn_mask", "the forward's attn_mask", CT_PARAM_OPTIONAL, 0},
    {"out", "the forward's out", 0, 0},
    {"logsumexp", "the forward's logsumexp", 0, 0}};

static const ct_param_schema ct_attention_backward_outputs[3] = {
    {"grad_query", "cotangent of query", 0, 0},
    {"grad_key", "cotangent of key (summed over each key head's group of query heads)", 0, 0},
    {"grad_value", "cotangent of value (summed over each value head's group of query heads)", 0,
     0}};

static bool ct_attention_shape_is(const ct_tensor* t, const ct_tensor_info* info) {
  if (t->ndim != info->ndim) return false;
  for (int32_t d = 0; d < t->ndim; ++d) {
    if (t->shape[d] != info->shape[d]) return false;
  }
  return true;
}

static int ct_infer_attention_backward(const ct_infer_call* call, ct_tensor_info* outputs,
                                       int32_t capacity, int32_t* num_outputs) {
  const char* op = call->schema->name;
  int status = ct_attention_check(call, 1);
  if (status != CT_OK) return status;
  const ct_tensor* q = call->inputs[1];
  const ct_tensor* v = call->inputs[3];
  ct_tensor_info want[2];
  ct_attention_info(q, q->dtype, v->shape[v->ndim - 1], &want[0]);
  ct_attention_info(q, ct_attention_lse_dtype(q->dtype), -1, &want[1]);
  const ct_tensor* checks[3] = {call->inputs[0], call->inputs[5], call->inputs[6]};
  const char* names[3] = {"grad_out", "out", "logsumexp"};
  for (int32_t i = 0; i < 3; ++i) {
    const ct_tensor_info* w = &want[i == 2 ? 1 : 0];
    if (!ct_dtype_equal(checks[i]->dtype, w->dtype)) {
      return ct_set_error(CT_ERROR_UNSUPPORTED_DTYPE, "%s: %s must be %s, got %s", op, names[i],
                          ct_dtype_describe(w->dtype), ct_dtype_describe(checks[i]->dtype));
    }
    if (!ct_attention_shape_is(checks[i], w)) {
      return ct_set_error(CT_ERROR_SHAPE_MISMATCH, "%s: %s must have the forward's %s shape", op,
                          names[i], i == 2 ? "logsumexp" : "out");
    }
  }
  if (capacity < 3) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "%s: room for 3 outputs needed", op);
  }
  for (int32_t i = 0; i < 3; ++i) ct_info_from_tensor(call->inputs[1 + i], q->dtype, &outputs[i]);
  *num_outputs = 3;
  return CT_OK;
}

CT_DEFINE_OP(scaled_dot_product_attention_backward,
             "The vector-Jacobian product of scaled_dot_product_attention for query, key and "
             "value (flash-attention-2 style: the weights are recomputed tile by tile from "
             "logsumexp, with D = rowsum(grad_out * out); the dropout mask is regenerated from "
             "seed and offset). With enable_gqa, grad_key and grad_value sum over each head's "
             "group of query heads. attn_mask gets no cotangent. float16 and bfloat16 compute "
             "in float32.",
             CT_OP_WORKSPACE, CT_FLAGS_PURE, ct_attention_backward_inputs,
             ct_attention_backward_outputs, ct_attention_attrs, ct_infer_attention_backward);
