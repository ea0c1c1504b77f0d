/* reduce_f32.h - float32 sum, max and min loops of the reduction engine, and the search for
 * argmax's winner, fast enough to run at memory speed.
 *
 * The sums accumulate in double, so the result, rounded once to float32, carries the error of that
 * rounding only (NumPy's pairwise float32 sum adds its own on top). The AVX2 copies (cpu_isa.h)
 * convert four floats per instruction and keep eight independent vector accumulators; the generic
 * copies do the same additions in the same order in plain C, so every ISA level gives bitwise the
 * same results. */
#ifndef CTENSOR_CPU_REDUCE_F32_H_
#define CTENSOR_CPU_REDUCE_F32_H_

#include <stdint.h>

#include "internal.h"

/* Elements per block of the contiguous sum: 32 double lanes sum a block (128 elements each),
 * the lanes are added pairwise, and the block sums are added one after another, so the error of
 * the double sum stays near (128 + n / CT_SUM_F32_BLOCK) ulps of double. A multiple of 32. */
#define CT_SUM_F32_BLOCK 4096

/* Rows that ct_cpu_sum_rows_f32 reads at once: as many input streams as prefetchers follow well,
 * and one accumulator load and store per that many rows. */
#define CT_SUM_F32_ROWS 8

/* Rows closer than this many bytes are read one after another, in memory order (the
 * accumulators, a few KB, stay in L1): reading a column block of each of several close rows in
 * turn splits the memory streams into short pieces the prefetchers follow badly. */
#define CT_SUM_F32_SEQUENTIAL_STEP 4096

/* The sum of x[0..n), in double. */
CT_INTERNAL double ct_cpu_sum_f32(const float* x, int64_t n);

/* acc[j] += x[r * row_step + j * step] for r = 0, 1, ... rows - 1 in that order (byte steps),
 * j < n: bitwise what `rows` separate one-row additions give. */
CT_INTERNAL void ct_cpu_sum_rows_f32(const char* x, int64_t row_step, int64_t rows, int64_t step,
                                     int64_t n, double* acc);

/* m merged with the largest (smallest) of x[0..n), a nan winning: bitwise what CT_NANMAX_LOOP
 * (CT_NANMIN_LOOP) of reduce_layout.h gives, on every ISA level. */
CT_INTERNAL float ct_cpu_max_f32(const float* x, int64_t n, float m);
CT_INTERNAL float ct_cpu_min_f32(const float* x, int64_t n, float m);

/* The first i < n with x[i] == value (where value is a nan: the first nan), or n: argmax's and
 * argmin's search for the winner inside its block. */
CT_INTERNAL int64_t ct_cpu_find_f32(const float* x, int64_t n, float value);

#endif /* CTENSOR_CPU_REDUCE_F32_H_ */
