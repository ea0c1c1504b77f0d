/* cu_dynamic.cu - the ops whose output size depends on the data: nonzero, boolean_mask and
 * unique_values. Each selects items with a stable compaction: the items are cut into at most
 * 1024 contiguous chunks, one block each; a first pass counts the selected items of every chunk
 * and a one-block scan turns the counts into chunk offsets and the total. The total is read back
 * (one synchronisation of the caller's stream), the caller's allocator is asked for the CUDA
 * outputs, and a second pass walks each chunk in tiles with a block scan, writing every selected
 * item at its position: the row-major order of the items. unique_values first gathers x and
 * sorts it with CUB's stable merge sort (nan last, -0.0 == 0.0), then selects the first element
 * of each run of equal values, i.e. each distinct value's first occurrence. Scratch memory
 * (chunk counts, selected rows, sort keys) is the plugin's own, allocated on the stream. */
#define CCCL_DISABLE_NVTX /* no NVTX ranges (and their dlopen) from CUB */
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_merge_sort.cuh>

#include "cu_call.h"
#include "cu_layout.h"
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

/* Chunks of one compaction and their offsets (device memory, chunks + 1 entries). */
struct ct_cu_compaction {
  int64_t n = 0;
  int64_t chunk = 0;
  int32_t chunks = 0;
  long long* offsets = nullptr;
};

/* Frees `data` on the stream; returns `status`, or the failure to free when status is CT_OK. */
int ct_cu_release(const ct_cu_exec& exec, void* data, int status) {
  if (!data) return status;
  const int freed = ct_cu_check(cudaFreeAsync(data, exec.stream), "cudaFreeAsync");
  return status != CT_OK ? status : freed;
}

int ct_cu_scratch(const ct_cu_exec& exec, int64_t bytes, void** data) {
  return ct_cu_check(cudaMallocAsync(data, (size_t)bytes, exec.stream), "cudaMallocAsync");
}

/* Counts the selected items among n and reads the total back into *count. */
template <class Select>
int ct_cu_compaction_count(const ct_cu_exec& exec, const Select& select, int64_t n,
                           const char* name, ct_cu_compaction* c, int64_t* count) {
  *count = 0;
  c->n = n;
  if (n == 0) return CT_OK;
  const int64_t grid = ct_cu_grid(exec, n, ct_cu_threads);
  const int64_t target = grid < ct_cu_max_chunks ? grid : ct_cu_max_chunks;
  c->chunk = ((n + target - 1) / target + ct_cu_threads - 1) / ct_cu_threads * ct_cu_threads;
  c->chunks = (int32_t)((n + c->chunk - 1) / c->chunk);
  int status = ct_cu_scratch(exec, (int64_t)sizeof(long long) * (c->chunks + 1),
                             reinterpret_cast<void**>(&c->offsets));
  if (status != CT_OK) return status;
  ct_cu_count_kernel<<<c->chunks, ct_cu_threads, 0, exec.stream>>>(select, n, c->chunk, c->offsets);
  status = ct_cu_launch_status(name);
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

template <ct_pl_type Tag>
int ct_cu_nonzero_run(const ct_kernel_call* call) {
  const ct_tensor* x = call->inputs[0];
  ct_cu_exec exec;
  int status = ct_cu_exec_for_call(call, &exec);
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
  status = ct_cu_compaction_count(exec, select, ct_pl_tensor_elements(x), "nonzero", &compaction,
                                  &count);
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
  return ct_cu_release(exec, compaction.offsets, status);
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

template <ct_pl_type Tag>
int ct_cu_boolean_mask_run(const ct_kernel_call* call) {
  const ct_tensor* x = call->inputs[0];
  const ct_tensor* mask = call->inputs[1];
  ct_cu_exec exec;
  int status = ct_cu_exec_for_call(call, &exec);
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
  status = ct_cu_compaction_count(exec, select, lead_total, "boolean_mask", &compaction, &count);
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
    if (row > 1) {
      status = ct_cu_scratch(exec, (int64_t)sizeof(long long) * count,
                             reinterpret_cast<void**>(&select.rows));
    }
    if (status == CT_OK) status = ct_cu_compaction_fill(exec, select, compaction, "boolean_mask");
    if (status == CT_OK && row > 1) {
      const int64_t total = count * row;
      ct_cu_mask_rows_kernel<Tag>
          <<<ct_cu_grid(exec, total, ct_cu_threads), ct_cu_threads, 0, exec.stream>>>(
              tail_layout, select.x, select.rows, select.out, row, total);
      status = ct_cu_launch_status("boolean_mask");
    }
  }
  status = ct_cu_release(exec, select.rows, status);
  return ct_cu_release(exec, compaction.offsets, status);
}

/* ----- unique_values ----- */

/* The ascending order: nan after everything, -0.0 equal to 0.0. */
template <ct_pl_type Tag>
struct ct_cu_key_less {
  __device__ bool operator()(const ct_cu_storage_t<Tag>& a, const ct_cu_storage_t<Tag>& b) const {
    const auto u = ct_cu_load<Tag>(reinterpret_cast<const char*>(&a));
    const auto v = ct_cu_load<Tag>(reinterpret_cast<const char*>(&b));
    return u < v || (v != v && u == u);
  }
};

/* keys[i] = element i of x, row-major. */
template <ct_pl_type Tag>
__global__ void __launch_bounds__(ct_cu_threads)
    ct_cu_gather_kernel(const ct_pl_layout layout, const char* x, ct_cu_storage_t<Tag>* keys) {
  using S = ct_cu_storage_t<Tag>;
  const int64_t n = layout.elements;
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
    int64_t off[1];
    ct_cu_offsets<1>(layout, i, off);
    keys[i] = *reinterpret_cast<const S*>(x + off[0]);
  }
}

/* Items: the sorted keys; selects the first of each run of equal values (nan equals nan). */
template <ct_pl_type Tag>
struct ct_cu_unique_select {
  const ct_cu_storage_t<Tag>* keys;
  char* out;

  __device__ bool test(int64_t i) const {
    if (i == 0) return true;
    const auto u = ct_cu_load<Tag>(reinterpret_cast<const char*>(keys + i - 1));
    const auto v = ct_cu_load<Tag>(reinterpret_cast<const char*>(keys + i));
    return !(u == v || (u != u && v != v));
  }
  __device__ void emit(int64_t i, int64_t position) const {
    ct_cu_store<Tag>(out + position * (int64_t)sizeof(ct_cu_storage_t<Tag>),
                     ct_cu_load<Tag>(reinterpret_cast<const char*>(keys + i)));
  }
};

/* Gathers x into `keys` (n elements) and sorts them stably. */
template <ct_pl_type Tag>
int ct_cu_sorted_keys(const ct_cu_exec& exec, const ct_tensor* x, int64_t n,
                      ct_cu_storage_t<Tag>* keys) {
  ct_pl_layout layout;
  ct_pl_layout_begin(&layout, x->ndim, x->shape);
  ct_pl_layout_add(&layout, x);
  const int32_t sizes[1] = {ct_pl_type_size(Tag)};
  ct_pl_layout_collapse(&layout, sizes);
  ct_cu_gather_kernel<Tag><<<ct_cu_grid(exec, n, ct_cu_threads), ct_cu_threads, 0, exec.stream>>>(
      layout, ct_cu_tensor_bytes(x), keys);
  int status = ct_cu_launch_status("unique_values");
  size_t temp_bytes = 0;
  if (status == CT_OK) {
    status = ct_cu_check(cub::DeviceMergeSort::StableSortKeys(nullptr, temp_bytes, keys, n,
                                                              ct_cu_key_less<Tag>(), exec.stream),
                         "unique_values (sort)");
  }
  void* temp = nullptr;
  if (status == CT_OK) status = ct_cu_scratch(exec, (int64_t)temp_bytes, &temp);
  if (status == CT_OK) {
    status = ct_cu_check(cub::DeviceMergeSort::StableSortKeys(temp, temp_bytes, keys, n,
                                                              ct_cu_key_less<Tag>(), exec.stream),
                         "unique_values (sort)");
  }
  return ct_cu_release(exec, temp, status);
}

template <ct_pl_type Tag>
int ct_cu_unique_values_run(const ct_kernel_call* call) {
  const ct_tensor* x = call->inputs[0];
  ct_cu_exec exec;
  int status = ct_cu_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  const int64_t n = ct_pl_tensor_elements(x);
  ct_cu_unique_select<Tag> select = {};
  ct_cu_storage_t<Tag>* keys = nullptr;
  if (n > 0) {
    status = ct_cu_scratch(exec, n * ct_pl_type_size(Tag), reinterpret_cast<void**>(&keys));
    if (status == CT_OK) status = ct_cu_sorted_keys<Tag>(exec, x, n, keys);
  }
  select.keys = keys;
  ct_cu_compaction compaction;
  int64_t count = 0;
  if (status == CT_OK) {
    status = ct_cu_compaction_count(exec, select, n, "unique_values", &compaction, &count);
  }
  ct_tensor_info info = {};
  info.dtype = x->dtype;
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
  status = ct_cu_release(exec, compaction.offsets, status);
  return ct_cu_release(exec, keys, status);
}

template <ct_pl_type Tag>
int ct_cu_register_dynamic_type() {
  const ct_pl_type nonzero[2] = {Tag, CT_PL_I64};
  const ct_pl_type mask[3] = {Tag, CT_PL_B8, Tag};
  const ct_pl_type unique[2] = {Tag, Tag};
  int status = ct_cu_register("nonzero", nonzero, 2, ct_cu_nonzero_run<Tag>, nullptr, nullptr);
  if (status == CT_OK) {
    status = ct_cu_register("boolean_mask", mask, 3, ct_cu_boolean_mask_run<Tag>, nullptr, nullptr);
  }
  if (status == CT_OK) {
    status =
        ct_cu_register("unique_values", unique, 2, ct_cu_unique_values_run<Tag>, nullptr, nullptr);
  }
  return status;
}

}  // namespace

int ct_cu_register_dynamic(void) {
  return ct_cu_for_each_tag(ct_cu_all_tags{}, [](auto tag) {
    return ct_cu_register_dynamic_type<decltype(tag)::value>();
  });
}
