/* cu_radix_sort.h - stable sorts of equal-length lanes of unsigned keys with CUB, their scratch
 * memory carved out of a call's workspace. The caller writes every lane contiguously into the
 * workspace as order-preserving unsigned keys (cu_sort_keys.cuh) with each element's index
 * along its lane as its value; after the sort the values are the lanes' argsorts. Only two
 * key widths (32 and 64 bits, the significant low bits given) and two index widths are ever
 * instantiated, so every dtype and both directions share a handful of CUB kernels.
 *
 * How a call sorts (ct_cu_lane_sort_plan picks, from the lane count and length):
 * - cub::DeviceRadixSort per lane, which spreads each lane over the whole device but costs
 *   several launches per lane: one lane, lanes longer than INT32_MAX, and few long lanes;
 * - cub::DeviceSegmentedRadixSort, one block per lane (all lanes in a few launches, each lane
 *   at one block's speed), in groups of lanes of at most INT32_MAX elements (its item count is
 *   an int): many lanes, short lanes.
 * Between the two, a rough cost model decides (CT_CU_SORT_* below; estimates for a Hopper GPU,
 * not yet measured). cub::DeviceSegmentedSort is not used: above a few hundred segments it
 * copies its segment-size groups to the host and synchronises the stream (unless built with
 * relocatable device code), which a kernel call must never do. */
#ifndef CTENSOR_CU_RADIX_SORT_H_
#define CTENSOR_CU_RADIX_SORT_H_

#include <type_traits>

#include "cu_call.h"
#include "plugin_layout.h"

/* The cost model: a device-wide sort takes CT_CU_SORT_LAUNCH_US plus a key per
 * 1 / CT_CU_SORT_DEVICE_KEYS_PER_US microseconds; a segmented sort runs waves of two blocks per
 * multiprocessor, each block sorting CT_CU_SORT_BLOCK_KEYS_PER_US keys a microsecond. */
#define CT_CU_SORT_LAUNCH_US 20.0
#define CT_CU_SORT_DEVICE_KEYS_PER_US 15000.0
#define CT_CU_SORT_BLOCK_KEYS_PER_US 100.0

/* Alignment of every part of the workspace (CUB's temporary storage asks for 256 bytes). */
#define CT_CU_WORKSPACE_ALIGNMENT 256

/* A planned sort of `lanes` lanes of `extent` keys, and where its buffers lie in the workspace
 * (byte offsets from its start). */
struct ct_cu_lane_sort {
  int64_t lanes = 0;
  int64_t extent = 0;
  int32_t key_bytes = 4;   /* 4 (uint32_t keys) or 8 (unsigned long long keys) */
  int32_t key_bits = 32;   /* significant low bits of each key (the rest are zero) */
  int32_t index_bytes = 4; /* 4 (int32_t values) when extent <= INT32_MAX, else 8 (int64) */
  bool segmented = false;  /* DeviceSegmentedRadixSort; else DeviceRadixSort per lane */
  int64_t group_lanes = 0; /* segmented: lanes per CUB call */
  uint64_t temp_bytes = 0; /* CUB's temporary storage (one call's) */
  uint64_t keys[2] = {0, 0};
  uint64_t values[2] = {0, 0};
  uint64_t offsets = 0; /* segmented: group_lanes + 1 int32 lane offsets */
  uint64_t temp = 0;
  uint64_t total = 0; /* bytes the sort needs from `base` on, parts aligned */
};

/* `bytes` rounded up to CT_CU_WORKSPACE_ALIGNMENT. */
inline uint64_t ct_cu_workspace_align(uint64_t bytes) {
  return (bytes + CT_CU_WORKSPACE_ALIGNMENT - 1) / CT_CU_WORKSPACE_ALIGNMENT *
         CT_CU_WORKSPACE_ALIGNMENT;
}

/* Plans the sort of `lanes` lanes of `extent` > 0 keys of `key_bytes` bytes with `key_bits`
 * significant bits on device `device_id` (made current by the caller), its buffers laid out
 * from byte offset `base` of the workspace (a multiple of CT_CU_WORKSPACE_ALIGNMENT). Asks CUB
 * for its temporary storage size (no device memory is touched). CT_ERROR_SIZE_OVERFLOW when
 * the sizes overflow. */
int ct_cu_lane_sort_plan(int32_t device_id, int64_t lanes, int64_t extent, int32_t key_bytes,
                         int32_t key_bits, uint64_t base, ct_cu_lane_sort* plan);

/* Sorts, on `stream`, the keys at workspace + plan.keys[0] with their values at
 * workspace + plan.values[0] (and, segmented, the lane offsets at workspace + plan.offsets:
 * entry j is j * extent for j <= group_lanes), each lane stably and ascending. `*sorted_keys`
 * and `*sorted_values` receive the buffers that then hold the result (either of the two). */
int ct_cu_lane_sort_run(const ct_cu_lane_sort& plan, char* workspace, cudaStream_t stream,
                        const char* what, const void** sorted_keys, const void** sorted_values);

/* The unsigned key type of a dtype tag (ct_cu_sort_key_size's width). */
template <ct_pl_type Tag>
using ct_cu_key_t =
    std::conditional_t<Tag == CT_PL_I64 || Tag == CT_PL_F64, unsigned long long, uint32_t>;

/* The key width of dtype `tag`: *bytes 4 (bool, int32, float16, float32) or 8 (int64,
 * float64), *bits the significant low bits (8, 16, 32 or 64). */
void ct_cu_sort_key_size(ct_pl_type tag, int32_t* bytes, int32_t* bits);

/* Writes every lane of x into the plan's first key and value buffers, on exec's stream: item i
 * = lane * extent + k is element i of `layout` (row-major; one operand, x's byte strides; the
 * sort axis last), its key the order-preserving unsigned image of the value (nan canonical and
 * after +inf, -0.0 as +0.0, signed ints with the sign bit flipped, all bits inverted when
 * `descending`, so that ascending key order is the op's order and equal keys keep index order)
 * and its value k. Segmented plans also get their lane offsets. */
int ct_cu_lane_sort_keys(const ct_cu_exec& exec, ct_pl_type tag, const ct_pl_layout& layout,
                         const char* x, bool descending, const ct_cu_lane_sort& plan,
                         char* workspace, const char* what);

#endif /* CTENSOR_CU_RADIX_SORT_H_ */
