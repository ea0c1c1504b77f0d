/* sort_vector.h - sorting of unsigned 32-bit keys in AVX2 vectors, for the values-only sort of
 * sort_kernels.c (the keys of sort_keys.h: float32, int32, uint32).
 *
 * Runs of up to CT_SORT_NETWORK_MAX keys go through a bitonic sorting network held in vector
 * registers: padded with the largest key to a power-of-two count of vectors, then sorted with
 * unsigned vector min/max, lane permutations and blends, with no branch on the data. Longer runs
 * are quicksorted down to that length: each pass moves the keys to a second buffer, those not
 * above the pivot (a median of samples) from the front and the others from the back, 8 at a time
 * through a permutation looked up by the compare mask, and copies them back. A pass whose pivot
 * is the largest key splits off the keys equal to it instead, so runs of equal keys end quickly;
 * past a depth of twice the run's bit length a part is heapsorted. Equal keys are
 * indistinguishable, so the sort's lack of stability never shows. */
#ifndef CTENSOR_CPU_SORT_VECTOR_H_
#define CTENSOR_CPU_SORT_VECTOR_H_

#include <stdbool.h>
#include <stdint.h>

#include "internal.h"

/* Longest run the network sorts alone: 32 vectors of 8 keys. */
#define CT_SORT_NETWORK_MAX 256

/* Whether the CPU runs the AVX2 kernels (cpu_isa.h), which these sorts need. */
CT_INTERNAL bool ct_sort_vector_available(void);

/* Sorts keys[0..n) into ascending unsigned order, tmp (n keys, not overlapping keys) being
 * scratch. Call only where ct_sort_vector_available(). */
CT_INTERNAL void ct_sort_vector_u32(uint32_t* keys, uint32_t* tmp, int64_t n);

#endif /* CTENSOR_CPU_SORT_VECTOR_H_ */
