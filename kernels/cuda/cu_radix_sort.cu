/* cu_radix_sort.cu - the CUB sorts behind cu_radix_sort.h: DeviceRadixSort and
 * DeviceSegmentedRadixSort on DoubleBuffers (the sort ping-pongs between two key and two value
 * buffers of the workspace, so CUB needs no copy of its own), instantiated for 32- and 64-bit
 * unsigned keys with int32 or int64 values (the segmented sort, whose item count is an int,
 * only with int32 values). */
#define CCCL_DISABLE_NVTX /* no NVTX ranges (and their dlopen) from CUB */
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>

#include <limits.h>
#include <math.h>

#include "cu_layout.h"
#include "cu_radix_sort.h"
#include "cu_types.cuh"

namespace {

constexpr int ct_cu_key_threads = 256;

/* ----- order-preserving keys ----- */

/* The value at `p` as an unsigned key whose ascending order is the ascending order of the
 * values: nan (made canonical, so that every nan ties) after +inf, -0.0 equal to +0.0 (made
 * +0.0), negative floats with all bits inverted and the rest with the sign bit set, signed
 * ints with the sign bit flipped, bool as its byte (the order the rank kernel compares). */
template <ct_pl_type Tag>
__device__ __forceinline__ ct_cu_key_t<Tag> ct_cu_order_key(const char* p) {
  if constexpr (Tag == CT_PL_B8) {
    return *reinterpret_cast<const uint8_t*>(p);
  } else if constexpr (Tag == CT_PL_I32) {
    return static_cast<uint32_t>(*reinterpret_cast<const int32_t*>(p)) ^ 0x80000000u;
  } else if constexpr (Tag == CT_PL_I64) {
    return static_cast<unsigned long long>(*reinterpret_cast<const long long*>(p)) ^
           0x8000000000000000ull;
  } else if constexpr (Tag == CT_PL_F16) {
    uint32_t u = *reinterpret_cast<const uint16_t*>(p);
    if ((u & 0x7FFFu) > 0x7C00u) u = 0x7E00u;
    if (u == 0x8000u) u = 0;
    return (u & 0x8000u) ? (~u & 0xFFFFu) : (u | 0x8000u);
  } else if constexpr (Tag == CT_PL_F32) {
    uint32_t u = *reinterpret_cast<const uint32_t*>(p);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) u = 0x7FC00000u;
    if (u == 0x80000000u) u = 0;
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  } else {
    unsigned long long u = *reinterpret_cast<const unsigned long long*>(p);
    if ((u & 0x7FFFFFFFFFFFFFFFull) > 0x7FF0000000000000ull) u = 0x7FF8000000000000ull;
    if (u == 0x8000000000000000ull) u = 0;
    return (u & 0x8000000000000000ull) ? ~u : (u | 0x8000000000000000ull);
  }
}

/* keys[i] = key of element i of `layout` ^ flip, values[i] = i % extent; offsets[j] =
 * j * extent for j < offset_count (offsets may be null). */
template <ct_pl_type Tag, class Index>
__global__ void __launch_bounds__(ct_cu_key_threads)
    ct_cu_sort_keys_kernel(const ct_pl_layout layout, const char* x, int64_t extent,
                           ct_cu_key_t<Tag>* keys, Index* values, ct_cu_key_t<Tag> flip,
                           int32_t* offsets, int64_t offset_count) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  const int64_t first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  for (int64_t i = first; i < layout.elements; i += step) {
    int64_t off[1];
    ct_cu_offsets<1>(layout, i, off);
    keys[i] = ct_cu_order_key<Tag>(x + off[0]) ^ flip;
    values[i] = static_cast<Index>(i % extent);
  }
  if (offsets) {
    for (int64_t j = first; j < offset_count; j += step) offsets[j] = (int32_t)(j * extent);
  }
}

template <ct_pl_type Tag, class Index>
int ct_cu_launch_sort_keys(const ct_cu_exec& exec, const ct_pl_layout& layout, const char* x,
                           bool descending, const ct_cu_lane_sort& plan, char* workspace,
                           const char* what) {
  using Key = ct_cu_key_t<Tag>;
  const Key flip = !descending           ? Key(0)
                   : plan.key_bits == 64 ? ~Key(0)
                                         : static_cast<Key>((1ull << plan.key_bits) - 1);
  int32_t* offsets =
      plan.segmented ? reinterpret_cast<int32_t*>(workspace + plan.offsets) : nullptr;
  const int64_t offset_count = plan.segmented ? plan.group_lanes + 1 : 0;
  const int64_t items = layout.elements > offset_count ? layout.elements : offset_count;
  ct_cu_sort_keys_kernel<Tag, Index>
      <<<ct_cu_grid(exec, items, ct_cu_key_threads), ct_cu_key_threads, 0, exec.stream>>>(
          layout, x, plan.extent, reinterpret_cast<Key*>(workspace + plan.keys[0]),
          reinterpret_cast<Index*>(workspace + plan.values[0]), flip, offsets, offset_count);
  return ct_cu_launch_status(what);
}

template <ct_pl_type Tag>
int ct_cu_sort_keys_of(const ct_cu_exec& exec, const ct_pl_layout& layout, const char* x,
                       bool descending, const ct_cu_lane_sort& plan, char* workspace,
                       const char* what) {
  return plan.index_bytes == 4 ? ct_cu_launch_sort_keys<Tag, int32_t>(exec, layout, x, descending,
                                                                      plan, workspace, what)
                               : ct_cu_launch_sort_keys<Tag, long long>(exec, layout, x, descending,
                                                                        plan, workspace, what);
}

/* ----- the CUB sorts ----- */

/* a * b into *out, false on overflow (non-negative operands). */
bool ct_cu_mul(uint64_t a, uint64_t b, uint64_t* out) {
  return !__builtin_mul_overflow(a, b, out);
}

/* Appends `bytes` at *offset (aligned), recording its start in *at. */
bool ct_cu_carve(uint64_t* offset, uint64_t bytes, uint64_t* at) {
  *at = *offset;
  uint64_t end;
  if (__builtin_add_overflow(*offset, bytes, &end)) return false;
  if (end > UINT64_MAX - CT_CU_WORKSPACE_ALIGNMENT) return false;
  *offset = ct_cu_workspace_align(end);
  return true;
}

/* One DeviceRadixSort call over `n` items (temp null: the size query). */
template <class Key, class Index>
cudaError_t ct_cu_device_sort(void* temp, size_t& temp_bytes, Key* keys0, Key* keys1,
                              Index* values0, Index* values1, int64_t n, int bits,
                              cudaStream_t stream, int* selector) {
  cub::DoubleBuffer<Key> keys(keys0, keys1);
  cub::DoubleBuffer<Index> values(values0, values1);
  const cudaError_t code =
      cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys, values, n, 0, bits, stream);
  if (selector) *selector = values.selector;
  return code;
}

/* One DeviceSegmentedRadixSort call over `lanes` lanes of `extent` items (lanes * extent fits
 * an int; temp null: the size query). */
template <class Key>
cudaError_t ct_cu_segmented_sort(void* temp, size_t& temp_bytes, Key* keys0, Key* keys1,
                                 int32_t* values0, int32_t* values1, int64_t lanes, int64_t extent,
                                 const int32_t* offsets, int bits, cudaStream_t stream,
                                 int* selector) {
  cub::DoubleBuffer<Key> keys(keys0, keys1);
  cub::DoubleBuffer<int32_t> values(values0, values1);
  const cudaError_t code = cub::DeviceSegmentedRadixSort::SortPairs(
      temp, temp_bytes, keys, values, (int)(lanes * extent), (int)lanes, offsets, offsets + 1, 0,
      bits, stream);
  if (selector) *selector = values.selector;
  return code;
}

/* The size query of the plan's CUB call. */
template <class Key>
cudaError_t ct_cu_temp_bytes(const ct_cu_lane_sort& plan, size_t* bytes) {
  size_t temp_bytes = 0;
  cudaError_t code;
  if (plan.segmented) {
    code = ct_cu_segmented_sort<Key>(nullptr, temp_bytes, nullptr, nullptr, nullptr, nullptr,
                                     plan.group_lanes, plan.extent, nullptr, plan.key_bits, nullptr,
                                     nullptr);
  } else if (plan.index_bytes == 4) {
    code = ct_cu_device_sort<Key, int32_t>(nullptr, temp_bytes, nullptr, nullptr, nullptr, nullptr,
                                           plan.extent, plan.key_bits, nullptr, nullptr);
  } else {
    code = ct_cu_device_sort<Key, long long>(nullptr, temp_bytes, nullptr, nullptr, nullptr,
                                             nullptr, plan.extent, plan.key_bits, nullptr, nullptr);
  }
  *bytes = temp_bytes;
  return code;
}

/* Moves the result of a call that ended in the other value buffer than the first call's
 * (`wanted`) there, so that every lane's result lies in one buffer. The keys are not moved:
 * callers that read keys sort one call's worth. */
int ct_cu_gather_result(const ct_cu_lane_sort& plan, char* workspace, int wanted, int got,
                        uint64_t first, uint64_t count, cudaStream_t stream) {
  if (wanted == got) return CT_OK;
  const uint64_t bytes = count * (uint64_t)plan.index_bytes;
  const uint64_t at = first * (uint64_t)plan.index_bytes;
  return ct_cu_check(
      cudaMemcpyAsync(workspace + plan.values[wanted] + at, workspace + plan.values[got] + at,
                      bytes, cudaMemcpyDeviceToDevice, stream),
      "cudaMemcpyAsync (sorted lane indices)");
}

template <class Key, class Index>
int ct_cu_lane_sort_typed(const ct_cu_lane_sort& plan, char* workspace, cudaStream_t stream,
                          const char* what, int* selector) {
  Key* keys0 = reinterpret_cast<Key*>(workspace + plan.keys[0]);
  Key* keys1 = reinterpret_cast<Key*>(workspace + plan.keys[1]);
  Index* values0 = reinterpret_cast<Index*>(workspace + plan.values[0]);
  Index* values1 = reinterpret_cast<Index*>(workspace + plan.values[1]);
  void* temp = workspace + plan.temp;
  int first = -1;
  if (plan.segmented) {
    if constexpr (sizeof(Index) == 4) {
      const int32_t* offsets = reinterpret_cast<const int32_t*>(workspace + plan.offsets);
      for (int64_t lane = 0; lane < plan.lanes; lane += plan.group_lanes) {
        const int64_t count =
            plan.lanes - lane < plan.group_lanes ? plan.lanes - lane : plan.group_lanes;
        const int64_t at = lane * plan.extent;
        size_t temp_bytes = plan.temp_bytes;
        int got = 0;
        int status =
            ct_cu_check(ct_cu_segmented_sort<Key>(temp, temp_bytes, keys0 + at, keys1 + at,
                                                  values0 + at, values1 + at, count, plan.extent,
                                                  offsets, plan.key_bits, stream, &got),
                        what);
        if (status == CT_OK && first < 0) first = got;
        if (status == CT_OK) {
          status = ct_cu_gather_result(plan, workspace, first, got, (uint64_t)at,
                                       (uint64_t)(count * plan.extent), stream);
        }
        if (status != CT_OK) return status;
      }
    }
  } else {
    for (int64_t lane = 0; lane < plan.lanes; ++lane) {
      const int64_t at = lane * plan.extent;
      size_t temp_bytes = plan.temp_bytes;
      int got = 0;
      int status = ct_cu_check(
          ct_cu_device_sort<Key, Index>(temp, temp_bytes, keys0 + at, keys1 + at, values0 + at,
                                        values1 + at, plan.extent, plan.key_bits, stream, &got),
          what);
      if (status == CT_OK && first < 0) first = got;
      if (status == CT_OK) {
        status = ct_cu_gather_result(plan, workspace, first, got, (uint64_t)at,
                                     (uint64_t)plan.extent, stream);
      }
      if (status != CT_OK) return status;
    }
  }
  *selector = first < 0 ? 0 : first;
  return CT_OK;
}

}  // namespace

int ct_cu_lane_sort_plan(int32_t device_id, int64_t lanes, int64_t extent, int32_t key_bytes,
                         int32_t key_bits, uint64_t base, ct_cu_lane_sort* plan) {
  *plan = ct_cu_lane_sort();
  plan->lanes = lanes;
  plan->extent = extent;
  plan->key_bytes = key_bytes;
  plan->key_bits = key_bits;
  plan->index_bytes = extent <= INT32_MAX ? 4 : 8;
  /* A segmented call needs at least one lane within its int item count. */
  if (plan->index_bytes == 4 && lanes > 1) {
    const double blocks = 2.0 * ct_cu_multiprocessors(device_id);
    const double waves = ceil((double)lanes / (blocks > 0 ? blocks : 1.0));
    const double device_us =
        (double)lanes * (CT_CU_SORT_LAUNCH_US + (double)extent / CT_CU_SORT_DEVICE_KEYS_PER_US);
    const double segmented_us = waves * (double)extent / CT_CU_SORT_BLOCK_KEYS_PER_US;
    plan->segmented = segmented_us < device_us;
  }
  if (plan->segmented) {
    plan->group_lanes = INT32_MAX / extent;
    if (plan->group_lanes > lanes) plan->group_lanes = lanes;
  }
  uint64_t n, key_total, index_total, offsets_total = 0;
  bool ok = ct_cu_mul((uint64_t)lanes, (uint64_t)extent, &n) &&
            ct_cu_mul(n, (uint64_t)key_bytes, &key_total) &&
            ct_cu_mul(n, (uint64_t)plan->index_bytes, &index_total);
  if (ok && plan->segmented) offsets_total = ((uint64_t)plan->group_lanes + 1) * sizeof(int32_t);
  uint64_t offset = base;
  ok = ok && ct_cu_carve(&offset, key_total, &plan->keys[0]) &&
       ct_cu_carve(&offset, key_total, &plan->keys[1]) &&
       ct_cu_carve(&offset, index_total, &plan->values[0]) &&
       ct_cu_carve(&offset, index_total, &plan->values[1]) &&
       ct_cu_carve(&offset, offsets_total, &plan->offsets);
  if (!ok) {
    return ct_cu_error(CT_ERROR_SIZE_OVERFLOW,
                       "sorting %lld lanes of %lld elements needs more workspace than 64-bit "
                       "sizes count",
                       (long long)lanes, (long long)extent);
  }
  size_t temp_bytes = 0;
  const cudaError_t code = key_bytes == 4
                               ? ct_cu_temp_bytes<uint32_t>(*plan, &temp_bytes)
                               : ct_cu_temp_bytes<unsigned long long>(*plan, &temp_bytes);
  const int status = ct_cu_check(code, "CUB radix sort (temporary storage size)");
  if (status != CT_OK) return status;
  plan->temp_bytes = temp_bytes;
  if (!ct_cu_carve(&offset, temp_bytes, &plan->temp)) {
    return ct_cu_error(CT_ERROR_SIZE_OVERFLOW, "the sort's workspace overflows 64-bit sizes");
  }
  plan->total = offset;
  return CT_OK;
}

void ct_cu_sort_key_size(ct_pl_type tag, int32_t* bytes, int32_t* bits) {
  switch (tag) {
    case CT_PL_B8:
      *bytes = 4, *bits = 8;
      return;
    case CT_PL_F16:
      *bytes = 4, *bits = 16;
      return;
    case CT_PL_I64:
    case CT_PL_F64:
      *bytes = 8, *bits = 64;
      return;
    default:
      *bytes = 4, *bits = 32;
      return;
  }
}

int ct_cu_lane_sort_keys(const ct_cu_exec& exec, ct_pl_type tag, const ct_pl_layout& layout,
                         const char* x, bool descending, const ct_cu_lane_sort& plan,
                         char* workspace, const char* what) {
  switch (tag) {
    case CT_PL_B8:
      return ct_cu_sort_keys_of<CT_PL_B8>(exec, layout, x, descending, plan, workspace, what);
    case CT_PL_I32:
      return ct_cu_sort_keys_of<CT_PL_I32>(exec, layout, x, descending, plan, workspace, what);
    case CT_PL_I64:
      return ct_cu_sort_keys_of<CT_PL_I64>(exec, layout, x, descending, plan, workspace, what);
    case CT_PL_F16:
      return ct_cu_sort_keys_of<CT_PL_F16>(exec, layout, x, descending, plan, workspace, what);
    case CT_PL_F32:
      return ct_cu_sort_keys_of<CT_PL_F32>(exec, layout, x, descending, plan, workspace, what);
    case CT_PL_F64:
      return ct_cu_sort_keys_of<CT_PL_F64>(exec, layout, x, descending, plan, workspace, what);
    default:
      return ct_cu_error(CT_ERROR_UNSUPPORTED_DTYPE, "%s: no sort keys for this dtype", what);
  }
}

int ct_cu_lane_sort_run(const ct_cu_lane_sort& plan, char* workspace, cudaStream_t stream,
                        const char* what, const void** sorted_keys, const void** sorted_values) {
  int selector = 0;
  int status;
  if (plan.key_bytes == 4) {
    status =
        plan.index_bytes == 4
            ? ct_cu_lane_sort_typed<uint32_t, int32_t>(plan, workspace, stream, what, &selector)
            : ct_cu_lane_sort_typed<uint32_t, long long>(plan, workspace, stream, what, &selector);
  } else {
    status = plan.index_bytes == 4 ? ct_cu_lane_sort_typed<unsigned long long, int32_t>(
                                         plan, workspace, stream, what, &selector)
                                   : ct_cu_lane_sort_typed<unsigned long long, long long>(
                                         plan, workspace, stream, what, &selector);
  }
  *sorted_keys = workspace + plan.keys[selector];
  *sorted_values = workspace + plan.values[selector];
  return status;
}
