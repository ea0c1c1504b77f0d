/* cu_memory.h - the device memory functions the plugin gives the host (ct_device_allocate and
 * friends on CUDA devices). */
#ifndef CTENSOR_CU_MEMORY_H_
#define CTENSOR_CU_MEMORY_H_

#include "ctensor_plugin.h"

extern const ct_device_memory_api ct_cu_memory_api;

#endif /* CTENSOR_CU_MEMORY_H_ */
