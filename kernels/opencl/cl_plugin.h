/* cl_plugin.h - what the OpenCL plugin's files share: the host table, error reporting, the
 * devices found, and the list of operator families. */
#ifndef CTENSOR_CL_PLUGIN_H_
#define CTENSOR_CL_PLUGIN_H_

#include <stdbool.h>
#include <stdint.h>

#include "cl_runtime.h"
#include "ctensor_plugin.h"

/* Backend name, as kernels register under it and ctensor.backends() shows it. */
#define CT_CL_BACKEND_NAME "opencl"

/* The host's table, set once by ct_plugin_init. */
extern const ct_host_api* ct_cl_host;

/* Records a message through the host and returns `status`. */
int ct_cl_error(int status, const char* format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* CT_OK when `code` is CL_SUCCESS, else CT_ERROR_BACKEND (or CT_ERROR_OUT_OF_MEMORY) with a
 * message naming `what` and the OpenCL error. */
int ct_cl_check(cl_int code, const char* what);

/* One OpenCL device, with its own context and default in-order queue. */
typedef struct ct_cl_device {
  cl_platform_id platform;
  cl_device_id id;
  cl_context context;
  cl_command_queue queue; /* default queue, used when a call passes no stream */
  char name[256];
  char driver[128];
  bool has_fp64; /* cl_khr_fp64: float64 kernels and float64 accumulators */
} ct_cl_device;

/* Finds every device of every platform, in order, and opens a context and queue for each.
 * CT_ERROR_BACKEND_UNAVAILABLE when there is none. */
int ct_cl_devices_open(void);

/* Number of devices found, and device `index` (0 <= index < count). */
int32_t ct_cl_device_count(void);
ct_cl_device* ct_cl_device_at(int32_t index);

/* Each family file defines ct_cl_register_<family>(); cl_families.h lists them. */
#define CT_CL_FAMILY(name) int ct_cl_register_##name(void);
#include "cl_families.h"
#undef CT_CL_FAMILY

#endif /* CTENSOR_CL_PLUGIN_H_ */
