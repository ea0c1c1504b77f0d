/* cu_call.h - where one call runs: the device of its tensors (made current for the call and
 * restored after, as the frameworks' device guards do), the caller's stream, and checks that
 * every tensor's data is device memory of that device before a kernel touches it. */
#ifndef CTENSOR_CU_CALL_H_
#define CTENSOR_CU_CALL_H_

#include "cu_plugin.h"
#include "plugin_layout.h"

/* Makes `device_id` the current device until destroyed; restores the caller's. */
class ct_cu_device_guard {
 public:
  ct_cu_device_guard() = default;
  ~ct_cu_device_guard();
  ct_cu_device_guard(const ct_cu_device_guard&) = delete;
  ct_cu_device_guard& operator=(const ct_cu_device_guard&) = delete;
  /* CT_OK, or CT_ERROR_UNSUPPORTED_DEVICE for an index out of range. */
  int enter(int32_t device_id);

 private:
  int previous_ = -1;
};

/* One call's device and stream. */
struct ct_cu_exec {
  int32_t device_id = 0;
  cudaStream_t stream = nullptr;
  ct_cu_device_guard guard;
};

/* Enters the device of the call's tensors and checks that each tensor's data (when it has
 * elements) is memory that device can read: device or managed memory, or host memory
 * registered with CUDA, or any host memory where the device reads pageable memory (HMM, ATS).
 * Refuses other host pointers, which would fault in the kernel. */
int ct_cu_exec_for_call(const ct_kernel_call* call, ct_cu_exec* exec);

/* Enters `device_id` with `stream` (allocation, copies, synchronisation). */
int ct_cu_exec_for_device(int32_t device_id, void* stream, ct_cu_exec* exec);

/* Reports a failed launch (or an earlier asynchronous fault surfacing now) for `what`. */
int ct_cu_launch_status(const char* what);

/* First byte of `t`'s data (data + byte_offset). */
inline char* ct_cu_tensor_bytes(const ct_tensor* t) {
  return static_cast<char*>(t->data) + t->byte_offset;
}

/* A grid of `threads`-thread blocks for a grid-stride loop over `n` items: enough blocks to
 * fill the device, no more than the items need. */
unsigned ct_cu_grid(const ct_cu_exec& exec, int64_t n, int threads);

/* The `bytes` of scratch, aligned to `alignment`, that a kernel's workspace function asked for:
 * the call's workspace. The registry gives a kernel at least what its workspace function asked
 * for, so CT_ERROR_WORKSPACE_TOO_SMALL here means the run and the workspace function disagree
 * (`what` names the op). */
int ct_cu_workspace(void* workspace, uint64_t workspace_size, uint64_t bytes, uint64_t alignment,
                    const char* what, void** scratch);

/* Scans an int32/int64 index tensor on the device for a value outside [lo, hi): `*found` is set
 * when one is, and `*value` is one such value (`what` names the op in launch errors). Index-taking
 * ops run it before writing. */
int ct_cu_find_index_outside(const ct_cu_exec& exec, const ct_tensor* indices, int64_t lo,
                             int64_t hi, const char* what, bool* found, int64_t* value);

#endif /* CTENSOR_CU_CALL_H_ */
