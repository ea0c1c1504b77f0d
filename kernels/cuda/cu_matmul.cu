/* cu_matmul.cu - matmul with NumPy's rules (broadcast batch dims, 1-D operands as a row or a
 * column): a shared-memory tiled GEMM per batch matrix, 64x64 output tiles, each of 256 threads
 * accumulating a 4x4 block in registers while the next 16-deep slices of the operands are
 * fetched; products with a single row or column (matrix-vector) instead spread each output's
 * sum over a warp or a block. Operands are read through byte strides (any layout, broadcast dims
 * stride 0), loaded along whichever dim is denser in memory. float16 accumulates in float,
 * integers wrap, bool is or-of-ands. */
#include <stdint.h>

#include <type_traits>

#include "cu_call.h"
#include "cu_group_reduce.cuh"
#include "cu_layout.h"
#include "plugin_geometry.h"
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
            ct_cu_store<Tag>(out + off[0] + row * p.out_m + col * p.out_n, acc[i][j]);
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
    if (t == 0) ct_cu_store<Tag>(out + off[0] + i * p.out_i, acc);
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
    if (lane == 0 && i < p.rows) ct_cu_store<Tag>(out + off[0] + i * p.out_i, acc);
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

/* What a registered kernel hands its run function: the launch of its dtype. */
struct ct_cu_matmul_entry {
  int (*launch)(const ct_cu_exec& exec, const ct_pl_layout& batch, const ct_cu_matmul_args& p,
                char* out, const char* a, const char* b);
};

int ct_cu_matmul_run(const ct_kernel_call* call) {
  const auto* entry = static_cast<const ct_cu_matmul_entry*>(call->kernel_data);
  const ct_tensor* a = call->inputs[0];
  const ct_tensor* b = call->inputs[1];
  const ct_tensor* out = call->outputs[0];
  if (ct_pl_tensor_elements(out) == 0) return CT_OK;
  ct_cu_exec exec;
  const int status = ct_cu_exec_for_call(call, &exec);
  if (status != CT_OK) return status;

  ct_pl_matmul plan;
  ct_pl_matmul_plan(call, &plan);
  ct_cu_matmul_args p;
  p.m = plan.m;
  p.k = plan.k;
  p.n = plan.n;
  p.a_m = plan.a_m;
  p.a_k = plan.a_k;
  p.b_k = plan.b_k;
  p.b_n = plan.b_n;
  p.out_m = plan.out_m;
  p.out_n = plan.out_n;
  p.a_m_dense = p.m > 1 && ct_cu_abs(p.a_m) < ct_cu_abs(p.a_k);
  p.b_k_dense = p.n == 1 || ct_cu_abs(p.b_k) < ct_cu_abs(p.b_n);
  p.tiles_n = (p.n + ct_cu_tile - 1) / ct_cu_tile;
  p.tiles = (p.m + ct_cu_tile - 1) / ct_cu_tile * p.tiles_n;
  ct_pl_layout layout;
  ct_pl_layout_begin(&layout, plan.batch, plan.batch_shape);
  for (int k = 0; k < 3; ++k) ct_pl_layout_add_strides(&layout, plan.batch_strides[k]);
  ct_pl_layout_collapse(&layout, nullptr);
  p.batches = layout.elements;
  return entry->launch(exec, layout, p, ct_cu_tensor_bytes(out), ct_cu_tensor_bytes(a),
                       ct_cu_tensor_bytes(b));
}

template <ct_pl_type Tag>
int ct_cu_register_matmul_type() {
  static const ct_cu_matmul_entry entry = {&ct_cu_matmul_launch<Tag>};
  const ct_pl_type signature[3] = {Tag, Tag, Tag};
  return ct_cu_register("matmul", signature, 3, ct_cu_matmul_run, nullptr, &entry);
}

}  // namespace

int ct_cu_register_matmul(void) {
  return ct_cu_for_each_tag(ct_cu_all_tags{}, [](auto tag) {
    return ct_cu_register_matmul_type<decltype(tag)::value>();
  });
}
