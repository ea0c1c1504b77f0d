/* linalg_grad_kernels.c - matmul_backward and einsum_backward on the GEMM of gemm.h.
 *
 * Both describe each cotangent as a (batched) product of strided views of grad_out and the other
 * operand, transposed by swapping strides, so no operand is copied. Dimensions along which the
 * operand was broadcast in the forward are summed: they become a loop of GEMMs here, each
 * accumulating onto the result (C += A·B) after the first. float16/bfloat16 accumulate in float
 * within one GEMM and round once per GEMM, so a sum over broadcast batches rounds once per batch
 * entry. Workspace: the packed GEMM's panels, the larger of the products' needs. */
#include <string.h>

#include "cpu_register.h"
#include "gemm/gemm.h"
#include "ops/einsum_chain.h"

/* One cotangent as GEMMs: the GEMM's batch dims plus summed dims looped here. */
typedef struct ct_grad_gemm {
  ct_gemm_desc d;
  int64_t shape[CT_MAX_NDIM], a[CT_MAX_NDIM], b[CT_MAX_NDIM], c[CT_MAX_NDIM];
  int32_t num_summed;
  int64_t summed_shape[CT_EINSUM_LETTERS], summed_a[CT_EINSUM_LETTERS], summed_b[CT_EINSUM_LETTERS];
} ct_grad_gemm;

/* Runs one combination of the summed dims per GEMM, accumulating after the first. */
static void ct_grad_gemm_run(ct_grad_gemm* g, int64_t itemsize, void (*gemm)(const ct_gemm_desc*)) {
  int64_t combos = 1;
  for (int32_t i = 0; i < g->num_summed; ++i) combos *= g->summed_shape[i];
  if (combos == 0) { /* an empty sum: zeros */
    g->d.k = 0;
    gemm(&g->d);
    return;
  }
  const char* a0 = g->d.a;
  const char* b0 = g->d.b;
  int64_t index[CT_EINSUM_LETTERS] = {0};
  for (int64_t c = 0; c < combos; ++c) {
    int64_t oa = 0, ob = 0;
    for (int32_t i = 0; i < g->num_summed; ++i) {
      oa += index[i] * g->summed_a[i];
      ob += index[i] * g->summed_b[i];
    }
    g->d.a = a0 + oa * itemsize;
    g->d.b = b0 + ob * itemsize;
    g->d.accumulate = c > 0;
    gemm(&g->d);
    for (int32_t i = g->num_summed - 1; i >= 0; --i) {
      if (++index[i] < g->summed_shape[i]) break;
      index[i] = 0;
    }
  }
  g->d.a = a0;
  g->d.b = b0;
}

/* ----- matmul_backward ----- */

/* Stride of t's dim aligned with batch dim q (of tail batch dims), 0 where t lacks it or has
 * extent 1; *has says whether t has the full extent there. */
static int64_t ct_mmgrad_stride(const ct_tensor* t, int32_t t_batch, int32_t tail, int32_t q,
                                int64_t extent, bool* has) {
  const int32_t k = q - (tail - t_batch);
  *has = extent == 1 || (k >= 0 && t->shape[k] == extent);
  if (k < 0 || t->shape[k] == 1) return 0;
  return ct_tensor_stride(t, k);
}

/* which == 0: grad_x1 = g @ x2^T; which == 1: grad_x2 = x1^T @ g. */
static void ct_mmgrad_describe(const ct_kernel_call* call, int which, ct_grad_gemm* p) {
  const ct_tensor* g = call->inputs[0];
  const ct_tensor* x1 = call->inputs[1];
  const ct_tensor* x2 = call->inputs[2];
  const ct_tensor* gx = call->outputs[which];
  const int32_t n1 = x1->ndim, n2 = x2->ndim, ng = g->ndim;
  const int64_t m = n1 > 1 ? x1->shape[n1 - 2] : 1;
  const int64_t k = x1->shape[n1 - 1];
  const int64_t n = n2 > 1 ? x2->shape[n2 - 1] : 1;
  /* grad_out's trailing dims are (m, n), (n), (m) or none. */
  int32_t tail = ng;
  const int64_t g_ns = n2 > 1 ? ct_tensor_stride(g, --tail) : 0;
  const int64_t g_ms = n1 > 1 ? ct_tensor_stride(g, --tail) : 0;
  memset(p, 0, sizeof *p);
  ct_gemm_desc* d = &p->d;
  if (which == 0) { /* (m x n) @ (n x k) */
    d->m = m;
    d->n = k;
    d->k = n;
    d->a = ct_tensor_base(g);
    d->a_rs = g_ms;
    d->a_cs = g_ns;
    d->b = ct_tensor_base(x2);
    d->b_rs = n2 > 1 ? ct_tensor_stride(x2, n2 - 1) : 0;
    d->b_cs = ct_tensor_stride(x2, n2 > 1 ? n2 - 2 : 0);
    d->c = ct_tensor_base(gx);
    d->c_rs = n1 > 1 ? ct_tensor_stride(gx, n1 - 2) : 0;
    d->c_cs = ct_tensor_stride(gx, n1 - 1);
  } else { /* (k x m) @ (m x n) */
    d->m = k;
    d->n = n;
    d->k = m;
    d->a = ct_tensor_base(x1);
    d->a_rs = ct_tensor_stride(x1, n1 - 1);
    d->a_cs = n1 > 1 ? ct_tensor_stride(x1, n1 - 2) : 0;
    d->b = ct_tensor_base(g);
    d->b_rs = g_ms;
    d->b_cs = g_ns;
    d->c = ct_tensor_base(gx);
    d->c_rs = ct_tensor_stride(gx, n2 > 1 ? n2 - 2 : 0);
    d->c_cs = n2 > 1 ? ct_tensor_stride(gx, n2 - 1) : 0;
  }
  const int32_t b1 = n1 > 2 ? n1 - 2 : 0, b2 = n2 > 2 ? n2 - 2 : 0;
  const ct_tensor* self = which == 0 ? x1 : x2;
  const ct_tensor* other = which == 0 ? x2 : x1;
  const int32_t bself = which == 0 ? b1 : b2, bother = which == 0 ? b2 : b1;
  int32_t q_gemm = 0;
  for (int32_t q = 0; q < tail; ++q) {
    const int64_t extent = g->shape[q];
    bool has_self, has_other;
    (void)ct_mmgrad_stride(self, bself, tail, q, extent, &has_self);
    const int64_t s_other = ct_mmgrad_stride(other, bother, tail, q, extent, &has_other);
    const int64_t s_g = ct_tensor_stride(g, q);
    /* grad has self's shape: its stride where self has the dim in full (0 for extent 1). */
    const int64_t s_gx = ct_mmgrad_stride(gx, bself, tail, q, extent, &has_other);
    const int64_t sa = which == 0 ? s_g : s_other;
    const int64_t sb = which == 0 ? s_other : s_g;
    if (has_self) {
      p->shape[q_gemm] = extent;
      p->a[q_gemm] = sa;
      p->b[q_gemm] = sb;
      p->c[q_gemm] = s_gx;
      ++q_gemm;
    } else {
      p->summed_shape[p->num_summed] = extent;
      p->summed_a[p->num_summed] = sa;
      p->summed_b[p->num_summed] = sb;
      ++p->num_summed;
    }
  }
  d->batch_ndim = q_gemm;
  d->batch_shape = p->shape;
  d->a_bs = p->a;
  d->b_bs = p->b;
  d->c_bs = p->c;
}

#define CT_MMGRAD_X(A, SFX, T, C, U, ID)                                                         \
  static int ct_cpu_matmul_backward_workspace_##SFX(const ct_kernel_call* call, uint64_t* bytes, \
                                                    uint64_t* alignment) {                       \
    *bytes = 0;                                                                                  \
    *alignment = CT_GEMM_WORKSPACE_ALIGNMENT;                                                    \
    for (int which = 0; which < 2; ++which) {                                                    \
      ct_grad_gemm p;                                                                            \
      ct_mmgrad_describe(call, which, &p);                                                       \
      const uint64_t need = ct_gemm_workspace_##SFX(&p.d);                                       \
      if (need > *bytes) *bytes = need;                                                          \
    }                                                                                            \
    return CT_OK;                                                                                \
  }                                                                                              \
  static int ct_cpu_matmul_backward_##SFX(const ct_kernel_call* call) {                          \
    for (int which = 0; which < 2; ++which) {                                                    \
      if (ct_tensor_numel(call->outputs[which]) == 0) continue;                                  \
      ct_grad_gemm p;                                                                            \
      ct_mmgrad_describe(call, which, &p);                                                       \
      p.d.workspace = call->workspace;                                                           \
      p.d.workspace_size = call->workspace_size;                                                 \
      ct_grad_gemm_run(&p, (int64_t)sizeof(T), ct_gemm_##SFX);                                   \
    }                                                                                            \
    return CT_OK;                                                                                \
  }
CT_CPU_FLOAT_TYPES(CT_MMGRAD_X, _)

/* ----- einsum_backward ----- */

/* The letter index (einsum_spec's first-seen order) of each dim of each operand. */
static void ct_einsum_dim_letters(const char* subscripts, int32_t letters[2][CT_MAX_NDIM]) {
  int32_t index_of[CT_EINSUM_LETTERS];
  for (int i = 0; i < CT_EINSUM_LETTERS; ++i) index_of[i] = -1;
  int32_t next = 0, op = 0, dim = 0;
  for (const char* s = subscripts; *s && !(s[0] == '-' && s[1] == '>'); ++s) {
    if (*s == ' ') continue;
    if (*s == ',') {
      ++op;
      dim = 0;
      continue;
    }
    const int code = ct_einsum_code(*s);
    if (index_of[code] < 0) index_of[code] = next++;
    letters[op][dim++] = index_of[code];
  }
}

/* The cotangent of operand `which`: an einsum of grad_out (A) with the other operand (B; a
 * one-element 1 for a single operand) onto the operand's letters, written through grad's
 * strides summed per letter (so a repeated letter writes the diagonal). */
static void ct_eingrad_describe(const ct_kernel_call* call, const ct_einsum_spec* p,
                                const int32_t letters[2][CT_MAX_NDIM], int which, const void* one,
                                ct_grad_gemm* out) {
  const ct_tensor* g = call->inputs[0];
  const int32_t num_operands = call->num_inputs - 1;
  const ct_tensor* self = call->inputs[1 + which];
  const ct_tensor* gx = call->outputs[which];
  int64_t sa[CT_EINSUM_LETTERS] = {0}, sc[CT_EINSUM_LETTERS] = {0};
  const int64_t* sb = p->stride[1 - which];
  int64_t zero[CT_EINSUM_LETTERS] = {0};
  if (num_operands == 1) sb = zero;
  for (int32_t d = 0; d < p->out_ndim; ++d) {
    if (g->shape[d] != 1) sa[p->out_letter[d]] = ct_tensor_stride(g, d);
  }
  bool is_out[CT_EINSUM_LETTERS] = {false};
  for (int32_t d = 0; d < self->ndim; ++d) {
    const int32_t l = letters[which][d];
    if (self->shape[d] == p->extent[l]) {
      is_out[l] = true;
      if (self->shape[d] != 1) sc[l] += ct_tensor_stride(gx, d);
    }
  }
  memset(out, 0, sizeof *out);
  int32_t m = -1, n = -1, k = -1;
  for (int32_t l = 0; l < p->num_letters; ++l) {
    if (is_out[l]) {
      if (sb[l] == 0 && sa[l] != 0 && (m < 0 || p->extent[l] > p->extent[m])) m = l;
      if (sa[l] == 0 && sb[l] != 0 && (n < 0 || p->extent[l] > p->extent[n])) n = l;
    } else if (k < 0 || p->extent[l] > p->extent[k]) {
      k = l;
    }
  }
  ct_gemm_desc* d = &out->d;
  d->m = m >= 0 ? p->extent[m] : 1;
  d->n = n >= 0 ? p->extent[n] : 1;
  d->k = k >= 0 ? p->extent[k] : 1;
  d->a = ct_tensor_base(g);
  d->b = num_operands > 1 ? ct_tensor_base(call->inputs[2 - which]) : one;
  d->c = ct_tensor_base(gx);
  d->a_rs = m >= 0 ? sa[m] : 0;
  d->a_cs = k >= 0 ? sa[k] : 0;
  d->b_rs = k >= 0 ? sb[k] : 0;
  d->b_cs = n >= 0 ? sb[n] : 0;
  d->c_rs = m >= 0 ? sc[m] : 0;
  d->c_cs = n >= 0 ? sc[n] : 0;
  int32_t q = 0;
  for (int32_t l = 0; l < p->num_letters; ++l) {
    if (is_out[l]) {
      if (l == m || l == n) continue;
      out->shape[q] = p->extent[l];
      out->a[q] = sa[l];
      out->b[q] = sb[l];
      out->c[q] = sc[l];
      ++q;
    } else if (l != k) {
      out->summed_shape[out->num_summed] = p->extent[l];
      out->summed_a[out->num_summed] = sa[l];
      out->summed_b[out->num_summed] = sb[l];
      ++out->num_summed;
    }
  }
  d->batch_ndim = q;
  d->batch_shape = out->shape;
  d->a_bs = out->a;
  d->b_bs = out->b;
  d->c_bs = out->c;
}

/* Whether operand `which` repeats a letter (its cotangent is zero off the diagonal). */
static bool ct_eingrad_has_diagonal(const ct_tensor* self, const int32_t* letters) {
  for (int32_t d = 0; d < self->ndim; ++d) {
    for (int32_t e = d + 1; e < self->ndim; ++e) {
      if (letters[d] == letters[e] && self->shape[d] != 1) return true;
    }
  }
  return false;
}

/* Zeros a strided tensor of element size `size`. */
static void ct_eingrad_zero(const ct_tensor* t, int64_t size) {
  const int64_t count = ct_tensor_numel(t);
  char* base = ct_tensor_base(t);
  for (int64_t i = 0; i < count; ++i) {
    int64_t rest = i, offset = 0;
    for (int32_t d = t->ndim - 1; d >= 0; --d) {
      offset += (rest % t->shape[d]) * ct_tensor_stride(t, d);
      rest /= t->shape[d];
    }
    memset(base + offset * size, 0, (size_t)size);
  }
}

/* The cotangent of operand `which` of three or more: the other operands first contract
 * (ct_einsum_chain, einsum's order) into an intermediate P of the letters of theirs that the
 * operand or the output names; the cotangent is then the two-operand one of "sub,P->out" (the
 * letters only the others have are summed inside P, which is the same sum). Workspace: P, then
 * the chain's or the GEMM's scratch. With `need`, only sizes it. */
static int ct_eingrad_many(const ct_kernel_call* call, const ct_einsum_spec* plan, int which,
                           const ct_einsum_kit* kit, void* workspace, uint64_t workspace_size,
                           uint64_t* need) {
  const int32_t n = call->num_inputs - 1;
  const ct_tensor* const* operands = call->inputs + 1;
  ct_einsum_terms terms;
  ct_einsum_split(plan->expanded, &terms);
  bool wanted[CT_EINSUM_LETTERS] = {false};
  for (const char* c = terms.sub[which]; *c; ++c) wanted[ct_einsum_code(*c)] = true;
  for (const char* c = terms.out; *c; ++c) wanted[ct_einsum_code(*c)] = true;
  const ct_tensor* others[CT_EINSUM_MAX_OPERANDS];
  const char* subs[CT_EINSUM_MAX_OPERANDS];
  char p_letters[CT_MAX_NDIM + 1] = "";
  char spec[CT_EINSUM_SPEC_CAP] = "";
  int32_t k = 0;
  for (int32_t i = 0; i < n; ++i) {
    if (i == which) continue;
    others[k] = operands[i];
    subs[k] = terms.sub[i];
    ct_einsum_keep(terms.sub[i], wanted, p_letters);
    if (k > 0) strcat(spec, ",");
    strcat(spec, terms.sub[i]);
    ++k;
  }
  strcat(spec, "->");
  strcat(spec, p_letters);
  ct_einsum_temp product;
  ct_einsum_temp_init(&product, p_letters, subs, others, k, operands[0]->dtype);
  const uint64_t p_bytes =
      ct_einsum_round((uint64_t)ct_tensor_numel(&product.t) * (uint64_t)kit->itemsize);
  char* base = workspace;
  product.t.data = base;
  char* rest = base ? base + p_bytes : NULL;
  const uint64_t rest_size = workspace_size > p_bytes ? workspace_size - p_bytes : 0;
  uint64_t chain_need = 0;
  int status =
      ct_einsum_chain(spec, others, k, &product.t, kit, rest, rest_size, need ? &chain_need : NULL);
  if (status != CT_OK) return status;
  char pair[3 * CT_MAX_NDIM + 6];
  snprintf(pair, sizeof pair, "%s,%s->%s", terms.sub[which], p_letters, terms.out);
  const ct_tensor* ins[3] = {call->inputs[0], operands[which], &product.t};
  const ct_tensor* outs[2] = {call->outputs[which], NULL};
  ct_kernel_call two;
  memset(&two, 0, sizeof two);
  two.inputs = ins;
  two.num_inputs = 3;
  two.outputs = outs;
  two.num_outputs = 2;
  ct_einsum_spec p2;
  status = ct_einsum_parse(pair, ins + 1, 2, &p2);
  if (status != CT_OK) return status;
  int32_t letters[2][CT_MAX_NDIM];
  ct_einsum_dim_letters(p2.expanded, letters);
  ct_grad_gemm g;
  ct_eingrad_describe(&two, &p2, letters, 0, kit->one, &g);
  if (need) {
    const uint64_t gemm_need = kit->gemm_workspace(&g.d);
    *need = p_bytes + (gemm_need > chain_need ? gemm_need : chain_need);
    return CT_OK;
  }
  if (ct_eingrad_has_diagonal(operands[which], letters[0])) {
    ct_eingrad_zero(call->outputs[which], kit->itemsize);
  }
  g.d.workspace = rest;
  g.d.workspace_size = rest_size;
  ct_grad_gemm_run(&g, kit->itemsize, kit->gemm);
  return CT_OK;
}

#define CT_EINGRAD_X(A, SFX, T, C, U, ID)                                                        \
  static int ct_cpu_einsum_backward_workspace_##SFX(const ct_kernel_call* call, uint64_t* bytes, \
                                                    uint64_t* alignment) {                       \
    *bytes = 0;                                                                                  \
    *alignment = CT_GEMM_WORKSPACE_ALIGNMENT;                                                    \
    ct_einsum_spec plan;                                                                         \
    const int status =                                                                           \
        ct_einsum_parse(call->attrs[0].value.s, call->inputs + 1, call->num_inputs - 1, &plan);  \
    if (status != CT_OK) return status;                                                          \
    const T one = ct_store_##SFX((C)1);                                                          \
    if (call->num_inputs > 3) {                                                                  \
      const ct_einsum_kit kit = {ct_gemm_##SFX, ct_gemm_workspace_##SFX, (int64_t)sizeof(T),     \
                                 &one};                                                          \
      for (int which = 0; which < call->num_inputs - 1; ++which) {                               \
        uint64_t need = 0;                                                                       \
        const int st = ct_eingrad_many(call, &plan, which, &kit, NULL, 0, &need);                \
        if (st != CT_OK) return st;                                                              \
        if (need > *bytes) *bytes = need;                                                        \
      }                                                                                          \
      return CT_OK;                                                                              \
    }                                                                                            \
    int32_t letters[2][CT_MAX_NDIM];                                                             \
    ct_einsum_dim_letters(plan.expanded, letters);                                               \
    for (int which = 0; which < call->num_inputs - 1; ++which) {                                 \
      ct_grad_gemm p;                                                                            \
      ct_eingrad_describe(call, &plan, letters, which, &one, &p);                                \
      const uint64_t need = ct_gemm_workspace_##SFX(&p.d);                                       \
      if (need > *bytes) *bytes = need;                                                          \
    }                                                                                            \
    return CT_OK;                                                                                \
  }                                                                                              \
  static int ct_cpu_einsum_backward_##SFX(const ct_kernel_call* call) {                          \
    ct_einsum_spec plan;                                                                         \
    const int status =                                                                           \
        ct_einsum_parse(call->attrs[0].value.s, call->inputs + 1, call->num_inputs - 1, &plan);  \
    if (status != CT_OK) return status;                                                          \
    const T one = ct_store_##SFX((C)1);                                                          \
    if (call->num_inputs > 3) {                                                                  \
      const ct_einsum_kit kit = {ct_gemm_##SFX, ct_gemm_workspace_##SFX, (int64_t)sizeof(T),     \
                                 &one};                                                          \
      for (int which = 0; which < call->num_inputs - 1; ++which) {                               \
        if (ct_tensor_numel(call->outputs[which]) == 0) continue;                                \
        const int st = ct_eingrad_many(call, &plan, which, &kit, call->workspace,                \
                                       call->workspace_size, NULL);                              \
        if (st != CT_OK) return st;                                                              \
      }                                                                                          \
      return CT_OK;                                                                              \
    }                                                                                            \
    int32_t letters[2][CT_MAX_NDIM];                                                             \
    ct_einsum_dim_letters(plan.expanded, letters);                                               \
    for (int which = 0; which < call->num_inputs - 1; ++which) {                                 \
      const ct_tensor* gx = call->outputs[which];                                                \
      if (ct_tensor_numel(gx) == 0) continue;                                                    \
      if (ct_eingrad_has_diagonal(call->inputs[1 + which], letters[which])) {                    \
        ct_eingrad_zero(gx, (int64_t)sizeof(T));                                                 \
      }                                                                                          \
      ct_grad_gemm p;                                                                            \
      ct_eingrad_describe(call, &plan, letters, which, &one, &p);                                \
      p.d.workspace = call->workspace;                                                           \
      p.d.workspace_size = call->workspace_size;                                                 \
      ct_grad_gemm_run(&p, (int64_t)sizeof(T), ct_gemm_##SFX);                                   \
    }                                                                                            \
    return CT_OK;                                                                                \
  }
CT_CPU_FLOAT_TYPES(CT_EINGRAD_X, _)

/* ----- registration ----- */

#define CT_LINALG_GRAD_REG(A, SFX, T, C, U, ID) \
  {"matmul_backward",                           \
   5,                                           \
   {ID, ID, ID, ID, ID},                        \
   ct_cpu_matmul_backward_##SFX,                \
   ct_cpu_matmul_backward_workspace_##SFX,      \
   NULL},                                       \
      {"einsum_backward",                       \
       3,                                       \
       {ID, ID, ID},                            \
       ct_cpu_einsum_backward_##SFX,            \
       ct_cpu_einsum_backward_workspace_##SFX,  \
       NULL},

static const ct_cpu_kernel ct_cpu_linalg_grad_kernels[] = {
    CT_CPU_FLOAT_TYPES(CT_LINALG_GRAD_REG, _)};

int ct_cpu_register_linalg_grad(void) {
  return ct_cpu_register_all(ct_cpu_linalg_grad_kernels,
                             CT_CPU_KERNEL_COUNT(ct_cpu_linalg_grad_kernels));
}
