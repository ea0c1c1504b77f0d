/* attention_rows_impl.h - the row steps of the online softmax on one score row of a tile: the
 * mask (additive, boolean, causal), the maximum, and exp(s - shift) with its sum; included once
 * per compute type as attention_tiles_impl.h. float rows use the vector math set in use
 * (vector_math.h); double rows the C library's exp. */

/* s[c] += mask or s[c] = -inf where the mask is false, for the row's columns c < n starting at
 * element offset `base` of the mask; then -inf from column `causal_from` on (n or more: none). */
static void CT_AT_NAME(ct_attn_mask_row)(const ct_attn_job* job, CT_AT_T* s, int64_t n,
                                         int64_t base, int64_t causal_from) {
  const ct_attn_operand* mask = &job->op[CT_ATTN_MASK];
  const int64_t cs = mask->cs;
  if (job->mask == CT_ATTN_MASK_BOOL) {
    const uint8_t* m = (const uint8_t*)mask->base + base;
    for (int64_t c = 0; c < n; ++c) s[c] = m[c * cs] ? s[c] : (CT_AT_T)-INFINITY;
  } else if (job->mask == CT_ATTN_MASK_ADD) {
    switch (mask->dtype) {
      case CT_DT_F16: {
        const uint16_t* m = (const uint16_t*)mask->base + base;
        for (int64_t c = 0; c < n; ++c) s[c] += (CT_AT_T)ct_half_to_float(m[c * cs]);
        break;
      }
      case CT_DT_BF16: {
        const uint16_t* m = (const uint16_t*)mask->base + base;
        for (int64_t c = 0; c < n; ++c) s[c] += (CT_AT_T)ct_bfloat16_to_float(m[c * cs]);
        break;
      }
      case CT_DT_F32: {
        const float* m = (const float*)mask->base + base;
        if (cs == 1) {
          for (int64_t c = 0; c < n; ++c) s[c] += (CT_AT_T)m[c];
        } else {
          for (int64_t c = 0; c < n; ++c) s[c] += (CT_AT_T)m[c * cs];
        }
        break;
      }
      case CT_DT_F64: {
        const double* m = (const double*)mask->base + base;
        for (int64_t c = 0; c < n; ++c) s[c] += (CT_AT_T)m[c * cs];
        break;
      }
      default:
        break;
    }
  }
  for (int64_t c = causal_from < 0 ? 0 : causal_from; c < n; ++c) s[c] = (CT_AT_T)-INFINITY;
}

#ifdef CT_AT_FLOAT
static CT_AT_T CT_AT_NAME(ct_attn_row_max)(const ct_vector_math* vm, const CT_AT_T* s, int64_t n) {
  return vm->max_f32(s, n);
}

/* s = exp(s - shift) in place; returns the sum. */
static CT_AT_T CT_AT_NAME(ct_attn_row_exp)(const ct_vector_math* vm, CT_AT_T* s, int64_t n,
                                           CT_AT_T shift) {
  return (CT_AT_T)vm->exp_sum_f32(s, s, n, shift);
}
#else
static CT_AT_T CT_AT_NAME(ct_attn_row_max)(const ct_vector_math* vm, const CT_AT_T* s, int64_t n) {
  (void)vm;
  CT_AT_T m = (CT_AT_T)-INFINITY;
  for (int64_t c = 0; c < n; ++c) m = s[c] > m || s[c] != s[c] ? s[c] : m;
  return m;
}

static CT_AT_T CT_AT_NAME(ct_attn_row_exp)(const ct_vector_math* vm, CT_AT_T* s, int64_t n,
                                           CT_AT_T shift) {
  (void)vm;
  CT_AT_T sum = 0;
  for (int64_t c = 0; c < n; ++c) {
    s[c] = exp(s[c] - shift);
    sum += s[c];
  }
  return sum;
}
#endif
