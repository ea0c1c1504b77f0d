/* copy_loops.h - dst = src inner loops per element size (8 to 128 bits) for the iteration
 * engine: every op that only moves elements (permute_dims, flip, slice, tile, concat, ...) is a
 * strided copy through ct_cpu_iterate_raw with one of these, registered for every dtype of that
 * size. Defined in copy_loops.c. */
#ifndef CTENSOR_CPU_COPY_LOOPS_H_
#define CTENSOR_CPU_COPY_LOOPS_H_

#include <stdbool.h>

#include "engine/strided_iter.h"

/* 16-byte elements (complex128) move as a pair of words: 8-byte alignment is all DLPack
 * producers promise. */
typedef struct ct_cpu_word128 {
  uint64_t w[2];
} ct_cpu_word128;

CT_INTERNAL extern const ct_cpu_loop_entry ct_cpu_copy_8_entry;
CT_INTERNAL extern const ct_cpu_loop_entry ct_cpu_copy_16_entry;
CT_INTERNAL extern const ct_cpu_loop_entry ct_cpu_copy_32_entry;
CT_INTERNAL extern const ct_cpu_loop_entry ct_cpu_copy_64_entry;
CT_INTERNAL extern const ct_cpu_loop_entry ct_cpu_copy_128_entry; /* complex128 */

/* The copy loop entry for elements of `itemsize` bytes, or NULL where there is none. */
CT_INTERNAL const ct_cpu_loop_entry* ct_cpu_copy_entry_of_size(int64_t itemsize);

/* The copy loop entry for storage type T (a constant expression, for registration tables). */
#define CT_CPU_COPY_ENTRY(T)                \
  (sizeof(T) == 1   ? &ct_cpu_copy_8_entry  \
   : sizeof(T) == 2 ? &ct_cpu_copy_16_entry \
   : sizeof(T) == 4 ? &ct_cpu_copy_32_entry \
   : sizeof(T) == 8 ? &ct_cpu_copy_64_entry \
                    : &ct_cpu_copy_128_entry)

/* Copies `shape` (ndim dims; byte strides xs of the source x, os of the destination out) of
 * itemsize-byte elements in cache-sized tiles, in parallel, when it is a transposing copy (the
 * destination's contiguous dim is strided in the source and another dim is contiguous there)
 * large enough to gain. Returns false, having done nothing, otherwise: the caller then copies
 * through the iteration engine. */
CT_INTERNAL bool ct_transpose_copy(const char* x, char* out, int32_t ndim, const int64_t* shape,
                                   const int64_t* xs, const int64_t* os, int64_t itemsize);

/* A source of zero bytes for fills: pass it with step 0 (all dtypes' zero is all-bits zero); 16
 * bytes, the largest element. */
CT_INTERNAL extern const uint64_t ct_cpu_zero_word[2];

#endif /* CTENSOR_CPU_COPY_LOOPS_H_ */
