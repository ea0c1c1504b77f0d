/* arg_search.h - argmax and argmin over one contiguous run in a single pass, for the run loops of
 * argmax_kernels.c.
 *
 * Each function returns the index of the first largest (smallest) element of x[0..n), the first
 * nan counting as the largest (smallest) where the type has nans, as NumPy's argmax and argmin
 * do, and stores that element in *value. Where the CPU has AVX2 they keep, per vector lane, the
 * best value seen and its index (replaced only by a strictly better value, so each lane keeps
 * its first), then merge the lanes by value and, between equal values (-0 and +0 included),
 * by the smaller index; nans are only noted in the pass, and the first is then searched for. So
 * the run is read once, where taking the block extremum and then searching the winning block
 * for it read the run twice and cost three times as much on 64-element rows.
 *
 * They return -1 (nothing read) where the CPU lacks AVX2, for runs shorter than a vector (8
 * float32/int32 or 4 float64/int64 elements), and for float32 and int32 runs of 4096 elements
 * or more (arg_search.c says why); the caller's own loops then run, and
 * give the same answers. */
#ifndef CTENSOR_CPU_ARG_SEARCH_H_
#define CTENSOR_CPU_ARG_SEARCH_H_

#include <stdint.h>

#include "internal.h"

CT_INTERNAL int64_t ct_cpu_argmax_search_f32(const float* x, int64_t n, float* value);
CT_INTERNAL int64_t ct_cpu_argmin_search_f32(const float* x, int64_t n, float* value);
CT_INTERNAL int64_t ct_cpu_argmax_search_f64(const double* x, int64_t n, double* value);
CT_INTERNAL int64_t ct_cpu_argmin_search_f64(const double* x, int64_t n, double* value);
CT_INTERNAL int64_t ct_cpu_argmax_search_i32(const int32_t* x, int64_t n, int32_t* value);
CT_INTERNAL int64_t ct_cpu_argmin_search_i32(const int32_t* x, int64_t n, int32_t* value);
CT_INTERNAL int64_t ct_cpu_argmax_search_i64(const int64_t* x, int64_t n, int64_t* value);
CT_INTERNAL int64_t ct_cpu_argmin_search_i64(const int64_t* x, int64_t n, int64_t* value);

#endif /* CTENSOR_CPU_ARG_SEARCH_H_ */
