/* cu_sort.cu - sort, argsort, argpartition and topk along an axis of any strides, with CUB.
 * A key pass writes every lane contiguously into the call's workspace as order-preserving
 * unsigned keys (cu_radix_sort.h) with each element's index along the lane as its value; CUB
 * sorts the lanes stably; a gather pass writes the first `limit` positions of every lane into
 * the outputs through their strides: the index, and the value re-read from x at that index (so
 * keys are never decoded and nan payloads survive). The order is the CPU backend's: ascending
 * puts nan last, descending (and topk largest) puts nan first, -0.0 == 0.0, equal values keep
 * their index order in both directions. topk sorts whole lanes and keeps the first k (CCCL here
 * has no top-k); argpartition is the stable ascending argsort, a partition for every kth.
 *
 * Lanes of at most ct_cu_rank_max_extent elements skip CUB: every element finds its rank by
 * counting the lane elements ordered before it (ties by index), one thread per element, one
 * launch and no workspace, where the CUB path takes a key pass, a sort of several launches and
 * a gather; at 32 comparisons per element (lane reads that neighbouring threads share, served
 * by the cache) the rank kernel is the cheaper one.
 *
 * Also take_along_axis_backward, the scatter-add that the gradients of sort and topk run: one
 * thread per element of grad_x sums the grad_out entries whose index points at it, in grad_out's
 * row-major order (the CPU kernel's order, so no atomics and the same sums). */
#include "cu_call.h"
#include "cu_layout.h"
#include "cu_radix_sort.h"
#include "cu_types.cuh"
#include "plugin_grad_geometry.h"

namespace {

constexpr int ct_cu_threads = 256;

/* Lanes up to this length are ranked by ct_cu_rank_kernel (see above). */
constexpr int64_t ct_cu_rank_max_extent = 32;

/* The ascending order: nan after everything, -0.0 equal to 0.0. */
template <class T>
__device__ __forceinline__ bool ct_cu_less(T a, T b) {
  return a < b || (b != b && a == a);
}

/* Whether `a` comes before `b` in the order asked for. */
template <bool Descending, class T>
__device__ __forceinline__ bool ct_cu_before(T a, T b) {
  return Descending ? ct_cu_less(b, a) : ct_cu_less(a, b);
}

/* Element k of lane `lane` goes to position rank (the elements before it, equal ones with a lower
 * index included) of `values` (when not null) and its index k to `indices` (when not null) when
 * rank < limit. Operands of `layout`: values, indices, x. */
template <ct_pl_type Tag, bool Descending>
__global__ void __launch_bounds__(ct_cu_threads)
    ct_cu_rank_kernel(const ct_pl_layout layout, char* values, char* indices, const char* x,
                      int64_t extent, int64_t value_step, int64_t index_step, int64_t x_step,
                      int64_t limit) {
  using T = ct_cu_compute_t<Tag>;
  using S = typename ct_cu_traits<Tag>::storage;
  const int64_t n = layout.elements * extent;
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
    const int64_t lane = i / extent, k = i % extent;
    int64_t off[3];
    ct_cu_offsets<3>(layout, lane, off);
    const char* row = x + off[2];
    const char* element = row + k * x_step;
    const T v = ct_cu_load<Tag>(element);
    int64_t rank = 0;
    for (int64_t j = 0; j < extent; ++j) {
      const T u = ct_cu_load<Tag>(row + j * x_step);
      /* j < k: u is first unless v is strictly before it; j > k: only when strictly before. */
      rank += j < k ? !ct_cu_before<Descending>(v, u) : ct_cu_before<Descending>(u, v);
    }
    if (rank < limit) {
      /* The value's own bits (float16 nan payloads survive, as in the gather pass). */
      if (values) {
        *reinterpret_cast<S*>(values + off[0] + rank * value_step) =
            *reinterpret_cast<const S*>(element);
      }
      if (indices) ct_cu_store<CT_PL_I64>(indices + off[1] + rank * index_step, k);
    }
  }
}

/* Position r < limit of lane `lane` gets the element of x at sorted[lane * extent + r] (its
 * index along the axis) in `values` (when not null) and that index in `indices` (when not
 * null). Operands of `layout`: values, indices, x. */
template <ct_pl_type Tag, class Index>
__global__ void __launch_bounds__(ct_cu_threads)
    ct_cu_sort_gather_kernel(const ct_pl_layout layout, char* values, char* indices, const char* x,
                             const Index* sorted, int64_t extent, int64_t limit, int64_t value_step,
                             int64_t index_step, int64_t x_step) {
  using S = typename ct_cu_traits<Tag>::storage;
  const int64_t n = layout.elements * limit;
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
    const int64_t lane = i / limit, r = i % limit;
    const int64_t k = sorted[lane * extent + r];
    int64_t off[3];
    ct_cu_offsets<3>(layout, lane, off);
    if (values) {
      *reinterpret_cast<S*>(values + off[0] + r * value_step) =
          *reinterpret_cast<const S*>(x + off[2] + k * x_step);
    }
    if (indices) *reinterpret_cast<long long*>(indices + off[1] + r * index_step) = k;
  }
}

int64_t ct_cu_axis(const ct_tensor* x, int64_t axis) {
  return x->ndim == 0 ? 0 : axis < 0 ? axis + x->ndim : axis;
}

/* The lanes of x along `axis`: their count and length, and the layout that walks x with the
 * axis moved last (item lane * extent + k is element k of lane `lane`). */
struct ct_cu_sort_lanes {
  int64_t lanes = 0;
  int64_t extent = 0;
  ct_pl_layout items;
};

void ct_cu_sort_lanes_of(const ct_tensor* x, int32_t axis, ct_cu_sort_lanes* s) {
  int64_t strides[CT_MAX_NDIM], shape[CT_MAX_NDIM], bytes[CT_MAX_NDIM];
  ct_pl_tensor_strides(x, strides);
  const int32_t size = (x->dtype.bits + 7) / 8;
  int32_t d = 0;
  s->lanes = 1;
  for (int32_t k = 0; k < x->ndim; ++k) {
    if (k == axis) continue;
    shape[d] = x->shape[k];
    bytes[d++] = strides[k] * size;
    s->lanes *= x->shape[k];
  }
  s->extent = x->ndim ? x->shape[axis] : 1;
  shape[d] = s->extent;
  bytes[d++] = x->ndim ? strides[axis] * size : size;
  ct_pl_layout_begin(&s->items, d, shape);
  ct_pl_layout_add_strides(&s->items, bytes);
  ct_pl_layout_collapse(&s->items, &size);
}

/* Plans the CUB sort of x's lanes, its buffers from the start of the workspace. */
template <ct_pl_type Tag>
int ct_cu_sort_plan(int32_t device_id, const ct_cu_sort_lanes& s, ct_cu_lane_sort* plan) {
  int32_t key_bytes, key_bits;
  ct_cu_sort_key_size(Tag, &key_bytes, &key_bits);
  return ct_cu_lane_sort_plan(device_id, s.lanes, s.extent, key_bytes, key_bits, 0, plan);
}

/* The workspace of sort, argsort, argpartition (axis: attrs[0]) and topk (attrs[1]): the CUB
 * sort's keys, indices and temporary storage; none for lanes the rank kernel takes. */
template <ct_pl_type Tag, int AxisAttr>
int ct_cu_sort_workspace(const ct_kernel_call* call, uint64_t* bytes, uint64_t* alignment) {
  *bytes = 0;
  *alignment = CT_CU_WORKSPACE_ALIGNMENT;
  const ct_tensor* x = call->inputs[0];
  ct_cu_sort_lanes s;
  ct_cu_sort_lanes_of(x, (int32_t)ct_cu_axis(x, call->attrs[AxisAttr].value.i), &s);
  if (s.lanes == 0 || s.extent <= ct_cu_rank_max_extent) return CT_OK;
  ct_cu_exec exec;
  int status = ct_cu_exec_for_device(x->device.device_id, call->stream, &exec);
  ct_cu_lane_sort plan;
  if (status == CT_OK) status = ct_cu_sort_plan<Tag>(exec.device_id, s, &plan);
  if (status == CT_OK) *bytes = plan.total;
  return status;
}

/* Places the first `limit` elements of every lane of x along `axis`, in order, in `values`, and
 * their indices along the axis in `indices` (either may be NULL, not both). */
template <ct_pl_type Tag>
int ct_cu_sorted_run(const ct_kernel_call* call, const ct_tensor* values, const ct_tensor* indices,
                     int64_t axis, bool descending, int64_t limit, const char* name) {
  const ct_tensor* x = call->inputs[0];
  if (ct_pl_tensor_elements(x) == 0 || limit == 0) return CT_OK;
  ct_cu_exec exec;
  int status = ct_cu_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  ct_cu_sort_lanes s;
  ct_cu_sort_lanes_of(x, (int32_t)axis, &s);
  const int64_t extent = s.extent;
  const ct_tensor* value_layout = values ? values : indices;
  const ct_tensor* index_layout = indices ? indices : values;
  ct_pl_layout layout;
  ct_pl_lane_layout(&layout, x, (int32_t)axis);
  ct_pl_layout_add(&layout, value_layout);
  ct_pl_layout_add(&layout, index_layout);
  ct_pl_layout_add(&layout, x);
  const int32_t sizes[3] = {(value_layout->dtype.bits + 7) / 8, (index_layout->dtype.bits + 7) / 8,
                            ct_pl_type_size(Tag)};
  ct_pl_layout_collapse(&layout, sizes);
  const int64_t value_step = values ? ct_pl_byte_stride(values, (int32_t)axis) : 0;
  char* value_data = values ? ct_cu_tensor_bytes(values) : nullptr;
  const int64_t index_step = indices ? ct_pl_byte_stride(indices, (int32_t)axis) : 0;
  const int64_t x_step = ct_pl_byte_stride(x, (int32_t)axis);
  char* index_data = indices ? ct_cu_tensor_bytes(indices) : nullptr;
  if (extent <= ct_cu_rank_max_extent) {
    const unsigned grid = ct_cu_grid(exec, layout.elements * extent, ct_cu_threads);
    if (descending) {
      ct_cu_rank_kernel<Tag, true><<<grid, ct_cu_threads, 0, exec.stream>>>(
          layout, value_data, index_data, ct_cu_tensor_bytes(x), extent, value_step, index_step,
          x_step, limit);
    } else {
      ct_cu_rank_kernel<Tag, false><<<grid, ct_cu_threads, 0, exec.stream>>>(
          layout, value_data, index_data, ct_cu_tensor_bytes(x), extent, value_step, index_step,
          x_step, limit);
    }
    return ct_cu_launch_status(name);
  }
  ct_cu_lane_sort plan;
  status = ct_cu_sort_plan<Tag>(exec.device_id, s, &plan);
  if (status != CT_OK) return status;
  if (!call->workspace || call->workspace_size < plan.total) {
    return ct_cu_error(CT_ERROR_WORKSPACE_TOO_SMALL,
                       "%s needs %llu bytes of workspace; the call gives %llu", name,
                       (unsigned long long)plan.total, (unsigned long long)call->workspace_size);
  }
  char* workspace = static_cast<char*>(call->workspace);
  status = ct_cu_lane_sort_keys(exec, Tag, s.items, ct_cu_tensor_bytes(x), descending, plan,
                                workspace, name);
  const void* sorted_keys = nullptr;
  const void* sorted = nullptr;
  if (status == CT_OK) {
    status = ct_cu_lane_sort_run(plan, workspace, exec.stream, name, &sorted_keys, &sorted);
  }
  if (status != CT_OK) return status;
  const unsigned grid = ct_cu_grid(exec, layout.elements * limit, ct_cu_threads);
  if (plan.index_bytes == 4) {
    ct_cu_sort_gather_kernel<Tag, int32_t><<<grid, ct_cu_threads, 0, exec.stream>>>(
        layout, value_data, index_data, ct_cu_tensor_bytes(x), static_cast<const int32_t*>(sorted),
        extent, limit, value_step, index_step, x_step);
  } else {
    ct_cu_sort_gather_kernel<Tag, long long><<<grid, ct_cu_threads, 0, exec.stream>>>(
        layout, value_data, index_data, ct_cu_tensor_bytes(x),
        static_cast<const long long*>(sorted), extent, limit, value_step, index_step, x_step);
  }
  return ct_cu_launch_status(name);
}

template <ct_pl_type Tag>
int ct_cu_sort_run(const ct_kernel_call* call) {
  const int64_t axis = ct_cu_axis(call->inputs[0], call->attrs[0].value.i);
  const bool descending = call->attrs[1].value.b != 0;
  return ct_cu_sorted_run<Tag>(call, call->outputs[0], nullptr, axis, descending, INT64_MAX,
                               "sort");
}

template <ct_pl_type Tag>
int ct_cu_argsort_run(const ct_kernel_call* call) {
  const int64_t axis = ct_cu_axis(call->inputs[0], call->attrs[0].value.i);
  const bool descending = call->attrs[1].value.b != 0;
  return ct_cu_sorted_run<Tag>(call, nullptr, call->outputs[0], axis, descending, INT64_MAX,
                               "argsort");
}

/* argpartition: the stable ascending argsort, a valid partition for every kth (attrs[0] is the
 * axis, as argsort's). */
template <ct_pl_type Tag>
int ct_cu_argpartition_run(const ct_kernel_call* call) {
  const int64_t axis = ct_cu_axis(call->inputs[0], call->attrs[0].value.i);
  return ct_cu_sorted_run<Tag>(call, nullptr, call->outputs[0], axis, false, INT64_MAX,
                               "argpartition");
}

template <ct_pl_type Tag>
int ct_cu_topk_run(const ct_kernel_call* call) {
  const int64_t k = call->attrs[0].value.i;
  const int64_t axis = ct_cu_axis(call->inputs[0], call->attrs[1].value.i);
  const bool largest = call->attrs[2].value.b != 0;
  return ct_cu_sorted_run<Tag>(call, call->outputs[0], call->outputs[1], axis, largest, k, "topk");
}

/* Sets found[0] (and found[1] to the value) when an index lies outside [lo, hi). */
template <ct_pl_type Index>
__global__ void __launch_bounds__(ct_cu_threads)
    ct_cu_index_outside_kernel(const ct_pl_layout layout, const char* indices, int64_t lo,
                               int64_t hi, long long* found) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < layout.elements; i += step) {
    int64_t off[1];
    ct_cu_offsets<1>(layout, i, off);
    const int64_t j = ct_cu_load<Index>(indices + off[0]);
    if (j < lo || j >= hi) {
      found[0] = 1;
      found[1] = j;
    }
  }
}

}  // namespace

int ct_cu_find_index_outside(const ct_cu_exec& exec, const ct_tensor* indices, int64_t lo,
                             int64_t hi, const char* what, bool* found, int64_t* value) {
  *found = false;
  ct_pl_layout layout;
  ct_pl_layout_begin(&layout, indices->ndim, indices->shape);
  ct_pl_layout_add(&layout, indices);
  const int32_t sizes[1] = {(indices->dtype.bits + 7) / 8};
  ct_pl_layout_collapse(&layout, sizes);
  if (layout.elements == 0) return CT_OK;
  long long* flag = nullptr;
  int status = ct_cu_check(
      cudaMallocAsync(reinterpret_cast<void**>(&flag), 2 * sizeof(long long), exec.stream),
      "cudaMallocAsync");
  if (status != CT_OK) return status;
  long long result[2] = {0, 0};
  status = ct_cu_check(cudaMemsetAsync(flag, 0, sizeof result, exec.stream), "cudaMemsetAsync");
  if (status == CT_OK) {
    const unsigned grid = ct_cu_grid(exec, layout.elements, ct_cu_threads);
    if (indices->dtype.bits == 64) {
      ct_cu_index_outside_kernel<CT_PL_I64><<<grid, ct_cu_threads, 0, exec.stream>>>(
          layout, ct_cu_tensor_bytes(indices), lo, hi, flag);
    } else {
      ct_cu_index_outside_kernel<CT_PL_I32><<<grid, ct_cu_threads, 0, exec.stream>>>(
          layout, ct_cu_tensor_bytes(indices), lo, hi, flag);
    }
    status = ct_cu_launch_status(what);
  }
  if (status == CT_OK) {
    status = ct_cu_check(
        cudaMemcpyAsync(result, flag, sizeof result, cudaMemcpyDeviceToHost, exec.stream),
        "cudaMemcpyAsync");
  }
  cudaFreeAsync(flag, exec.stream);
  if (status == CT_OK) status = ct_cu_check(cudaStreamSynchronize(exec.stream), what);
  if (status == CT_OK) {
    *found = result[0] != 0;
    *value = result[1];
  }
  return status;
}

namespace {

/* ----- take_along_axis_backward ----- */

/* Indices must lie in [-extent, extent), as on the CPU: they are scanned before anything is
 * written; the error names one bad index. */
static int ct_cu_check_indices(const ct_cu_exec& exec, const ct_tensor* indices, int64_t extent) {
  bool found = false;
  int64_t bad = 0;
  int status = ct_cu_find_index_outside(exec, indices, -extent, extent,
                                        "take_along_axis_backward (index scan)", &found, &bad);
  if (status == CT_OK && found) {
    status = ct_cu_error(CT_ERROR_INVALID_ARGUMENT,
                         "take_along_axis_backward: index %lld is out of range [%lld, %lld)",
                         (long long)bad, (long long)-extent, (long long)extent);
  }
  return status;
}

/* Element k of a grad_x lane sums, in row-major order, the grad_out entries of its reduced
 * sub-space (ct_pl_take_along_grad_layouts: `lanes` with operands grad_x, grad_out, indices;
 * `reduced` with operands grad_out, indices) whose index (negative ones counting from the end)
 * is k. */
template <ct_pl_type Tag, ct_pl_type Index>
__global__ void __launch_bounds__(ct_cu_threads)
    ct_cu_take_along_backward_kernel(const ct_pl_layout lanes, const ct_pl_layout reduced,
                                     char* grad_x, const char* grad, const char* indices,
                                     int64_t extent, int64_t grad_x_step) {
  using T = ct_cu_compute_t<Tag>;
  const int64_t n = lanes.elements * extent;
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
    const int64_t lane = i / extent, k = i % extent;
    int64_t off[3];
    ct_cu_offsets<3>(lanes, lane, off);
    T acc = T(0);
    for (int64_t t = 0; t < reduced.elements; ++t) {
      int64_t inner[2];
      ct_cu_offsets<2>(reduced, t, inner);
      int64_t j = ct_cu_load<Index>(indices + off[2] + inner[1]);
      if (j < 0) j += extent;
      if (j == k) acc += ct_cu_load<Tag>(grad + off[1] + inner[0]);
    }
    ct_cu_store<Tag>(grad_x + off[0] + k * grad_x_step, acc);
  }
}

template <ct_pl_type Tag, ct_pl_type Index>
int ct_cu_take_along_axis_backward_run(const ct_kernel_call* call) {
  const ct_tensor *grad = call->inputs[0], *indices = call->inputs[2], *grad_x = call->outputs[0];
  ct_pl_layout lanes, reduced;
  const int32_t axis = ct_pl_take_along_grad_layouts(call, &lanes, &reduced);
  const int64_t extent = grad_x->shape[axis];
  ct_cu_exec exec;
  int status = ct_cu_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  if (ct_pl_tensor_elements(grad) > 0) {
    status = ct_cu_check_indices(exec, indices, extent);
    if (status != CT_OK) return status;
  }
  const int64_t n = ct_pl_tensor_elements(grad_x);
  if (n == 0) return CT_OK;
  ct_cu_take_along_backward_kernel<Tag, Index>
      <<<ct_cu_grid(exec, n, ct_cu_threads), ct_cu_threads, 0, exec.stream>>>(
          lanes, reduced, ct_cu_tensor_bytes(grad_x), ct_cu_tensor_bytes(grad),
          ct_cu_tensor_bytes(indices), extent, ct_pl_byte_stride(grad_x, axis));
  return ct_cu_launch_status("take_along_axis_backward");
}

template <ct_pl_type Tag>
int ct_cu_register_sort_type() {
  const ct_pl_type sort_signature[2] = {Tag, Tag};
  const ct_pl_type argsort_signature[2] = {Tag, CT_PL_I64};
  const ct_pl_type topk_signature[3] = {Tag, Tag, CT_PL_I64};
  int status = ct_cu_register("sort", sort_signature, 2, ct_cu_sort_run<Tag>,
                              ct_cu_sort_workspace<Tag, 0>, nullptr);
  if (status == CT_OK) {
    status = ct_cu_register("argsort", argsort_signature, 2, ct_cu_argsort_run<Tag>,
                            ct_cu_sort_workspace<Tag, 0>, nullptr);
  }
  if (status == CT_OK) {
    status = ct_cu_register("topk", topk_signature, 3, ct_cu_topk_run<Tag>,
                            ct_cu_sort_workspace<Tag, 1>, nullptr);
  }
  if (status == CT_OK) {
    status = ct_cu_register("argpartition", argsort_signature, 2, ct_cu_argpartition_run<Tag>,
                            ct_cu_sort_workspace<Tag, 0>, nullptr);
  }
  return status;
}

/* int64 indices: those argsort and topk give. int32 ones would come only from a take_along_axis
 * forward, which this plugin lacks (the kernel is a template over either). */
template <ct_pl_type Tag>
int ct_cu_register_take_along_grad_type() {
  const ct_pl_type signature[4] = {Tag, Tag, CT_PL_I64, Tag};
  return ct_cu_register("take_along_axis_backward", signature, 4,
                        ct_cu_take_along_axis_backward_run<Tag, CT_PL_I64>, nullptr, nullptr);
}

}  // namespace

int ct_cu_register_sort(void) {
  int status = ct_cu_for_each_tag(
      ct_cu_all_tags{}, [](auto tag) { return ct_cu_register_sort_type<decltype(tag)::value>(); });
  if (status != CT_OK) return status;
  return ct_cu_for_each_tag(ct_cu_float_tags{}, [](auto tag) {
    return ct_cu_register_take_along_grad_type<decltype(tag)::value>();
  });
}
