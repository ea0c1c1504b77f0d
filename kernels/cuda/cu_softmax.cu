/* cu_softmax.cu - softmax and log_softmax along an axis: per lane (the elements along the axis
 * at one position of the other dims) the NaN-propagating maximum, then the sum of
 * exp(x - max), then the outputs. float16/float32 compute in float, float64 in double; the sum
 * accumulates in double (as the OpenCL and CPU backends). A lane along a contiguous axis is read
 * by a warp (up to 1024 elements) or a block; lanes of up to 8192 elements (many lanes) or 16384
 * (few), contiguous in the output too, are held in registers, read once and written once; other
 * lanes are read three times.
 * Along a strided axis, a block reads up to 32 neighbouring lanes at once, the rest of its
 * threads spread along the axis, so that loads stay coalesced. */
#include <math.h>

#include <type_traits>

#include "cu_call.h"
#include "cu_group_reduce.cuh"
#include "cu_layout.h"
#include "cu_row_blocks.cuh"
#include "cu_types.cuh"

namespace {

constexpr int ct_cu_threads = 256;
constexpr int ct_cu_big_block = 1024;   /* threads of a block when lanes are few */
constexpr int ct_cu_warp_extent = 1024; /* the longest axis a warp handles alone */
/* Register rows: with many rows, 128-thread blocks of 64 slots a thread (few threads a row
 * spend few registers on anything but the row, so that more rows are resident); with few rows,
 * 1024-thread blocks of 16 slots (64 registers a thread at most: 16 doubles leave room). */
constexpr int ct_cu_row_threads = 128;
constexpr int ct_cu_row_slots = 64;
constexpr int ct_cu_big_block_slots = 16;

struct ct_cu_softmax_args {
  int64_t lanes;
  int64_t extent;
  int64_t x_step; /* bytes between neighbours along the axis */
  int64_t out_step;
};

template <class C>
__device__ __forceinline__ C ct_cu_exp(C v) {
  if constexpr (std::is_same_v<C, float>) {
    return expf(v);
  } else {
    return exp(v);
  }
}

/* The output of element `v` = x - max, given `scale` = log(sum) (Log) or sum. */
template <bool Log, class C>
__device__ __forceinline__ C ct_cu_softmax_value(C v, C scale) {
  if constexpr (Log) {
    return v - scale;
  } else {
    return ct_cu_exp(v) / scale;
  }
}

template <bool Log, class C>
__device__ __forceinline__ C ct_cu_softmax_scale(double total) {
  return Log ? (C)log(total) : (C)total;
}

/* Lanes along a contiguous axis: a group of Width threads per lane (a warp for short axes, a
 * block for long ones: 256 threads, or 1024 when lanes are few). */
template <ct_pl_type Tag, int Width, bool Log>
__global__ void __launch_bounds__(ct_cu_group_block(Width))
    ct_cu_softmax_rows(const ct_pl_layout layout, const ct_cu_softmax_args p, char* out,
                       const char* x) {
  using C = ct_cu_compute_t<Tag>;
  constexpr int groups = ct_cu_group_block(Width) / Width;
  const int t = threadIdx.x % Width;
  for (int64_t lane = (int64_t)blockIdx.x * groups + threadIdx.x / Width; lane < p.lanes;
       lane += (int64_t)gridDim.x * groups) {
    int64_t off[2];
    ct_cu_offsets<2>(layout, lane, off);
    char* o = out + off[0];
    const char* xl = x + off[1];
    C high = (C)-INFINITY;
    for (int64_t k = t; k < p.extent; k += Width) {
      high = ct_cu_nan_max_op()(high, ct_cu_load<Tag>(xl + k * p.x_step));
    }
    high = ct_cu_group_reduce<Width>(high, ct_cu_nan_max_op());
    double total = 0;
    for (int64_t k = t; k < p.extent; k += Width) {
      total += (double)ct_cu_exp(ct_cu_load<Tag>(xl + k * p.x_step) - high);
    }
    total = ct_cu_group_reduce<Width>(total, ct_cu_sum_op());
    const C scale = ct_cu_softmax_scale<Log, C>(total);
    for (int64_t k = t; k < p.extent; k += Width) {
      const C v = ct_cu_load<Tag>(xl + k * p.x_step) - high;
      ct_cu_store<Tag>(o + k * p.out_step, ct_cu_softmax_value<Log>(v, scale));
    }
  }
}

/* Lanes of at most Width * Per elements along an axis that is contiguous in x and out, held in
 * registers: element k * Width + t of the lane in thread t's slot k (ct_cu_softmax_rows's
 * assignment: at the same width, the same sums bit for bit), read once and written once. Elements
 * are addressed from the lane's first by constant offsets, which keeps the slots' addresses out of
 * registers. */
template <ct_pl_type Tag, int Width, int Per, bool Log>
__global__ void __launch_bounds__(ct_cu_row_block(Width))
    ct_cu_softmax_registers(const ct_pl_layout layout, const ct_cu_softmax_args p, char* out,
                            const char* x) {
  using C = ct_cu_compute_t<Tag>;
  using S = typename ct_cu_traits<Tag>::storage;
  constexpr int groups = ct_cu_row_block(Width) / Width;
  const int t = threadIdx.x % Width;
  const int extent = (int)p.extent; /* at most Width * Per */
  for (int64_t lane = (int64_t)blockIdx.x * groups + threadIdx.x / Width; lane < p.lanes;
       lane += (int64_t)gridDim.x * groups) {
    int64_t off[2];
    ct_cu_offsets<2>(layout, lane, off);
    S* o = reinterpret_cast<S*>(out + off[0]) + t;
    const S* xl = reinterpret_cast<const S*>(x + off[1]) + t;
    C v[Per];
    C high = (C)-INFINITY;
#pragma unroll
    for (int k = 0; k < Per; ++k) {
      v[k] = k * Width + t < extent ? ct_cu_load<Tag>(reinterpret_cast<const char*>(xl + k * Width))
                                    : (C)-INFINITY;
      high = ct_cu_nan_max_op()(high, v[k]);
    }
    high = ct_cu_group_reduce<Width>(high, ct_cu_nan_max_op());
    double total = 0;
#pragma unroll
    for (int k = 0; k < Per; ++k) {
      if (k * Width + t < extent) {
        v[k] -= high;
        const C e = ct_cu_exp(v[k]);
        total += (double)e;
        if constexpr (!Log) v[k] = e; /* softmax divides exp(x - max) by the sum */
      }
    }
    total = ct_cu_group_reduce<Width>(total, ct_cu_sum_op());
    const C scale = ct_cu_softmax_scale<Log, C>(total);
#pragma unroll
    for (int k = 0; k < Per; ++k) {
      if (k * Width + t < extent) {
        ct_cu_store<Tag>(reinterpret_cast<char*>(o + k * Width), Log ? v[k] - scale : v[k] / scale);
      }
    }
  }
}

/* Lanes along a strided axis: a block takes 2^shift neighbouring lanes, each read by the
 * remaining threads taking every so many elements, so that a warp's loads fall on neighbouring
 * lanes. */
template <ct_pl_type Tag, bool Log>
__global__ void __launch_bounds__(ct_cu_big_block)
    ct_cu_softmax_columns(const ct_pl_layout layout, const ct_cu_softmax_args p, int shift,
                          char* out, const char* x) {
  using C = ct_cu_compute_t<Tag>;
  __shared__ C maxima[ct_cu_big_block];
  __shared__ double sums[ct_cu_big_block];
  const int width = 1 << shift, depth = blockDim.x >> shift;
  const int column = threadIdx.x & (width - 1), row = threadIdx.x >> shift;
  for (int64_t first = (int64_t)blockIdx.x * width; first < p.lanes;
       first += (int64_t)gridDim.x * width) {
    const int64_t lane = first + column;
    const int64_t extent = lane < p.lanes ? p.extent : 0;
    int64_t off[2] = {0, 0};
    if (extent) ct_cu_offsets<2>(layout, lane, off);
    char* o = out + off[0];
    const char* xl = x + off[1];
    C high = (C)-INFINITY;
    for (int64_t k = row; k < extent; k += depth) {
      high = ct_cu_nan_max_op()(high, ct_cu_load<Tag>(xl + k * p.x_step));
    }
    high = ct_cu_column_reduce(maxima, high, width, ct_cu_nan_max_op());
    double total = 0;
    for (int64_t k = row; k < extent; k += depth) {
      total += (double)ct_cu_exp(ct_cu_load<Tag>(xl + k * p.x_step) - high);
    }
    total = ct_cu_column_reduce(sums, total, width, ct_cu_sum_op());
    const C scale = ct_cu_softmax_scale<Log, C>(total);
    for (int64_t k = row; k < extent; k += depth) {
      const C v = ct_cu_load<Tag>(xl + k * p.x_step) - high;
      ct_cu_store<Tag>(o + k * p.out_step, ct_cu_softmax_value<Log>(v, scale));
    }
  }
}

template <ct_pl_type Tag, int Width, bool Log>
void ct_cu_softmax_rows_launch(const ct_cu_exec& exec, const ct_pl_layout& layout,
                               const ct_cu_softmax_args& p, char* out, const char* x) {
  constexpr int threads = ct_cu_group_block(Width);
  ct_cu_softmax_rows<Tag, Width, Log>
      <<<ct_cu_grid(exec, p.lanes * Width, threads), threads, 0, exec.stream>>>(layout, p, out, x);
}

template <ct_pl_type Tag, int Width, int Per, bool Log>
void ct_cu_softmax_registers_launch(const ct_cu_exec& exec, const ct_pl_layout& layout,
                                    const ct_cu_softmax_args& p, char* out, const char* x) {
  constexpr int threads = ct_cu_row_block(Width);
  ct_cu_softmax_registers<Tag, Width, Per, Log>
      <<<ct_cu_row_blocks(exec, p.lanes, threads / Width), threads, 0, exec.stream>>>(layout, p,
                                                                                      out, x);
}

template <ct_pl_type Tag, bool Log>
int ct_cu_softmax_launch(const ct_cu_exec& exec, const ct_pl_layout& layout,
                         const ct_cu_softmax_args& p, char* out, const char* x) {
  const int64_t size = sizeof(typename ct_cu_traits<Tag>::storage);
  const int64_t enough = 2 * (int64_t)ct_cu_multiprocessors(exec.device_id); /* blocks */
  const bool dense = p.out_step == size; /* with x_step == size: the register kernels */
  if (p.x_step != size) {
    /* 32 neighbouring lanes a 256-thread block; with few lanes, 1024-thread blocks of no fewer
     * than 8 lanes (a 32-byte sector of float32), as many blocks as that gives. */
    int threads = ct_cu_threads, shift = 5;
    if ((p.lanes + 31) >> 5 < enough) {
      threads = ct_cu_big_block;
      while (shift > 3 && (p.lanes + (1 << shift) - 1) >> shift < enough) --shift;
    }
    const int64_t blocks = (p.lanes + (1 << shift) - 1) >> shift;
    ct_cu_softmax_columns<Tag, Log>
        <<<ct_cu_grid(exec, blocks * threads, threads), threads, 0, exec.stream>>>(layout, p, shift,
                                                                                   out, x);
  } else if (dense && p.extent <= 256) {
    ct_cu_softmax_registers_launch<Tag, 32, 8, Log>(exec, layout, p, out, x);
  } else if (dense && p.extent <= ct_cu_warp_extent) {
    ct_cu_softmax_registers_launch<Tag, 32, ct_cu_warp_extent / 32, Log>(exec, layout, p, out, x);
  } else if (p.extent <= ct_cu_warp_extent) {
    ct_cu_softmax_rows_launch<Tag, 32, Log>(exec, layout, p, out, x);
  } else if (dense && p.lanes >= enough && p.extent <= ct_cu_row_threads * ct_cu_row_slots) {
    ct_cu_softmax_registers_launch<Tag, ct_cu_row_threads, ct_cu_row_slots, Log>(exec, layout, p,
                                                                                 out, x);
  } else if (dense && p.extent <= ct_cu_big_block * ct_cu_big_block_slots) {
    ct_cu_softmax_registers_launch<Tag, ct_cu_big_block, ct_cu_big_block_slots, Log>(exec, layout,
                                                                                     p, out, x);
  } else if (p.lanes >= enough) {
    ct_cu_softmax_rows_launch<Tag, ct_cu_threads, Log>(exec, layout, p, out, x);
  } else {
    ct_cu_softmax_rows_launch<Tag, ct_cu_big_block, Log>(exec, layout, p, out, x);
  }
  return ct_cu_launch_status(Log ? "log_softmax" : "softmax");
}

/* What a registered kernel hands its run function: the launch of its (dtype, form). */
struct ct_cu_softmax_entry {
  int (*launch)(const ct_cu_exec& exec, const ct_pl_layout& layout, const ct_cu_softmax_args& p,
                char* out, const char* x);
};

int ct_cu_softmax_run(const ct_kernel_call* call) {
  const auto* entry = static_cast<const ct_cu_softmax_entry*>(call->kernel_data);
  const ct_tensor* x = call->inputs[0];
  const ct_tensor* out = call->outputs[0];
  if (ct_pl_tensor_elements(out) == 0) return CT_OK;
  ct_cu_exec exec;
  const int status = ct_cu_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  int64_t axis = x->ndim ? call->attrs[0].value.i : 0;
  if (axis < 0) axis += x->ndim;
  ct_cu_softmax_args p;
  p.extent = x->ndim ? x->shape[axis] : 1;
  p.x_step = ct_pl_byte_stride(x, (int32_t)axis);
  p.out_step = ct_pl_byte_stride(out, (int32_t)axis);
  ct_pl_layout layout;
  ct_pl_lane_layout(&layout, x, (int32_t)axis);
  ct_pl_layout_add(&layout, out);
  ct_pl_layout_add(&layout, x);
  ct_pl_layout_collapse(&layout, nullptr);
  p.lanes = layout.elements;
  return entry->launch(exec, layout, p, ct_cu_tensor_bytes(out), ct_cu_tensor_bytes(x));
}

template <ct_pl_type Tag>
int ct_cu_register_softmax_type() {
  static const ct_cu_softmax_entry softmax = {&ct_cu_softmax_launch<Tag, false>};
  static const ct_cu_softmax_entry log_softmax = {&ct_cu_softmax_launch<Tag, true>};
  const ct_pl_type signature[2] = {Tag, Tag};
  int status = ct_cu_register("softmax", signature, 2, ct_cu_softmax_run, nullptr, &softmax);
  if (status == CT_OK) {
    status = ct_cu_register("log_softmax", signature, 2, ct_cu_softmax_run, nullptr, &log_softmax);
  }
  return status;
}

}  // namespace

int ct_cu_register_softmax(void) {
  return ct_cu_for_each_tag(ct_cu_float_tags{}, [](auto tag) {
    return ct_cu_register_softmax_type<decltype(tag)::value>();
  });
}
