/* cl_plugin.c - the plugin's entry points: loads the OpenCL runtime, opens the devices and
 * registers every kernel family. */
#include "cl_plugin.h"

#include <stdarg.h>
#include <stdio.h>

#include "cl_memory.h"
#include "plugin_entry.h"

const ct_host_api* ct_cl_host;

CT_PLUGIN_DEFINE_ABI_VERSION()

int ct_cl_error(int status, const char* format, ...) {
  char message[1024];
  va_list args;
  va_start(args, format);
  vsnprintf(message, sizeof message, format, args);
  va_end(args);
  return ct_cl_host->set_error(status, "%s", message);
}

int ct_cl_check(cl_int code, const char* what) {
  if (code == CL_SUCCESS) return CT_OK;
  const int status = (code == CL_MEM_OBJECT_ALLOCATION_FAILURE || code == CL_OUT_OF_HOST_MEMORY)
                         ? CT_ERROR_OUT_OF_MEMORY
                         : CT_ERROR_BACKEND;
  return ct_cl_error(status, "OpenCL: %s failed with %s (%d)", what, ct_cl_error_name(code),
                     (int)code);
}

CT_PLUGIN_EXPORT int ct_plugin_init(const ct_host_api* host, ct_plugin_info* info) {
  int status = ct_pl_describe(host, info, CT_CL_BACKEND_NAME, CT_DEVICE_OPENCL, &ct_cl_memory_api);
  if (status != CT_OK) return status;
  ct_cl_host = host;
  status = ct_cl_runtime_load();
  if (status == CT_OK) status = ct_cl_devices_open();
  if (status != CT_OK) return status;
  info->device_count = ct_cl_device_count();
#define CT_CL_FAMILY(name) \
  if (status == CT_OK) status = ct_cl_register_##name();
#include "cl_families.h"
#undef CT_CL_FAMILY
  return status;
}
