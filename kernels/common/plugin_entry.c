/* plugin_entry.c - see plugin_entry.h. */
#include "plugin_entry.h"

#include <stddef.h>

int ct_pl_describe(const ct_host_api* host, ct_plugin_info* info, const char* backend,
                   int32_t device_type, const ct_device_memory_api* memory) {
  if (!host || !info) return CT_ERROR_NULL_POINTER;
  if (host->struct_size < sizeof(ct_host_api) || info->struct_size < sizeof(ct_plugin_info)) {
    return host->set_error(CT_ERROR_ABI_MISMATCH,
                           "the %s plugin needs a host table of %zu bytes and an info struct "
                           "of %zu bytes",
                           backend, sizeof(ct_host_api), sizeof(ct_plugin_info));
  }
  info->name = backend;
  info->version = CT_VERSION_STRING;
  info->device_type = device_type;
  info->device_count = 0;
  info->memory = memory;
  info->plugin_data = NULL;
  return CT_OK;
}
