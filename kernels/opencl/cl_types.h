/* cl_types.h - the dtype tags (plugin_dtypes.h) in OpenCL C: their names in generated source. */
#ifndef CTENSOR_CL_TYPES_H_
#define CTENSOR_CL_TYPES_H_

#include "cl_plugin.h"
#include "plugin_dtypes.h"

/* One dtype tag in OpenCL C: its name (names the LD_/ST_ macros of the prelude), compute type,
 * and the unsigned type of its width (wrapping integer arithmetic). */
typedef struct ct_cl_type_info {
  const char* tag;     /* "f32" */
  const char* compute; /* "float"; bool computes as int 0/1, float16 as float */
  const char* unsigned_type;
} ct_cl_type_info;

extern const ct_cl_type_info ct_cl_types[CT_PL_TYPE_COUNT];

/* Whether every device computes in float64 (float64 kernels are registered only then). */
bool ct_cl_all_devices_fp64(void);

/* Registers one kernel for the OpenCL device: dtype per signature slot. Skips (returning CT_OK)
 * a float64 signature when a device lacks cl_khr_fp64. */
int ct_cl_register(const char* op, const ct_pl_type* signature, int32_t length,
                   ct_kernel_run_fn run, ct_kernel_workspace_fn workspace, const void* kernel_data);

#endif /* CTENSOR_CL_TYPES_H_ */
