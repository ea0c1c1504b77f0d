/* conv_entry.h - the conv2d and conv_transpose2d kernels per dtype, callable by the backward
 * kernels (conv2d_backward_kernels.c), which run them on views they build. */
#ifndef CTENSOR_CPU_CONV_ENTRY_H_
#define CTENSOR_CPU_CONV_ENTRY_H_

#include "engine/int_div.h"
#include "internal.h"

/* The output columns [*lo, *hi) (clipped to [0, out)) whose input column ow · stride + shift lies
 * in [0, in): a kernel column's valid range, shift being its offset j · dilation - padding.
 * Written with ct_div_up, since stride - 1 - shift and in - shift + stride - 1 overflow for a
 * stride near INT64_MAX. */
static inline void ct_conv_valid_range(int64_t shift, int64_t stride, int64_t in, int64_t out,
                                       int64_t* lo, int64_t* hi) {
  *lo = shift >= 0 ? 0 : ct_div_up(-shift, stride);
  *hi = in - shift > 0 ? ct_div_up(in - shift, stride) : 0;
  if (*lo > out) *lo = out;
  if (*hi > out) *hi = out;
  if (*hi < *lo) *hi = *lo;
}

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
