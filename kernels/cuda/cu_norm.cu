/* cu_norm.cu - layer_norm: per normalised row (the trailing normalized_shape dims) the mean,
 * then the biased variance about it, both accumulated in double, then
 * (x - mean) * rstd [* weight] [+ bias] in the compute type (float for float16, as the OpenCL
 * and CPU backends). A row is read by a warp (short rows) or a block (long ones: 256 threads,
 * or 1024 when rows are few), the statistics combined with warp shuffles and shared memory. Dense
 * rows of up to 8192 elements (many rows) or 16384 (few) are held in registers, read once and
 * written once; other rows are read three times. */
#include <math.h>

#include "cu_call.h"
#include "cu_group_reduce.cuh"
#include "cu_layout.h"
#include "cu_row_blocks.cuh"
#include "cu_types.cuh"

namespace {

constexpr int ct_cu_threads = 256;
constexpr int ct_cu_big_block = 1024;    /* threads on one long row when rows are few */
constexpr int64_t ct_cu_warp_row = 1024; /* the longest row a warp handles alone */
/* Register rows: with many rows, 128-thread blocks of 64 slots a thread (few threads a row
 * spend few registers on anything but the row, so that more rows are resident); with few rows,
 * 1024-thread blocks of 16 slots (64 registers a thread at most: 16 doubles leave room). */
constexpr int ct_cu_row_threads = 128;
constexpr int ct_cu_row_slots = 64;
constexpr int ct_cu_big_block_slots = 16;

/* `rows`: operands (out, x) over the leading dims; `row`: operands (out, x, weight, bias) over
 * the normalised dims (stride 0 for an absent weight or bias, whose pointer is null). */
template <ct_pl_type Tag, int Width>
__global__ void __launch_bounds__(ct_cu_group_block(Width))
    ct_cu_layer_norm_kernel(const ct_pl_layout rows, const ct_pl_layout row, char* out,
                            const char* x, const char* w, const char* b, double eps) {
  using C = ct_cu_compute_t<Tag>;
  constexpr int groups = ct_cu_group_block(Width) / Width;
  const int t = threadIdx.x % Width;
  const int64_t count = row.elements;
  for (int64_t r = (int64_t)blockIdx.x * groups + threadIdx.x / Width; r < rows.elements;
       r += (int64_t)gridDim.x * groups) {
    int64_t base[2];
    ct_cu_offsets<2>(rows, r, base);
    const char* xr = x + base[1];
    double total = 0;
    for (int64_t j = t; j < count; j += Width) {
      int64_t e[2];
      ct_cu_offsets<2>(row, j, e);
      total += (double)ct_cu_load<Tag>(xr + e[1]);
    }
    const double mean = ct_cu_group_reduce<Width>(total, ct_cu_sum_op()) / (double)count;
    double squares = 0;
    for (int64_t j = t; j < count; j += Width) {
      int64_t e[2];
      ct_cu_offsets<2>(row, j, e);
      const double d = (double)ct_cu_load<Tag>(xr + e[1]) - mean;
      squares += d * d;
    }
    squares = ct_cu_group_reduce<Width>(squares, ct_cu_sum_op());
    const C m = (C)mean;
    const C rstd = (C)(1 / sqrt(squares / (double)count + eps));
    for (int64_t j = t; j < count; j += Width) {
      int64_t e[4];
      ct_cu_offsets<4>(row, j, e);
      C y = (ct_cu_load<Tag>(xr + e[1]) - m) * rstd;
      if (w) y *= ct_cu_load<Tag>(w + e[2]);
      if (b) y += ct_cu_load<Tag>(b + e[3]);
      ct_cu_store<Tag>(out + base[0] + e[0], y);
    }
  }
}

/* (double)v, converted where it is used rather than kept from the mean's conversion of the same
 * value (a volatile conversion is never merged with another): keeping every slot's double live
 * as well as its float triples the registers a slot needs. The conversion is exact. */
__device__ __forceinline__ double ct_cu_widen_again(float v) {
  double wide;
  asm volatile("cvt.f64.f32 %0, %1;" : "=d"(wide) : "f"(v));
  return wide;
}

__device__ __forceinline__ double ct_cu_widen_again(double v) {
  return v;
}

/* Rows of at most Width * Per elements whose operands are dense runs (`row.contiguous`), held
 * in registers: element k * Width + t of the row in thread t's slot k (the assignment of
 * ct_cu_layer_norm_kernel: at the same width, the same statistics bit for bit), read once and
 * written once. Elements are addressed from the row's first by constant offsets, which keeps
 * the slots' addresses out of registers. */
template <ct_pl_type Tag, int Width, int Per>
__global__ void __launch_bounds__(ct_cu_row_block(Width))
    ct_cu_layer_norm_registers(const ct_pl_layout rows, const ct_pl_layout row, char* out,
                               const char* x, const char* w, const char* b, double eps) {
  using C = ct_cu_compute_t<Tag>;
  using S = typename ct_cu_traits<Tag>::storage;
  constexpr int groups = ct_cu_row_block(Width) / Width;
  const int t = threadIdx.x % Width;
  const int count = (int)row.elements; /* at most Width * Per */
  const S* ws = w ? reinterpret_cast<const S*>(w) + t : nullptr;
  const S* bs = b ? reinterpret_cast<const S*>(b) + t : nullptr;
  for (int64_t r = (int64_t)blockIdx.x * groups + threadIdx.x / Width; r < rows.elements;
       r += (int64_t)gridDim.x * groups) {
    int64_t base[2];
    ct_cu_offsets<2>(rows, r, base);
    const S* xr = reinterpret_cast<const S*>(x + base[1]) + t;
    C v[Per];
    double total = 0;
#pragma unroll
    for (int k = 0; k < Per; ++k) {
      v[k] = k * Width + t < count ? ct_cu_load<Tag>(reinterpret_cast<const char*>(xr + k * Width))
                                   : C(0);
      total += (double)v[k]; /* the padding adds 0 */
    }
    const double mean = ct_cu_group_reduce<Width>(total, ct_cu_sum_op()) / (double)count;
    double squares = 0;
#pragma unroll
    for (int k = 0; k < Per; ++k) {
      if (k * Width + t < count) {
        const double d = ct_cu_widen_again(v[k]) - mean;
        squares += d * d;
      }
    }
    squares = ct_cu_group_reduce<Width>(squares, ct_cu_sum_op());
    const C m = (C)mean;
    const C rstd = (C)(1 / sqrt(squares / (double)count + eps));
    S* o = reinterpret_cast<S*>(out + base[0]) + t;
#pragma unroll
    for (int k = 0; k < Per; ++k) {
      if (k * Width + t < count) {
        C y = (v[k] - m) * rstd;
        if (ws) y *= ct_cu_load<Tag>(reinterpret_cast<const char*>(ws + k * Width));
        if (bs) y += ct_cu_load<Tag>(reinterpret_cast<const char*>(bs + k * Width));
        ct_cu_store<Tag>(reinterpret_cast<char*>(o + k * Width), y);
      }
    }
  }
}

template <ct_pl_type Tag, int Width, int Per>
void ct_cu_layer_norm_registers_launch(const ct_cu_exec& exec, const ct_pl_layout& rows,
                                       const ct_pl_layout& row, char* out, const char* x,
                                       const char* w, const char* b, double eps) {
  constexpr int threads = ct_cu_row_block(Width);
  ct_cu_layer_norm_registers<Tag, Width, Per>
      <<<ct_cu_row_blocks(exec, rows.elements, threads / Width), threads, 0, exec.stream>>>(
          rows, row, out, x, w, b, eps);
}

template <ct_pl_type Tag, int Width>
void ct_cu_layer_norm_rows_launch(const ct_cu_exec& exec, const ct_pl_layout& rows,
                                  const ct_pl_layout& row, char* out, const char* x, const char* w,
                                  const char* b, double eps) {
  constexpr int threads = ct_cu_group_block(Width);
  ct_cu_layer_norm_kernel<Tag, Width>
      <<<ct_cu_grid(exec, rows.elements * Width, threads), threads, 0, exec.stream>>>(
          rows, row, out, x, w, b, eps);
}

template <ct_pl_type Tag>
int ct_cu_layer_norm_launch(const ct_cu_exec& exec, const ct_pl_layout& rows,
                            const ct_pl_layout& row, char* out, const char* x, const char* w,
                            const char* b, double eps) {
  const int64_t count = row.elements;
  const bool many = rows.elements >= 2 * (int64_t)ct_cu_multiprocessors(exec.device_id);
  if (row.contiguous && count <= 256) {
    ct_cu_layer_norm_registers_launch<Tag, 32, 8>(exec, rows, row, out, x, w, b, eps);
  } else if (row.contiguous && count <= ct_cu_warp_row) {
    ct_cu_layer_norm_registers_launch<Tag, 32, ct_cu_warp_row / 32>(exec, rows, row, out, x, w, b,
                                                                    eps);
  } else if (row.contiguous && many && count <= ct_cu_row_threads * ct_cu_row_slots) {
    ct_cu_layer_norm_registers_launch<Tag, ct_cu_row_threads, ct_cu_row_slots>(exec, rows, row, out,
                                                                               x, w, b, eps);
  } else if (row.contiguous && count <= ct_cu_big_block * ct_cu_big_block_slots) {
    ct_cu_layer_norm_registers_launch<Tag, ct_cu_big_block, ct_cu_big_block_slots>(
        exec, rows, row, out, x, w, b, eps);
  } else if (count <= ct_cu_warp_row) {
    ct_cu_layer_norm_rows_launch<Tag, 32>(exec, rows, row, out, x, w, b, eps);
  } else if (many) {
    ct_cu_layer_norm_rows_launch<Tag, ct_cu_threads>(exec, rows, row, out, x, w, b, eps);
  } else {
    ct_cu_layer_norm_rows_launch<Tag, ct_cu_big_block>(exec, rows, row, out, x, w, b, eps);
  }
  return ct_cu_launch_status("layer_norm");
}

/* What a registered kernel hands its run function: the launch of its dtype. */
struct ct_cu_norm_entry {
  int (*launch)(const ct_cu_exec& exec, const ct_pl_layout& rows, const ct_pl_layout& row,
                char* out, const char* x, const char* w, const char* b, double eps);
};

int ct_cu_layer_norm_run(const ct_kernel_call* call) {
  const auto* entry = static_cast<const ct_cu_norm_entry*>(call->kernel_data);
  const ct_tensor* x = call->inputs[0];
  const ct_tensor* weight = call->inputs[1];
  const ct_tensor* bias = call->num_inputs > 2 ? call->inputs[2] : nullptr;
  const ct_tensor* out = call->outputs[0];
  if (ct_pl_tensor_elements(out) == 0) return CT_OK;
  ct_cu_exec exec;
  const int status = ct_cu_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  const int32_t inner_ndim = (int32_t)call->attrs[0].count;
  const int32_t outer_ndim = x->ndim - inner_ndim;
  const int32_t size = (x->dtype.bits + 7) / 8;

  /* Rows: the leading dims of (out, x). Row elements: the trailing dims of (out, x, w, b). */
  int64_t shape[CT_MAX_NDIM];
  for (int32_t d = 0; d < x->ndim; ++d) shape[d] = d < outer_ndim ? x->shape[d] : 1;
  ct_pl_layout rows, row;
  ct_pl_layout_begin(&rows, x->ndim, shape);
  ct_pl_layout_add(&rows, out);
  ct_pl_layout_add(&rows, x);
  ct_pl_layout_collapse(&rows, nullptr);
  ct_pl_layout_begin(&row, inner_ndim, x->shape + outer_ndim);
  const ct_tensor* row_operands[4] = {out, x, weight, bias};
  int32_t sizes[4];
  for (int k = 0; k < 4; ++k) {
    int64_t strides[CT_MAX_NDIM] = {0};
    const ct_tensor* t = row_operands[k];
    sizes[k] = t ? size : 0; /* an absent operand is a "dense run" of stride 0 */
    if (t) {
      int64_t all[CT_MAX_NDIM];
      ct_pl_tensor_strides(t, all);
      for (int32_t d = 0; d < inner_ndim; ++d) strides[d] = all[t->ndim - inner_ndim + d] * size;
    }
    ct_pl_layout_add_strides(&row, strides);
  }
  ct_pl_layout_collapse(&row, sizes);
  return entry->launch(exec, rows, row, ct_cu_tensor_bytes(out), ct_cu_tensor_bytes(x),
                       weight ? ct_cu_tensor_bytes(weight) : nullptr,
                       bias ? ct_cu_tensor_bytes(bias) : nullptr, call->attrs[1].value.f);
}

template <ct_pl_type Tag>
int ct_cu_register_layer_norm() {
  static const ct_cu_norm_entry entry = {&ct_cu_layer_norm_launch<Tag>};
  const ct_pl_type signature[4] = {Tag, Tag, Tag, Tag};
  return ct_cu_register("layer_norm", signature, 4, ct_cu_layer_norm_run, nullptr, &entry);
}

}  // namespace

int ct_cu_register_norm(void) {
  return ct_cu_for_each_tag(ct_cu_float_tags{}, [](auto tag) {
    return ct_cu_register_layer_norm<decltype(tag)::value>();
  });
}
