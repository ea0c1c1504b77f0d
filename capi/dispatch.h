/* dispatch.h - the checking steps of a call, shared by ct_op_run (dispatch.c) and plans (plan.c).
 * Nothing here is part of the ABI. */
#ifndef CTENSOR_DISPATCH_H_
#define CTENSOR_DISPATCH_H_

#include "internal.h"

#define CT_MAX_OUTPUTS CT_MAX_NDIM

/* Everything the phases of a call share, filled step by step. */
typedef struct ct_prepared_call {
  const ct_op* op;
  const ct_op_schema* schema;
  const ct_tensor* inputs[CT_MAX_CALL_TENSORS]; /* one entry per input tensor, NULL if absent */
  int32_t num_inputs;
  ct_attr_value attrs[CT_MAX_ATTRS];
  ct_device device;
  bool has_device;
  /* No input fixed the device (an op without tensor inputs, or with its optional ones absent):
   * the outputs' device picks the kernel (ct_check_outputs looks it up again). */
  bool device_from_outputs;
  ct_tensor_info infos[CT_MAX_OUTPUTS];
  int32_t num_outputs;
  ct_dtype signature[CT_MAX_CALL_TENSORS];
  const char* backend; /* the kernel's backend, or NULL: the newest matching kernel */
} ct_prepared_call;

/* The backend a context names, or NULL (also for contexts older than the field). */
CT_INTERNAL const char* ct_context_backend(const ct_context* context);

/* Validates op, arity, input views (a non-empty one's data pointer only with `need_data`),
 * devices and attributes, infers the outputs and finds the kernel (of `backend`, or the
 * newest). */
CT_INTERNAL int ct_prepare(ct_prepared_call* p, const ct_op* op, const ct_tensor* const* inputs,
                           int32_t num_inputs, const ct_attr* attrs, int32_t num_attrs,
                           const char* backend, bool need_data, const ct_kernel_entry** kernel);

/* Checks the caller's outputs against the inferred ones (count, views, device, dtype, shape) and
 * every aliasing rule. When no input fixed the device, `*kernel` becomes the kernel for the
 * outputs' device. */
CT_INTERNAL int ct_check_outputs(ct_prepared_call* p, const ct_tensor* const* outputs,
                                 int32_t num_outputs, const ct_kernel_entry** kernel);

/* The label of output i in error messages (its parameter, and its position in a variadic one). */
CT_INTERNAL ct_tensor_label ct_output_label(const ct_op_schema* schema, int32_t i);

/* The aliasing rules for output i alone: no overlap with itself, an earlier output or an input
 * (except exactly the same view of one dtype, for ops with CT_OP_FLAG_INPLACE). */
CT_INTERNAL int ct_check_output_overlaps(const ct_op_schema* schema, const ct_tensor* const* inputs,
                                         int32_t num_inputs, const ct_tensor* const* outputs,
                                         int32_t i, const ct_tensor_label* label);

/* Reads the caller's context, filling defaults for fields it does not have. */
CT_INTERNAL int ct_read_context(const ct_context* context, ct_context* out);

/* Fills the kernel's view of the call. */
CT_INTERNAL void ct_fill_kernel_call(ct_kernel_call* call, const ct_prepared_call* p,
                                     const ct_tensor* const* outputs, int32_t num_outputs,
                                     const ct_context* context, const ct_kernel_entry* kernel);

/* The kernel's workspace request (alignment made a power of two). */
CT_INTERNAL int ct_query_workspace(const ct_kernel_entry* kernel, const ct_kernel_call* call,
                                   uint64_t* bytes, uint64_t* alignment);

/* The checks between validated outputs and running: the context (allocator for dynamic ops,
 * workspace size and alignment). Fills `call` for the kernel. */
CT_INTERNAL int ct_prepare_run(const ct_prepared_call* p, const ct_tensor* const* outputs,
                               int32_t num_outputs, const ct_context* context,
                               const ct_kernel_entry* kernel, ct_kernel_call* call);

/* True when a shape-static call has outputs and every one is empty: nothing to compute. */
CT_INTERNAL bool ct_outputs_all_empty(const ct_op_schema* schema, const ct_tensor* const* outputs,
                                      int32_t num_outputs);

#endif /* CTENSOR_DISPATCH_H_ */
