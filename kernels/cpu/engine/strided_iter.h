/* strided_iter.h - the CPU backend's iteration engine.
 *
 * Every element-wise kernel is an inner loop with NumPy's signature, called on 1-D runs of
 * elements: data[i] points at operand i's first element, steps[i] is its byte step (0 for a
 * broadcast operand), n the run length. The engine broadcasts, drops unit dimensions, orders
 * dimensions by the last operand's (the output's) strides, merges dimensions that are
 * contiguous for every operand, and splits the work across OpenMP threads in equal flat ranges
 * when it is large enough. */
#ifndef CTENSOR_CPU_STRIDED_ITER_H_
#define CTENSOR_CPU_STRIDED_ITER_H_

#include "internal.h"

#define CT_CPU_MAX_OPERANDS 8
/* Below this many elements a loop runs on the calling thread only. */
#define CT_CPU_PARALLEL_GRAIN 32768

typedef void (*ct_cpu_strided_loop)(char** data, const int64_t* steps, int64_t n,
                                    const void* extra);

/* A loop registered as a kernel's kernel_data. */
typedef struct ct_cpu_loop_entry {
  ct_cpu_strided_loop loop;
  int64_t copy_itemsize; /* copy loops (copy_loops.h): bytes per element moved; else 0 */
} ct_cpu_loop_entry;

/* Set on each thread while the engine runs its loops: how the thread streams its output
 * (stream_store.h's CT_STREAM_NARROW or CT_STREAM_WIDE), when its share of the output (the last
 * operand) and its runs are large enough. Loops that store contiguously through
 * CT_ALIGNED_STORE_LOOP then write with non-temporal stores, which the engine fences after the
 * thread's last loop; loops called otherwise see CT_STREAM_OFF (0). */
CT_INTERNAL extern _Thread_local int ct_cpu_stream_output;

/* Iterates `shape` (ndim dims) over operands given by base pointers and byte strides
 * (byte_strides[i * ndim + k]); calls `loop` on inner runs. */
CT_INTERNAL void ct_cpu_iterate_raw(int32_t num_operands, char* const* bases,
                                    const int64_t* byte_strides, int32_t ndim, const int64_t* shape,
                                    ct_cpu_strided_loop loop, const void* extra);

/* Iterates the shape of the last operand; the others broadcast to it (right-aligned). */
CT_INTERNAL void ct_cpu_iterate(int32_t num_operands, const ct_tensor* const* operands,
                                ct_cpu_strided_loop loop, const void* extra);

/* Byte strides of t broadcast (right-aligned) to ndim dims of `shape`: 0 where t is broadcast. */
CT_INTERNAL void ct_cpu_broadcast_strides(const ct_tensor* t, int32_t ndim, const int64_t* shape,
                                          int64_t* byte_strides);

/* Kernel run function for element-wise ops: inputs (present ones) then outputs are the operands
 * and kernel_data is a ct_cpu_loop_entry. */
CT_INTERNAL int ct_cpu_elementwise_run(const ct_kernel_call* call);

/* Parallel-for over [0, count) in contiguous ranges: body(begin, end, context). Runs on one
 * thread when count * cost_per_item < CT_CPU_PARALLEL_GRAIN. */
typedef void (*ct_cpu_range_body)(int64_t begin, int64_t end, void* context);
CT_INTERNAL void ct_cpu_parallel_for(int64_t count, int64_t cost_per_item, ct_cpu_range_body body,
                                     void* context);

#endif /* CTENSOR_CPU_STRIDED_ITER_H_ */
