/* einsum_chain.h - the CPU einsum on the strided batched GEMM (gemm.h): one or two operands
 * as one GEMM view (ct_einsum_describe), more as a left-to-right chain of such pairs
 * (ct_einsum_chain). Shared by einsum and einsum_backward. */
#ifndef CTENSOR_CPU_EINSUM_CHAIN_H_
#define CTENSOR_CPU_EINSUM_CHAIN_H_

#include <stdio.h>
#include <string.h>

#include "gemm/gemm.h"
#include "ops/einsum_spec.h"

/* The GEMM view of an einsum: one output letter absent from B is m, one absent from A is n, the
 * other output letters are batch dims; the longest summed letter is k and any other summed
 * letters are looped here, the GEMM accumulating onto C after the first. A single operand
 * multiplies by a one-element B of 1 (all strides 0). */
typedef struct ct_einsum_gemm {
  ct_gemm_desc d;
  int64_t shape[CT_MAX_NDIM], a[CT_MAX_NDIM], b[CT_MAX_NDIM], c[CT_MAX_NDIM];
  int32_t outer[CT_EINSUM_LETTERS]; /* summed letters looped here */
  int32_t num_outer;
} ct_einsum_gemm;

static void ct_einsum_describe(const ct_kernel_call* call, const ct_einsum_spec* p, const void* one,
                               ct_einsum_gemm* g) {
  const ct_tensor* out = call->outputs[0];
  const int64_t* sa = p->stride[0];
  const int64_t* sb = p->stride[1];
  int64_t sc[CT_EINSUM_LETTERS] = {0};
  for (int32_t d = 0; d < p->out_ndim; ++d) sc[p->out_letter[d]] = ct_tensor_stride(out, d);
  int32_t m = -1, n = -1, k = -1;
  for (int32_t d = 0; d < p->out_ndim; ++d) {
    const int32_t l = p->out_letter[d];
    if (sb[l] == 0 && sa[l] != 0 && (m < 0 || p->extent[l] > p->extent[m])) m = l;
    if (sa[l] == 0 && sb[l] != 0 && (n < 0 || p->extent[l] > p->extent[n])) n = l;
  }
  g->num_outer = 0;
  for (int32_t l = 0; l < p->num_letters; ++l) {
    if (p->in_output[l]) continue;
    if (k < 0 || p->extent[l] > p->extent[k]) k = l;
  }
  for (int32_t l = 0; l < p->num_letters; ++l) {
    if (!p->in_output[l] && l != k) g->outer[g->num_outer++] = l;
  }
  memset(&g->d, 0, sizeof g->d);
  g->d.m = m >= 0 ? p->extent[m] : 1;
  g->d.n = n >= 0 ? p->extent[n] : 1;
  g->d.k = k >= 0 ? p->extent[k] : 1;
  g->d.a = ct_tensor_base(call->inputs[0]);
  g->d.b = call->num_inputs > 1 ? ct_tensor_base(call->inputs[1]) : one;
  g->d.c = ct_tensor_base(out);
  g->d.a_rs = m >= 0 ? sa[m] : 0;
  g->d.a_cs = k >= 0 ? sa[k] : 0;
  g->d.b_rs = k >= 0 ? sb[k] : 0;
  g->d.b_cs = n >= 0 ? sb[n] : 0;
  g->d.c_rs = m >= 0 ? sc[m] : 0;
  g->d.c_cs = n >= 0 ? sc[n] : 0;
  int32_t q = 0;
  for (int32_t d = 0; d < p->out_ndim; ++d) {
    const int32_t l = p->out_letter[d];
    if (l == m || l == n) continue;
    g->shape[q] = p->extent[l];
    g->a[q] = sa[l];
    g->b[q] = sb[l];
    g->c[q] = sc[l];
    ++q;
  }
  g->d.batch_ndim = q;
  g->d.batch_shape = g->shape;
  g->d.a_bs = g->a;
  g->d.b_bs = g->b;
  g->d.c_bs = g->c;
}

/* Runs the GEMMs: one per combination of the looped summed letters. */
static void ct_einsum_loop(const ct_einsum_spec* p, ct_einsum_gemm* g, int64_t itemsize,
                           void (*gemm)(const ct_gemm_desc*)) {
  int64_t combos = 1;
  for (int32_t i = 0; i < g->num_outer; ++i) combos *= p->extent[g->outer[i]];
  if (combos == 0 || g->d.k == 0) { /* an empty sum: zeros */
    g->d.k = 0;
    gemm(&g->d);
    return;
  }
  const char* a0 = g->d.a;
  const char* b0 = g->d.b;
  int64_t index[CT_EINSUM_LETTERS] = {0};
  for (int64_t c = 0; c < combos; ++c) {
    int64_t oa = 0, ob = 0;
    for (int32_t i = 0; i < g->num_outer; ++i) {
      oa += index[i] * p->stride[0][g->outer[i]];
      ob += index[i] * p->stride[1][g->outer[i]];
    }
    g->d.a = a0 + oa * itemsize;
    g->d.b = b0 + ob * itemsize;
    g->d.accumulate = c > 0;
    gemm(&g->d);
    for (int32_t i = g->num_outer - 1; i >= 0; --i) {
      if (++index[i] < p->extent[g->outer[i]]) break;
      index[i] = 0;
    }
  }
}

/* The GEMM of one dtype, its workspace query, its element size and a one of its type. */
typedef struct ct_einsum_kit {
  void (*gemm)(const ct_gemm_desc*);
  uint64_t (*gemm_workspace)(const ct_gemm_desc*);
  int64_t itemsize;
  const void* one;
} ct_einsum_kit;

/* The one- or two-operand einsum `spec` (letters only) of a and b (NULL: one operand) into out.
 * With `need`, only sizes the GEMM's workspace into *need. */
static int ct_einsum_pair(const char* spec, const ct_tensor* a, const ct_tensor* b,
                          const ct_tensor* out, const ct_einsum_kit* kit, void* workspace,
                          uint64_t workspace_size, uint64_t* need) {
  const ct_tensor* ins[2] = {a, b};
  const ct_tensor* outs[1] = {out};
  ct_kernel_call call;
  memset(&call, 0, sizeof call);
  call.inputs = ins;
  call.num_inputs = b ? 2 : 1;
  call.outputs = outs;
  call.num_outputs = 1;
  ct_einsum_spec plan;
  const int status = ct_einsum_parse(spec, ins, call.num_inputs, &plan);
  if (status != CT_OK) return status;
  if (ct_tensor_numel(out) == 0) {
    if (need) *need = 0;
    return CT_OK;
  }
  ct_einsum_gemm g;
  ct_einsum_describe(&call, &plan, kit->one, &g);
  if (need) {
    *need = kit->gemm_workspace(&g.d);
    return CT_OK;
  }
  g.d.workspace = workspace;
  g.d.workspace_size = workspace_size;
  ct_einsum_loop(&plan, &g, kit->itemsize, kit->gemm);
  return CT_OK;
}

/* An expanded spec split into its operands' letters and the output's. */
typedef struct ct_einsum_terms {
  int32_t count;
  char sub[CT_EINSUM_MAX_OPERANDS][CT_MAX_NDIM + 1];
  char out[CT_MAX_NDIM + 1];
} ct_einsum_terms;

static void ct_einsum_split(const char* expanded, ct_einsum_terms* t) {
  memset(t, 0, sizeof *t);
  int32_t w = 0;
  char* dst = t->sub[0];
  t->count = 1;
  for (const char* s = expanded; *s; ++s) {
    if (*s == ' ') continue;
    if (*s == ',') {
      dst = t->sub[t->count++];
      w = 0;
    } else if (s[0] == '-' && s[1] == '>') {
      dst = t->out;
      w = 0;
      ++s;
    } else if (w < CT_MAX_NDIM) {
      dst[w++] = *s;
    }
  }
}

/* Appends to `keep` (distinct, first-seen order) each letter of `from` that `need` holds. */
static void ct_einsum_keep(const char* from, const bool need[CT_EINSUM_LETTERS], char* keep) {
  size_t w = strlen(keep);
  for (const char* c = from; *c; ++c) {
    if (need[ct_einsum_code(*c)] && !strchr(keep, *c)) keep[w++] = *c;
  }
  keep[w] = '\0';
}

/* The extent of letter c in the given operands (the one of its dims that is not 1, else 1). */
static int64_t ct_einsum_extent(char c, const char* const* subs, const ct_tensor* const* ops,
                                int32_t count) {
  int64_t e = 1;
  for (int32_t i = 0; i < count; ++i) {
    for (int32_t d = 0; subs[i][d]; ++d) {
      if (subs[i][d] == c && ops[i]->shape[d] != 1) e = ops[i]->shape[d];
    }
  }
  return e;
}

/* A compact intermediate: its letters, shape and tensor (data set by the caller). */
typedef struct ct_einsum_temp {
  char letters[CT_MAX_NDIM + 1];
  int64_t shape[CT_MAX_NDIM];
  ct_tensor t;
} ct_einsum_temp;

static void ct_einsum_temp_init(ct_einsum_temp* m, const char* letters, const char* const* subs,
                                const ct_tensor* const* ops, int32_t count, ct_dtype dtype) {
  memset(m, 0, sizeof *m);
  strcpy(m->letters, letters);
  m->t.ndim = (int32_t)strlen(letters);
  for (int32_t d = 0; d < m->t.ndim; ++d) {
    m->shape[d] = ct_einsum_extent(letters[d], subs, ops, count);
  }
  m->t.shape = m->shape;
  m->t.strides = NULL; /* compact row-major */
  m->t.dtype = dtype;
  m->t.device = ops[0]->device;
}

static uint64_t ct_einsum_round(uint64_t bytes) {
  return (bytes + CT_GEMM_WORKSPACE_ALIGNMENT - 1) / CT_GEMM_WORKSPACE_ALIGNMENT *
         CT_GEMM_WORKSPACE_ALIGNMENT;
}

/* Runs (or, with `need`, sizes the workspace of) the einsum `expanded` (letters only, explicit
 * output) of `count` operands into out, pairwise left to right as numpy.einsum_path's naive
 * order: operands 0 and 1 into a compact intermediate holding every letter a later operand or
 * the output still needs, that with operand 2, and so on; the last pair writes out. The
 * intermediates alternate between two buffers at the head of the workspace; the GEMM's panels
 * follow them. */
static int ct_einsum_chain(const char* expanded, const ct_tensor* const* ops, int32_t count,
                           const ct_tensor* out, const ct_einsum_kit* kit, void* workspace,
                           uint64_t workspace_size, uint64_t* need) {
  ct_einsum_terms terms;
  ct_einsum_split(expanded, &terms);
  if (terms.count != count) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "einsum: \"%s\" names %d operands, %d given",
                        expanded, terms.count, count);
  }
  /* Letters still needed after step s (s pairs the running result with operand s). */
  bool needed[CT_EINSUM_MAX_OPERANDS][CT_EINSUM_LETTERS];
  memset(needed, 0, sizeof needed);
  for (int32_t s = count - 1; s >= 1; --s) {
    for (const char* c = terms.out; *c; ++c) needed[s][ct_einsum_code(*c)] = true;
    if (s + 1 < count) {
      for (int32_t l = 0; l < CT_EINSUM_LETTERS; ++l) needed[s][l] |= needed[s + 1][l];
      for (const char* c = terms.sub[s + 1]; *c; ++c) needed[s][ct_einsum_code(*c)] = true;
    }
  }
  const char* subs[CT_EINSUM_MAX_OPERANDS];
  for (int32_t i = 0; i < count; ++i) subs[i] = terms.sub[i];
  /* Buffer sizes: the largest intermediate. */
  uint64_t cap = 0;
  {
    char left[CT_MAX_NDIM + 1];
    strcpy(left, terms.sub[0]);
    for (int32_t s = 1; s + 1 < count; ++s) {
      char keep[CT_MAX_NDIM + 1] = "";
      ct_einsum_keep(left, needed[s], keep);
      ct_einsum_keep(terms.sub[s], needed[s], keep);
      ct_einsum_temp m;
      ct_einsum_temp_init(&m, keep, subs, ops, s + 1, out->dtype);
      const uint64_t bytes = ct_einsum_round((uint64_t)ct_tensor_numel(&m.t) * kit->itemsize);
      if (bytes > cap) cap = bytes;
      strcpy(left, keep);
    }
  }
  char* base = workspace;
  char* gemm_ws = base ? base + 2 * cap : NULL;
  const uint64_t gemm_ws_size = workspace_size > 2 * cap ? workspace_size - 2 * cap : 0;
  uint64_t gemm_need = 0;
  ct_einsum_temp temps[2];
  const ct_tensor* left = ops[0];
  char left_letters[CT_MAX_NDIM + 1];
  strcpy(left_letters, terms.sub[0]);
  if (count == 1) {
    char spec[2 * CT_MAX_NDIM + 4];
    snprintf(spec, sizeof spec, "%s->%s", terms.sub[0], terms.out);
    return ct_einsum_pair(spec, ops[0], NULL, out, kit, workspace, workspace_size, need);
  }
  for (int32_t s = 1; s < count; ++s) {
    const bool last = s + 1 == count;
    char keep[CT_MAX_NDIM + 1] = "";
    const ct_tensor* target = out;
    if (last) {
      strcpy(keep, terms.out);
    } else {
      ct_einsum_keep(left_letters, needed[s], keep);
      ct_einsum_keep(terms.sub[s], needed[s], keep);
      ct_einsum_temp* m = &temps[s % 2];
      ct_einsum_temp_init(m, keep, subs, ops, s + 1, out->dtype);
      m->t.data = base ? base + (s % 2) * cap : NULL;
      target = &m->t;
    }
    char spec[3 * CT_MAX_NDIM + 6];
    snprintf(spec, sizeof spec, "%s,%s->%s", left_letters, terms.sub[s], keep);
    uint64_t step_need = 0;
    const int status = ct_einsum_pair(spec, left, ops[s], target, kit, gemm_ws, gemm_ws_size,
                                      need ? &step_need : NULL);
    if (status != CT_OK) return status;
    if (step_need > gemm_need) gemm_need = step_need;
    left = target;
    strcpy(left_letters, keep);
  }
  if (need) *need = 2 * cap + gemm_need;
  return CT_OK;
}

#endif /* CTENSOR_CPU_EINSUM_CHAIN_H_ */
