/* cu_plugin.cu - the plugin's entry points (finds the devices through the CUDA runtime and
 * registers every kernel family), error reporting and kernel registration. */
#include <stdarg.h>
#include <stdio.h>

#include "cu_plugin.h"
#include "cu_memory.h"
#include "cu_vendor.h"
#include "plugin_entry.h"

const ct_host_api* ct_cu_host;

CT_PLUGIN_DEFINE_ABI_VERSION()

#define CT_CU_MAX_DEVICES 64
static int32_t ct_cu_devices_found;
static int32_t ct_cu_sm_count[CT_CU_MAX_DEVICES];
static bool ct_cu_pageable_access[CT_CU_MAX_DEVICES];

int ct_cu_error(int status, const char* format, ...) {
  char message[1024];
  va_list args;
  va_start(args, format);
  vsnprintf(message, sizeof message, format, args);
  va_end(args);
  return ct_cu_host->set_error(status, "%s", message);
}

int ct_cu_check(cudaError_t code, const char* what) {
  if (code == cudaSuccess) return CT_OK;
  cudaGetLastError(); /* clear the non-sticky error state so later calls start clean */
  const int status = code == cudaErrorMemoryAllocation ? CT_ERROR_OUT_OF_MEMORY : CT_ERROR_BACKEND;
  return ct_cu_error(status, "CUDA: %s failed with %s (%d): %s", what, cudaGetErrorName(code),
                     (int)code, cudaGetErrorString(code));
}

int32_t ct_cu_device_count(void) {
  return ct_cu_devices_found;
}

int32_t ct_cu_multiprocessors(int32_t index) {
  return index >= 0 && index < ct_cu_devices_found ? ct_cu_sm_count[index] : 1;
}

bool ct_cu_pageable_memory_access(int32_t index) {
  return index >= 0 && index < ct_cu_devices_found && ct_cu_pageable_access[index];
}

int ct_cu_register(const char* op, const ct_pl_type* signature, int32_t length,
                   ct_kernel_run_fn run, ct_kernel_workspace_fn workspace,
                   const void* kernel_data) {
  return ct_pl_register(ct_cu_host, CT_CU_BACKEND_NAME, CT_DEVICE_CUDA, op, signature, length, run,
                        workspace, kernel_data);
}

/* Counts the devices; CT_ERROR_BACKEND_UNAVAILABLE (quietly skipped by the host) without a
 * driver or a device. */
static int ct_cu_devices_open(void) {
  int count = 0;
  const cudaError_t code = cudaGetDeviceCount(&count);
  if (code != cudaSuccess || count == 0) {
    cudaGetLastError();
    return ct_cu_error(CT_ERROR_BACKEND_UNAVAILABLE, "no CUDA device (cudaGetDeviceCount: %s)",
                       code == cudaSuccess ? "0 devices" : cudaGetErrorString(code));
  }
  if (count > CT_CU_MAX_DEVICES) count = CT_CU_MAX_DEVICES;
  for (int i = 0; i < count; ++i) {
    int sms = 1;
    if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, i) != cudaSuccess) {
      cudaGetLastError();
      sms = 1;
    }
    ct_cu_sm_count[i] = sms;
    int pageable = 0;
    if (cudaDeviceGetAttribute(&pageable, cudaDevAttrPageableMemoryAccess, i) != cudaSuccess) {
      cudaGetLastError();
      pageable = 0;
    }
    ct_cu_pageable_access[i] = pageable != 0;
  }
  ct_cu_devices_found = count;
  return CT_OK;
}

extern "C" CT_PLUGIN_EXPORT int ct_plugin_init(const ct_host_api* host, ct_plugin_info* info) {
  int status = ct_pl_describe(host, info, CT_CU_BACKEND_NAME, CT_DEVICE_CUDA, &ct_cu_memory_api);
  if (status != CT_OK) return status;
  ct_cu_host = host;
  /* The libraries first: where they are missing that is the reason to give, on a machine with
   * or without a GPU. */
  status = ct_cu_vendor_open();
  if (status != CT_OK) return status;
  status = ct_cu_devices_open();
  if (status != CT_OK) return status;
  info->device_count = ct_cu_device_count();
#define CT_CU_FAMILY(name) \
  if (status == CT_OK) status = ct_cu_register_##name();
#include "cu_families.h"
#undef CT_CU_FAMILY
  return status;
}
