/* dims.h - dimension sorting, merging and lane taking shared by the engine's loop planners
 * (reductions, softmax, the transposing copy). */
#ifndef CTENSOR_CPU_DIMS_H_
#define CTENSOR_CPU_DIMS_H_

#include "internal.h"

static inline int64_t ct_abs64(int64_t v) {
  return v < 0 ? -v : v;
}

/* Sorts dims [0, n) by |strides[0][k]| descending (stable), permuting every stride array. */
CT_INTERNAL void ct_cpu_sort_dims(int32_t n, int64_t* shape, int64_t** strides, int32_t nstrides);
/* Merges dim k into k-1 where every stride array steps over k's whole extent to reach k-1;
 * returns the new dim count. */
CT_INTERNAL int32_t ct_cpu_merge_dims(int32_t n, int64_t* shape, int64_t** strides,
                                      int32_t nstrides);

/* The lane dim of a vector ("rows") plan: lanes n, byte strides xs/os (xs > 0 after flipping),
 * `chunk` lanes per task, `chunks` tasks per outer position. */
typedef struct ct_cpu_lanes {
  int64_t n, xs, os;
  int64_t chunk, chunks;
} ct_cpu_lanes;

/* The dim among [0, n) with the smallest non-zero |xs[k]| (the last of equals), or -1. */
CT_INTERNAL int32_t ct_cpu_finest_dim(int32_t n, const int64_t* xs);

/* Takes dim `lane` out of the outer dims (*n, shape, xs, os) into *lanes, flipping a negative
 * input stride (moving *xbase / *obase to the last element), and chunks it: at most max_chunk
 * lanes a task, chunks of balanced length. */
CT_INTERNAL void ct_cpu_take_lanes(int32_t* n, int64_t* shape, int64_t* xs, int64_t* os,
                                   int32_t lane, const char** xbase, char** obase,
                                   int64_t max_chunk, ct_cpu_lanes* lanes);
/* Re-chunks lanes to at most max_chunk a task (balanced). */
CT_INTERNAL void ct_cpu_chunk_lanes(ct_cpu_lanes* lanes, int64_t max_chunk);

#endif /* CTENSOR_CPU_DIMS_H_ */
