/* cu_plugin.h - what the CUDA plugin's files share: the host table, error reporting, the devices
 * found, the dtypes its kernels handle, kernel registration and the list of operator families.
 * The plugin is CUDA C++ (nvcc) linked to the static CUDA runtime, so it needs only the driver
 * (libcuda) at run time; without one it reports itself unavailable. */
#ifndef CTENSOR_CU_PLUGIN_H_
#define CTENSOR_CU_PLUGIN_H_

#include <cuda_runtime.h>
#include <stdint.h>

#include "ctensor_plugin.h"
#include "plugin_dtypes.h"

/* Backend name, as kernels register under it and ctensor.backends() shows it. */
#define CT_CU_BACKEND_NAME "cuda"

/* The host's table, set once by ct_plugin_init. */
extern const ct_host_api* ct_cu_host;

/* Records a message through the host and returns `status`. */
int ct_cu_error(int status, const char* format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* CT_OK when `code` is cudaSuccess, else CT_ERROR_OUT_OF_MEMORY (cudaErrorMemoryAllocation) or
 * CT_ERROR_BACKEND with a message naming `what` and the CUDA error. Clears the runtime's
 * last-error state so that one failure is reported once. */
int ct_cu_check(cudaError_t code, const char* what);

/* Number of CUDA devices found at init. */
int32_t ct_cu_device_count(void);

/* Multiprocessors of device `index` (for grid sizes). */
int32_t ct_cu_multiprocessors(int32_t index);

/* Whether device `index` reads pageable host memory coherently (HMM or ATS systems), so that a
 * tensor in plain host memory is valid CUDA memory for it. */
bool ct_cu_pageable_memory_access(int32_t index);

/* Registers one kernel for CUDA devices: a tag per signature slot (inputs, then outputs). */
int ct_cu_register(const char* op, const ct_pl_type* signature, int32_t length,
                   ct_kernel_run_fn run, ct_kernel_workspace_fn workspace, const void* kernel_data);

/* Each family file defines ct_cu_register_<family>(); cu_families.h lists them. */
#define CT_CU_FAMILY(name) int ct_cu_register_##name(void);
#include "cu_families.h"
#undef CT_CU_FAMILY

#endif /* CTENSOR_CU_PLUGIN_H_ */
