/* cu_memory.cu - device memory for the host's ct_device_* functions: cudaMalloc'd buffers, and
 * copies ordered on the given stream that return once the copy is done (the host memory may be
 * reused as soon as the call returns). */
#include "cu_call.h"
#include "cu_memory.h"

static int ct_cu_allocate(void*, int32_t device_id, uint64_t bytes, void** data) {
  ct_cu_exec exec;
  int status = ct_cu_exec_for_device(device_id, nullptr, &exec);
  if (status != CT_OK) return status;
  *data = nullptr;
  if (bytes == 0) return CT_OK;
  return ct_cu_check(cudaMalloc(data, (size_t)bytes), "cudaMalloc");
}

static int ct_cu_release(void*, int32_t device_id, void* data) {
  if (!data) return CT_OK;
  ct_cu_exec exec;
  const int status = ct_cu_exec_for_device(device_id, nullptr, &exec);
  if (status != CT_OK) return status;
  return ct_cu_check(cudaFree(data), "cudaFree");
}

static int ct_cu_copy(int32_t device_id, void* stream, void* dst, const void* src, uint64_t bytes,
                      cudaMemcpyKind kind, const char* what) {
  if (bytes == 0) return CT_OK;
  ct_cu_exec exec;
  int status = ct_cu_exec_for_device(device_id, stream, &exec);
  if (status != CT_OK) return status;
  status = ct_cu_check(cudaMemcpyAsync(dst, src, (size_t)bytes, kind, exec.stream), what);
  if (status != CT_OK) return status;
  return ct_cu_check(cudaStreamSynchronize(exec.stream), "cudaStreamSynchronize");
}

static int ct_cu_copy_from_host(void*, int32_t device_id, void* dst, uint64_t dst_offset,
                                const void* src, uint64_t bytes, void* stream) {
  return ct_cu_copy(device_id, stream, static_cast<char*>(dst) + dst_offset, src, bytes,
                    cudaMemcpyHostToDevice, "cudaMemcpyAsync (host to device)");
}

static int ct_cu_copy_to_host(void*, int32_t device_id, void* dst, const void* src,
                              uint64_t src_offset, uint64_t bytes, void* stream) {
  return ct_cu_copy(device_id, stream, dst, static_cast<const char*>(src) + src_offset, bytes,
                    cudaMemcpyDeviceToHost, "cudaMemcpyAsync (device to host)");
}

static int ct_cu_synchronize(void*, int32_t device_id, void* stream) {
  ct_cu_exec exec;
  const int status = ct_cu_exec_for_device(device_id, stream, &exec);
  if (status != CT_OK) return status;
  return ct_cu_check(cudaStreamSynchronize(exec.stream), "cudaStreamSynchronize");
}

const ct_device_memory_api ct_cu_memory_api = {
    sizeof(ct_device_memory_api), ct_cu_allocate,     ct_cu_release,
    ct_cu_copy_from_host,         ct_cu_copy_to_host, ct_cu_synchronize,
};
