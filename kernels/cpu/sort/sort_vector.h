/* sort_vector.h - sorting of unsigned 32- and 64-bit keys in AVX2 vectors, for sort_kernels.c:
 * the values-only sort of 4- and 8-byte dtypes (the keys of sort_keys.h), and the stable orders of
 * argsort and topk, as 64-bit keys holding a 32-bit key above a 32-bit index.
 *
 * Runs of up to 256 keys go through a bitonic sorting network held in vector registers: padded
 * with the largest key to a power-of-two count of vectors, then sorted with vector min/max, lane
 * permutations and blends, with no branch on the data. Longer runs are quicksorted down to that
 * length: each pass moves the keys to a second buffer, those not above the pivot (the median of 9
 * samples) from the front and the others from the back, a vector at a time through a permutation
 * looked up by the compare mask, and copies them back. A pass whose pivot is the largest key
 * splits off the keys equal to it instead, so runs of equal keys end quickly; past a depth of
 * twice the run's bit length a part is heapsorted. Equal keys are indistinguishable, so the
 * sort's lack of stability never shows. */
#ifndef CTENSOR_CPU_SORT_VECTOR_H_
#define CTENSOR_CPU_SORT_VECTOR_H_

#include <stdbool.h>
#include <stdint.h>

#include "internal.h"

/* Whether the CPU runs the AVX2 kernels (cpu_isa.h), which these sorts need. */
CT_INTERNAL bool ct_sort_vector_available(void);

/* Sorts keys[0..n) into ascending unsigned order, tmp (n keys, not overlapping keys) being
 * scratch. Call only where ct_sort_vector_available(). */
CT_INTERNAL void ct_sort_vector_u32(uint32_t* keys, uint32_t* tmp, int64_t n);
CT_INTERNAL void ct_sort_vector_u64(uint64_t* keys, uint64_t* tmp, int64_t n);

#endif /* CTENSOR_CPU_SORT_VECTOR_H_ */
