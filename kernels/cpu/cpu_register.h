/* cpu_register.h - how CPU kernel families register their kernels. */
#ifndef CTENSOR_CPU_REGISTER_H_
#define CTENSOR_CPU_REGISTER_H_

#include "internal.h"

/* One kernel: op name, one dtype id per signature slot (inputs then outputs), run function,
 * optional workspace function, kernel data. */
typedef struct ct_cpu_kernel {
  const char* op;
  int32_t signature_length;
  ct_dtype_id signature[8];
  ct_kernel_run_fn run;
  ct_kernel_workspace_fn workspace;
  const void* kernel_data;
} ct_cpu_kernel;

/* Registers `count` kernels for the CPU device under backend name "cpu". */
CT_INTERNAL int ct_cpu_register_all(const ct_cpu_kernel* kernels, int32_t count);

/* Each family file defines ct_cpu_register_<family>(); cpu_families.h lists them. */
#define CT_CPU_FAMILY(name) CT_INTERNAL int ct_cpu_register_##name(void);
#include "cpu_families.h"
#undef CT_CPU_FAMILY

#define CT_CPU_KERNEL_COUNT(array) ((int32_t)(sizeof(array) / sizeof((array)[0])))

#endif /* CTENSOR_CPU_REGISTER_H_ */
