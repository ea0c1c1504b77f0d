/*
 * ctensor_backend.h - the ABI for kernel authors: built-in backends, plugins and third parties
 * register kernels for (operator, device, dtype signature) through the same entry point.
 *
 * A kernel never allocates its outputs (except through the caller's allocator in dynamic ops),
 * never reads past the workspace it asked for, and reports failures with ct_set_error.
 * The registry validates everything a schema can express before a kernel runs: tensor views,
 * devices, dtypes against the registered signature, output shapes against infer, aliasing,
 * attribute types and workspace size. Kernels check only what is specific to them.
 */
#ifndef CTENSOR_BACKEND_H_
#define CTENSOR_BACKEND_H_

#include "ctensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Everything a kernel sees of one call. */
typedef struct ct_kernel_call {
  size_t struct_size;              /**< sizeof(ct_kernel_call) of the library */
  const ct_op_schema* schema;      /**< the operator */
  const ct_tensor* const* inputs;  /**< validated inputs; NULL for absent optional ones */
  int32_t num_inputs;              /**< number of entries in `inputs` */
  int32_t num_outputs;             /**< number of entries in `outputs` (0 for dynamic ops) */
  const ct_tensor* const* outputs; /**< validated, non-overlapping outputs */
  const ct_attr_value* attrs;      /**< resolved: one per schema attribute, in schema order */
  void* stream;                    /**< the caller's stream, or NULL */
  void* workspace;                 /**< at least the bytes the workspace function asked for */
  uint64_t workspace_size;         /**< bytes at `workspace` */
  const ct_allocator* allocator;   /**< the caller's allocator (dynamic ops) */
  void* kernel_data;               /**< ct_kernel_def.kernel_data of this kernel */
} ct_kernel_call;

/** Computes the outputs. Returns CT_OK or the status given to ct_set_error. */
typedef int (*ct_kernel_run_fn)(const ct_kernel_call* call);

/** Scratch memory `run` will need for this call (outputs are described, their data is not
 *  read; dynamic ops see no outputs). */
typedef int (*ct_kernel_workspace_fn)(const ct_kernel_call* call, uint64_t* bytes,
                                      uint64_t* alignment);

/** A kernel registration. The registry copies it (and its signature). */
typedef struct ct_kernel_def {
  size_t struct_size;               /**< sizeof(ct_kernel_def) */
  const char* op_name;              /**< an operator in the registry */
  const char* backend_name;         /**< who provides it, e.g. "cpu"; shown by introspection */
  int32_t device_type;              /**< ct_device_type it runs on */
  int32_t signature_length;         /**< number of input parameters + output parameters */
  const ct_dtype* signature;        /**< dtype per parameter; an absent optional input matches
                                         anything, a variadic parameter applies to each tensor */
  ct_kernel_run_fn run;             /**< required */
  ct_kernel_workspace_fn workspace; /**< NULL: needs no workspace */
  void* kernel_data;                /**< handed to the kernel in ct_kernel_call.kernel_data */
} ct_kernel_def;

/** Registers a kernel. A second kernel for the same (op, device, signature, backend_name)
 *  replaces the first; one from another backend is kept beside it and, being newer, runs the
 *  calls that name no backend (ct_context.backend), so a plugin overrides a built-in kernel
 *  while the built-in one stays reachable by name. Thread-safe. */
CT_API int ct_kernel_register(const ct_kernel_def* def);

/** Records `message` (printf format) as this thread's error and returns `status`, so that a
 *  kernel can write `return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "...", ...);`. */
CT_API int ct_set_error(int status, const char* format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CTENSOR_BACKEND_H_ */
