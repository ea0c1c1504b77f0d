/* cl_exec.h - running generated OpenCL kernels for one call: the queue to use, compiled
 * programs (cached in memory and on disk), scratch parameter buffers and kernel launches. */
#ifndef CTENSOR_CL_EXEC_H_
#define CTENSOR_CL_EXEC_H_

#include <stddef.h>

#include "cl_plugin.h"

/* Where one call runs: its device, and the context and queue of its memory. */
typedef struct ct_cl_exec {
  ct_cl_device* device;
  cl_context context;
  cl_command_queue queue;
} ct_cl_exec;

/* The device of the call's tensors; the call's stream as the queue (its context from the queue)
 * or, without one, the default queue of the context the tensors' buffers belong to (the device's
 * own context, or a queue opened once for a foreign context such as pyopencl's). */
int ct_cl_exec_for_call(const ct_kernel_call* call, ct_cl_exec* exec);

/* The same for a device and a stream alone (allocation, synchronisation). */
int ct_cl_exec_for_device(int32_t device_id, void* stream, ct_cl_exec* exec);

/* The same for copies to or from `buffer`: without a stream, a queue of the buffer's context. */
int ct_cl_exec_for_buffer(int32_t device_id, void* stream, cl_mem buffer, ct_cl_exec* exec);

/* Generated OpenCL C source, built up with ct_cl_source_add. */
typedef struct ct_cl_source {
  char text[65536]; /* room for embedded headers (philox.h) beside a kernel */
  size_t length;
  bool overflow; /* the text did not fit: ct_cl_launch refuses it */
} ct_cl_source;

/* Starts `source` with the common prelude (load/store macros per dtype tag, fp64 pragma). */
void ct_cl_source_begin(ct_cl_source* source, const ct_cl_exec* exec);

/* Appends printf-formatted text. */
void ct_cl_source_add(ct_cl_source* source, const char* format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* The compiled program of `source` for the exec's device and context: from this process's
 * cache, else from the on-disk binary cache, else compiled (and then stored on disk). */
int ct_cl_program_get(const ct_cl_exec* exec, const ct_cl_source* source, cl_program* program);

/* One kernel argument: `size` bytes at `value` (a cl_mem is passed as &mem, sizeof(cl_mem)). */
typedef struct ct_cl_arg {
  size_t size;
  const void* value;
} ct_cl_arg;

/* Argument helpers. */
#define CT_CL_ARG(lvalue) ((ct_cl_arg){sizeof(lvalue), &(lvalue)})

/* Enqueues kernel `name` of `source` over `global` work items (1-D) on the exec's queue. */
int ct_cl_launch(const ct_cl_exec* exec, const ct_cl_source* source, const char* name,
                 size_t global, const ct_cl_arg* args, int count);

/* Enqueues kernel `name` of `source` as `groups` work-groups of `local` work items each (1-D):
 * for kernels that share __local memory within a group. */
int ct_cl_launch_groups(const ct_cl_exec* exec, const ct_cl_source* source, const char* name,
                        size_t groups, size_t local, const ct_cl_arg* args, int count);

/* A read-only device buffer holding `count` int64 values (at least one), for shapes and strides.
 * The caller releases it after enqueueing the kernel that reads it (OpenCL keeps it alive until
 * the kernel ran). */
int ct_cl_meta_buffer(const ct_cl_exec* exec, const int64_t* values, size_t count, cl_mem* buffer);

/* Reads `bytes` from `buffer` at `offset` into host memory, waiting for the queue. */
int ct_cl_read(const ct_cl_exec* exec, cl_mem buffer, size_t offset, void* dst, size_t bytes);

/* A device buffer of `bytes` (at least 1) in the exec's context, for a kernel's own scratch. */
int ct_cl_scratch_buffer(const ct_cl_exec* exec, size_t bytes, cl_mem* buffer);
/* The same for `count` elements of `size` bytes (count >= 0, from shapes): CT_ERROR_SIZE_OVERFLOW
 * where their bytes do not fit in int64 (a broadcast operand of huge extent), instead of a
 * buffer of the wrapped size that the kernel would write past. */
int ct_cl_scratch_array(const ct_cl_exec* exec, int64_t count, size_t size, cl_mem* buffer);

#endif /* CTENSOR_CL_EXEC_H_ */
