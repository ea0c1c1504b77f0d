/* conv_entry.h - the conv2d and conv_transpose2d kernels per dtype, callable by the backward
 * kernels (conv2d_backward_kernels.c), which run them on views they build. */
#ifndef CTENSOR_CPU_CONV_ENTRY_H_
#define CTENSOR_CPU_CONV_ENTRY_H_

#include "internal.h"

#define CT_CONV_ENTRY_DECLARE(SFX)                                                           \
  CT_INTERNAL int ct_cpu_conv2d_##SFX(const ct_kernel_call* call);                           \
  CT_INTERNAL int ct_cpu_conv2d_workspace_##SFX(const ct_kernel_call* call, uint64_t* bytes, \
                                                uint64_t* alignment);                        \
  CT_INTERNAL int ct_cpu_conv_transpose2d_##SFX(const ct_kernel_call* call);                 \
  CT_INTERNAL int ct_cpu_ct2d_workspace_##SFX(const ct_kernel_call* call, uint64_t* bytes,   \
                                              uint64_t* alignment);
CT_CONV_ENTRY_DECLARE(f16)
CT_CONV_ENTRY_DECLARE(bf16)
CT_CONV_ENTRY_DECLARE(f32)
CT_CONV_ENTRY_DECLARE(f64)
#undef CT_CONV_ENTRY_DECLARE

#endif /* CTENSOR_CPU_CONV_ENTRY_H_ */
