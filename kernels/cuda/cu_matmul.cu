/* cu_matmul.cu - matmul, matmul_backward and linear with NumPy's rules (broadcast batch dims,
 * 1-D operands as a row or a column). float16, float32 and float64 run on cuBLASLt (cu_blaslt.h:
 * strided-batched GEMMs, linear's bias in the BIAS epilogue, the workspace from the call); what
 * cuBLASLt cannot take (integer and bool dtypes, layouts without a unit stride in the matrix
 * dims, misaligned data, float16 products summed across broadcast batches) runs on the
 * hand-written kernels below.
 *
 * matmul's kernel: a shared-memory tiled GEMM per batch matrix, 64x64 output tiles, each of 256
 * threads accumulating a 4x4 block in registers while the next 16-deep slices of the operands
 * are fetched; products with a single row or column (matrix-vector) instead spread each output's
 * sum over a warp or a block. Operands are read through byte strides (any layout, broadcast dims
 * stride 0), loaded along whichever dim is denser in memory. float16 accumulates in float,
 * integers wrap, bool is or-of-ands; linear's bias is added to the accumulator before the one
 * rounding. matmul_backward's kernel: one thread per element of each cotangent, a strided dot
 * product over the contracted dim and the batch dims its operand was broadcast along
 * (plugin_grad_geometry.h), accumulated in float (float16, float32) or double. */
#include <stdint.h>

#include <type_traits>

#include "cu_blaslt.h"
#include "cu_call.h"
#include "cu_group_reduce.cuh"
#include "cu_layout.h"
#include "plugin_geometry.h"
#include "plugin_grad_geometry.h"
#include "cu_types.cuh"

namespace {

constexpr int ct_cu_threads = 256;
constexpr int ct_cu_big_block = 1024; /* threads on one output of a long matrix-vector product */
constexpr int ct_cu_tile = 64;        /* output rows and columns of a block */
constexpr int ct_cu_depth = 16;       /* contraction slice held in shared memory */
constexpr int ct_cu_micro = 4;        /* rows and columns of a thread's register block */
constexpr int ct_cu_spread = ct_cu_tile / ct_cu_micro;                /* threads along a tile row */
constexpr int ct_cu_loads = ct_cu_tile * ct_cu_depth / ct_cu_threads; /* slice elements a thread */
static_assert(ct_cu_spread * ct_cu_spread == ct_cu_threads, "one register block a thread");

/* The accumulator: float for float16/float32, double for float64, the unsigned type of the
 * width for integers (wrapping) and bool (0/1, or-of-ands). */
template <ct_pl_type Tag>
using ct_cu_acc_t = std::conditional_t<ct_cu_is_float_v<Tag>, ct_cu_compute_t<Tag>,
                                       typename ct_cu_traits<Tag>::unsigned_type>;

struct ct_cu_matmul_args {
  int64_t m, n, k;
  int64_t tiles_n, tiles; /* tiles along n, tiles of one matrix */
  int64_t batches;
  int64_t a_m, a_k, b_k, b_n, out_m, out_n; /* byte strides */
  bool a_m_dense;                           /* load a's slices along m (else along k) */
  bool b_k_dense;                           /* load b's slices along k (else along n) */
  const char* bias;                         /* linear: bias[col * bias_n] added, or null */
  int64_t bias_n;
};

int64_t ct_cu_abs(int64_t v) {
  return v < 0 ? -v : v;
}

template <ct_pl_type Tag>
__device__ __forceinline__ ct_cu_acc_t<Tag> ct_cu_matmul_load(const char* p) {
  if constexpr (Tag == CT_PL_B8) {
    return ct_cu_load<Tag>(p) != 0;
  } else {
    return static_cast<ct_cu_acc_t<Tag>>(ct_cu_load<Tag>(p));
  }
}

/* acc += x * y, or acc |= x & y for bool. */
template <ct_pl_type Tag, class Acc>
__device__ __forceinline__ void ct_cu_matmul_step(Acc& acc, Acc x, Acc y) {
  if constexpr (Tag == CT_PL_B8) {
    acc |= x & y;
  } else {
    acc += x * y;
  }
}

/* acc plus the bias of output column `col` (float dtypes; linear registers no others). */
template <ct_pl_type Tag, class Acc>
__device__ __forceinline__ Acc ct_cu_matmul_biased(Acc acc, const char* bias, int64_t col,
                                                   int64_t bias_step) {
  if constexpr (ct_cu_is_float_v<Tag>) {
    if (bias) acc += ct_cu_matmul_load<Tag>(bias + col * bias_step);
  }
  return acc;
}

/* Joins two partial accumulators: a sum, or an or for bool. */
template <ct_pl_type Tag>
struct ct_cu_matmul_join {
  template <class Acc>
  __device__ __forceinline__ Acc operator()(Acc x, Acc y) const {
    if constexpr (Tag == CT_PL_B8) {
      return x | y;
    } else {
      return x + y;
    }
  }
};

/* Fetches this thread's elements of the (tile x depth) slice of an operand at contraction
 * offset k0: `outer` the tile dim (rows of a, columns of b), from `outer0`, stride
 * `outer_step`, `outer_extent` long; the slice is walked along outer when `outer_dense`. */
template <ct_pl_type Tag>
__device__ __forceinline__ void ct_cu_matmul_fetch(ct_cu_acc_t<Tag>* values, const char* p,
                                                   int64_t outer0, int64_t outer_extent,
                                                   int64_t outer_step, int64_t k0, int64_t k_extent,
                                                   int64_t k_step, bool outer_dense) {
#pragma unroll
  for (int r = 0; r < ct_cu_loads; ++r) {
    const int e = threadIdx.x + r * ct_cu_threads;
    const int outer = outer_dense ? e % ct_cu_tile : e / ct_cu_depth;
    const int k = outer_dense ? e / ct_cu_tile : e % ct_cu_depth;
    const int64_t i = outer0 + outer, j = k0 + k;
    values[r] = i < outer_extent && j < k_extent
                    ? ct_cu_matmul_load<Tag>(p + i * outer_step + j * k_step)
                    : ct_cu_acc_t<Tag>(0);
  }
}

/* Stores fetched elements into a slice held as [k][outer] (one spare column against bank
 * conflicts when the slice is walked along k). */
template <class Acc>
__device__ __forceinline__ void ct_cu_matmul_stage(Acc (*slice)[ct_cu_tile + 1], const Acc* values,
                                                   bool outer_dense) {
#pragma unroll
  for (int r = 0; r < ct_cu_loads; ++r) {
    const int e = threadIdx.x + r * ct_cu_threads;
    const int outer = outer_dense ? e % ct_cu_tile : e / ct_cu_depth;
    const int k = outer_dense ? e / ct_cu_tile : e % ct_cu_depth;
    slice[k][outer] = values[r];
  }
}

/* Thread (ty, tx) computes rows ty + 16 i and columns tx + 16 j of its block's tile, so that a
 * warp reads shared memory without conflicts and writes 16 neighbouring columns. */
template <ct_pl_type Tag>
__global__ void __launch_bounds__(ct_cu_threads)
    ct_cu_matmul_kernel(const ct_pl_layout batch, const ct_cu_matmul_args p, char* out,
                        const char* a, const char* b) {
  using Acc = ct_cu_acc_t<Tag>;
  __shared__ Acc a_slice[ct_cu_depth][ct_cu_tile + 1];
  __shared__ Acc b_slice[ct_cu_depth][ct_cu_tile + 1];
  const int tx = threadIdx.x % ct_cu_spread, ty = threadIdx.x / ct_cu_spread;
  for (int64_t z = blockIdx.y; z < p.batches; z += gridDim.y) {
    int64_t off[3];
    ct_cu_offsets<3>(batch, z, off);
    for (int64_t tile = blockIdx.x; tile < p.tiles; tile += gridDim.x) {
      const int64_t row0 = tile / p.tiles_n * ct_cu_tile, col0 = tile % p.tiles_n * ct_cu_tile;
      Acc acc[ct_cu_micro][ct_cu_micro] = {};
      Acc a_next[ct_cu_loads], b_next[ct_cu_loads];
      ct_cu_matmul_fetch<Tag>(a_next, a + off[1], row0, p.m, p.a_m, 0, p.k, p.a_k, p.a_m_dense);
      ct_cu_matmul_fetch<Tag>(b_next, b + off[2], col0, p.n, p.b_n, 0, p.k, p.b_k, !p.b_k_dense);
      for (int64_t k0 = 0; k0 < p.k; k0 += ct_cu_depth) {
        ct_cu_matmul_stage(a_slice, a_next, p.a_m_dense);
        ct_cu_matmul_stage(b_slice, b_next, !p.b_k_dense);
        __syncthreads();
        if (k0 + ct_cu_depth < p.k) {
          ct_cu_matmul_fetch<Tag>(a_next, a + off[1], row0, p.m, p.a_m, k0 + ct_cu_depth, p.k,
                                  p.a_k, p.a_m_dense);
          ct_cu_matmul_fetch<Tag>(b_next, b + off[2], col0, p.n, p.b_n, k0 + ct_cu_depth, p.k,
                                  p.b_k, !p.b_k_dense);
        }
#pragma unroll
        for (int kk = 0; kk < ct_cu_depth; ++kk) {
          Acc x[ct_cu_micro], y[ct_cu_micro];
#pragma unroll
          for (int i = 0; i < ct_cu_micro; ++i) {
            x[i] = a_slice[kk][ty + i * ct_cu_spread];
            y[i] = b_slice[kk][tx + i * ct_cu_spread];
          }
#pragma unroll
          for (int i = 0; i < ct_cu_micro; ++i) {
#pragma unroll
            for (int j = 0; j < ct_cu_micro; ++j) ct_cu_matmul_step<Tag>(acc[i][j], x[i], y[j]);
          }
        }
        __syncthreads();
      }
#pragma unroll
      for (int i = 0; i < ct_cu_micro; ++i) {
        const int64_t row = row0 + ty + i * ct_cu_spread;
#pragma unroll
        for (int j = 0; j < ct_cu_micro; ++j) {
          const int64_t col = col0 + tx + j * ct_cu_spread;
          if (row < p.m && col < p.n) {
            ct_cu_store<Tag>(out + off[0] + row * p.out_m + col * p.out_n,
                             ct_cu_matmul_biased<Tag>(acc[i][j], p.bias, col, p.bias_n));
          }
        }
      }
    }
  }
}

/* A product with one row or one column (a 1-D operand, or m or n of 1): per batch matrix,
 * out[i] = sum over k of p[i, k] * v[k], p the matrix operand and v the vector one. */
struct ct_cu_matvec_args {
  int64_t rows, k, batches;
  int64_t p_i, p_k, v_k, out_i; /* byte strides */
  bool p_is_b;                  /* p is b (v is a single row of a), else p is a */
  int shift;                    /* columns kernel: 2^shift neighbouring outputs a block */
  const char* bias;             /* linear: bias[i * bias_i] added to output i, or null */
  int64_t bias_i;
};

/* The matrix row and the vector of output `i` of batch matrix `off` (out, a, b offsets). */
__device__ __forceinline__ void ct_cu_matvec_operands(const ct_cu_matvec_args& p,
                                                      const int64_t* off, const char* a,
                                                      const char* b, int64_t i, const char** row,
                                                      const char** v) {
  *row = (p.p_is_b ? b + off[2] : a + off[1]) + i * p.p_i;
  *v = p.p_is_b ? a + off[1] : b + off[2];
}

/* p walked along k in memory: a group of Width threads (a warp, or a 1024-thread block when
 * there are few outputs) per output. */
template <ct_pl_type Tag, int Width>
__global__ void __launch_bounds__(ct_cu_group_block(Width))
    ct_cu_matvec_rows(const ct_pl_layout batch, const ct_cu_matvec_args p, char* out, const char* a,
                      const char* b) {
  using Acc = ct_cu_acc_t<Tag>;
  constexpr int groups = ct_cu_group_block(Width) / Width;
  const int t = threadIdx.x % Width;
  const int64_t items = p.batches * p.rows;
  for (int64_t item = (int64_t)blockIdx.x * groups + threadIdx.x / Width; item < items;
       item += (int64_t)gridDim.x * groups) {
    const int64_t i = item % p.rows;
    int64_t off[3];
    ct_cu_offsets<3>(batch, item / p.rows, off);
    const char *row, *v;
    ct_cu_matvec_operands(p, off, a, b, i, &row, &v);
    Acc acc = 0;
    for (int64_t k = t; k < p.k; k += Width) {
      ct_cu_matmul_step<Tag>(acc, ct_cu_matmul_load<Tag>(row + k * p.p_k),
                             ct_cu_matmul_load<Tag>(v + k * p.v_k));
    }
    acc = ct_cu_group_reduce<Width>(acc, ct_cu_matmul_join<Tag>());
    if (t == 0) {
      ct_cu_store<Tag>(out + off[0] + i * p.out_i,
                       ct_cu_matmul_biased<Tag>(acc, p.bias, i, p.bias_i));
    }
  }
}

/* p walked along its outputs in memory: a block takes 2^shift neighbouring outputs, each
 * summed by the remaining threads taking every so many k, so that a warp's loads fall on
 * neighbouring outputs. */
template <ct_pl_type Tag>
__global__ void __launch_bounds__(ct_cu_threads)
    ct_cu_matvec_columns(const ct_pl_layout batch, const ct_cu_matvec_args p, char* out,
                         const char* a, const char* b) {
  using Acc = ct_cu_acc_t<Tag>;
  __shared__ Acc part[ct_cu_threads];
  const int width = 1 << p.shift, depth = ct_cu_threads >> p.shift;
  const int column = threadIdx.x & (width - 1), lane = threadIdx.x >> p.shift;
  const int64_t per_matrix = (p.rows + width - 1) >> p.shift;
  for (int64_t item = blockIdx.x; item < p.batches * per_matrix; item += gridDim.x) {
    const int64_t i = item % per_matrix * width + column;
    int64_t off[3];
    ct_cu_offsets<3>(batch, item / per_matrix, off);
    const char *row, *v;
    ct_cu_matvec_operands(p, off, a, b, i, &row, &v);
    Acc acc = 0;
    for (int64_t k = i < p.rows ? lane : p.k; k < p.k; k += depth) {
      ct_cu_matmul_step<Tag>(acc, ct_cu_matmul_load<Tag>(row + k * p.p_k),
                             ct_cu_matmul_load<Tag>(v + k * p.v_k));
    }
    acc = ct_cu_column_reduce(part, acc, width, ct_cu_matmul_join<Tag>());
    if (lane == 0 && i < p.rows) {
      ct_cu_store<Tag>(out + off[0] + i * p.out_i,
                       ct_cu_matmul_biased<Tag>(acc, p.bias, i, p.bias_i));
    }
  }
}

template <ct_pl_type Tag>
int ct_cu_matvec_launch(const ct_cu_exec& exec, const ct_pl_layout& batch,
                        const ct_cu_matmul_args& mm, char* out, const char* a, const char* b) {
  ct_cu_matvec_args p;
  p.p_is_b = mm.n != 1;
  p.rows = p.p_is_b ? mm.n : mm.m;
  p.k = mm.k;
  p.batches = mm.batches;
  p.p_i = p.p_is_b ? mm.b_n : mm.a_m;
  p.p_k = p.p_is_b ? mm.b_k : mm.a_k;
  p.v_k = p.p_is_b ? mm.a_k : mm.b_k;
  p.out_i = p.p_is_b ? mm.out_n : mm.out_m;
  p.bias = mm.bias;
  p.bias_i = p.p_is_b ? mm.bias_n : 0; /* outputs along n, or the single column */
  const int64_t items = p.batches * p.rows;
  const int64_t enough = 2 * (int64_t)ct_cu_multiprocessors(exec.device_id); /* blocks */
  if (p.rows == 1 || ct_cu_abs(p.p_k) <= ct_cu_abs(p.p_i)) {
    if (items >= enough * (ct_cu_threads / 32)) {
      ct_cu_matvec_rows<Tag, 32>
          <<<ct_cu_grid(exec, items * 32, ct_cu_threads), ct_cu_threads, 0, exec.stream>>>(
              batch, p, out, a, b);
    } else {
      ct_cu_matvec_rows<Tag, ct_cu_big_block>
          <<<ct_cu_grid(exec, items * ct_cu_big_block, ct_cu_big_block), ct_cu_big_block, 0,
             exec.stream>>>(batch, p, out, a, b);
    }
  } else {
    /* As many neighbouring outputs a block as still gives two blocks a multiprocessor. */
    p.shift = 5;
    while (p.shift > 0 && p.batches * ((p.rows + (1 << p.shift) - 1) >> p.shift) < enough) {
      --p.shift;
    }
    const int64_t blocks = p.batches * ((p.rows + (1 << p.shift) - 1) >> p.shift);
    ct_cu_matvec_columns<Tag><<<ct_cu_grid(exec, blocks * ct_cu_threads, ct_cu_threads),
                                ct_cu_threads, 0, exec.stream>>>(batch, p, out, a, b);
  }
  return ct_cu_launch_status("matmul");
}

template <ct_pl_type Tag>
int ct_cu_matmul_launch(const ct_cu_exec& exec, const ct_pl_layout& batch,
                        const ct_cu_matmul_args& p, char* out, const char* a, const char* b) {
  if (p.m == 1 || p.n == 1) return ct_cu_matvec_launch<Tag>(exec, batch, p, out, a, b);
  const dim3 grid((unsigned)(p.tiles < INT32_MAX ? p.tiles : INT32_MAX),
                  (unsigned)(p.batches < 65535 ? p.batches : 65535));
  ct_cu_matmul_kernel<Tag><<<grid, ct_cu_threads, 0, exec.stream>>>(batch, p, out, a, b);
  return ct_cu_launch_status("matmul");
}

/* ----- matmul_backward's kernel ----- */

template <ct_pl_type Tag>
__global__ void __launch_bounds__(ct_cu_threads)
    ct_cu_mmgrad_kernel(const ct_pl_layout kept, const ct_pl_layout reduced, int64_t n,
                        int64_t count, char* out, const char* a, const char* b) {
  using T = ct_cu_compute_t<Tag>;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t off[3];
    ct_cu_offsets<3>(kept, i, off);
    T acc = 0;
    for (int64_t j = 0; j < count; ++j) {
      int64_t r[2];
      ct_cu_offsets<2>(reduced, j, r);
      acc += ct_cu_load<Tag>(a + off[1] + r[0]) * ct_cu_load<Tag>(b + off[2] + r[1]);
    }
    ct_cu_store<Tag>(out + off[0], acc);
  }
}

/* Cotangent `which` of matmul_backward on the kernel. */
template <ct_pl_type Tag>
int ct_cu_mmgrad_launch(const ct_cu_exec& exec, const ct_kernel_call* call, int which) {
  ct_pl_layout kept, reduced;
  ct_pl_matmul_grad_layouts(call, which, &kept, &reduced);
  const int64_t n = kept.elements;
  if (n == 0) return CT_OK;
  const ct_tensor* g = call->inputs[0];
  const ct_tensor* a = which == 0 ? g : call->inputs[1];
  const ct_tensor* b = which == 0 ? call->inputs[2] : g;
  ct_cu_mmgrad_kernel<Tag><<<ct_cu_grid(exec, n, ct_cu_threads), ct_cu_threads, 0, exec.stream>>>(
      kept, reduced, n, reduced.elements, ct_cu_tensor_bytes(call->outputs[which]),
      ct_cu_tensor_bytes(a), ct_cu_tensor_bytes(b));
  return ct_cu_launch_status("matmul_backward");
}

/* ----- running the ops ----- */

/* What a registered kernel hands its run function: its dtype and the kernels of that dtype. */
struct ct_cu_matmul_entry {
  ct_pl_type tag;
  int (*launch)(const ct_cu_exec& exec, const ct_pl_layout& batch, const ct_cu_matmul_args& p,
                char* out, const char* a, const char* b);
  int (*mmgrad)(const ct_cu_exec& exec, const ct_kernel_call* call, int which);
};

/* Byte strides of `t`. */
void ct_cu_byte_strides(const ct_tensor* t, int64_t* strides) {
  ct_pl_tensor_strides(t, strides);
  const int64_t size = (t->dtype.bits + 7) / 8;
  for (int32_t d = 0; d < t->ndim; ++d) strides[d] *= size;
}

/* A GEMM with no summed products (a 0-D layout of two operands). */
void ct_cu_gemm_begin(ct_cu_gemm_args* g, ct_pl_type tag) {
  *g = {};
  g->tag = tag;
  ct_pl_layout_begin(&g->summed, 0, nullptr);
  g->summed.count = 2;
}

/* Runs `g` on cuBLASLt where it takes it (float dtypes), else on the hand-written kernel. */
int ct_cu_matmul_execute(const ct_kernel_call* call, const ct_cu_exec& exec,
                         const ct_cu_matmul_entry& entry, const ct_cu_gemm_args& g) {
  bool ran = false;
  const int status = ct_cu_gemm(exec, g, call->workspace, call->workspace_size, &ran);
  if (status != CT_OK || ran) return status;
  ct_cu_matmul_args p;
  p.m = g.m;
  p.k = g.k;
  p.n = g.n;
  p.a_m = g.a_m;
  p.a_k = g.a_k;
  p.b_k = g.b_k;
  p.b_n = g.b_n;
  p.out_m = g.d_m;
  p.out_n = g.d_n;
  p.bias = g.bias;
  p.bias_n = g.bias_n;
  p.a_m_dense = p.m > 1 && ct_cu_abs(p.a_m) < ct_cu_abs(p.a_k);
  p.b_k_dense = p.n == 1 || ct_cu_abs(p.b_k) < ct_cu_abs(p.b_n);
  p.tiles_n = (p.n + ct_cu_tile - 1) / ct_cu_tile;
  p.tiles = (p.m + ct_cu_tile - 1) / ct_cu_tile * p.tiles_n;
  ct_pl_layout layout = g.batch;
  ct_pl_layout_collapse(&layout, nullptr);
  p.batches = layout.elements;
  return entry.launch(exec, layout, p, g.d, g.a, g.b);
}

int ct_cu_matmul_run(const ct_kernel_call* call) {
  const auto* entry = static_cast<const ct_cu_matmul_entry*>(call->kernel_data);
  const ct_tensor* out = call->outputs[0];
  if (ct_pl_tensor_elements(out) == 0) return CT_OK;
  ct_cu_exec exec;
  const int status = ct_cu_exec_for_call(call, &exec);
  if (status != CT_OK) return status;

  ct_pl_matmul plan;
  ct_pl_matmul_plan(call, &plan);
  ct_cu_gemm_args g;
  ct_cu_gemm_begin(&g, entry->tag);
  g.m = plan.m;
  g.k = plan.k;
  g.n = plan.n;
  g.d = ct_cu_tensor_bytes(out);
  g.a = ct_cu_tensor_bytes(call->inputs[0]);
  g.b = ct_cu_tensor_bytes(call->inputs[1]);
  g.d_m = plan.out_m;
  g.d_n = plan.out_n;
  g.a_m = plan.a_m;
  g.a_k = plan.a_k;
  g.b_k = plan.b_k;
  g.b_n = plan.b_n;
  ct_pl_layout_begin(&g.batch, plan.batch, plan.batch_shape);
  for (int k = 0; k < 3; ++k) ct_pl_layout_add_strides(&g.batch, plan.batch_strides[k]);
  return ct_cu_matmul_execute(call, exec, *entry, g);
}

/* linear: out = x @ weight^T + bias, x (..., m, k) or (k,), weight (n, k): matmul of x and
 * weight viewed as k x n through its strides (no transpose copy), the batch dims x's leading
 * ones with weight shared (stride 0), so that cuBLASLt folds them into one GEMM. */
int ct_cu_linear_run(const ct_kernel_call* call) {
  const auto* entry = static_cast<const ct_cu_matmul_entry*>(call->kernel_data);
  const ct_tensor* x = call->inputs[0];
  const ct_tensor* w = call->inputs[1];
  const ct_tensor* bias = call->num_inputs > 2 ? call->inputs[2] : nullptr;
  const ct_tensor* out = call->outputs[0];
  if (ct_pl_tensor_elements(out) == 0) return CT_OK;
  ct_cu_exec exec;
  const int status = ct_cu_exec_for_call(call, &exec);
  if (status != CT_OK) return status;

  int64_t xs[CT_MAX_NDIM], ws[CT_MAX_NDIM], os[CT_MAX_NDIM];
  ct_cu_byte_strides(x, xs);
  ct_cu_byte_strides(w, ws);
  ct_cu_byte_strides(out, os);
  const int32_t nd = x->ndim;
  ct_cu_gemm_args g;
  ct_cu_gemm_begin(&g, entry->tag);
  g.m = nd >= 2 ? x->shape[nd - 2] : 1;
  g.k = x->shape[nd - 1];
  g.n = w->shape[0];
  g.d = ct_cu_tensor_bytes(out);
  g.a = ct_cu_tensor_bytes(x);
  g.b = ct_cu_tensor_bytes(w);
  g.d_m = nd >= 2 ? os[nd - 2] : 0;
  g.d_n = os[nd - 1];
  g.a_m = nd >= 2 ? xs[nd - 2] : 0;
  g.a_k = xs[nd - 1];
  g.b_k = ws[1];
  g.b_n = ws[0];
  if (bias) {
    int64_t bs[1];
    ct_cu_byte_strides(bias, bs);
    g.bias = ct_cu_tensor_bytes(bias);
    g.bias_n = bs[0];
  }
  const int32_t batch = nd > 2 ? nd - 2 : 0;
  int64_t shared[CT_MAX_NDIM] = {0};
  ct_pl_layout_begin(&g.batch, batch, x->shape);
  ct_pl_layout_add_strides(&g.batch, os);
  ct_pl_layout_add_strides(&g.batch, xs);
  ct_pl_layout_add_strides(&g.batch, shared);
  return ct_cu_matmul_execute(call, exec, *entry, g);
}

/* Cotangent `which` of matmul_backward as a GEMM: grad_x1 = grad_out x2^T (m x k, contracting
 * n) or grad_x2 = x1^T grad_out (k x n, contracting m), batched over the cotangent's batch dims
 * and summed over those its operand was broadcast along. A 1-D operand's missing dim has
 * extent 1 (any stride). */
void ct_cu_mmgrad_gemm(const ct_kernel_call* call, int which, ct_pl_type tag, ct_cu_gemm_args* g) {
  const ct_tensor* go = call->inputs[0];
  const ct_tensor* x1 = call->inputs[1];
  const ct_tensor* x2 = call->inputs[2];
  const ct_tensor* grad = call->outputs[which];
  int64_t gs[CT_MAX_NDIM], s1[CT_MAX_NDIM], s2[CT_MAX_NDIM], rs[CT_MAX_NDIM];
  ct_cu_byte_strides(go, gs);
  ct_cu_byte_strides(x1, s1);
  ct_cu_byte_strides(x2, s2);
  ct_cu_byte_strides(grad, rs);
  const bool v1 = x1->ndim == 1, v2 = x2->ndim == 1;
  const int64_t m = v1 ? 1 : x1->shape[x1->ndim - 2], k = x1->shape[x1->ndim - 1];
  const int64_t n = v2 ? 1 : x2->shape[x2->ndim - 1];
  const int64_t x1_m = v1 ? 0 : s1[x1->ndim - 2], x1_k = s1[x1->ndim - 1];
  const int64_t x2_k = v2 ? s2[0] : s2[x2->ndim - 2], x2_n = v2 ? 0 : s2[x2->ndim - 1];
  const int32_t batch = go->ndim - (v1 ? 0 : 1) - (v2 ? 0 : 1);
  const int64_t g_m = v1 ? 0 : gs[batch], g_n = v2 ? 0 : gs[go->ndim - 1];

  ct_cu_gemm_begin(g, tag);
  g->d = ct_cu_tensor_bytes(grad);
  if (which == 0) {
    g->m = m;
    g->n = k;
    g->k = n;
    g->a = ct_cu_tensor_bytes(go);
    g->a_m = g_m;
    g->a_k = g_n;
    g->b = ct_cu_tensor_bytes(x2);
    g->b_k = x2_n;
    g->b_n = x2_k;
    g->d_m = v1 ? 0 : rs[x1->ndim - 2];
    g->d_n = rs[x1->ndim - 1];
  } else {
    g->m = k;
    g->n = n;
    g->k = m;
    g->a = ct_cu_tensor_bytes(x1);
    g->a_m = x1_k;
    g->a_k = x1_m;
    g->b = ct_cu_tensor_bytes(go);
    g->b_k = g_m;
    g->b_n = g_n;
    g->d_m = v2 ? rs[0] : rs[x2->ndim - 2];
    g->d_n = v2 ? 0 : rs[x2->ndim - 1];
  }

  /* Each batch dim of grad_out: kept where the cotangent's operand has it at full extent,
   * summed where that operand was broadcast along it (absent, or extent 1). */
  int64_t kept_shape[CT_MAX_NDIM], kept[3][CT_MAX_NDIM];
  int64_t summed_shape[CT_MAX_NDIM], summed[2][CT_MAX_NDIM];
  int32_t kept_n = 0, summed_n = 0;
  const ct_tensor* x = which == 0 ? x1 : x2;
  for (int32_t d = 0; d < batch; ++d) {
    const int64_t extent = go->shape[d];
    if (extent == 1) continue;
    const int32_t q1 = d - (batch - (x1->ndim - 2)), q2 = d - (batch - (x2->ndim - 2));
    const int64_t b1 = !v1 && q1 >= 0 && x1->shape[q1] != 1 ? s1[q1] : 0;
    const int64_t b2 = !v2 && q2 >= 0 && x2->shape[q2] != 1 ? s2[q2] : 0;
    const int32_t qx = which == 0 ? q1 : q2;
    const bool full = x->ndim > 2 && qx >= 0 && x->shape[qx] == extent;
    const int64_t a_stride = which == 0 ? gs[d] : b1;
    const int64_t b_stride = which == 0 ? b2 : gs[d];
    if (full) {
      kept_shape[kept_n] = extent;
      kept[0][kept_n] = rs[qx];
      kept[1][kept_n] = a_stride;
      kept[2][kept_n] = b_stride;
      ++kept_n;
    } else {
      summed_shape[summed_n] = extent;
      summed[0][summed_n] = a_stride;
      summed[1][summed_n] = b_stride;
      ++summed_n;
    }
  }
  ct_pl_layout_begin(&g->batch, kept_n, kept_shape);
  for (int q = 0; q < 3; ++q) ct_pl_layout_add_strides(&g->batch, kept[q]);
  ct_pl_layout_begin(&g->summed, summed_n, summed_shape);
  for (int q = 0; q < 2; ++q) ct_pl_layout_add_strides(&g->summed, summed[q]);
}

int ct_cu_matmul_backward_run(const ct_kernel_call* call) {
  const auto* entry = static_cast<const ct_cu_matmul_entry*>(call->kernel_data);
  ct_cu_exec exec;
  int status = ct_cu_exec_for_call(call, &exec);
  for (int which = 0; which < 2 && status == CT_OK; ++which) {
    if (ct_pl_tensor_elements(call->outputs[which]) == 0) continue;
    ct_cu_gemm_args g;
    ct_cu_mmgrad_gemm(call, which, entry->tag, &g);
    bool ran = false;
    status = ct_cu_gemm(exec, g, call->workspace, call->workspace_size, &ran);
    if (status == CT_OK && !ran) status = entry->mmgrad(exec, call, which);
  }
  return status;
}

/* matmul_backward's kernel of a float dtype (the others register no matmul_backward). */
template <ct_pl_type Tag>
auto ct_cu_mmgrad_of() -> decltype(&ct_cu_mmgrad_launch<CT_PL_F32>) {
  if constexpr (ct_cu_is_float_v<Tag>) {
    return &ct_cu_mmgrad_launch<Tag>;
  } else {
    return nullptr;
  }
}

/* cuBLASLt's workspace (float dtypes) for a call with a non-empty output. */
int ct_cu_matmul_workspace(const ct_kernel_call* call, uint64_t* bytes, uint64_t* alignment) {
  *bytes = 0;
  *alignment = CT_CU_GEMM_WORKSPACE_ALIGNMENT;
  bool work = false;
  for (int32_t i = 0; i < call->num_outputs; ++i) {
    work = work || ct_pl_tensor_elements(call->outputs[i]) > 0;
  }
  if (!work) return CT_OK;
  const ct_tensor* first =
      call->num_inputs > 0 && call->inputs[0] ? call->inputs[0] : call->outputs[0];
  *bytes = ct_cu_gemm_workspace(first->device.device_id);
  return CT_OK;
}

template <ct_pl_type Tag>
int ct_cu_register_matmul_type() {
  constexpr bool floats = ct_cu_is_float_v<Tag>;
  static const ct_cu_matmul_entry entry = {Tag, &ct_cu_matmul_launch<Tag>, ct_cu_mmgrad_of<Tag>()};
  const ct_kernel_workspace_fn workspace = floats ? ct_cu_matmul_workspace : nullptr;
  const ct_pl_type signature[5] = {Tag, Tag, Tag, Tag, Tag};
  int status = ct_cu_register("matmul", signature, 3, ct_cu_matmul_run, workspace, &entry);
  if (status != CT_OK || !floats) return status;
  /* linear and matmul_backward for the float dtypes, as the CPU backend registers them. */
  status = ct_cu_register("linear", signature, 4, ct_cu_linear_run, workspace, &entry);
  if (status != CT_OK) return status;
  return ct_cu_register("matmul_backward", signature, 5, ct_cu_matmul_backward_run, workspace,
                        &entry);
}

}  // namespace

int ct_cu_register_matmul(void) {
  return ct_cu_for_each_tag(ct_cu_all_tags{}, [](auto tag) {
    return ct_cu_register_matmul_type<decltype(tag)::value>();
  });
}
