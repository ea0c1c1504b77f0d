/* plugin_dtypes.h - the dtypes the device plugins' kernels handle, as tags that index their
 * per-device tables (OpenCL C type names, CUDA template arguments), and kernel registration by
 * tag. Compiled into each plugin (hidden symbols). */
#ifndef CTENSOR_PLUGIN_DTYPES_H_
#define CTENSOR_PLUGIN_DTYPES_H_

#include <stdbool.h>
#include <stdint.h>

#include "ctensor_plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ct_pl_type {
  CT_PL_B8 = 0,
  CT_PL_I32,
  CT_PL_I64,
  CT_PL_F16,
  CT_PL_F32,
  CT_PL_F64,
  CT_PL_TYPE_COUNT
} ct_pl_type;

/* The DLPack dtype of a tag, its size in bytes, and whether it is a float type. */
ct_dtype ct_pl_dtype(ct_pl_type type);
int32_t ct_pl_type_size(ct_pl_type type);
bool ct_pl_type_is_float(ct_pl_type type);

/* The tag of a dtype, or -1 when the plugins' kernels do not handle it. */
int ct_pl_type_of(ct_dtype dtype);

/* Registers one kernel of `backend` for `device_type` through `host`: a tag per signature slot
 * (inputs, then outputs). */
int ct_pl_register(const ct_host_api* host, const char* backend, int32_t device_type,
                   const char* op, const ct_pl_type* signature, int32_t length,
                   ct_kernel_run_fn run, ct_kernel_workspace_fn workspace, const void* kernel_data);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CTENSOR_PLUGIN_DTYPES_H_ */
