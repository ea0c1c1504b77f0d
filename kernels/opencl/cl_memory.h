/* cl_memory.h - the OpenCL backend's device memory functions. */
#ifndef CTENSOR_CL_MEMORY_H_
#define CTENSOR_CL_MEMORY_H_

#include "ctensor_plugin.h"

/* Buffers are cl_mem objects of the device's own context. A copy whose queue (stream) belongs
 * to another context, such as pyopencl's, is ordered on that queue. */
extern const ct_device_memory_api ct_cl_memory_api;

#endif /* CTENSOR_CL_MEMORY_H_ */
