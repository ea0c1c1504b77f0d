/* cu_scan.cu - cumulative_sum and cumulative_prod along an axis, and their backward ops, on
 * lanes of any strides. Accumulators are the CPU's: bool and ints in uint64 (wrapping, stored
 * as int64), float16 in float, float32 and float64 in double; every output is rounded from the
 * accumulator through the output's compute type, as the CPU stores. Kernels, picked per call by
 * the layout:
 * - one thread per lane, walking it sequentially: the CPU's order of operations, so the CPU's
 *   bits; used for short lanes, and for many lanes along an axis that is not the innermost one
 *   (neighbouring lanes are then neighbours in memory, so a warp's loads coalesce);
 * - otherwise blocks scanning chunks of a lane in tiles of 256 with cub::BlockScan, carrying
 *   each tile's total into the next: one chunk per lane when the lanes fill the device; else
 *   (few long lanes, a single one included) several chunks per lane in three passes: every
 *   chunk's total (cub::BlockReduce), each lane's exclusive scan of its chunk totals, then the
 *   chunks scanned from their carries. The totals and carries, in the accumulator's type, are
 *   kept in the first output elements of their own chunk (raw bits; every chunk is at least 256
 *   elements long), which its last pass overwrites: no workspace. The order of operations
 *   within a tile is a tree's, so floats agree with the CPU to rounding (in the wide
 *   accumulator), integers exactly.
 * cub::DeviceScan is not used: its tile states need scratch memory, and these shape-static ops
 * get no workspace from their callers (the Python binding and the XLA handler ask only
 * workspace-category ops), so the passes above keep theirs in the output.
 * cumulative_sum_backward is the same scan run backwards over grad_out in double;
 * cumulative_prod_backward walks each lane backwards in double, one thread per lane, with the
 * CPU's operations in its order (no FMA contraction), so it gives the CPU's bits. */
#define CCCL_DISABLE_NVTX /* no NVTX ranges (and their dlopen) from CUB */
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include <string.h>

#include "cu_call.h"
#include "cu_layout.h"
#include "cu_types.cuh"

namespace {

constexpr int ct_cu_threads = 256;

/* Lanes at most this long, or at least this many with a strided axis, run one per thread:
 * fewer threads than that leave the device latency-bound on their sequential walks, where
 * blocks reading a strided lane (a sector per element) still keep it busy. Not yet tuned on a
 * GPU. */
constexpr int64_t ct_cu_scan_short_lane = 32;
constexpr int64_t ct_cu_scan_many_lanes = 32768;
/* The shortest chunk when a lane is cut into several (a multiple of the tile). */
constexpr int64_t ct_cu_scan_min_chunk = 2048;

/* Output tag and accumulator of a cumulative op on `Tag`. */
template <ct_pl_type Tag>
inline constexpr ct_pl_type ct_cu_scan_out_v = ct_cu_is_float_v<Tag> ? Tag : CT_PL_I64;

template <ct_pl_type Tag>
using ct_cu_scan_acc_t =
    std::conditional_t<Tag == CT_PL_F16, float,
                       std::conditional_t<ct_cu_is_float_v<Tag>, double, unsigned long long>>;

/* The value at `p` in the accumulator type (ints through int64, so that they sign-extend). */
template <ct_pl_type In, class Acc>
__device__ __forceinline__ Acc ct_cu_scan_load(const char* p) {
  if constexpr (ct_cu_is_float_v<In>) {
    return static_cast<Acc>(ct_cu_load<In>(p));
  } else {
    return static_cast<Acc>(static_cast<long long>(ct_cu_load<In>(p)));
  }
}

/* Stores the accumulator through the output's compute type (float16: to float, then half). */
template <ct_pl_type Out, class Acc>
__device__ __forceinline__ void ct_cu_scan_store(char* p, Acc v) {
  ct_cu_store<Out>(p, static_cast<ct_cu_compute_t<Out>>(v));
}

template <bool Prod>
struct ct_cu_scan_op {
  template <class T>
  __device__ __forceinline__ T operator()(const T& a, const T& b) const {
    return Prod ? a * b : a + b;
  }
};

/* An accumulator kept in the output elements at `p`, p + step, ... (raw bits, as many
 * elements as it takes). */
template <ct_pl_type Out, class Acc>
struct ct_cu_scan_slot {
  using S = typename ct_cu_traits<Out>::storage;
  static constexpr int parts = (int)((sizeof(Acc) + sizeof(S) - 1) / sizeof(S));

  __device__ static void store(char* p, int64_t step, Acc v) {
    S bits[parts] = {};
    memcpy(bits, &v, sizeof v);
    for (int k = 0; k < parts; ++k) *reinterpret_cast<S*>(p + k * step) = bits[k];
  }
  __device__ static Acc load(const char* p, int64_t step) {
    S bits[parts];
    for (int k = 0; k < parts; ++k) bits[k] = *reinterpret_cast<const S*>(p + k * step);
    Acc v;
    memcpy(&v, bits, sizeof v);
    return v;
  }
};

/* What the scan kernels walk: lanes (`layout`, operands y then x: the lanes' bases), n
 * elements each, element i of a lane at x_first + i * x_step of x's lane base and at
 * y_first + i * y_step of y's (negative steps walk backwards), the identity at y_initial of
 * y's lane base when include_initial, and lanes cut into `chunks` chunks of `chunk` elements
 * (the last one takes the rest). */
struct ct_cu_scan_geometry {
  ct_pl_layout layout;
  int64_t n;
  int64_t x_first, x_step;
  int64_t y_first, y_step;
  int64_t y_initial;
  int32_t include_initial;
  int64_t chunk, chunks;
};

/* One thread per lane, sequentially. */
template <ct_pl_type In, ct_pl_type Out, class Acc, bool Prod>
__global__ void __launch_bounds__(ct_cu_threads)
    ct_cu_scan_lanes_kernel(const ct_cu_scan_geometry geo, char* y, const char* x) {
  const ct_cu_scan_op<Prod> op;
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t lane = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; lane < geo.layout.elements;
       lane += step) {
    int64_t off[2];
    ct_cu_offsets<2>(geo.layout, lane, off);
    Acc acc = Acc(Prod ? 1 : 0);
    if (geo.include_initial) ct_cu_scan_store<Out>(y + off[0] + geo.y_initial, acc);
    char* out = y + off[0] + geo.y_first;
    const char* in = x + off[1] + geo.x_first;
    for (int64_t i = 0; i < geo.n; ++i) {
      acc = op(acc, ct_cu_scan_load<In, Acc>(in + i * geo.x_step));
      ct_cu_scan_store<Out>(out + i * geo.y_step, acc);
    }
  }
}

/* Unit u of lanes * chunks: its lane, its first element and its end. */
__device__ __forceinline__ void ct_cu_scan_unit(const ct_cu_scan_geometry& geo, int64_t u,
                                                int64_t* lane, int64_t* chunk, int64_t* begin,
                                                int64_t* end) {
  *lane = u / geo.chunks;
  *chunk = u % geo.chunks;
  *begin = *chunk * geo.chunk;
  *end = *chunk == geo.chunks - 1 ? geo.n : *begin + geo.chunk;
}

/* Pass 1 of several chunks: each chunk's total into its slot. */
template <ct_pl_type In, ct_pl_type Out, class Acc, bool Prod>
__global__ void __launch_bounds__(ct_cu_threads)
    ct_cu_scan_totals_kernel(const ct_cu_scan_geometry geo, char* y, const char* x) {
  using Reduce = cub::BlockReduce<Acc, ct_cu_threads>;
  __shared__ typename Reduce::TempStorage temp;
  const ct_cu_scan_op<Prod> op;
  const Acc identity = Acc(Prod ? 1 : 0);
  for (int64_t u = blockIdx.x; u < geo.layout.elements * geo.chunks; u += gridDim.x) {
    int64_t lane, chunk, begin, end;
    ct_cu_scan_unit(geo, u, &lane, &chunk, &begin, &end);
    int64_t off[2];
    ct_cu_offsets<2>(geo.layout, lane, off);
    const char* in = x + off[1] + geo.x_first;
    Acc part = identity;
    for (int64_t i = begin + threadIdx.x; i < end; i += ct_cu_threads) {
      part = op(part, ct_cu_scan_load<In, Acc>(in + i * geo.x_step));
    }
    const Acc total = Reduce(temp).Reduce(part, op);
    if (threadIdx.x == 0) {
      ct_cu_scan_slot<Out, Acc>::store(y + off[0] + geo.y_first + begin * geo.y_step, geo.y_step,
                                       total);
    }
    __syncthreads(); /* temp is reused by the next unit */
  }
}

/* Pass 2 of several chunks: one block per lane turns its chunk totals into each chunk's carry
 * (the combination of the chunks before it), in place. */
template <ct_pl_type Out, class Acc, bool Prod>
__global__ void __launch_bounds__(ct_cu_threads)
    ct_cu_scan_carries_kernel(const ct_cu_scan_geometry geo, char* y) {
  using Scan = cub::BlockScan<Acc, ct_cu_threads>;
  using Slot = ct_cu_scan_slot<Out, Acc>;
  __shared__ typename Scan::TempStorage temp;
  const ct_cu_scan_op<Prod> op;
  const Acc identity = Acc(Prod ? 1 : 0);
  for (int64_t lane = blockIdx.x; lane < geo.layout.elements; lane += gridDim.x) {
    int64_t off[2];
    ct_cu_offsets<2>(geo.layout, lane, off);
    char* first = y + off[0] + geo.y_first;
    const int64_t chunk_step = geo.chunk * geo.y_step;
    Acc carry = identity;
    for (int64_t tile = 0; tile < geo.chunks; tile += ct_cu_threads) {
      const int64_t c = tile + threadIdx.x;
      const Acc total = c < geo.chunks ? Slot::load(first + c * chunk_step, geo.y_step) : identity;
      Acc before, aggregate;
      Scan(temp).ExclusiveScan(total, before, carry, op, aggregate);
      if (c < geo.chunks) Slot::store(first + c * chunk_step, geo.y_step, before);
      carry = op(carry, aggregate);
      __syncthreads(); /* temp is reused by the next tile */
    }
  }
}

/* The last pass: every chunk scanned in tiles from its carry (the identity for a lane's first
 * chunk, else read from its slot before any of its outputs are written). */
template <ct_pl_type In, ct_pl_type Out, class Acc, bool Prod>
__global__ void __launch_bounds__(ct_cu_threads)
    ct_cu_scan_chunks_kernel(const ct_cu_scan_geometry geo, char* y, const char* x) {
  using Scan = cub::BlockScan<Acc, ct_cu_threads>;
  __shared__ typename Scan::TempStorage temp;
  __shared__ Acc start;
  const ct_cu_scan_op<Prod> op;
  const Acc identity = Acc(Prod ? 1 : 0);
  for (int64_t u = blockIdx.x; u < geo.layout.elements * geo.chunks; u += gridDim.x) {
    int64_t lane, chunk, begin, end;
    ct_cu_scan_unit(geo, u, &lane, &chunk, &begin, &end);
    int64_t off[2];
    ct_cu_offsets<2>(geo.layout, lane, off);
    char* out = y + off[0] + geo.y_first;
    const char* in = x + off[1] + geo.x_first;
    if (threadIdx.x == 0) {
      start = chunk == 0 ? identity
                         : ct_cu_scan_slot<Out, Acc>::load(out + begin * geo.y_step, geo.y_step);
      if (chunk == 0 && geo.include_initial) {
        ct_cu_scan_store<Out>(y + off[0] + geo.y_initial, identity);
      }
    }
    __syncthreads();
    Acc carry = start;
    for (int64_t tile = begin; tile < end; tile += ct_cu_threads) {
      const int64_t i = tile + threadIdx.x;
      const Acc v = i < end ? ct_cu_scan_load<In, Acc>(in + i * geo.x_step) : identity;
      Acc prefix, total;
      Scan(temp).InclusiveScan(v, prefix, op, total);
      if (i < end) ct_cu_scan_store<Out>(out + i * geo.y_step, op(carry, prefix));
      carry = op(carry, total);
      __syncthreads(); /* temp is reused by the next tile */
    }
    __syncthreads(); /* `start` is rewritten by the next unit */
  }
}

/* Runs the scan that `geo` describes (its chunking still to be picked); `strided`: the lanes
 * are not contiguous, so neighbouring lanes may be neighbours in memory. */
template <ct_pl_type In, ct_pl_type Out, class Acc, bool Prod>
int ct_cu_scan_launch(const ct_cu_exec& exec, ct_cu_scan_geometry geo, char* y, const char* x,
                      bool strided, const char* name) {
  const int64_t lanes = geo.layout.elements;
  if (geo.n <= ct_cu_scan_short_lane || (strided && lanes >= ct_cu_scan_many_lanes)) {
    ct_cu_scan_lanes_kernel<In, Out, Acc, Prod>
        <<<ct_cu_grid(exec, lanes, ct_cu_threads), ct_cu_threads, 0, exec.stream>>>(geo, y, x);
    return ct_cu_launch_status(name);
  }
  /* Enough chunks to give the device's multiprocessors eight blocks each. */
  const int64_t sms = ct_cu_multiprocessors(exec.device_id);
  const int64_t per_lane = (sms * 8 + lanes - 1) / lanes;
  geo.chunk = geo.n;
  geo.chunks = 1;
  if (per_lane > 1 && geo.n >= 2 * ct_cu_scan_min_chunk) {
    int64_t chunk = (geo.n + per_lane - 1) / per_lane;
    chunk = (chunk + ct_cu_threads - 1) / ct_cu_threads * ct_cu_threads;
    geo.chunk = chunk > ct_cu_scan_min_chunk ? chunk : ct_cu_scan_min_chunk;
    geo.chunks = geo.n / geo.chunk; /* the last chunk takes the rest: at least one chunk long */
  }
  const int64_t units = lanes * geo.chunks;
  const int64_t full = sms * 32;
  const unsigned grid = (unsigned)(units < full ? units : full);
  if (geo.chunks > 1) {
    ct_cu_scan_totals_kernel<In, Out, Acc, Prod>
        <<<grid, ct_cu_threads, 0, exec.stream>>>(geo, y, x);
    int status = ct_cu_launch_status(name);
    if (status != CT_OK) return status;
    ct_cu_scan_carries_kernel<Out, Acc, Prod>
        <<<(unsigned)(lanes < full ? lanes : full), ct_cu_threads, 0, exec.stream>>>(geo, y);
    status = ct_cu_launch_status(name);
    if (status != CT_OK) return status;
  }
  ct_cu_scan_chunks_kernel<In, Out, Acc, Prod><<<grid, ct_cu_threads, 0, exec.stream>>>(geo, y, x);
  return ct_cu_launch_status(name);
}

/* The lanes of a cumulative op: `layout` over x's shape with the axis at extent 1 (operands:
 * `count` tensors, the output first), the axis (-1 for a 0-d x, one lane of length 1) and its
 * length. */
void ct_cu_scan_lanes_of(const ct_kernel_call* call, const ct_tensor* const* operands,
                         int32_t count, ct_pl_layout* layout, int32_t* axis, int64_t* n) {
  const ct_tensor* x = call->inputs[call->num_inputs == 1 ? 0 : 1];
  if (x->ndim == 0) {
    const int64_t one = 1;
    ct_pl_layout_begin(layout, 1, &one);
    *axis = -1;
    *n = 1;
  } else {
    int64_t a = call->attrs[0].type == CT_ATTR_NONE ? 0 : call->attrs[0].value.i;
    if (a < 0) a += x->ndim;
    *axis = (int32_t)a;
    *n = x->shape[a];
    ct_pl_lane_layout(layout, x, *axis);
  }
  for (int32_t k = 0; k < count; ++k) ct_pl_layout_add(layout, operands[k]);
  int32_t sizes[4];
  for (int32_t k = 0; k < count; ++k) sizes[k] = (operands[k]->dtype.bits + 7) / 8;
  ct_pl_layout_collapse(layout, sizes);
}

/* Byte step along the lane of `t` (a 0-d tensor has none; a 0-d x's output is 1-D). */
int64_t ct_cu_scan_step(const ct_tensor* t, int32_t axis) {
  return t->ndim == 0 ? 0 : ct_pl_byte_stride(t, axis < 0 ? 0 : axis);
}

template <ct_pl_type Tag, bool Prod>
int ct_cu_scan_run(const ct_kernel_call* call) {
  const ct_tensor* x = call->inputs[0];
  const ct_tensor* y = call->outputs[0];
  const char* name = Prod ? "cumulative_prod" : "cumulative_sum";
  if (ct_pl_tensor_elements(y) == 0) return CT_OK;
  ct_cu_exec exec;
  int status = ct_cu_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  const ct_tensor* operands[2] = {y, x};
  ct_cu_scan_geometry geo = {};
  int32_t axis;
  ct_cu_scan_lanes_of(call, operands, 2, &geo.layout, &axis, &geo.n);
  geo.include_initial = call->attrs[1].value.b != 0;
  geo.x_step = ct_cu_scan_step(x, axis);
  geo.y_step = ct_cu_scan_step(y, axis);
  geo.y_initial = 0;
  geo.y_first = geo.include_initial ? geo.y_step : 0;
  const int64_t size = ct_pl_type_size(Tag);
  const bool strided = geo.x_step != size && geo.x_step != -size;
  return ct_cu_scan_launch<Tag, ct_cu_scan_out_v<Tag>, ct_cu_scan_acc_t<Tag>, Prod>(
      exec, geo, ct_cu_tensor_bytes(y), ct_cu_tensor_bytes(x), strided, name);
}

/* ----- backward ----- */

/* cumulative_prod_backward, one thread per lane, backwards in double (reduce_grad_impl.h's
 * ct_sgrad_lane): s[i] = g[i + shift] + x[i+1] s[i+1], grad_x[i] = out[i - 1 + shift] s[i]
 * (1 before the first). Operands of `layout`: grad_x, g, x, out. */
template <ct_pl_type Tag>
__global__ void __launch_bounds__(ct_cu_threads)
    ct_cu_prod_backward_kernel(const ct_pl_layout layout, char* gx, const char* g, const char* x,
                               const char* out, int64_t n, int64_t gx_step, int64_t g_step,
                               int64_t x_step, int64_t o_step, int include_initial) {
  const int64_t shift = include_initial ? 1 : 0;
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t lane = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; lane < layout.elements;
       lane += step) {
    int64_t off[4];
    ct_cu_offsets<4>(layout, lane, off);
    double s = 0.0;
    for (int64_t i = n - 1; i >= 0; --i) {
      const double gi = ct_cu_load<Tag>(g + off[1] + (i + shift) * g_step);
      /* Rounded products and sums (never contracted into an FMA): the CPU's operations. */
      const double next = i + 1 < n ? ct_cu_load<Tag>(x + off[2] + (i + 1) * x_step) : 0.0;
      s = i + 1 < n ? __dadd_rn(gi, __dmul_rn(next, s)) : gi;
      const int64_t before = i - 1 + shift;
      const double prefix = before >= 0 ? ct_cu_load<Tag>(out + off[3] + before * o_step) : 1.0;
      ct_cu_scan_store<Tag>(gx + off[0] + i * gx_step, __dmul_rn(prefix, s));
    }
  }
}

/* cumulative_sum_backward: grad_x[i] = the sum of g[j + shift] for j >= i, the scan above run
 * backwards over g in double. */
template <ct_pl_type Tag>
int ct_cu_sum_backward_run(const ct_kernel_call* call) {
  const ct_tensor* g = call->inputs[0];
  const ct_tensor* gx = call->outputs[0];
  if (ct_pl_tensor_elements(gx) == 0) return CT_OK;
  ct_cu_exec exec;
  int status = ct_cu_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  /* g carries the initial entry when include_initial: its lanes are one longer than x's, which
   * a lane layout over x's shape with the axis at extent 1 ignores. */
  const ct_tensor* operands[2] = {gx, g};
  ct_cu_scan_geometry geo = {};
  int32_t axis;
  ct_cu_scan_lanes_of(call, operands, 2, &geo.layout, &axis, &geo.n);
  const int64_t shift = call->attrs[1].value.b ? 1 : 0;
  const int64_t g_step = ct_cu_scan_step(g, axis);
  const int64_t gx_step = ct_cu_scan_step(gx, axis);
  geo.x_first = (geo.n - 1 + shift) * g_step;
  geo.x_step = -g_step;
  geo.y_first = (geo.n - 1) * gx_step;
  geo.y_step = -gx_step;
  const int64_t size = ct_pl_type_size(Tag);
  const bool strided = g_step != size && g_step != -size;
  return ct_cu_scan_launch<Tag, Tag, double, false>(
      exec, geo, ct_cu_tensor_bytes(gx), ct_cu_tensor_bytes(g), strided, "cumulative_sum_backward");
}

template <ct_pl_type Tag>
int ct_cu_prod_backward_run(const ct_kernel_call* call) {
  const ct_tensor* g = call->inputs[0];
  const ct_tensor* x = call->inputs[1];
  const ct_tensor* out = call->inputs[2];
  const ct_tensor* gx = call->outputs[0];
  if (ct_pl_tensor_elements(gx) == 0) return CT_OK;
  ct_cu_exec exec;
  int status = ct_cu_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  const ct_tensor* operands[4] = {gx, g, x, out};
  ct_pl_layout layout;
  int32_t axis;
  int64_t n;
  ct_cu_scan_lanes_of(call, operands, 4, &layout, &axis, &n);
  ct_cu_prod_backward_kernel<Tag>
      <<<ct_cu_grid(exec, layout.elements, ct_cu_threads), ct_cu_threads, 0, exec.stream>>>(
          layout, ct_cu_tensor_bytes(gx), ct_cu_tensor_bytes(g), ct_cu_tensor_bytes(x),
          ct_cu_tensor_bytes(out), n, ct_cu_scan_step(gx, axis), ct_cu_scan_step(g, axis),
          ct_cu_scan_step(x, axis), ct_cu_scan_step(out, axis), call->attrs[1].value.b != 0);
  return ct_cu_launch_status("cumulative_prod_backward");
}

template <ct_pl_type Tag>
int ct_cu_register_scan_type() {
  const ct_pl_type signature[2] = {Tag, ct_cu_scan_out_v<Tag>};
  int status =
      ct_cu_register("cumulative_sum", signature, 2, ct_cu_scan_run<Tag, false>, nullptr, nullptr);
  if (status == CT_OK) {
    status = ct_cu_register("cumulative_prod", signature, 2, ct_cu_scan_run<Tag, true>, nullptr,
                            nullptr);
  }
  return status;
}

template <ct_pl_type Tag>
int ct_cu_register_scan_grad_type() {
  const ct_pl_type signature[4] = {Tag, Tag, Tag, Tag};
  int status = ct_cu_register("cumulative_sum_backward", signature, 3, ct_cu_sum_backward_run<Tag>,
                              nullptr, nullptr);
  if (status == CT_OK) {
    status = ct_cu_register("cumulative_prod_backward", signature, 4, ct_cu_prod_backward_run<Tag>,
                            nullptr, nullptr);
  }
  return status;
}

}  // namespace

int ct_cu_register_scan(void) {
  int status = ct_cu_for_each_tag(
      ct_cu_all_tags{}, [](auto tag) { return ct_cu_register_scan_type<decltype(tag)::value>(); });
  if (status != CT_OK) return status;
  return ct_cu_for_each_tag(ct_cu_float_tags{}, [](auto tag) {
    return ct_cu_register_scan_grad_type<decltype(tag)::value>();
  });
}
