/* cu_attention.cu - scaled_dot_product_attention and its backward, as the OpenCL kernels
 * (cl_attention.c): flash-attention style, no buffer of L_q * L_k entries, no atomics,
 * deterministic.
 *
 * Forward: one block per (query lead index bh, tile of ROWS query rows), one thread per query
 * row, key and value tiles of BK rows in shared memory, an online softmax per row (running max,
 * sum, accumulator of E_v values, rescaled once per tile). With dropout the accumulator takes the
 * kept weights times 1 / (1 - p) while the sum takes them all. A row with no key left gives
 * zeros and logsumexp -inf.
 *
 * Backward (flash attention 2): weights recomputed from logsumexp, D_i = rowsum(dO_i O_i),
 * dS = P (Z dP - D) scale. grad_query: one block per (bh, query tile), one thread per query row
 * over key tiles; grad_key and grad_value: one block per (key/value lead index, key tile), one
 * thread per key row over the group's query heads and their query tiles in shared memory. Each
 * output element is written by one thread, summing in a fixed order: each tile's terms into a
 * partial sum, then the partial sums (blocked summation).
 *
 * A thread holds its row in registers: the head sizes are rounded up to a capacity of 16, 64 or
 * 256 (a template parameter); larger heads are refused with a clear error (INVALID_ARGUMENT).
 * Dropout draws from kernels/common/philox.h with the
 * CPU's rule. float16 computes in float, float32 in float, float64 in double. */
#include <math.h>
#include <string.h>

#include "cu_call.h"
#include "cu_types.cuh"
#include "philox.h"

namespace {

constexpr int ct_cu_attn_rows = 32;                /* threads per block */
constexpr int64_t ct_cu_attn_shared_bytes = 32768; /* one block's tiles */

enum {
  CT_CU_ATTN_Q,
  CT_CU_ATTN_K,
  CT_CU_ATTN_V,
  CT_CU_ATTN_MASK,
  CT_CU_ATTN_OUT,
  CT_CU_ATTN_LSE,
  CT_CU_ATTN_GO,
  CT_CU_ATTN_GQ,
  CT_CU_ATTN_GK,
  CT_CU_ATTN_GV,
  CT_CU_ATTN_OPERANDS
};

/* Everything but the lead strides (those are in device memory: `meta`, query's lead shape (nd),
 * key's lead shape (nd), then each operand's lead byte strides; the call's workspace holds it,
 * written there by ct_cu_attn_fill_kernel). */
struct ct_cu_attn_args {
  const char* ptr[CT_CU_ATTN_OPERANDS]; /* first byte of each operand; null when absent */
  int64_t rs[CT_CU_ATTN_OPERANDS], cs[CT_CU_ATTN_OPERANDS];
  const long long* meta;
  int nd;
  int64_t lq, lk, group, tiles;
  int e, ev, bk;
  bool causal, dropout;
  int mask_kind; /* 0 none, 1 bool, 2 additive */
  double scale, keep;
  float p;
  unsigned long long seed, offset;
};

__device__ __forceinline__ int64_t ct_cu_attn_lead(const ct_cu_attn_args& a, int shape, int op,
                                                   int64_t flat) {
  int64_t off = 0;
  for (int d = a.nd - 1; d >= 0; --d) {
    const int64_t e = a.meta[shape * a.nd + d];
    off += (flat % e) * a.meta[(2 + op) * a.nd + d];
    flat /= e;
  }
  return off;
}

template <class C>
__device__ __forceinline__ C ct_cu_attn_drop(const ct_cu_attn_args& a, int64_t index) {
  const ct_philox4 w = ct_philox_element(a.seed, a.offset, (unsigned long long)index);
  return (float)(w.x[0] >> 8) * 5.9604644775390625e-8f >= a.p ? (C)a.keep : (C)0;
}

/* The masked, scaled score of query row `qrow` and key row `krow`; -inf where masked out. */
template <ct_pl_type Tag, class C>
__device__ __forceinline__ C ct_cu_attn_score(const ct_cu_attn_args& a, const C* qrow,
                                              const C* krow, int64_t i, int64_t j, int64_t mb) {
  C acc = 0;
  for (int c = 0; c < a.e; ++c) acc += qrow[c] * krow[c];
  C s = acc * (C)a.scale;
  if (a.causal && j > i) s = -(C)INFINITY;
  const char* m =
      a.ptr[CT_CU_ATTN_MASK] + mb + i * a.rs[CT_CU_ATTN_MASK] + j * a.cs[CT_CU_ATTN_MASK];
  if (a.mask_kind == 1 && !*reinterpret_cast<const uint8_t*>(m)) s = -(C)INFINITY;
  if (a.mask_kind == 2) s += ct_cu_load<Tag>(m);
  return s;
}

/* The block's threads load `cols` key rows from `j0` into `kt` and the same value rows into
 * `vt` (shared memory, row-major). */
template <ct_pl_type Tag, class C>
__device__ __forceinline__ void ct_cu_attn_load_kv(const ct_cu_attn_args& a, C* kt, C* vt,
                                                   int64_t kb, int64_t vb, int64_t j0, int cols) {
  for (int x = threadIdx.x; x < cols * a.e; x += ct_cu_attn_rows) {
    kt[x] = ct_cu_load<Tag>(a.ptr[CT_CU_ATTN_K] + kb + (j0 + x / a.e) * a.rs[CT_CU_ATTN_K] +
                            x % a.e * a.cs[CT_CU_ATTN_K]);
  }
  for (int x = threadIdx.x; x < cols * a.ev; x += ct_cu_attn_rows) {
    vt[x] = ct_cu_load<Tag>(a.ptr[CT_CU_ATTN_V] + vb + (j0 + x / a.ev) * a.rs[CT_CU_ATTN_V] +
                            x % a.ev * a.cs[CT_CU_ATTN_V]);
  }
}

template <ct_pl_type Tag, int Cap>
__global__ void __launch_bounds__(ct_cu_attn_rows) ct_cu_attn_forward(const ct_cu_attn_args a) {
  using C = ct_cu_compute_t<Tag>;
  constexpr ct_pl_type LseTag = Tag == CT_PL_F64 ? CT_PL_F64 : CT_PL_F32;
  extern __shared__ __align__(16) unsigned char ct_cu_attn_smem[];
  C* kt = reinterpret_cast<C*>(ct_cu_attn_smem);
  C* vt = kt + a.bk * a.e;
  const int64_t bh = blockIdx.x / a.tiles, i0 = blockIdx.x % a.tiles * ct_cu_attn_rows;
  const int t = threadIdx.x;
  const int64_t i = i0 + t;
  const bool live = i < a.lq;
  const int64_t qb = ct_cu_attn_lead(a, 0, CT_CU_ATTN_Q, bh);
  const int64_t mb = a.mask_kind ? ct_cu_attn_lead(a, 0, CT_CU_ATTN_MASK, bh) : 0;
  const int64_t kb = ct_cu_attn_lead(a, 1, CT_CU_ATTN_K, bh / a.group);
  const int64_t vb = ct_cu_attn_lead(a, 1, CT_CU_ATTN_V, bh / a.group);
  C qr[Cap], acc[Cap], part[Cap], s[32];
  for (int c = 0; c < a.ev; ++c) acc[c] = 0;
  if (live) {
    for (int c = 0; c < a.e; ++c) {
      qr[c] = ct_cu_load<Tag>(a.ptr[CT_CU_ATTN_Q] + qb + i * a.rs[CT_CU_ATTN_Q] +
                              c * a.cs[CT_CU_ATTN_Q]);
    }
  }
  C m = -(C)INFINITY, l = 0;
  const int64_t kend = a.causal ? min(a.lk, i0 + ct_cu_attn_rows) : a.lk;
  for (int64_t j0 = 0; j0 < kend; j0 += a.bk) {
    const int cols = (int)min((int64_t)a.bk, a.lk - j0);
    __syncthreads();
    ct_cu_attn_load_kv<Tag>(a, kt, vt, kb, vb, j0, cols);
    __syncthreads();
    if (!live) continue;
    C tmax = -(C)INFINITY;
    for (int jj = 0; jj < cols; ++jj) {
      s[jj] = ct_cu_attn_score<Tag>(a, qr, kt + jj * a.e, i, j0 + jj, mb);
      tmax = fmax(tmax, s[jj]);
    }
    const C mnew = fmax(m, tmax);
    if (mnew == -(C)INFINITY) continue;
    const C corr = exp(m - mnew);
    C lpart = 0;
    for (int c = 0; c < a.ev; ++c) part[c] = 0;
    for (int jj = 0; jj < cols; ++jj) {
      const C pj = exp(s[jj] - mnew);
      lpart += pj;
      const C w = a.dropout ? pj * ct_cu_attn_drop<C>(a, (bh * a.lq + i) * a.lk + j0 + jj) : pj;
      if (w != 0) {
        for (int c = 0; c < a.ev; ++c) part[c] += w * vt[jj * a.ev + c];
      }
    }
    l = l * corr + lpart;
    for (int c = 0; c < a.ev; ++c) acc[c] = acc[c] * corr + part[c];
    m = mnew;
  }
  if (!live) return;
  const int64_t ob = ct_cu_attn_lead(a, 0, CT_CU_ATTN_OUT, bh) + i * a.rs[CT_CU_ATTN_OUT];
  const C inv = l > 0 ? 1 / l : 0;
  for (int c = 0; c < a.ev; ++c) {
    ct_cu_store<Tag>(const_cast<char*>(a.ptr[CT_CU_ATTN_OUT]) + ob + c * a.cs[CT_CU_ATTN_OUT],
                     acc[c] * inv);
  }
  const int64_t lb = ct_cu_attn_lead(a, 0, CT_CU_ATTN_LSE, bh) + i * a.rs[CT_CU_ATTN_LSE];
  ct_cu_store<LseTag>(const_cast<char*>(a.ptr[CT_CU_ATTN_LSE]) + lb,
                      l > 0 ? m + log(l) : -(C)INFINITY);
}

template <ct_pl_type Tag, int Cap>
__global__ void __launch_bounds__(ct_cu_attn_rows) ct_cu_attn_grad_query(const ct_cu_attn_args a) {
  using C = ct_cu_compute_t<Tag>;
  constexpr ct_pl_type LseTag = Tag == CT_PL_F64 ? CT_PL_F64 : CT_PL_F32;
  extern __shared__ __align__(16) unsigned char ct_cu_attn_smem[];
  C* kt = reinterpret_cast<C*>(ct_cu_attn_smem);
  C* vt = kt + a.bk * a.e;
  const int64_t bh = blockIdx.x / a.tiles, i0 = blockIdx.x % a.tiles * ct_cu_attn_rows;
  const int t = threadIdx.x;
  const int64_t i = i0 + t;
  const bool live = i < a.lq;
  const int64_t qb = ct_cu_attn_lead(a, 0, CT_CU_ATTN_Q, bh);
  const int64_t mb = a.mask_kind ? ct_cu_attn_lead(a, 0, CT_CU_ATTN_MASK, bh) : 0;
  const int64_t kb = ct_cu_attn_lead(a, 1, CT_CU_ATTN_K, bh / a.group);
  const int64_t vb = ct_cu_attn_lead(a, 1, CT_CU_ATTN_V, bh / a.group);
  C qr[Cap], dor[Cap], dq[Cap], part[Cap];
  C dd = 0, lr = -(C)INFINITY;
  for (int c = 0; c < a.e; ++c) dq[c] = 0;
  if (live) {
    const int64_t gob = ct_cu_attn_lead(a, 0, CT_CU_ATTN_GO, bh) + i * a.rs[CT_CU_ATTN_GO];
    const int64_t ob = ct_cu_attn_lead(a, 0, CT_CU_ATTN_OUT, bh) + i * a.rs[CT_CU_ATTN_OUT];
    for (int c = 0; c < a.e; ++c) {
      qr[c] = ct_cu_load<Tag>(a.ptr[CT_CU_ATTN_Q] + qb + i * a.rs[CT_CU_ATTN_Q] +
                              c * a.cs[CT_CU_ATTN_Q]);
    }
    for (int c = 0; c < a.ev; ++c) {
      dor[c] = ct_cu_load<Tag>(a.ptr[CT_CU_ATTN_GO] + gob + c * a.cs[CT_CU_ATTN_GO]);
      dd += dor[c] * ct_cu_load<Tag>(a.ptr[CT_CU_ATTN_OUT] + ob + c * a.cs[CT_CU_ATTN_OUT]);
    }
    lr = ct_cu_load<LseTag>(a.ptr[CT_CU_ATTN_LSE] + ct_cu_attn_lead(a, 0, CT_CU_ATTN_LSE, bh) +
                            i * a.rs[CT_CU_ATTN_LSE]);
  }
  const int64_t kend = a.causal ? min(a.lk, i0 + ct_cu_attn_rows) : a.lk;
  for (int64_t j0 = 0; j0 < kend; j0 += a.bk) {
    const int cols = (int)min((int64_t)a.bk, a.lk - j0);
    __syncthreads();
    ct_cu_attn_load_kv<Tag>(a, kt, vt, kb, vb, j0, cols);
    __syncthreads();
    if (!live || lr == -(C)INFINITY) continue;
    for (int c = 0; c < a.e; ++c) part[c] = 0;
    for (int jj = 0; jj < cols; ++jj) {
      const C pj = exp(ct_cu_attn_score<Tag>(a, qr, kt + jj * a.e, i, j0 + jj, mb) - lr);
      if (pj == 0) continue;
      C dp = 0;
      for (int c = 0; c < a.ev; ++c) dp += dor[c] * vt[jj * a.ev + c];
      if (a.dropout) dp *= ct_cu_attn_drop<C>(a, (bh * a.lq + i) * a.lk + j0 + jj);
      const C ds = pj * (dp - dd) * (C)a.scale;
      for (int c = 0; c < a.e; ++c) part[c] += ds * kt[jj * a.e + c];
    }
    for (int c = 0; c < a.e; ++c) dq[c] += part[c];
  }
  if (!live) return;
  const int64_t gqb = ct_cu_attn_lead(a, 0, CT_CU_ATTN_GQ, bh) + i * a.rs[CT_CU_ATTN_GQ];
  for (int c = 0; c < a.e; ++c) {
    ct_cu_store<Tag>(const_cast<char*>(a.ptr[CT_CU_ATTN_GQ]) + gqb + c * a.cs[CT_CU_ATTN_GQ],
                     dq[c]);
  }
}

template <ct_pl_type Tag, int Cap>
__global__ void __launch_bounds__(ct_cu_attn_rows) ct_cu_attn_grad_kv(const ct_cu_attn_args a) {
  using C = ct_cu_compute_t<Tag>;
  constexpr ct_pl_type LseTag = Tag == CT_PL_F64 ? CT_PL_F64 : CT_PL_F32;
  extern __shared__ __align__(16) unsigned char ct_cu_attn_smem[];
  C* qt = reinterpret_cast<C*>(ct_cu_attn_smem);
  C* dot = qt + a.bk * a.e;
  C* lt = dot + a.bk * a.ev;
  C* dt = lt + a.bk;
  const int64_t kvh = blockIdx.x / a.tiles, j0 = blockIdx.x % a.tiles * ct_cu_attn_rows;
  const int t = threadIdx.x;
  const int64_t j = j0 + t;
  const bool live = j < a.lk;
  const int64_t kb = ct_cu_attn_lead(a, 1, CT_CU_ATTN_K, kvh) + j * a.rs[CT_CU_ATTN_K];
  const int64_t vb = ct_cu_attn_lead(a, 1, CT_CU_ATTN_V, kvh) + j * a.rs[CT_CU_ATTN_V];
  C kr[Cap], vr[Cap], dk[Cap], dv[Cap], pk[Cap], pv[Cap];
  for (int c = 0; c < a.e; ++c) dk[c] = 0;
  for (int c = 0; c < a.ev; ++c) dv[c] = 0;
  if (live) {
    for (int c = 0; c < a.e; ++c) {
      kr[c] = ct_cu_load<Tag>(a.ptr[CT_CU_ATTN_K] + kb + c * a.cs[CT_CU_ATTN_K]);
    }
    for (int c = 0; c < a.ev; ++c) {
      vr[c] = ct_cu_load<Tag>(a.ptr[CT_CU_ATTN_V] + vb + c * a.cs[CT_CU_ATTN_V]);
    }
  }
  for (int64_t g = 0; g < a.group; ++g) {
    const int64_t bh = kvh * a.group + g;
    const int64_t qb = ct_cu_attn_lead(a, 0, CT_CU_ATTN_Q, bh);
    const int64_t mb = a.mask_kind ? ct_cu_attn_lead(a, 0, CT_CU_ATTN_MASK, bh) : 0;
    const int64_t gob = ct_cu_attn_lead(a, 0, CT_CU_ATTN_GO, bh);
    const int64_t ob = ct_cu_attn_lead(a, 0, CT_CU_ATTN_OUT, bh);
    const int64_t lb = ct_cu_attn_lead(a, 0, CT_CU_ATTN_LSE, bh);
    for (int64_t i0 = a.causal ? j0 / a.bk * a.bk : 0; i0 < a.lq; i0 += a.bk) {
      const int rows = (int)min((int64_t)a.bk, a.lq - i0);
      __syncthreads();
      for (int x = t; x < rows * a.e; x += ct_cu_attn_rows) {
        qt[x] = ct_cu_load<Tag>(a.ptr[CT_CU_ATTN_Q] + qb + (i0 + x / a.e) * a.rs[CT_CU_ATTN_Q] +
                                x % a.e * a.cs[CT_CU_ATTN_Q]);
      }
      for (int x = t; x < rows * a.ev; x += ct_cu_attn_rows) {
        dot[x] =
            ct_cu_load<Tag>(a.ptr[CT_CU_ATTN_GO] + gob + (i0 + x / a.ev) * a.rs[CT_CU_ATTN_GO] +
                            x % a.ev * a.cs[CT_CU_ATTN_GO]);
      }
      for (int x = t; x < rows; x += ct_cu_attn_rows) {
        C d = 0;
        for (int c = 0; c < a.ev; ++c) {
          d += ct_cu_load<Tag>(a.ptr[CT_CU_ATTN_GO] + gob + (i0 + x) * a.rs[CT_CU_ATTN_GO] +
                               c * a.cs[CT_CU_ATTN_GO]) *
               ct_cu_load<Tag>(a.ptr[CT_CU_ATTN_OUT] + ob + (i0 + x) * a.rs[CT_CU_ATTN_OUT] +
                               c * a.cs[CT_CU_ATTN_OUT]);
        }
        dt[x] = d;
        lt[x] = ct_cu_load<LseTag>(a.ptr[CT_CU_ATTN_LSE] + lb + (i0 + x) * a.rs[CT_CU_ATTN_LSE]);
      }
      __syncthreads();
      if (!live) continue;
      for (int c = 0; c < a.e; ++c) pk[c] = 0;
      for (int c = 0; c < a.ev; ++c) pv[c] = 0;
      for (int ii = 0; ii < rows; ++ii) {
        const int64_t i = i0 + ii;
        if (lt[ii] == -(C)INFINITY) continue;
        const C pj = exp(ct_cu_attn_score<Tag>(a, qt + ii * a.e, kr, i, j, mb) - lt[ii]);
        if (pj == 0) continue;
        C dp = 0;
        for (int c = 0; c < a.ev; ++c) dp += dot[ii * a.ev + c] * vr[c];
        const C z = a.dropout ? ct_cu_attn_drop<C>(a, (bh * a.lq + i) * a.lk + j) : (C)1;
        const C pz = pj * z;
        for (int c = 0; c < a.ev; ++c) pv[c] += pz * dot[ii * a.ev + c];
        const C ds = pj * (dp * z - dt[ii]) * (C)a.scale;
        for (int c = 0; c < a.e; ++c) pk[c] += ds * qt[ii * a.e + c];
      }
      for (int c = 0; c < a.e; ++c) dk[c] += pk[c];
      for (int c = 0; c < a.ev; ++c) dv[c] += pv[c];
    }
  }
  if (!live) return;
  const int64_t gkb = ct_cu_attn_lead(a, 1, CT_CU_ATTN_GK, kvh) + j * a.rs[CT_CU_ATTN_GK];
  const int64_t gvb = ct_cu_attn_lead(a, 1, CT_CU_ATTN_GV, kvh) + j * a.rs[CT_CU_ATTN_GV];
  for (int c = 0; c < a.e; ++c) {
    ct_cu_store<Tag>(const_cast<char*>(a.ptr[CT_CU_ATTN_GK]) + gkb + c * a.cs[CT_CU_ATTN_GK],
                     dk[c]);
  }
  for (int c = 0; c < a.ev; ++c) {
    ct_cu_store<Tag>(const_cast<char*>(a.ptr[CT_CU_ATTN_GV]) + gvb + c * a.cs[CT_CU_ATTN_GV],
                     dv[c]);
  }
}

/* Lead values ct_cu_attn_fill_kernel writes per launch: its parameter, kept well under the 4 KiB
 * a kernel's parameters may take. */
constexpr int ct_cu_attn_fill_chunk = 64;

struct ct_cu_attn_fill_values {
  long long v[ct_cu_attn_fill_chunk];
};

/* Writes `count` (<= ct_cu_attn_fill_chunk) values to `meta`: the lead values reach the device
 * as a kernel parameter, not as a copy from host memory, so that a captured CUDA graph holds
 * them rather than the address of a host buffer gone after the call. */
__global__ void ct_cu_attn_fill_kernel(const ct_cu_attn_fill_values values, int count,
                                       long long* meta) {
  const int i = (int)threadIdx.x;
  if (i < count) meta[i] = values.v[i];
}

/* One call: operands, sizes, the lead strides (host copy). */
struct ct_cu_attn_call {
  const ct_tensor* t[CT_CU_ATTN_OPERANDS] = {};
  int64_t lead_q = 1, lead_kv = 1;
  long long values[CT_MAX_NDIM * (2 + CT_CU_ATTN_OPERANDS)];
  ct_cu_attn_args args;
};

void ct_cu_attn_prepare(const ct_kernel_call* call, ct_cu_attn_call* c) {
  const ct_tensor *q = c->t[CT_CU_ATTN_Q], *k = c->t[CT_CU_ATTN_K], *v = c->t[CT_CU_ATTN_V];
  ct_cu_attn_args& a = c->args;
  const int32_t ndim = q->ndim, nd = ndim - 2;
  a.nd = nd;
  a.lq = q->shape[ndim - 2];
  a.lk = k->shape[ndim - 2];
  a.e = (int)q->shape[ndim - 1];
  a.ev = (int)v->shape[ndim - 1];
  for (int32_t d = 0; d < nd; ++d) {
    c->values[d] = q->shape[d];
    c->values[nd + d] = k->shape[d];
    c->lead_q *= q->shape[d];
    c->lead_kv *= k->shape[d];
  }
  a.group = c->lead_kv > 0 ? c->lead_q / c->lead_kv : 1;
  if (a.group < 1) a.group = 1;
  for (int32_t o = 0; o < CT_CU_ATTN_OPERANDS; ++o) {
    long long* lead = c->values + (2 + o) * nd;
    const ct_tensor* t = c->t[o];
    for (int32_t d = 0; d < nd; ++d) lead[d] = 0;
    a.rs[o] = a.cs[o] = 0;
    a.ptr[o] = t ? ct_cu_tensor_bytes(t) : nullptr;
    if (!t) continue;
    int64_t strides[CT_MAX_NDIM];
    ct_pl_tensor_strides(t, strides);
    const int32_t size = (t->dtype.bits + 7) / 8;
    if (o == CT_CU_ATTN_LSE) { /* (lead..., L_q) */
      for (int32_t d = 0; d < nd; ++d) lead[d] = strides[d] * size;
      a.rs[o] = t->ndim > nd ? strides[nd] * size : 0;
      continue;
    }
    /* right-aligned against (lead..., rows, cols); 0 where t has extent 1 (the mask) */
    const int32_t shift = ndim - t->ndim;
    for (int32_t d = 0; d < ndim; ++d) {
      const int32_t td = d - shift;
      const int64_t stride = td < 0 || t->shape[td] == 1 ? 0 : strides[td] * size;
      if (d < nd) {
        lead[d] = stride;
      } else if (d == nd) {
        a.rs[o] = stride;
      } else {
        a.cs[o] = stride;
      }
    }
  }
  const ct_tensor* mask = c->t[CT_CU_ATTN_MASK];
  a.mask_kind = !mask ? 0 : mask->dtype.code == CT_DTYPE_BOOL ? 1 : 2;
  a.causal = call->attrs[0].value.b != 0;
  const double p = call->attrs[3].value.f;
  a.scale = call->attrs[1].type == CT_ATTR_FLOAT ? call->attrs[1].value.f
            : a.e > 0                            ? 1.0 / sqrt((double)a.e)
                                                 : 1.0;
  a.dropout = p > 0;
  a.p = (float)p;
  a.keep = p < 1 ? 1.0 / (1.0 - p) : 0.0;
  a.seed = (unsigned long long)call->attrs[4].value.i;
  a.offset = (unsigned long long)call->attrs[5].value.i;
}

/* Bytes of the lead values (`meta`) of a call whose query has `query_ndim` dims. */
uint64_t ct_cu_attn_meta_bytes(int32_t query_ndim) {
  const int64_t nd = query_ndim > 2 ? query_ndim - 2 : 0;
  return sizeof(long long) * (uint64_t)(2 + CT_CU_ATTN_OPERANDS) * (uint64_t)nd;
}

/* The workspace of both ops: the lead values; 0 when the call computes nothing (as
 * ct_cu_attention_run and ct_cu_attention_backward_run return early). */
int ct_cu_attn_workspace(const ct_kernel_call* call, uint64_t* bytes, uint64_t* alignment) {
  const bool backward = strstr(call->schema->name, "_backward") != nullptr;
  const ct_tensor* q = call->inputs[backward ? 1 : 0];
  const ct_tensor* k = call->inputs[backward ? 2 : 1];
  const int32_t ndim = q->ndim;
  int64_t queries = q->shape[ndim - 2], keys = k->shape[ndim - 2];
  for (int32_t d = 0; d < ndim - 2; ++d) {
    queries *= q->shape[d];
    keys *= k->shape[d];
  }
  const bool empty = backward ? queries == 0 && keys == 0 : queries == 0;
  *bytes = empty ? 0 : ct_cu_attn_meta_bytes(ndim);
  *alignment = 256;
  return CT_OK;
}

/* The register capacity of the call's head sizes, or 0 when they exceed the largest. */
int ct_cu_attn_capacity(const ct_cu_attn_args& a) {
  const int n = a.e > a.ev ? a.e : a.ev;
  return n <= 16 ? 16 : n <= 64 ? 64 : n <= 256 ? 256 : 0;
}

/* Shared bytes of a block's tiles for `bk` rows; picks bk (<= 32) so that they fit. */
template <ct_pl_type Tag>
size_t ct_cu_attn_tiles(ct_cu_attn_args& a) {
  const int64_t size = sizeof(ct_cu_compute_t<Tag>);
  int64_t bk = ct_cu_attn_shared_bytes / (size * (a.e + a.ev + 2));
  a.bk = (int)(bk > 32 ? 32 : bk < 1 ? 1 : bk);
  return (size_t)(size * (a.bk * (a.e + a.ev) + 2 * a.bk));
}

template <ct_pl_type Tag, int Cap>
void ct_cu_attn_launch(const ct_cu_exec& exec, int which, unsigned blocks, size_t shared,
                       const ct_cu_attn_args& a) {
  if (which == 0) {
    ct_cu_attn_forward<Tag, Cap><<<blocks, ct_cu_attn_rows, shared, exec.stream>>>(a);
  } else if (which == 1) {
    ct_cu_attn_grad_query<Tag, Cap><<<blocks, ct_cu_attn_rows, shared, exec.stream>>>(a);
  } else {
    ct_cu_attn_grad_kv<Tag, Cap><<<blocks, ct_cu_attn_rows, shared, exec.stream>>>(a);
  }
}

/* Runs the kernels `which` (0 forward; 1 and 2 the backward's) of a prepared call. */
template <ct_pl_type Tag>
int ct_cu_attn_run(const ct_kernel_call* call, ct_cu_attn_call* c, const int* which, int count,
                   const char* what) {
  ct_cu_attn_args& a = c->args;
  const int cap = ct_cu_attn_capacity(a);
  if (cap == 0) {
    return ct_cu_error(CT_ERROR_INVALID_ARGUMENT,
                       "%s: the CUDA kernels take head sizes up to 256 (E = %d, E_v = %d)", what,
                       a.e, a.ev);
  }
  ct_cu_exec exec;
  int status = ct_cu_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  const size_t shared = ct_cu_attn_tiles<Tag>(a);
  /* The lead values live in the call's workspace (ct_cu_attn_workspace asked for them). */
  const uint64_t meta_bytes = ct_cu_attn_meta_bytes(a.nd + 2);
  void* scratch = nullptr;
  status = ct_cu_workspace(call->workspace, call->workspace_size, meta_bytes, alignof(long long),
                           what, &scratch);
  if (status != CT_OK) return status;
  long long* meta = static_cast<long long*>(scratch);
  if (meta_bytes > 0) {
    const int total = (int)(meta_bytes / sizeof(long long));
    for (int first = 0; first < total && status == CT_OK; first += ct_cu_attn_fill_chunk) {
      const int count =
          total - first < ct_cu_attn_fill_chunk ? total - first : ct_cu_attn_fill_chunk;
      ct_cu_attn_fill_values values;
      for (int i = 0; i < count; ++i) values.v[i] = c->values[first + i];
      ct_cu_attn_fill_kernel<<<1, ct_cu_attn_fill_chunk, 0, exec.stream>>>(values, count,
                                                                           meta + first);
      status = ct_cu_launch_status(what);
    }
  }
  a.meta = meta;
  for (int w = 0; w < count && status == CT_OK; ++w) {
    const bool keys = which[w] == 2;
    a.tiles = ((keys ? a.lk : a.lq) + ct_cu_attn_rows - 1) / ct_cu_attn_rows;
    const int64_t blocks = (keys ? c->lead_kv : c->lead_q) * a.tiles;
    if (blocks == 0) continue;
    if (cap == 16) {
      ct_cu_attn_launch<Tag, 16>(exec, which[w], (unsigned)blocks, shared, a);
    } else if (cap == 64) {
      ct_cu_attn_launch<Tag, 64>(exec, which[w], (unsigned)blocks, shared, a);
    } else {
      ct_cu_attn_launch<Tag, 256>(exec, which[w], (unsigned)blocks, shared, a);
    }
    status = ct_cu_launch_status(what);
  }
  return status;
}

template <ct_pl_type Tag>
int ct_cu_attention_run(const ct_kernel_call* call) {
  ct_cu_attn_call c;
  c.t[CT_CU_ATTN_Q] = call->inputs[0];
  c.t[CT_CU_ATTN_K] = call->inputs[1];
  c.t[CT_CU_ATTN_V] = call->inputs[2];
  c.t[CT_CU_ATTN_MASK] = call->num_inputs > 3 ? call->inputs[3] : nullptr;
  c.t[CT_CU_ATTN_OUT] = call->outputs[0];
  c.t[CT_CU_ATTN_LSE] = call->outputs[1];
  ct_cu_attn_prepare(call, &c);
  if (c.lead_q * c.args.lq == 0) return CT_OK;
  static const int which[1] = {0};
  return ct_cu_attn_run<Tag>(call, &c, which, 1, "scaled_dot_product_attention");
}

template <ct_pl_type Tag>
int ct_cu_attention_backward_run(const ct_kernel_call* call) {
  ct_cu_attn_call c;
  c.t[CT_CU_ATTN_GO] = call->inputs[0];
  c.t[CT_CU_ATTN_Q] = call->inputs[1];
  c.t[CT_CU_ATTN_K] = call->inputs[2];
  c.t[CT_CU_ATTN_V] = call->inputs[3];
  c.t[CT_CU_ATTN_MASK] = call->inputs[4];
  c.t[CT_CU_ATTN_OUT] = call->inputs[5];
  c.t[CT_CU_ATTN_LSE] = call->inputs[6];
  c.t[CT_CU_ATTN_GQ] = call->outputs[0];
  c.t[CT_CU_ATTN_GK] = call->outputs[1];
  c.t[CT_CU_ATTN_GV] = call->outputs[2];
  ct_cu_attn_prepare(call, &c);
  if (c.lead_q * c.args.lq == 0 && c.lead_kv * c.args.lk == 0) return CT_OK;
  static const int which[2] = {1, 2};
  return ct_cu_attn_run<Tag>(call, &c, which, 2, "scaled_dot_product_attention_backward");
}

}  // namespace

int ct_cu_register_attention(void) {
  return ct_cu_for_each_tag(ct_cu_float_tags{}, [](auto tag) -> int {
    constexpr ct_pl_type Tag = decltype(tag)::value;
    constexpr ct_pl_type Lse = Tag == CT_PL_F64 ? CT_PL_F64 : CT_PL_F32;
    for (ct_pl_type mask : {CT_PL_B8, Tag}) {
      const ct_pl_type forward[6] = {Tag, Tag, Tag, mask, Tag, Lse};
      const ct_pl_type backward[10] = {Tag, Tag, Tag, Tag, mask, Tag, Lse, Tag, Tag, Tag};
      int status = ct_cu_register("scaled_dot_product_attention", forward, 6,
                                  ct_cu_attention_run<Tag>, ct_cu_attn_workspace, nullptr);
      if (status == CT_OK) {
        status = ct_cu_register("scaled_dot_product_attention_backward", backward, 10,
                                ct_cu_attention_backward_run<Tag>, ct_cu_attn_workspace, nullptr);
      }
      if (status != CT_OK) return status;
    }
    return CT_OK;
  });
}
