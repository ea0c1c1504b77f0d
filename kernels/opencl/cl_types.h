/* cl_types.h - the dtypes the OpenCL kernels compute on, as tags of generated source. */
#ifndef CTENSOR_CL_TYPES_H_
#define CTENSOR_CL_TYPES_H_

#include "cl_plugin.h"

/* One dtype: its tag (names the LD_/ST_ macros of the prelude), OpenCL C compute type, the
 * unsigned type of its width (wrapping integer arithmetic), and size. */
typedef enum ct_cl_type {
  CT_CL_B8 = 0,
  CT_CL_I32,
  CT_CL_I64,
  CT_CL_F16,
  CT_CL_F32,
  CT_CL_F64,
  CT_CL_TYPE_COUNT
} ct_cl_type;

typedef struct ct_cl_type_info {
  const char* tag;     /* "f32" */
  const char* compute; /* "float"; bool computes as int 0/1, float16 as float */
  const char* unsigned_type;
  int32_t size; /* bytes per element */
  ct_dtype dtype;
  bool is_float;
} ct_cl_type_info;

extern const ct_cl_type_info ct_cl_types[CT_CL_TYPE_COUNT];

/* The tag of a dtype, or -1 when the OpenCL kernels do not handle it. */
int ct_cl_type_of(ct_dtype dtype);

/* Whether every device computes in float64 (float64 kernels are registered only then). */
bool ct_cl_all_devices_fp64(void);

/* Registers one kernel for the OpenCL device: dtype per signature slot. Skips (returning CT_OK)
 * a float64 signature when a device lacks cl_khr_fp64. */
int ct_cl_register(const char* op, const ct_cl_type* signature, int32_t length,
                   ct_kernel_run_fn run, ct_kernel_workspace_fn workspace, const void* kernel_data);

#endif /* CTENSOR_CL_TYPES_H_ */
