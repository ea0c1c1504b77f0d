/* cl_attention.c - scaled_dot_product_attention and its backward (flash-attention style: no
 * buffer of L_q * L_k entries, no atomics, deterministic).
 *
 * Forward: one work-group per (query lead index bh, tile of BQ query rows), one work item per
 * query row. The group loads each tile of BK keys and values into __local memory and every row
 * keeps an online softmax (running max m, sum l, accumulator of E_v values): scores of the tile,
 * its max, one rescale of the accumulator, then the tile's weighted values. With dropout the
 * accumulator takes the kept weights times 1 / (1 - p) while l sums them all, so out =
 * dropout(softmax) @ value. A row with no key left gives zeros and logsumexp -inf.
 *
 * Backward (flash attention 2): D_i = rowsum(grad_out_i * out_i) and P_ij = exp(score_ij -
 * logsumexp_i) are recomputed; dS_ij = P_ij (Z_ij dP_ij - D_i) scale with dP = grad_out
 * value^T and Z the dropout factor (0 or 1 / (1 - p)).
 *   - grad_query: one work-group per (bh, query tile), one work item per query row, over key
 *     tiles in __local memory: dQ_i = sum_j dS_ij K_j.
 *   - grad_key, grad_value: one work-group per (key/value lead index, tile of BQ key rows), one
 *     work item per key row, over the query heads of its group (enable_gqa) and their query
 *     tiles in __local memory: dV_j = sum_i Z_ij P_ij dO_i, dK_j = sum_i dS_ij Q_i.
 * Each output element is written by one work item, summing in a fixed order: each tile's terms
 * into a partial sum, then the partial sums (blocked summation: float32 errors grow with the
 * tile count and the tile length, not with the sequence length).
 *
 * Dropout: Philox-4x32-10 (kernels/common/philox.h) element i = the row-major index of the
 * weight in (lead..., L_q, L_k), kept iff (x0 >> 8) * 2^-24 >= (float)dropout_p, as the CPU.
 * float16 computes in float, float32 in float, float64 in double. */
#include <math.h>

#include "cl_layout.h"
#include "cl_philox_source.h"
#include "cl_types.h"

/* Work items per group (query rows, or key rows in the grad_key/grad_value kernel). */
#define CT_CL_ATTN_ROWS 32
/* Bytes of __local memory one group's tiles may take. */
#define CT_CL_ATTN_LOCAL_BYTES 16384

/* Operands, in the order of their strides in the parameter buffer. */
enum {
  CT_CL_ATTN_Q,
  CT_CL_ATTN_K,
  CT_CL_ATTN_V,
  CT_CL_ATTN_MASK,
  CT_CL_ATTN_OUT,
  CT_CL_ATTN_LSE,
  CT_CL_ATTN_GO,
  CT_CL_ATTN_GQ,
  CT_CL_ATTN_GK,
  CT_CL_ATTN_GV,
  CT_CL_ATTN_OPERANDS
};

/* The kernels. `meta`: query's lead shape (nd), key's lead shape (nd), each operand's lead byte
 * strides (nd each), each operand's (row, column) byte strides, then each operand's byte
 * offset. */
static const char ct_cl_attention_source[] =
    "#define NOPS 10\n"
    "#define RS(o) meta[(2 + NOPS) * nd + 2 * (o)]\n"
    "#define CS(o) meta[(2 + NOPS) * nd + 2 * (o) + 1]\n"
    "#define NEG_INF (-(T)INFINITY)\n"
    "long ct_lead(__global const long* meta, int nd, int shape, int op, long flat) {\n"
    "  long off = meta[(2 + NOPS) * nd + 2 * NOPS + op];\n"
    "  for (int d = nd - 1; d >= 0; --d) {\n"
    "    const long e = meta[shape * nd + d];\n"
    "    off += (flat % e) * meta[(2 + op) * nd + d];\n"
    "    flat /= e;\n"
    "  }\n"
    "  return off;\n"
    "}\n"
    "#if DROPOUT\n"
    "T ct_drop(ulong idx, ulong seed, ulong offset, float p, T keep) {\n"
    "  const ct_philox4 w = ct_philox_element(seed, offset, idx);\n"
    "  return (float)(w.x[0] >> 8) * 5.9604644775390625e-8f >= p ? keep : (T)0;\n"
    "}\n"
    "#else\n"
    "#define ct_drop(idx, seed, offset, p, keep) ((T)1)\n"
    "#endif\n"
    /* the score of query row `qrow` (private) and key `kt` (local), masked; -inf when dropped */
    "#define SCORE(sc, qrow, krow, i, j, mb)                                   \\\n"
    "  do {                                                                   \\\n"
    "    T acc_ = 0;                                                          \\\n"
    "    for (int c_ = 0; c_ < e; ++c_) acc_ += (qrow)[c_] * (krow)[c_];      \\\n"
    "    sc = acc_ * scale;                                                   \\\n"
    "    if (causal && (j) > (i)) sc = NEG_INF;                               \\\n"
    "    if (mask_kind == 1 && !LD_b8(mask, (mb) + (i) * RS(3) + (j) * CS(3)))    \\\n"
    "      sc = NEG_INF;                                                      \\\n"
    "    if (mask_kind == 2) sc += CAT(LD_, TAG)(mask, (mb) + (i) * RS(3) + (j) * CS(3)); \\\n"
    "  } while (0)\n"
    "#define ARGS __global const char* q, __global const char* k, __global const char* v, \\\n"
    "  __global const char* mask, __global const char* go, __global char* out, \\\n"
    "  __global char* lse, __global char* gq, __global char* gk, __global char* gv, \\\n"
    "  __global const long* meta, int nd, long lq, long lk, long group, long tiles, T scale, \\\n"
    "  float p, T keep, ulong seed, ulong offset, int e, int ev, int causal, \\\n"
    "  int mask_kind, int dropout\n"
    /* ----- forward ----- */
    "__kernel __attribute__((reqd_work_group_size(BQ, 1, 1))) void ct_attn_forward(ARGS) {\n"
    "  __local T kt[BK * EMAX];\n"
    "  __local T vt[BK * EVMAX];\n"
    "  const long bh = get_group_id(0) / tiles, i0 = get_group_id(0) % tiles * BQ;\n"
    "  const int t = get_local_id(0);\n"
    "  const long i = i0 + t;\n"
    "  const int live = i < lq;\n"
    "  const long qb = ct_lead(meta, nd, 0, 0, bh), mb = ct_lead(meta, nd, 0, 3, bh);\n"
    "  const long kb = ct_lead(meta, nd, 1, 1, bh / group), vb = ct_lead(meta, nd, 1, 2, bh / "
    "group);\n"
    "  T qr[EMAX], acc[EVMAX], part[EVMAX], s[BK];\n"
    "  for (int c = 0; c < ev; ++c) acc[c] = 0;\n"
    "  if (live) for (int c = 0; c < e; ++c) qr[c] = CAT(LD_, TAG)(q, qb + i * RS(0) + c * "
    "CS(0));\n"
    "  T m = NEG_INF, l = 0;\n"
    "  const long kend = causal ? min(lk, i0 + BQ) : lk;\n"
    "  for (long j0 = 0; j0 < kend; j0 += BK) {\n"
    "    const int cols = (int)min((long)BK, lk - j0);\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    for (int x = t; x < cols * e; x += BQ)\n"
    "      kt[x] = CAT(LD_, TAG)(k, kb + (j0 + x / e) * RS(1) + x % e * CS(1));\n"
    "    for (int x = t; x < cols * ev; x += BQ)\n"
    "      vt[x] = CAT(LD_, TAG)(v, vb + (j0 + x / ev) * RS(2) + x % ev * CS(2));\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    if (!live) continue;\n"
    "    T tmax = NEG_INF;\n"
    "    for (int jj = 0; jj < cols; ++jj) {\n"
    "      T sc;\n"
    "      SCORE(sc, qr, kt + jj * e, i, j0 + jj, mb);\n"
    "      s[jj] = sc;\n"
    "      tmax = fmax(tmax, sc);\n"
    "    }\n"
    "    const T mnew = fmax(m, tmax);\n"
    "    if (mnew == NEG_INF) continue;\n"
    "    const T corr = exp(m - mnew);\n"
    "    T lpart = 0;\n"
    "    for (int c = 0; c < ev; ++c) part[c] = 0;\n"
    "    for (int jj = 0; jj < cols; ++jj) {\n"
    "      const T pj = exp(s[jj] - mnew);\n"
    "      lpart += pj;\n"
    "      const T w = dropout ? pj * ct_drop(((ulong)bh * lq + i) * lk + j0 + jj, seed, "
    "offset, p, keep) : pj;\n"
    "      if (w != 0) for (int c = 0; c < ev; ++c) part[c] += w * vt[jj * ev + c];\n"
    "    }\n"
    "    l = l * corr + lpart;\n"
    "    for (int c = 0; c < ev; ++c) acc[c] = acc[c] * corr + part[c];\n"
    "    m = mnew;\n"
    "  }\n"
    "  if (!live) return;\n"
    "  const long ob = ct_lead(meta, nd, 0, 4, bh) + i * RS(4);\n"
    "  const T inv = l > 0 ? 1 / l : 0;\n"
    "  for (int c = 0; c < ev; ++c) CAT(ST_, TAG)(out, ob + c * CS(4), acc[c] * inv);\n"
    "  CAT(ST_, LTAG)(lse, ct_lead(meta, nd, 0, 5, bh) + i * RS(5), l > 0 ? m + log(l) : "
    "NEG_INF);\n"
    "}\n"
    /* ----- grad_query ----- */
    "__kernel __attribute__((reqd_work_group_size(BQ, 1, 1))) void ct_attn_grad_query(ARGS) {\n"
    "  __local T kt[BK * EMAX];\n"
    "  __local T vt[BK * EVMAX];\n"
    "  const long bh = get_group_id(0) / tiles, i0 = get_group_id(0) % tiles * BQ;\n"
    "  const int t = get_local_id(0);\n"
    "  const long i = i0 + t;\n"
    "  const int live = i < lq;\n"
    "  const long qb = ct_lead(meta, nd, 0, 0, bh), mb = ct_lead(meta, nd, 0, 3, bh);\n"
    "  const long kb = ct_lead(meta, nd, 1, 1, bh / group), vb = ct_lead(meta, nd, 1, 2, bh / "
    "group);\n"
    "  const long gob = ct_lead(meta, nd, 0, 6, bh) + i * RS(6);\n"
    "  const long ob = ct_lead(meta, nd, 0, 4, bh) + i * RS(4);\n"
    "  T qr[EMAX], dor[EVMAX], dq[EMAX], part[EMAX];\n"
    "  T dd = 0, lr = NEG_INF;\n"
    "  for (int c = 0; c < e; ++c) dq[c] = 0;\n"
    "  if (live) {\n"
    "    for (int c = 0; c < e; ++c) qr[c] = CAT(LD_, TAG)(q, qb + i * RS(0) + c * CS(0));\n"
    "    for (int c = 0; c < ev; ++c) {\n"
    "      dor[c] = CAT(LD_, TAG)(go, gob + c * CS(6));\n"
    "      dd += dor[c] * CAT(LD_, TAG)(out, ob + c * CS(4));\n"
    "    }\n"
    "    lr = CAT(LD_, LTAG)(lse, ct_lead(meta, nd, 0, 5, bh) + i * RS(5));\n"
    "  }\n"
    "  const long kend = causal ? min(lk, i0 + BQ) : lk;\n"
    "  for (long j0 = 0; j0 < kend; j0 += BK) {\n"
    "    const int cols = (int)min((long)BK, lk - j0);\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    for (int x = t; x < cols * e; x += BQ)\n"
    "      kt[x] = CAT(LD_, TAG)(k, kb + (j0 + x / e) * RS(1) + x % e * CS(1));\n"
    "    for (int x = t; x < cols * ev; x += BQ)\n"
    "      vt[x] = CAT(LD_, TAG)(v, vb + (j0 + x / ev) * RS(2) + x % ev * CS(2));\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    if (!live || lr == NEG_INF) continue;\n"
    "    for (int c = 0; c < e; ++c) part[c] = 0;\n"
    "    for (int jj = 0; jj < cols; ++jj) {\n"
    "      T sc;\n"
    "      SCORE(sc, qr, kt + jj * e, i, j0 + jj, mb);\n"
    "      const T pj = exp(sc - lr);\n"
    "      if (pj == 0) continue;\n"
    "      T dp = 0;\n"
    "      for (int c = 0; c < ev; ++c) dp += dor[c] * vt[jj * ev + c];\n"
    "      if (dropout) dp *= ct_drop(((ulong)bh * lq + i) * lk + j0 + jj, seed, offset, p, "
    "keep);\n"
    "      const T ds = pj * (dp - dd) * scale;\n"
    "      for (int c = 0; c < e; ++c) part[c] += ds * kt[jj * e + c];\n"
    "    }\n"
    "    for (int c = 0; c < e; ++c) dq[c] += part[c];\n"
    "  }\n"
    "  if (!live) return;\n"
    "  const long gqb = ct_lead(meta, nd, 0, 7, bh) + i * RS(7);\n"
    "  for (int c = 0; c < e; ++c) CAT(ST_, TAG)(gq, gqb + c * CS(7), dq[c]);\n"
    "}\n"
    /* ----- grad_key, grad_value ----- */
    "__kernel __attribute__((reqd_work_group_size(BQ, 1, 1))) void ct_attn_grad_kv(ARGS) {\n"
    "  __local T qt[BK * EMAX];\n"
    "  __local T dob[BK * EVMAX];\n"
    "  __local T lt[BK], dt[BK];\n"
    "  const long kvh = get_group_id(0) / tiles, j0 = get_group_id(0) % tiles * BQ;\n"
    "  const int t = get_local_id(0);\n"
    "  const long j = j0 + t;\n"
    "  const int live = j < lk;\n"
    "  const long kb = ct_lead(meta, nd, 1, 1, kvh) + j * RS(1);\n"
    "  const long vb = ct_lead(meta, nd, 1, 2, kvh) + j * RS(2);\n"
    "  T kr[EMAX], vr[EVMAX], dk[EMAX], dv[EVMAX], pk[EMAX], pv[EVMAX];\n"
    "  for (int c = 0; c < e; ++c) dk[c] = 0;\n"
    "  for (int c = 0; c < ev; ++c) dv[c] = 0;\n"
    "  if (live) {\n"
    "    for (int c = 0; c < e; ++c) kr[c] = CAT(LD_, TAG)(k, kb + c * CS(1));\n"
    "    for (int c = 0; c < ev; ++c) vr[c] = CAT(LD_, TAG)(v, vb + c * CS(2));\n"
    "  }\n"
    "  for (long g = 0; g < group; ++g) {\n"
    "    const long bh = kvh * group + g;\n"
    "    const long qb = ct_lead(meta, nd, 0, 0, bh), mb = ct_lead(meta, nd, 0, 3, bh);\n"
    "    const long gob = ct_lead(meta, nd, 0, 6, bh), ob = ct_lead(meta, nd, 0, 4, bh);\n"
    "    const long lb = ct_lead(meta, nd, 0, 5, bh);\n"
    "    for (long i0 = causal ? j0 / BK * BK : 0; i0 < lq; i0 += BK) {\n"
    "      const int rows = (int)min((long)BK, lq - i0);\n"
    "      barrier(CLK_LOCAL_MEM_FENCE);\n"
    "      for (int x = t; x < rows * e; x += BQ)\n"
    "        qt[x] = CAT(LD_, TAG)(q, qb + (i0 + x / e) * RS(0) + x % e * CS(0));\n"
    "      for (int x = t; x < rows * ev; x += BQ)\n"
    "        dob[x] = CAT(LD_, TAG)(go, gob + (i0 + x / ev) * RS(6) + x % ev * CS(6));\n"
    "      for (int x = t; x < rows; x += BQ) {\n"
    "        T d = 0;\n"
    "        for (int c = 0; c < ev; ++c)\n"
    "          d += CAT(LD_, TAG)(go, gob + (i0 + x) * RS(6) + c * CS(6)) *\n"
    "               CAT(LD_, TAG)(out, ob + (i0 + x) * RS(4) + c * CS(4));\n"
    "        dt[x] = d;\n"
    "        lt[x] = CAT(LD_, LTAG)(lse, lb + (i0 + x) * RS(5));\n"
    "      }\n"
    "      barrier(CLK_LOCAL_MEM_FENCE);\n"
    "      if (!live) continue;\n"
    "      for (int c = 0; c < e; ++c) pk[c] = 0;\n"
    "      for (int c = 0; c < ev; ++c) pv[c] = 0;\n"
    "      for (int ii = 0; ii < rows; ++ii) {\n"
    "        const long i = i0 + ii;\n"
    "        if (lt[ii] == NEG_INF) continue;\n"
    "        T sc;\n"
    "        SCORE(sc, qt + ii * e, kr, i, j, mb);\n"
    "        const T pj = exp(sc - lt[ii]);\n"
    "        if (pj == 0) continue;\n"
    "        T dp = 0;\n"
    "        for (int c = 0; c < ev; ++c) dp += dob[ii * ev + c] * vr[c];\n"
    "        const T z = dropout ? ct_drop(((ulong)bh * lq + i) * lk + j, seed, offset, p, keep) "
    ": (T)1;\n"
    "        const T pz = pj * z;\n"
    "        for (int c = 0; c < ev; ++c) pv[c] += pz * dob[ii * ev + c];\n"
    "        const T ds = pj * (dp * z - dt[ii]) * scale;\n"
    "        for (int c = 0; c < e; ++c) pk[c] += ds * qt[ii * e + c];\n"
    "      }\n"
    "      for (int c = 0; c < e; ++c) dk[c] += pk[c];\n"
    "      for (int c = 0; c < ev; ++c) dv[c] += pv[c];\n"
    "    }\n"
    "  }\n"
    "  if (!live) return;\n"
    "  const long gkb = ct_lead(meta, nd, 1, 8, kvh) + j * RS(8);\n"
    "  const long gvb = ct_lead(meta, nd, 1, 9, kvh) + j * RS(9);\n"
    "  for (int c = 0; c < e; ++c) CAT(ST_, TAG)(gk, gkb + c * CS(8), dk[c]);\n"
    "  for (int c = 0; c < ev; ++c) CAT(ST_, TAG)(gv, gvb + c * CS(9), dv[c]);\n"
    "}\n";

/* One call's operands and sizes. */
typedef struct ct_cl_attn_call {
  const ct_tensor* t[CT_CL_ATTN_OPERANDS]; /* NULL: absent */
  int32_t nd;                              /* lead dims */
  int64_t lead_q, lead_kv;                 /* products of query's and key's lead dims */
  int64_t lq, lk, e, ev, group;
  int64_t values[CT_MAX_NDIM * (2 + CT_CL_ATTN_OPERANDS) + 3 * CT_CL_ATTN_OPERANDS];
} ct_cl_attn_call;

/* Fills the parameter buffer's values: lead shapes, lead strides (0 where an operand, the mask,
 * broadcasts), row and column strides. */
static void ct_cl_attn_prepare(ct_cl_attn_call* a) {
  const ct_tensor *q = a->t[CT_CL_ATTN_Q], *k = a->t[CT_CL_ATTN_K], *v = a->t[CT_CL_ATTN_V];
  const int32_t ndim = q->ndim, nd = ndim - 2;
  a->nd = nd;
  a->lq = q->shape[ndim - 2];
  a->lk = k->shape[ndim - 2];
  a->e = q->shape[ndim - 1];
  a->ev = v->shape[ndim - 1];
  a->lead_q = a->lead_kv = 1;
  for (int32_t d = 0; d < nd; ++d) {
    a->values[d] = q->shape[d];
    a->values[nd + d] = k->shape[d];
    a->lead_q *= q->shape[d];
    a->lead_kv *= k->shape[d];
  }
  a->group = a->lead_kv > 0 ? a->lead_q / a->lead_kv : 1;
  if (a->group < 1) a->group = 1;
  int64_t* rc = a->values + (2 + CT_CL_ATTN_OPERANDS) * nd;
  int64_t* base = rc + 2 * CT_CL_ATTN_OPERANDS;
  for (int32_t o = 0; o < CT_CL_ATTN_OPERANDS; ++o) {
    int64_t* lead = a->values + (2 + o) * nd;
    const ct_tensor* t = a->t[o];
    for (int32_t d = 0; d < nd; ++d) lead[d] = 0;
    rc[2 * o] = rc[2 * o + 1] = 0;
    base[o] = t ? (int64_t)t->byte_offset : 0;
    if (!t) continue;
    int64_t strides[CT_MAX_NDIM];
    ct_pl_tensor_strides(t, strides);
    const int32_t size = (t->dtype.bits + 7) / 8;
    if (o == CT_CL_ATTN_LSE) { /* (lead..., L_q) */
      for (int32_t d = 0; d < nd; ++d) lead[d] = strides[d] * size;
      rc[2 * o] = t->ndim > nd ? strides[nd] * size : 0;
      continue;
    }
    /* right-aligned against (lead..., rows, cols); 0 where t has extent 1 (the mask) */
    const int32_t shift = ndim - t->ndim;
    for (int32_t d = 0; d < ndim; ++d) {
      const int32_t td = d - shift;
      const int64_t stride = td < 0 || t->shape[td] == 1 ? 0 : strides[td] * size;
      if (d < nd) {
        lead[d] = stride;
      } else {
        rc[2 * o + (d - nd)] = stride;
      }
    }
  }
}

/* The smallest power of two >= n, at least 8: the private arrays' extent, so that head sizes
 * share a few compiled programs. */
static int64_t ct_cl_attn_capacity(int64_t n) {
  int64_t c = 8;
  while (c < n) c *= 2;
  return c;
}

/* Builds the program text for the call's dtype and head sizes (the private arrays hold up to
 * EMAX and EVMAX values; the tiles BK rows of them); Philox only where dropout is on. */
static void ct_cl_attn_source(const ct_cl_exec* exec, const ct_cl_attn_call* a, bool dropout,
                              ct_cl_source* source) {
  const ct_tensor* q = a->t[CT_CL_ATTN_Q];
  const ct_cl_type_info* t = &ct_cl_types[ct_pl_type_of(q->dtype)];
  const int64_t emax = ct_cl_attn_capacity(a->e), evmax = ct_cl_attn_capacity(a->ev);
  const int64_t bytes = q->dtype.bits == 64 ? 8 : 4;
  int64_t bk = CT_CL_ATTN_LOCAL_BYTES / (bytes * (emax + evmax + 2));
  if (bk > 32) bk = 32;
  if (bk < 1) bk = 1;
  ct_cl_source_begin(source, exec);
  if (dropout) ct_cl_source_add(source, "%s#define DROPOUT 1\n", ct_cl_philox_source);
  ct_cl_source_add(source,
                   "#define T %s\n#define TAG %s\n#define LTAG %s\n#define EMAX %lld\n"
                   "#define EVMAX %lld\n#define BQ %d\n#define BK %lld\n",
                   t->compute, t->tag, q->dtype.bits == 64 ? "f64" : "f32", (long long)emax,
                   (long long)evmax, CT_CL_ATTN_ROWS, (long long)bk);
  ct_cl_source_add(source, "%s", ct_cl_attention_source);
}

/* Runs `name` over `groups` work-groups with every operand bound (absent ones get query's
 * buffer, never read). */
static int ct_cl_attn_launch(const ct_cl_exec* exec, const ct_cl_source* source,
                             const ct_cl_attn_call* a, const ct_kernel_call* call, const char* name,
                             int64_t groups, int64_t tiles) {
  if (groups == 0) return CT_OK;
  cl_mem meta = NULL;
  const size_t count = (size_t)(2 + CT_CL_ATTN_OPERANDS) * (size_t)a->nd + 3 * CT_CL_ATTN_OPERANDS;
  int status = ct_cl_meta_buffer(exec, a->values, count, &meta);
  if (status != CT_OK) return status;
  const ct_tensor* q = a->t[CT_CL_ATTN_Q];
  cl_mem buffers[CT_CL_ATTN_OPERANDS];
  for (int o = 0; o < CT_CL_ATTN_OPERANDS; ++o) { /* byte offsets are in the parameters */
    buffers[o] = (cl_mem)(a->t[o] ? a->t[o]->data : q->data);
  }
  const cl_int nd = a->nd;
  const int64_t lq = a->lq, lk = a->lk, group = a->group;
  const double p = call->attrs[3].value.f;
  const float p_f = (float)p;
  const double scale = call->attrs[1].type == CT_ATTR_FLOAT ? call->attrs[1].value.f
                       : a->e > 0                           ? 1.0 / sqrt((double)a->e)
                                                            : 1.0;
  const double keep = p < 1 ? 1.0 / (1.0 - p) : 0.0;
  const float scale_f = (float)scale, keep_f = (float)keep;
  const bool f64 = q->dtype.bits == 64;
  const uint64_t seed = (uint64_t)call->attrs[4].value.i, offset = (uint64_t)call->attrs[5].value.i;
  const ct_tensor* mask = a->t[CT_CL_ATTN_MASK];
  const cl_int e = (cl_int)a->e, ev = (cl_int)a->ev, causal = call->attrs[0].value.b != 0;
  const cl_int mask_kind = !mask ? 0 : mask->dtype.code == CT_DTYPE_BOOL ? 1 : 2;
  const cl_int dropout = p > 0;
  const ct_cl_arg args[] = {CT_CL_ARG(buffers[CT_CL_ATTN_Q]),
                            CT_CL_ARG(buffers[CT_CL_ATTN_K]),
                            CT_CL_ARG(buffers[CT_CL_ATTN_V]),
                            CT_CL_ARG(buffers[CT_CL_ATTN_MASK]),
                            CT_CL_ARG(buffers[CT_CL_ATTN_GO]),
                            CT_CL_ARG(buffers[CT_CL_ATTN_OUT]),
                            CT_CL_ARG(buffers[CT_CL_ATTN_LSE]),
                            CT_CL_ARG(buffers[CT_CL_ATTN_GQ]),
                            CT_CL_ARG(buffers[CT_CL_ATTN_GK]),
                            CT_CL_ARG(buffers[CT_CL_ATTN_GV]),
                            CT_CL_ARG(meta),
                            CT_CL_ARG(nd),
                            CT_CL_ARG(lq),
                            CT_CL_ARG(lk),
                            CT_CL_ARG(group),
                            CT_CL_ARG(tiles),
                            f64 ? CT_CL_ARG(scale) : CT_CL_ARG(scale_f),
                            CT_CL_ARG(p_f),
                            f64 ? CT_CL_ARG(keep) : CT_CL_ARG(keep_f),
                            CT_CL_ARG(seed),
                            CT_CL_ARG(offset),
                            CT_CL_ARG(e),
                            CT_CL_ARG(ev),
                            CT_CL_ARG(causal),
                            CT_CL_ARG(mask_kind),
                            CT_CL_ARG(dropout)};
  status = ct_cl_launch_groups(exec, source, name, (size_t)groups, CT_CL_ATTN_ROWS, args,
                               (int)(sizeof args / sizeof *args));
  ct_cl.clReleaseMemObject(meta);
  return status;
}

static int ct_cl_attention_run(const ct_kernel_call* call) {
  ct_cl_attn_call a = {{NULL}};
  a.t[CT_CL_ATTN_Q] = call->inputs[0];
  a.t[CT_CL_ATTN_K] = call->inputs[1];
  a.t[CT_CL_ATTN_V] = call->inputs[2];
  a.t[CT_CL_ATTN_MASK] = call->num_inputs > 3 ? call->inputs[3] : NULL;
  a.t[CT_CL_ATTN_OUT] = call->outputs[0];
  a.t[CT_CL_ATTN_LSE] = call->outputs[1];
  ct_cl_attn_prepare(&a);
  const int64_t tiles = (a.lq + CT_CL_ATTN_ROWS - 1) / CT_CL_ATTN_ROWS;
  if (a.lead_q * tiles == 0) return CT_OK;
  ct_cl_exec exec;
  int status = ct_cl_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  ct_cl_source source;
  ct_cl_attn_source(&exec, &a, call->attrs[3].value.f > 0, &source);
  return ct_cl_attn_launch(&exec, &source, &a, call, "ct_attn_forward", a.lead_q * tiles, tiles);
}

static int ct_cl_attention_backward_run(const ct_kernel_call* call) {
  ct_cl_attn_call a = {{NULL}};
  a.t[CT_CL_ATTN_GO] = call->inputs[0];
  a.t[CT_CL_ATTN_Q] = call->inputs[1];
  a.t[CT_CL_ATTN_K] = call->inputs[2];
  a.t[CT_CL_ATTN_V] = call->inputs[3];
  a.t[CT_CL_ATTN_MASK] = call->inputs[4];
  a.t[CT_CL_ATTN_OUT] = call->inputs[5];
  a.t[CT_CL_ATTN_LSE] = call->inputs[6];
  a.t[CT_CL_ATTN_GQ] = call->outputs[0];
  a.t[CT_CL_ATTN_GK] = call->outputs[1];
  a.t[CT_CL_ATTN_GV] = call->outputs[2];
  ct_cl_attn_prepare(&a);
  const int64_t q_tiles = (a.lq + CT_CL_ATTN_ROWS - 1) / CT_CL_ATTN_ROWS;
  const int64_t k_tiles = (a.lk + CT_CL_ATTN_ROWS - 1) / CT_CL_ATTN_ROWS;
  if (a.lead_q * q_tiles == 0 && a.lead_kv * k_tiles == 0) return CT_OK;
  ct_cl_exec exec;
  int status = ct_cl_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  ct_cl_source source;
  ct_cl_attn_source(&exec, &a, call->attrs[3].value.f > 0, &source);
  status = ct_cl_attn_launch(&exec, &source, &a, call, "ct_attn_grad_query", a.lead_q * q_tiles,
                             q_tiles);
  if (status != CT_OK) return status;
  return ct_cl_attn_launch(&exec, &source, &a, call, "ct_attn_grad_kv", a.lead_kv * k_tiles,
                           k_tiles);
}

int ct_cl_register_attention(void) {
  static const ct_pl_type floats[] = {CT_PL_F16, CT_PL_F32, CT_PL_F64};
  for (int f = 0; f < 3; ++f) {
    const ct_pl_type t = floats[f], lse = t == CT_PL_F64 ? CT_PL_F64 : CT_PL_F32;
    const ct_pl_type masks[2] = {CT_PL_B8, t};
    for (int m = 0; m < 2; ++m) {
      const ct_pl_type forward[6] = {t, t, t, masks[m], t, lse};
      const ct_pl_type backward[10] = {t, t, t, t, masks[m], t, lse, t, t, t};
      int status = ct_cl_register("scaled_dot_product_attention", forward, 6, ct_cl_attention_run,
                                  NULL, NULL);
      if (status == CT_OK) {
        status = ct_cl_register("scaled_dot_product_attention_backward", backward, 10,
                                ct_cl_attention_backward_run, NULL, NULL);
      }
      if (status != CT_OK) return status;
    }
  }
  return CT_OK;
}
