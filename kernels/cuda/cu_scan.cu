/* cu_scan.cu - cumulative_sum and cumulative_prod along an axis, and their backward ops, on
 * lanes of any strides. Accumulators are the CPU's: bool and ints in uint64 (wrapping, stored
 * as int64), float16 in float, float32 and float64 in double; every output is rounded from the
 * accumulator. Two kernels, picked per call by the layout:
 * - one thread per lane, walking it sequentially: the CPU's order of operations, so the same
 *   bits as the CPU; used where neighbouring lanes are neighbours in memory (an axis that is
 *   not the innermost one), so that a warp's loads coalesce, and for short lanes;
 * - one block per lane (a contiguous axis, or too few lanes to fill the device), scanning tiles
 *   of 256 elements with cub::BlockScan and carrying each tile's total into the next; the order
 *   of additions within a tile is a tree's, so floats agree with the CPU to rounding (in the
 *   wide accumulator), integers exactly.
 * cub::DeviceScan (a decoupled look-back over the whole device) is not used: its tile states
 * need scratch memory, and these shape-static ops get no workspace from their callers, so a
 * single lane runs on one block (about one multiprocessor's bandwidth).
 * The backward ops walk each lane backwards in double, one thread per lane, with the CPU's
 * operations in its order (no FMA contraction), so they give the CPU's bits. */
#define CCCL_DISABLE_NVTX /* no NVTX ranges (and their dlopen) from CUB */
#include <cub/block/block_scan.cuh>

#include "cu_call.h"
#include "cu_layout.h"
#include "cu_types.cuh"

namespace {

constexpr int ct_cu_threads = 256;

/* Lanes at most this long, or at least this many with a strided axis, run one per thread. */
constexpr int64_t ct_cu_scan_short_lane = 32;
constexpr int64_t ct_cu_scan_many_lanes = 2048;

/* Output tag and accumulator of a cumulative op on `Tag`. */
template <ct_pl_type Tag>
inline constexpr ct_pl_type ct_cu_scan_out_v = ct_cu_is_float_v<Tag> ? Tag : CT_PL_I64;

template <ct_pl_type Tag>
using ct_cu_scan_acc_t =
    std::conditional_t<Tag == CT_PL_F16, float,
                       std::conditional_t<ct_cu_is_float_v<Tag>, double, unsigned long long>>;

template <ct_pl_type Tag>
__device__ __forceinline__ ct_cu_scan_acc_t<Tag> ct_cu_scan_load(const char* p) {
  using Acc = ct_cu_scan_acc_t<Tag>;
  if constexpr (ct_cu_is_float_v<Tag>) {
    return static_cast<Acc>(ct_cu_load<Tag>(p));
  } else {
    return static_cast<Acc>(static_cast<long long>(ct_cu_load<Tag>(p)));
  }
}

template <bool Prod>
struct ct_cu_scan_op {
  template <class T>
  __device__ __forceinline__ T operator()(const T& a, const T& b) const {
    return Prod ? a * b : a + b;
  }
};

/* One thread per lane. Operands of `layout` (lanes): y, x. */
template <ct_pl_type Tag, bool Prod>
__global__ void __launch_bounds__(ct_cu_threads)
    ct_cu_scan_lanes_kernel(const ct_pl_layout layout, char* y, const char* x, int64_t n,
                            int64_t y_step, int64_t x_step, int include_initial) {
  using Acc = ct_cu_scan_acc_t<Tag>;
  constexpr ct_pl_type Out = ct_cu_scan_out_v<Tag>;
  const ct_cu_scan_op<Prod> op;
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t lane = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; lane < layout.elements;
       lane += step) {
    int64_t off[2];
    ct_cu_offsets<2>(layout, lane, off);
    char* out = y + off[0];
    const char* in = x + off[1];
    Acc acc = Acc(Prod ? 1 : 0);
    if (include_initial) {
      ct_cu_store<Out>(out, acc);
      out += y_step;
    }
    for (int64_t i = 0; i < n; ++i) {
      acc = op(acc, ct_cu_scan_load<Tag>(in + i * x_step));
      ct_cu_store<Out>(out + i * y_step, acc);
    }
  }
}

/* One block per lane, tiles of ct_cu_threads elements, each tile's total carried on. */
template <ct_pl_type Tag, bool Prod>
__global__ void __launch_bounds__(ct_cu_threads)
    ct_cu_scan_block_kernel(const ct_pl_layout layout, char* y, const char* x, int64_t n,
                            int64_t y_step, int64_t x_step, int include_initial) {
  using Acc = ct_cu_scan_acc_t<Tag>;
  using Scan = cub::BlockScan<Acc, ct_cu_threads>;
  constexpr ct_pl_type Out = ct_cu_scan_out_v<Tag>;
  __shared__ typename Scan::TempStorage temp;
  const ct_cu_scan_op<Prod> op;
  for (int64_t lane = blockIdx.x; lane < layout.elements; lane += gridDim.x) {
    int64_t off[2];
    ct_cu_offsets<2>(layout, lane, off);
    char* out = y + off[0];
    const char* in = x + off[1];
    const Acc identity = Acc(Prod ? 1 : 0);
    if (include_initial) {
      if (threadIdx.x == 0) ct_cu_store<Out>(out, identity);
      out += y_step;
    }
    Acc carry = identity;
    for (int64_t tile = 0; tile < n; tile += ct_cu_threads) {
      const int64_t i = tile + threadIdx.x;
      const Acc v = i < n ? ct_cu_scan_load<Tag>(in + i * x_step) : identity;
      Acc prefix, total;
      Scan(temp).InclusiveScan(v, prefix, op, total);
      if (i < n) ct_cu_store<Out>(out + i * y_step, op(carry, prefix));
      carry = op(carry, total);
      __syncthreads(); /* temp is reused by the next tile */
    }
  }
}

/* The lanes of a cumulative op: `layout` over x's shape with the axis at extent 1 (operands:
 * the output, then the inputs), the axis, and its length. A 0-d x is one lane of length 1. */
struct ct_cu_scan_lanes {
  ct_pl_layout layout;
  int32_t axis = 0;
  int64_t n = 1;
};

void ct_cu_scan_lanes_of(const ct_kernel_call* call, const ct_tensor* const* operands,
                         int32_t count, ct_cu_scan_lanes* s) {
  const ct_tensor* x = call->inputs[0];
  if (x->ndim == 0) {
    const int64_t one = 1;
    ct_pl_layout_begin(&s->layout, 1, &one);
    for (int32_t k = 0; k < count; ++k) ct_pl_layout_add(&s->layout, operands[k]);
    s->axis = -1;
    s->n = 1;
  } else {
    int64_t axis = call->attrs[0].type == CT_ATTR_NONE ? 0 : call->attrs[0].value.i;
    if (axis < 0) axis += x->ndim;
    s->axis = (int32_t)axis;
    s->n = x->shape[axis];
    ct_pl_lane_layout(&s->layout, x, s->axis);
    for (int32_t k = 0; k < count; ++k) ct_pl_layout_add(&s->layout, operands[k]);
  }
  int32_t sizes[4];
  for (int32_t k = 0; k < count; ++k) sizes[k] = (operands[k]->dtype.bits + 7) / 8;
  ct_pl_layout_collapse(&s->layout, sizes);
}

/* Byte step along the lane of `t` (0-d: none; a 0-d x's output is 1-D of length 1). */
int64_t ct_cu_scan_step(const ct_tensor* t, int32_t axis) {
  return axis < 0 ? ct_pl_byte_stride(t, 0) : ct_pl_byte_stride(t, axis);
}

template <ct_pl_type Tag, bool Prod>
int ct_cu_scan_run(const ct_kernel_call* call) {
  const ct_tensor* x = call->inputs[0];
  const ct_tensor* y = call->outputs[0];
  const char* name = Prod ? "cumulative_prod" : "cumulative_sum";
  const bool include_initial = call->attrs[1].value.b != 0;
  if (ct_pl_tensor_elements(y) == 0) return CT_OK;
  ct_cu_exec exec;
  int status = ct_cu_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  const ct_tensor* operands[2] = {y, x};
  ct_cu_scan_lanes s;
  ct_cu_scan_lanes_of(call, operands, 2, &s);
  const int64_t y_step = ct_cu_scan_step(y, s.axis);
  const int64_t x_step = x->ndim == 0 ? 0 : ct_cu_scan_step(x, s.axis);
  const int64_t lanes = s.layout.elements;
  const bool contiguous_axis = x_step == ct_pl_type_size(Tag) || x_step == -ct_pl_type_size(Tag);
  const bool by_block =
      s.n > ct_cu_scan_short_lane && (contiguous_axis || lanes < ct_cu_scan_many_lanes);
  if (by_block) {
    const int64_t full = (int64_t)ct_cu_multiprocessors(exec.device_id) * 32;
    const unsigned grid = (unsigned)(lanes < full ? lanes : full);
    ct_cu_scan_block_kernel<Tag, Prod><<<grid, ct_cu_threads, 0, exec.stream>>>(
        s.layout, ct_cu_tensor_bytes(y), ct_cu_tensor_bytes(x), s.n, y_step, x_step,
        include_initial);
  } else {
    ct_cu_scan_lanes_kernel<Tag, Prod>
        <<<ct_cu_grid(exec, lanes, ct_cu_threads), ct_cu_threads, 0, exec.stream>>>(
            s.layout, ct_cu_tensor_bytes(y), ct_cu_tensor_bytes(x), s.n, y_step, x_step,
            include_initial);
  }
  return ct_cu_launch_status(name);
}

/* ----- backward ----- */

/* One thread per lane, backwards in double (reduce_grad_impl.h's ct_sgrad_lane): sum: grad_x[i]
 * = sum of g[j + shift] for j >= i; prod: s[i] = g[i + shift] + x[i+1] s[i+1], grad_x[i] =
 * out[i - 1 + shift] s[i] (1 before the first). Operands of `layout`: grad_x, g, x[, out]. */
template <ct_pl_type Tag, bool Prod>
__global__ void __launch_bounds__(ct_cu_threads)
    ct_cu_scan_backward_kernel(const ct_pl_layout layout, char* gx, const char* g, const char* x,
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
      double result;
      if constexpr (!Prod) {
        s = __dadd_rn(s, gi);
        result = s;
      } else {
        /* Rounded products and sums (never contracted into an FMA): the CPU's operations. */
        s = i + 1 < n ? __dadd_rn(gi, __dmul_rn(ct_cu_load<Tag>(x + off[2] + (i + 1) * x_step), s))
                      : gi;
        const int64_t before = i - 1 + shift;
        const double prefix = before >= 0 ? ct_cu_load<Tag>(out + off[3] + before * o_step) : 1.0;
        result = __dmul_rn(prefix, s);
      }
      /* Through the compute type, as the CPU stores (float16: double to float to half). */
      ct_cu_store<Tag>(gx + off[0] + i * gx_step, static_cast<ct_cu_compute_t<Tag>>(result));
    }
  }
}

template <ct_pl_type Tag, bool Prod>
int ct_cu_scan_backward_run(const ct_kernel_call* call) {
  const ct_tensor* g = call->inputs[0];
  const ct_tensor* x = call->inputs[1];
  const ct_tensor* out = Prod ? call->inputs[2] : nullptr;
  const ct_tensor* gx = call->outputs[0];
  const char* name = Prod ? "cumulative_prod_backward" : "cumulative_sum_backward";
  if (ct_pl_tensor_elements(gx) == 0) return CT_OK;
  ct_cu_exec exec;
  int status = ct_cu_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  /* g and out carry the initial entry when include_initial: their lanes are one longer than
   * x's, which a lane layout over x's shape with the axis at extent 1 ignores. */
  const ct_tensor* operands[4] = {gx, g, x, Prod ? out : x};
  ct_cu_scan_lanes s;
  ct_cu_scan_lanes_of(call, operands + 0, 4, &s);
  const int32_t axis = s.axis < 0 ? 0 : s.axis;
  const int64_t lanes = s.layout.elements;
  ct_cu_scan_backward_kernel<Tag, Prod>
      <<<ct_cu_grid(exec, lanes, ct_cu_threads), ct_cu_threads, 0, exec.stream>>>(
          s.layout, ct_cu_tensor_bytes(gx), ct_cu_tensor_bytes(g), ct_cu_tensor_bytes(x),
          out ? ct_cu_tensor_bytes(out) : nullptr, s.n, ct_pl_byte_stride(gx, axis),
          ct_pl_byte_stride(g, axis), ct_pl_byte_stride(x, axis),
          out ? ct_pl_byte_stride(out, axis) : 0, call->attrs[1].value.b != 0);
  return ct_cu_launch_status(name);
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
  int status = ct_cu_register("cumulative_sum_backward", signature, 3,
                              ct_cu_scan_backward_run<Tag, false>, nullptr, nullptr);
  if (status == CT_OK) {
    status = ct_cu_register("cumulative_prod_backward", signature, 4,
                            ct_cu_scan_backward_run<Tag, true>, nullptr, nullptr);
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
