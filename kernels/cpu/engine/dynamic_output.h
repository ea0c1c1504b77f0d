/* dynamic_output.h - how dynamic-allocating CPU kernels get their outputs from the caller. */
#ifndef CTENSOR_CPU_DYNAMIC_OUTPUT_H_
#define CTENSOR_CPU_DYNAMIC_OUTPUT_H_

#include "internal.h"

/* Asks the caller's allocator for output `index` (compact row-major, on the CPU) and normalises
 * its answer: CT_OK with NULL data for a non-empty output, or a return that is not a ct_status,
 * becomes CT_ERROR_OUT_OF_MEMORY. A message the allocator left is kept; otherwise one is
 * written. Memory handed out stays the caller's, also when the run then fails. */
CT_INTERNAL int ct_cpu_allocate_output(const ct_kernel_call* call, int32_t index,
                                       const ct_tensor_info* info, void** data);

#endif /* CTENSOR_CPU_DYNAMIC_OUTPUT_H_ */
