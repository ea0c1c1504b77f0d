/* rotary_ops.c - rotary_embedding: rotary position embedding (RoPE) of the transformer models. */
#include "op_defs.h"

static const ct_param_schema ct_rotary_inputs[4] = {
    {"x", "(..., seq, dim): the queries or keys", 0, 0},
    {"cos", "(max_pos, rot_dim / 2): cos(position * frequency), one row per position", 0, 0},
    {"sin", "(max_pos, rot_dim / 2): sin(position * frequency), one row per position", 0, 0},
    {"position_ids",
     "int32 or int64, broadcastable to x.shape[:-1]: the row of cos and sin of each vector; "
     "absent: the vector's index along the seq axis",
     CT_PARAM_OPTIONAL, 0}};

static const ct_attr_schema ct_rotary_attrs[] = {CT_ATTR_SPEC_BOOL(
    "interleaved",
    "false: rotate the pairs (i, i + rot_dim / 2) (rotate_half, as Hugging Face's Llama); true: "
    "the pairs (2i, 2i + 1) (GPT-J, Meta's Llama)",
    false)};

static int ct_infer_rotary_embedding(const ct_infer_call* call, ct_tensor_info* outputs,
                                     int32_t capacity, int32_t* num_outputs) {
  const ct_tensor *x = call->inputs[0], *cos = call->inputs[1], *sin = call->inputs[2];
  const ct_tensor* pos = call->num_inputs > 3 ? call->inputs[3] : NULL;
  if (!ct_dtype_is_float(x->dtype)) {
    return ct_set_error(CT_ERROR_UNSUPPORTED_DTYPE,
                        "rotary_embedding: x must be a float array, got %s",
                        ct_dtype_describe(x->dtype));
  }
  if (!ct_dtype_equal(cos->dtype, x->dtype) || !ct_dtype_equal(sin->dtype, x->dtype)) {
    return ct_set_error(CT_ERROR_UNSUPPORTED_DTYPE,
                        "rotary_embedding: cos and sin must share x's dtype %s",
                        ct_dtype_describe(x->dtype));
  }
  if (x->ndim < (pos ? 1 : 2)) {
    return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                        "rotary_embedding: x must be (..., seq, dim) with at least %d dims "
                        "(without position_ids the seq axis gives the positions), got %d-D",
                        pos ? 1 : 2, x->ndim);
  }
  if (cos->ndim != 2 || sin->ndim != 2 || cos->shape[0] != sin->shape[0] ||
      cos->shape[1] != sin->shape[1]) {
    return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                        "rotary_embedding: cos and sin must be 2-D of one shape (max_pos, "
                        "rot_dim / 2)");
  }
  const int64_t dim = x->shape[x->ndim - 1], max_pos = cos->shape[0];
  /* Compared as cos.shape[1] > dim / 2 (dim >= 0), so that 2 * cos.shape[1] is never formed:
   * it overflows for a broadcast cos of more than 2**62 columns. */
  if (cos->shape[1] > dim / 2) {
    return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                        "rotary_embedding: rot_dim = 2 * cos.shape[1] (cos.shape[1] = %lld) "
                        "exceeds x's last dim %lld",
                        (long long)cos->shape[1], (long long)dim);
  }
  if (!pos) {
    const int64_t seq = x->shape[x->ndim - 2];
    if (seq > max_pos) {
      return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                          "rotary_embedding: x has %lld positions along its seq axis but cos "
                          "and sin only %lld rows",
                          (long long)seq, (long long)max_pos);
    }
  } else {
    if (pos->dtype.code != CT_DTYPE_INT || (pos->dtype.bits != 32 && pos->dtype.bits != 64)) {
      return ct_set_error(CT_ERROR_UNSUPPORTED_DTYPE,
                          "rotary_embedding: position_ids must be int32 or int64, got %s",
                          ct_dtype_describe(pos->dtype));
    }
    /* Broadcast to x.shape[:-1] without enlarging it (the output is x's shape). */
    const int32_t lead = x->ndim - 1;
    bool ok = pos->ndim <= lead;
    for (int32_t k = 0; ok && k < pos->ndim; ++k) {
      const int64_t p = pos->shape[pos->ndim - 1 - k], e = x->shape[lead - 1 - k];
      ok = p == e || p == 1;
    }
    if (!ok) {
      return ct_set_error(CT_ERROR_SHAPE_MISMATCH,
                          "rotary_embedding: position_ids (%d-D) must broadcast to x.shape[:-1] "
                          "(%d-D)",
                          pos->ndim, lead);
    }
  }
  return ct_infer_same_as_input(call, outputs, capacity, num_outputs);
}

CT_DEFINE_OP(rotary_embedding,
             "Rotary position embedding (RoPE, Su et al.) of x (..., seq, dim): with "
             "rot_dim = 2 * cos.shape[1] <= dim, each pair (a, b) of the first rot_dim "
             "entries becomes (a cos - b sin, b cos + a sin) with cos and sin the entries "
             "(position, i) of the tables, i the pair's index; the entries past rot_dim are "
             "copied unchanged (partial rotary, as GPT-NeoX and Phi). The pairs are (i, "
             "i + rot_dim / 2) (Hugging Face's apply_rotary_pos_emb with rotate_half, whose "
             "cos/sin of width rot_dim repeat these tables twice) or, interleaved, (2i, 2i + 1) "
             "(GPT-J, Meta's Llama; flash-attn's apply_rotary_emb convention). The position of a "
             "vector is position_ids broadcast to x.shape[:-1], or its index along the seq axis "
             "(x.shape[-2]); a position outside [0, max_pos) is an error reported before "
             "anything is written. float16/bfloat16 compute in float32.",
             CT_OP_SHAPE_STATIC, CT_FLAGS_INDEX_CHECKED, ct_rotary_inputs, ct_params_out,
             ct_rotary_attrs, ct_infer_rotary_embedding);
