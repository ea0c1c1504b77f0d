/* cl_memory.c - the device memory functions (ct_device_memory_api): buffers in the device's
 * own context; copies ordered on the given queue, or without one on a queue of the buffer's
 * context (the device's default queue for its own buffers). */
#include "cl_exec.h"
#include "cl_memory.h"

static int ct_cl_allocate(void* plugin_data, int32_t device_id, uint64_t bytes, void** data) {
  ct_cl_exec exec;
  int status = ct_cl_exec_for_device(device_id, NULL, &exec);
  if (status != CT_OK) return status;
  *data = NULL;
  if (bytes == 0) return CT_OK;
  cl_int code = CL_SUCCESS;
  cl_mem buffer = ct_cl.clCreateBuffer(exec.context, CL_MEM_READ_WRITE, (size_t)bytes, NULL, &code);
  status = ct_cl_check(code, "clCreateBuffer");
  if (status == CT_OK) *data = buffer;
  return status;
}

static int ct_cl_release(void* plugin_data, int32_t device_id, void* data) {
  if (!data) return CT_OK;
  return ct_cl_check(ct_cl.clReleaseMemObject((cl_mem)data), "clReleaseMemObject");
}

static int ct_cl_copy_from_host(void* plugin_data, int32_t device_id, void* dst,
                                uint64_t dst_offset, const void* src, uint64_t bytes,
                                void* stream) {
  if (bytes == 0) return CT_OK;
  ct_cl_exec exec;
  const int status = ct_cl_exec_for_buffer(device_id, stream, (cl_mem)dst, &exec);
  if (status != CT_OK) return status;
  return ct_cl_check(
      ct_cl.clEnqueueWriteBuffer(exec.queue, (cl_mem)dst, CL_TRUE, (size_t)dst_offset,
                                 (size_t)bytes, src, 0, NULL, NULL),
      "clEnqueueWriteBuffer");
}

static int ct_cl_copy_to_host(void* plugin_data, int32_t device_id, void* dst, const void* src,
                              uint64_t src_offset, uint64_t bytes, void* stream) {
  if (bytes == 0) return CT_OK;
  ct_cl_exec exec;
  const int status = ct_cl_exec_for_buffer(device_id, stream, (cl_mem)src, &exec);
  if (status != CT_OK) return status;
  return ct_cl_read(&exec, (cl_mem)src, (size_t)src_offset, dst, (size_t)bytes);
}

static int ct_cl_synchronize(void* plugin_data, int32_t device_id, void* stream) {
  ct_cl_exec exec;
  const int status = ct_cl_exec_for_device(device_id, stream, &exec);
  if (status != CT_OK) return status;
  return ct_cl_check(ct_cl.clFinish(exec.queue), "clFinish");
}

const ct_device_memory_api ct_cl_memory_api = {
    sizeof(ct_device_memory_api), ct_cl_allocate,     ct_cl_release,
    ct_cl_copy_from_host,         ct_cl_copy_to_host, ct_cl_synchronize,
};
