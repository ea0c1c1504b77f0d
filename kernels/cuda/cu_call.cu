/* cu_call.cu - device guards, pointer checks and launch status for one call. */
#include "cu_call.h"

ct_cu_device_guard::~ct_cu_device_guard() {
  if (previous_ >= 0) cudaSetDevice(previous_);
}

int ct_cu_device_guard::enter(int32_t device_id) {
  if (device_id < 0 || device_id >= ct_cu_device_count()) {
    return ct_cu_error(CT_ERROR_UNSUPPORTED_DEVICE, "no CUDA device %d (%d found)", (int)device_id,
                       (int)ct_cu_device_count());
  }
  int current = -1;
  int status = ct_cu_check(cudaGetDevice(&current), "cudaGetDevice");
  if (status != CT_OK) return status;
  if (current == device_id) return CT_OK;
  status = ct_cu_check(cudaSetDevice(device_id), "cudaSetDevice");
  if (status == CT_OK) previous_ = current;
  return status;
}

static int ct_cu_check_pointer(const ct_tensor* t, int32_t device_id, const char* role,
                               int32_t index) {
  if (ct_pl_tensor_elements(t) == 0) return CT_OK;
  cudaPointerAttributes attributes;
  const cudaError_t code = cudaPointerGetAttributes(&attributes, ct_cu_tensor_bytes(t));
  if (code != cudaSuccess) {
    cudaGetLastError();
    return ct_cu_error(CT_ERROR_INVALID_ARGUMENT,
                       "%s %d: data %p is not CUDA memory (cudaPointerGetAttributes: %s)", role,
                       (int)index, t->data, cudaGetErrorString(code));
  }
  switch (attributes.type) {
    case cudaMemoryTypeManaged:
    case cudaMemoryTypeHost:
      return CT_OK;
    case cudaMemoryTypeDevice:
      if (attributes.device == device_id) return CT_OK;
      return ct_cu_error(CT_ERROR_DEVICE_MISMATCH,
                         "%s %d: data is memory of CUDA device %d, the tensor says device %d", role,
                         (int)index, attributes.device, (int)device_id);
    default:
      if (ct_cu_pageable_memory_access(device_id)) return CT_OK;
      return ct_cu_error(CT_ERROR_INVALID_ARGUMENT,
                         "%s %d: data %p is not CUDA device memory (a host pointer? pass it "
                         "as a CPU tensor)",
                         role, (int)index, t->data);
  }
}

int ct_cu_exec_for_call(const ct_kernel_call* call, ct_cu_exec* exec) {
  const ct_tensor* first = nullptr;
  for (int32_t i = 0; i < call->num_inputs + call->num_outputs && !first; ++i) {
    first = i < call->num_inputs ? call->inputs[i] : call->outputs[i - call->num_inputs];
  }
  exec->device_id = first ? first->device.device_id : 0;
  exec->stream = static_cast<cudaStream_t>(call->stream);
  int status = exec->guard.enter(exec->device_id);
  for (int32_t i = 0; i < call->num_inputs && status == CT_OK; ++i) {
    if (call->inputs[i]) status = ct_cu_check_pointer(call->inputs[i], exec->device_id, "input", i);
  }
  for (int32_t i = 0; i < call->num_outputs && status == CT_OK; ++i) {
    status = ct_cu_check_pointer(call->outputs[i], exec->device_id, "output", i);
  }
  return status;
}

int ct_cu_exec_for_device(int32_t device_id, void* stream, ct_cu_exec* exec) {
  exec->device_id = device_id;
  exec->stream = static_cast<cudaStream_t>(stream);
  return exec->guard.enter(device_id);
}

int ct_cu_workspace(void* workspace, uint64_t workspace_size, uint64_t bytes, uint64_t alignment,
                    const char* what, void** scratch) {
  *scratch = workspace;
  if (bytes == 0) return CT_OK;
  if (!workspace || workspace_size < bytes || reinterpret_cast<uintptr_t>(workspace) % alignment) {
    return ct_cu_error(
        CT_ERROR_WORKSPACE_TOO_SMALL,
        "%s needs %llu bytes of workspace aligned to %llu; the call gives %llu at %p", what,
        (unsigned long long)bytes, (unsigned long long)alignment,
        (unsigned long long)workspace_size, workspace);
  }
  return CT_OK;
}

int ct_cu_launch_status(const char* what) {
  return ct_cu_check(cudaGetLastError(), what);
}

unsigned ct_cu_grid(const ct_cu_exec& exec, int64_t n, int threads) {
  const int64_t needed = (n + threads - 1) / threads;
  const int64_t full = (int64_t)ct_cu_multiprocessors(exec.device_id) * 16;
  const int64_t blocks = needed < full ? needed : full;
  return (unsigned)(blocks > 0 ? blocks : 1);
}
