/* cu_dynamic.cu - the ops whose output size depends on the data: nonzero, boolean_mask and
 * unique_values. Each selects items with a stable compaction: the items are cut into at most
 * 1024 contiguous chunks, one block each; a first pass counts the selected items of every chunk
 * and a one-block scan turns the counts into chunk offsets and the total. The total is read back
 * (the one synchronisation of the caller's stream these ops make), the caller's allocator is
 * asked for the CUDA outputs, and a second pass walks each chunk in tiles with a block scan,
 * writing every selected item at its position: the row-major order of the items. (CUB's
 * DeviceSelect would write the selection before its count is known, so into a scratch copy of
 * the whole input, and then a copy into the output: the two passes here write the output
 * directly.) unique_values first sorts x with the CUB radix sort of cu_radix_sort.h (keys that
 * tie -0.0 with 0.0 and every nan, nan last), then selects the first element of each run of
 * equal keys, i.e. each distinct value's first occurrence, re-read from x. Scratch memory
 * (chunk offsets, selected rows, sort buffers) comes from the call's workspace, sized by each
 * op's workspace function from the input alone. */
#define CCCL_DISABLE_NVTX /* no NVTX ranges (and their dlopen) from CUB */
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include "cu_call.h"
#include "cu_layout.h"
#include "cu_radix_sort.h"
#include "plugin_geometry.h"
#include "cu_types.cuh"

namespace {

constexpr int ct_cu_threads = 256;
constexpr int ct_cu_max_chunks = 1024; /* the offsets scan is one block of this many threads */

/* ----- stable compaction -----
 * A Select has `bool test(int64_t i) const` (is item i selected?) and
 * `void emit(int64_t i, int64_t position) const` (write selected item i at `position`). */

template <class Select>
__global__ void __launch_bounds__(ct_cu_threads)
    ct_cu_count_kernel(const Select select, int64_t n, int64_t chunk, long long* counts) {
  using Reduce = cub::BlockReduce<long long, ct_cu_threads>;
  __shared__ typename Reduce::TempStorage temp;
  const int64_t begin = (int64_t)blockIdx.x * chunk;
  const int64_t end = begin + chunk < n ? begin + chunk : n;
  long long count = 0;
  for (int64_t i = begin + threadIdx.x; i < end; i += ct_cu_threads) count += select.test(i);
  count = Reduce(temp).Sum(count);
  if (threadIdx.x == 0) counts[blockIdx.x] = count;
}

/* counts[0..chunks) become exclusive offsets; counts[chunks] gets the total. */
__global__ void __launch_bounds__(ct_cu_max_chunks)
    ct_cu_chunk_offsets_kernel(long long* counts, int32_t chunks) {
  using Scan = cub::BlockScan<long long, ct_cu_max_chunks>;
  __shared__ typename Scan::TempStorage temp;
  const int32_t t = threadIdx.x;
  long long offset, total;
  Scan(temp).ExclusiveSum(t < chunks ? counts[t] : 0LL, offset, total);
  if (t < chunks) counts[t] = offset;
  if (t == 0) counts[chunks] = total;
}

template <class Select>
__global__ void __launch_bounds__(ct_cu_threads)
    ct_cu_fill_kernel(const Select select, int64_t n, int64_t chunk, const long long* offsets) {
  using Scan = cub::BlockScan<int, ct_cu_threads>;
  __shared__ typename Scan::TempStorage temp;
  const int64_t begin = (int64_t)blockIdx.x * chunk;
  const int64_t end = begin + chunk < n ? begin + chunk : n;
  int64_t base = offsets[blockIdx.x];
  for (int64_t tile = begin; tile < end; tile += ct_cu_threads) {
    const int64_t i = tile + threadIdx.x;
    const bool selected = i < end && select.test(i);
    int position, total;
    Scan(temp).ExclusiveSum(selected ? 1 : 0, position, total);
    if (selected) select.emit(i, base + position);
    base += total;
    __syncthreads(); /* temp is reused by the next tile */
  }
}

/* Bytes of a compaction's chunk offsets (at most ct_cu_max_chunks + 1 entries), aligned. */
constexpr uint64_t ct_cu_compaction_bytes =
    (sizeof(long long) * (ct_cu_max_chunks + 1) + CT_CU_WORKSPACE_ALIGNMENT - 1) /
    CT_CU_WORKSPACE_ALIGNMENT * CT_CU_WORKSPACE_ALIGNMENT;

/* Chunks of one compaction and their offsets (chunks + 1 entries of the workspace). */
struct ct_cu_compaction {
  int64_t n = 0;
  int64_t chunk = 0;
  int32_t chunks = 0;
  long long* offsets = nullptr;
};

/* The call's workspace, checked to hold `bytes`. */
int ct_cu_workspace(const ct_kernel_call* call, uint64_t bytes, const char* name, char** data) {
  *data = static_cast<char*>(call->workspace);
  if (bytes == 0 || (call->workspace && call->workspace_size >= bytes)) return CT_OK;
  return ct_cu_error(CT_ERROR_WORKSPACE_TOO_SMALL,
                     "%s needs %llu bytes of workspace; the call gives %llu", name,
                     (unsigned long long)bytes, (unsigned long long)call->workspace_size);
}

/* Counts the selected items among n and reads the total back into *count; the chunk offsets
 * go to `offsets` (ct_cu_compaction_bytes of workspace). */
template <class Select>
int ct_cu_compaction_count(const ct_cu_exec& exec, const Select& select, int64_t n,
                           long long* offsets, const char* name, ct_cu_compaction* c,
                           int64_t* count) {
  *count = 0;
  c->n = n;
  if (n == 0) return CT_OK;
  const int64_t grid = ct_cu_grid(exec, n, ct_cu_threads);
  const int64_t target = grid < ct_cu_max_chunks ? grid : ct_cu_max_chunks;
  c->chunk = ((n + target - 1) / target + ct_cu_threads - 1) / ct_cu_threads * ct_cu_threads;
  c->chunks = (int32_t)((n + c->chunk - 1) / c->chunk);
  c->offsets = offsets;
  ct_cu_count_kernel<<<c->chunks, ct_cu_threads, 0, exec.stream>>>(select, n, c->chunk, c->offsets);
  int status = ct_cu_launch_status(name);
  if (status != CT_OK) return status;
  ct_cu_chunk_offsets_kernel<<<1, ct_cu_max_chunks, 0, exec.stream>>>(c->offsets, c->chunks);
  status = ct_cu_launch_status(name);
  long long total = 0;
  if (status == CT_OK) {
    status = ct_cu_check(cudaMemcpyAsync(&total, c->offsets + c->chunks, sizeof total,
                                         cudaMemcpyDeviceToHost, exec.stream),
                         "cudaMemcpyAsync");
  }
  if (status == CT_OK) status = ct_cu_check(cudaStreamSynchronize(exec.stream), name);
  *count = total;
  return status;
}

/* Writes the selected items counted by ct_cu_compaction_count. */
template <class Select>
int ct_cu_compaction_fill(const ct_cu_exec& exec, const Select& select, const ct_cu_compaction& c,
                          const char* name) {
  ct_cu_fill_kernel<<<c.chunks, ct_cu_threads, 0, exec.stream>>>(select, c.n, c.chunk, c.offsets);
  return ct_cu_launch_status(name);
}

template <ct_pl_type Tag>
using ct_cu_storage_t = typename ct_cu_traits<Tag>::storage;

/* ----- nonzero ----- */

/* Items: the elements of x in row-major order; emits the index along every dim. */
template <ct_pl_type Tag>
struct ct_cu_nonzero_select {
  ct_pl_layout layout; /* x, collapsed */
  const char* x;
  int32_t ndim;
  int64_t shape[CT_MAX_NDIM];
  long long* indices[CT_MAX_NDIM];

  __device__ bool test(int64_t i) const {
    int64_t off[1];
    ct_cu_offsets<1>(layout, i, off);
    return ct_cu_load<Tag>(x + off[0]) != 0;
  }
  __device__ void emit(int64_t i, int64_t position) const {
    for (int32_t d = ndim - 1; d >= 0; --d) {
      indices[d][position] = i % shape[d];
      i /= shape[d];
    }
  }
};

/* nonzero's workspace: the chunk offsets. */
int ct_cu_nonzero_workspace(const ct_kernel_call* call, uint64_t* bytes, uint64_t* alignment) {
  *bytes = ct_pl_tensor_elements(call->inputs[0]) > 0 ? ct_cu_compaction_bytes : 0;
  *alignment = CT_CU_WORKSPACE_ALIGNMENT;
  return CT_OK;
}

template <ct_pl_type Tag>
int ct_cu_nonzero_run(const ct_kernel_call* call) {
  const ct_tensor* x = call->inputs[0];
  ct_cu_exec exec;
  int status = ct_cu_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  const int64_t n = ct_pl_tensor_elements(x);
  char* workspace = nullptr;
  status = ct_cu_workspace(call, n > 0 ? ct_cu_compaction_bytes : 0, "nonzero", &workspace);
  if (status != CT_OK) return status;
  ct_cu_nonzero_select<Tag> select = {};
  ct_pl_layout_begin(&select.layout, x->ndim, x->shape);
  ct_pl_layout_add(&select.layout, x);
  const int32_t sizes[1] = {ct_pl_type_size(Tag)};
  ct_pl_layout_collapse(&select.layout, sizes);
  select.x = ct_cu_tensor_bytes(x);
  select.ndim = x->ndim;
  for (int32_t d = 0; d < x->ndim; ++d) select.shape[d] = x->shape[d];
  ct_cu_compaction compaction;
  int64_t count = 0;
  status = ct_cu_compaction_count(exec, select, n, reinterpret_cast<long long*>(workspace),
                                  "nonzero", &compaction, &count);
  ct_tensor_info info = {};
  info.dtype = ct_pl_dtype(CT_PL_I64);
  info.ndim = 1;
  info.shape[0] = count;
  for (int32_t k = 0; k < x->ndim && status == CT_OK; ++k) {
    void* data = nullptr;
    status =
        ct_pl_allocate_output(ct_cu_host, call, k, &info, CT_DEVICE_CUDA, exec.device_id, &data);
    select.indices[k] = static_cast<long long*>(data);
  }
  if (status == CT_OK && count > 0) {
    status = ct_cu_compaction_fill(exec, select, compaction, "nonzero");
  }
  return status;
}

/* ----- boolean_mask ----- */

/* Items: the elements of mask in row-major order, each selecting a row of x (the dims after
 * mask's). Rows of one element are copied here; longer rows are listed by their byte offset in x
 * and copied by ct_cu_mask_rows_kernel. */
template <ct_pl_type Tag>
struct ct_cu_mask_select {
  ct_pl_layout lead; /* operands: mask, x (its leading dims) */
  const char* mask;
  const char* x;
  char* out;       /* rows of one element: the output */
  long long* rows; /* longer rows: the byte offset in x of each selected row */

  __device__ bool test(int64_t i) const {
    int64_t off[2];
    ct_cu_offsets<2>(lead, i, off);
    return ct_cu_load<CT_PL_B8>(mask + off[0]) != 0;
  }
  __device__ void emit(int64_t i, int64_t position) const {
    using S = ct_cu_storage_t<Tag>;
    int64_t off[2];
    ct_cu_offsets<2>(lead, i, off);
    if (rows) {
      rows[position] = off[1];
    } else {
      reinterpret_cast<S*>(out)[position] = *reinterpret_cast<const S*>(x + off[1]);
    }
  }
};

/* out (compact, `total` elements) gets element o % row of the row at x + rows[o / row]; `tail`
 * walks a row of x. */
template <ct_pl_type Tag>
__global__ void __launch_bounds__(ct_cu_threads)
    ct_cu_mask_rows_kernel(const ct_pl_layout tail, const char* x, const long long* rows, char* out,
                           int64_t row, int64_t total) {
  using S = ct_cu_storage_t<Tag>;
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < total; o += step) {
    int64_t off[1];
    ct_cu_offsets<1>(tail, o % row, off);
    reinterpret_cast<S*>(out)[o] = *reinterpret_cast<const S*>(x + rows[o / row] + off[0]);
  }
}

/* boolean_mask's workspace: the chunk offsets, then (rows of more than one element) room for
 * the byte offset of every row the mask could select. */
uint64_t ct_cu_boolean_mask_bytes(const ct_tensor* x, const ct_tensor* mask) {
  const int64_t lead_total = ct_pl_tensor_elements(mask);
  if (lead_total == 0) return 0;
  int64_t row = 1;
  for (int32_t d = mask->ndim; d < x->ndim; ++d) row *= x->shape[d];
  const uint64_t rows =
      row > 1 ? ct_cu_workspace_align((uint64_t)lead_total * sizeof(long long)) : 0;
  return ct_cu_compaction_bytes + rows;
}

int ct_cu_boolean_mask_workspace(const ct_kernel_call* call, uint64_t* bytes, uint64_t* alignment) {
  *bytes = ct_cu_boolean_mask_bytes(call->inputs[0], call->inputs[1]);
  *alignment = CT_CU_WORKSPACE_ALIGNMENT;
  return CT_OK;
}

template <ct_pl_type Tag>
int ct_cu_boolean_mask_run(const ct_kernel_call* call) {
  const ct_tensor* x = call->inputs[0];
  const ct_tensor* mask = call->inputs[1];
  ct_cu_exec exec;
  int status = ct_cu_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  char* workspace = nullptr;
  status = ct_cu_workspace(call, ct_cu_boolean_mask_bytes(x, mask), "boolean_mask", &workspace);
  if (status != CT_OK) return status;
  const int32_t lead = mask->ndim, tail = x->ndim - mask->ndim;
  const int32_t size = ct_pl_type_size(Tag);
  int64_t x_strides[CT_MAX_NDIM], x_lead[CT_MAX_NDIM], x_tail[CT_MAX_NDIM];
  ct_pl_tensor_strides(x, x_strides);
  for (int32_t d = 0; d < lead; ++d) x_lead[d] = x_strides[d] * size;
  for (int32_t d = 0; d < tail; ++d) x_tail[d] = x_strides[lead + d] * size;
  ct_cu_mask_select<Tag> select = {};
  ct_pl_layout_begin(&select.lead, lead, mask->shape);
  ct_pl_layout_add(&select.lead, mask);
  ct_pl_layout_add_strides(&select.lead, x_lead);
  const int32_t lead_sizes[2] = {1, size};
  const int64_t lead_total = select.lead.elements;
  ct_pl_layout_collapse(&select.lead, lead_sizes);
  ct_pl_layout tail_layout;
  ct_pl_layout_begin(&tail_layout, tail, x->shape + lead);
  ct_pl_layout_add_strides(&tail_layout, x_tail);
  const int64_t row = tail_layout.elements;
  ct_pl_layout_collapse(&tail_layout, &size);
  select.mask = ct_cu_tensor_bytes(mask);
  select.x = ct_cu_tensor_bytes(x);

  ct_cu_compaction compaction;
  int64_t count = 0;
  status = ct_cu_compaction_count(exec, select, lead_total, reinterpret_cast<long long*>(workspace),
                                  "boolean_mask", &compaction, &count);
  ct_tensor_info info = {};
  info.dtype = x->dtype;
  info.ndim = 1 + tail;
  info.shape[0] = count;
  for (int32_t d = 0; d < tail; ++d) info.shape[1 + d] = x->shape[lead + d];
  void* out = nullptr;
  if (status == CT_OK)
    status =
        ct_pl_allocate_output(ct_cu_host, call, 0, &info, CT_DEVICE_CUDA, exec.device_id, &out);
  select.out = static_cast<char*>(out);
  if (status == CT_OK && count > 0 && row > 0) {
    if (row > 1) select.rows = reinterpret_cast<long long*>(workspace + ct_cu_compaction_bytes);
    status = ct_cu_compaction_fill(exec, select, compaction, "boolean_mask");
    if (status == CT_OK && row > 1) {
      const int64_t total = count * row;
      ct_cu_mask_rows_kernel<Tag>
          <<<ct_cu_grid(exec, total, ct_cu_threads), ct_cu_threads, 0, exec.stream>>>(
              tail_layout, select.x, select.rows, select.out, row, total);
      status = ct_cu_launch_status("boolean_mask");
    }
  }
  return status;
}

/* ----- unique_values ----- */

/* Items: the sorted keys; selects the first of each run of equal keys and emits the element of
 * x at its index (row-major over `layout`). */
template <ct_pl_type Tag, class Index>
struct ct_cu_unique_select {
  const ct_cu_key_t<Tag>* keys;
  const Index* indices;
  ct_pl_layout layout; /* x, collapsed */
  const char* x;
  char* out;

  __device__ bool test(int64_t i) const { return i == 0 || keys[i] != keys[i - 1]; }
  __device__ void emit(int64_t i, int64_t position) const {
    using S = ct_cu_storage_t<Tag>;
    int64_t off[1];
    ct_cu_offsets<1>(layout, indices[i], off);
    reinterpret_cast<S*>(out)[position] = *reinterpret_cast<const S*>(x + off[0]);
  }
};

/* Plans the sort of x as one lane, then the chunk offsets after it. */
template <ct_pl_type Tag>
int ct_cu_unique_plan(int32_t device_id, int64_t n, ct_cu_lane_sort* plan) {
  int32_t key_bytes, key_bits;
  ct_cu_sort_key_size(Tag, &key_bytes, &key_bits);
  const int status = ct_cu_lane_sort_plan(device_id, 1, n, key_bytes, key_bits, 0, plan);
  if (status == CT_OK && plan->total > UINT64_MAX - ct_cu_compaction_bytes) {
    return ct_cu_error(CT_ERROR_SIZE_OVERFLOW, "unique_values: the workspace overflows");
  }
  return status;
}

template <ct_pl_type Tag>
int ct_cu_unique_values_workspace(const ct_kernel_call* call, uint64_t* bytes,
                                  uint64_t* alignment) {
  *bytes = 0;
  *alignment = CT_CU_WORKSPACE_ALIGNMENT;
  const ct_tensor* x = call->inputs[0];
  const int64_t n = ct_pl_tensor_elements(x);
  if (n == 0) return CT_OK;
  ct_cu_exec exec;
  int status = ct_cu_exec_for_device(x->device.device_id, call->stream, &exec);
  ct_cu_lane_sort plan;
  if (status == CT_OK) status = ct_cu_unique_plan<Tag>(exec.device_id, n, &plan);
  if (status == CT_OK) *bytes = plan.total + ct_cu_compaction_bytes;
  return status;
}

/* Selects the distinct values of the sorted keys (sorted indices of type Index). */
template <ct_pl_type Tag, class Index>
int ct_cu_unique_select_run(const ct_kernel_call* call, const ct_cu_exec& exec,
                            const ct_pl_layout& layout, const void* keys, const void* indices,
                            int64_t n, long long* offsets) {
  ct_cu_unique_select<Tag, Index> select = {};
  select.keys = static_cast<const ct_cu_key_t<Tag>*>(keys);
  select.indices = static_cast<const Index*>(indices);
  select.layout = layout;
  select.x = ct_cu_tensor_bytes(call->inputs[0]);
  ct_cu_compaction compaction;
  int64_t count = 0;
  int status =
      ct_cu_compaction_count(exec, select, n, offsets, "unique_values", &compaction, &count);
  ct_tensor_info info = {};
  info.dtype = call->inputs[0]->dtype;
  info.ndim = 1;
  info.shape[0] = count;
  void* out = nullptr;
  if (status == CT_OK)
    status =
        ct_pl_allocate_output(ct_cu_host, call, 0, &info, CT_DEVICE_CUDA, exec.device_id, &out);
  select.out = static_cast<char*>(out);
  if (status == CT_OK && count > 0) {
    status = ct_cu_compaction_fill(exec, select, compaction, "unique_values");
  }
  return status;
}

template <ct_pl_type Tag>
int ct_cu_unique_values_run(const ct_kernel_call* call) {
  const ct_tensor* x = call->inputs[0];
  ct_cu_exec exec;
  int status = ct_cu_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  const int64_t n = ct_pl_tensor_elements(x);
  if (n == 0) {
    ct_tensor_info info = {};
    info.dtype = x->dtype;
    info.ndim = 1;
    info.shape[0] = 0;
    void* out = nullptr;
    return ct_pl_allocate_output(ct_cu_host, call, 0, &info, CT_DEVICE_CUDA, exec.device_id, &out);
  }
  ct_cu_lane_sort plan;
  status = ct_cu_unique_plan<Tag>(exec.device_id, n, &plan);
  char* workspace = nullptr;
  if (status == CT_OK) {
    status =
        ct_cu_workspace(call, plan.total + ct_cu_compaction_bytes, "unique_values", &workspace);
  }
  if (status != CT_OK) return status;
  ct_pl_layout layout;
  ct_pl_layout_begin(&layout, x->ndim, x->shape);
  ct_pl_layout_add(&layout, x);
  const int32_t sizes[1] = {ct_pl_type_size(Tag)};
  ct_pl_layout_collapse(&layout, sizes);
  status = ct_cu_lane_sort_keys(exec, Tag, layout, ct_cu_tensor_bytes(x), false, plan, workspace,
                                "unique_values");
  const void* keys = nullptr;
  const void* indices = nullptr;
  if (status == CT_OK) {
    status = ct_cu_lane_sort_run(plan, workspace, exec.stream, "unique_values", &keys, &indices);
  }
  if (status != CT_OK) return status;
  long long* offsets = reinterpret_cast<long long*>(workspace + plan.total);
  return plan.index_bytes == 4
             ? ct_cu_unique_select_run<Tag, int32_t>(call, exec, layout, keys, indices, n, offsets)
             : ct_cu_unique_select_run<Tag, long long>(call, exec, layout, keys, indices, n,
                                                       offsets);
}

template <ct_pl_type Tag>
int ct_cu_register_dynamic_type() {
  const ct_pl_type nonzero[2] = {Tag, CT_PL_I64};
  const ct_pl_type mask[3] = {Tag, CT_PL_B8, Tag};
  const ct_pl_type unique[2] = {Tag, Tag};
  int status = ct_cu_register("nonzero", nonzero, 2, ct_cu_nonzero_run<Tag>,
                              ct_cu_nonzero_workspace, nullptr);
  if (status == CT_OK) {
    status = ct_cu_register("boolean_mask", mask, 3, ct_cu_boolean_mask_run<Tag>,
                            ct_cu_boolean_mask_workspace, nullptr);
  }
  if (status == CT_OK) {
    status = ct_cu_register("unique_values", unique, 2, ct_cu_unique_values_run<Tag>,
                            ct_cu_unique_values_workspace<Tag>, nullptr);
  }
  return status;
}

}  // namespace

int ct_cu_register_dynamic(void) {
  return ct_cu_for_each_tag(ct_cu_all_tags{}, [](auto tag) {
    return ct_cu_register_dynamic_type<decltype(tag)::value>();
  });
}
