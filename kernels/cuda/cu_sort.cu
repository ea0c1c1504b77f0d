/* cu_sort.cu - sort and topk along an axis: every element finds its rank in its lane by counting
 * the lane elements ordered before it (ties by index, so the result is stable), one thread per
 * element and no scratch memory. Neighbouring threads share a lane and read the same element at
 * each step, so the lane reads are broadcasts served by the cache. The work is quadratic in the
 * lane length: fine for the lanes of typical tensors, slow for lanes of hundreds of thousands of
 * elements. Orders as the CPU backend: ascending puts nan last, descending (and topk largest)
 * puts nan first; -0.0 == 0.0. */
#include "cu_call.h"
#include "cu_layout.h"
#include "cu_types.cuh"

namespace {

constexpr int ct_cu_threads = 256;

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
 * index included) of `values` (and its index k to `indices`) when rank < limit. Operands of
 * `layout`: values, indices, x. */
template <ct_pl_type Tag, bool Descending>
__global__ void __launch_bounds__(ct_cu_threads)
    ct_cu_rank_kernel(const ct_pl_layout layout, char* values, char* indices, const char* x,
                      int64_t extent, int64_t value_step, int64_t index_step, int64_t x_step,
                      int64_t limit) {
  using T = ct_cu_compute_t<Tag>;
  const int64_t n = layout.elements * extent;
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
    const int64_t lane = i / extent, k = i % extent;
    int64_t off[3];
    ct_cu_offsets<3>(layout, lane, off);
    const char* row = x + off[2];
    const T v = ct_cu_load<Tag>(row + k * x_step);
    int64_t rank = 0;
    for (int64_t j = 0; j < extent; ++j) {
      const T u = ct_cu_load<Tag>(row + j * x_step);
      /* j < k: u is first unless v is strictly before it; j > k: only when strictly before. */
      rank += j < k ? !ct_cu_before<Descending>(v, u) : ct_cu_before<Descending>(u, v);
    }
    if (rank < limit) {
      ct_cu_store<Tag>(values + off[0] + rank * value_step, v);
      if (indices) ct_cu_store<CT_PL_I64>(indices + off[1] + rank * index_step, k);
    }
  }
}

int64_t ct_cu_axis(const ct_tensor* x, int64_t axis) {
  return x->ndim == 0 ? 0 : axis < 0 ? axis + x->ndim : axis;
}

/* Places the first `limit` elements of every lane of x along `axis`, in order, in `values`, and
 * their indices along the axis in `indices` (when not NULL). */
template <ct_pl_type Tag>
int ct_cu_rank_run(const ct_kernel_call* call, const ct_tensor* values, const ct_tensor* indices,
                   int64_t axis, bool descending, int64_t limit, const char* name) {
  const ct_tensor* x = call->inputs[0];
  const int64_t extent = x->ndim ? x->shape[axis] : 1;
  if (ct_pl_tensor_elements(x) == 0 || limit == 0) return CT_OK;
  ct_cu_exec exec;
  int status = ct_cu_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  const ct_tensor* index_layout = indices ? indices : values;
  ct_pl_layout layout;
  ct_pl_lane_layout(&layout, x, (int32_t)axis);
  ct_pl_layout_add(&layout, values);
  ct_pl_layout_add(&layout, index_layout);
  ct_pl_layout_add(&layout, x);
  const int32_t sizes[3] = {ct_pl_type_size(Tag), (index_layout->dtype.bits + 7) / 8,
                            ct_pl_type_size(Tag)};
  ct_pl_layout_collapse(&layout, sizes);
  const int64_t value_step = ct_pl_byte_stride(values, (int32_t)axis);
  const int64_t index_step = indices ? ct_pl_byte_stride(indices, (int32_t)axis) : 0;
  const int64_t x_step = ct_pl_byte_stride(x, (int32_t)axis);
  char* index_data = indices ? ct_cu_tensor_bytes(indices) : nullptr;
  const unsigned grid = ct_cu_grid(exec, layout.elements * extent, ct_cu_threads);
  if (descending) {
    ct_cu_rank_kernel<Tag, true><<<grid, ct_cu_threads, 0, exec.stream>>>(
        layout, ct_cu_tensor_bytes(values), index_data, ct_cu_tensor_bytes(x), extent, value_step,
        index_step, x_step, limit);
  } else {
    ct_cu_rank_kernel<Tag, false><<<grid, ct_cu_threads, 0, exec.stream>>>(
        layout, ct_cu_tensor_bytes(values), index_data, ct_cu_tensor_bytes(x), extent, value_step,
        index_step, x_step, limit);
  }
  return ct_cu_launch_status(name);
}

template <ct_pl_type Tag>
int ct_cu_sort_run(const ct_kernel_call* call) {
  const int64_t axis = ct_cu_axis(call->inputs[0], call->attrs[0].value.i);
  const bool descending = call->attrs[1].value.b != 0;
  return ct_cu_rank_run<Tag>(call, call->outputs[0], nullptr, axis, descending, INT64_MAX, "sort");
}

template <ct_pl_type Tag>
int ct_cu_topk_run(const ct_kernel_call* call) {
  const int64_t k = call->attrs[0].value.i;
  const int64_t axis = ct_cu_axis(call->inputs[0], call->attrs[1].value.i);
  const bool largest = call->attrs[2].value.b != 0;
  return ct_cu_rank_run<Tag>(call, call->outputs[0], call->outputs[1], axis, largest, k, "topk");
}

template <ct_pl_type Tag>
int ct_cu_register_sort_type() {
  const ct_pl_type sort_signature[2] = {Tag, Tag};
  const ct_pl_type topk_signature[3] = {Tag, Tag, CT_PL_I64};
  int status = ct_cu_register("sort", sort_signature, 2, ct_cu_sort_run<Tag>, nullptr, nullptr);
  if (status == CT_OK) {
    status = ct_cu_register("topk", topk_signature, 3, ct_cu_topk_run<Tag>, nullptr, nullptr);
  }
  return status;
}

}  // namespace

int ct_cu_register_sort(void) {
  return ct_cu_for_each_tag(
      ct_cu_all_tags{}, [](auto tag) { return ct_cu_register_sort_type<decltype(tag)::value>(); });
}
