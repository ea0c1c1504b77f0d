/* plugin_entry.h - the first step of every device plugin's ct_plugin_init: checks the host's
 * table and info struct against the sizes the plugin was built with, and describes the plugin
 * (name, version, device type, memory API; no devices found yet). Compiled into each plugin
 * (hidden symbols). */
#ifndef CTENSOR_PLUGIN_ENTRY_H_
#define CTENSOR_PLUGIN_ENTRY_H_

#include <stdint.h>

#include "ctensor_plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* CT_OK with `info` filled in; CT_ERROR_NULL_POINTER without a host or an info struct;
 * CT_ERROR_ABI_MISMATCH (message through `host`) when either is smaller than this build's. */
int ct_pl_describe(const ct_host_api* host, ct_plugin_info* info, const char* backend,
                   int32_t device_type, const ct_device_memory_api* memory);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CTENSOR_PLUGIN_ENTRY_H_ */
