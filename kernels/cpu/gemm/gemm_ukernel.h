/* gemm_ukernel.h - the register-tiled micro-kernels of the packed GEMM, one set per instruction
 * set, and the run-time choice between them.
 *
 * A micro-kernel computes one MR × NR tile of C from packed panels:
 *   C[i][j] (=|+=) sum over p < kc of a[p·MR + i] · b[p·NR + j]
 * where `a` is an A micro-panel (kc columns of MR rows, column after column) and `b` a B
 * micro-panel (kc rows of NR columns, row after row), both 64-byte aligned. C has row stride
 * `ldc` and unit column stride; accumulate != 0 adds to C, 0 overwrites it. The driver
 * (gemm_packed.c) handles edge tiles through an MR × NR scratch tile, so kernels always compute
 * whole tiles.
 *
 * One build serves every x86-64 machine: the AVX2 and AVX-512 sets live in files compiled with
 * their own flags (meson: one static library per instruction set), and ct_gemm_ukernels_get()
 * picks the widest set the CPU supports (__builtin_cpu_supports) at first use. The environment
 * variable CTENSOR_CPU_ISA=generic|avx2|avx512, read once at that first use, lowers the choice
 * (a set the CPU lacks is never chosen: the request falls back to the widest supported one),
 * so that tests can run every set on one machine. */
#ifndef CTENSOR_CPU_GEMM_UKERNEL_H_
#define CTENSOR_CPU_GEMM_UKERNEL_H_

#include <stdint.h>

#include "internal.h"

typedef void (*ct_gemm_ukernel_f32)(int64_t kc, const float* a, const float* b, float* c,
                                    int64_t ldc, int accumulate);
typedef void (*ct_gemm_ukernel_f64)(int64_t kc, const double* a, const double* b, double* c,
                                    int64_t ldc, int accumulate);

/* An unpacked micro-kernel computes a tile of at most MR rows from A and B where they lie, for
 * products too small to repay packing:
 *   C[i][j] (=|+=) sum over p < k of a[i·lda + p] · b[p·ldb + j],  i < rows, j < cols
 * with 1 <= rows <= MR and 1 <= cols <= its width (NR, or NR / 2 for the narrow one); any row
 * strides, unit column strides. It reads and writes nothing outside those rows and columns. */
typedef void (*ct_gemm_unpacked_f32)(int64_t k, const float* a, int64_t lda, const float* b,
                                     int64_t ldb, float* c, int64_t ldc, int64_t rows, int64_t cols,
                                     int accumulate);
typedef void (*ct_gemm_unpacked_f64)(int64_t k, const double* a, int64_t lda, const double* b,
                                     int64_t ldb, double* c, int64_t ldc, int64_t rows,
                                     int64_t cols, int accumulate);

/* Tile shape and cache blocking of one precision: MC × KC blocks of A stay in L2, KC × NR
 * micro-panels of B in L1, KC × NC panels of B in L3. mc is a multiple of mr, nc of nr. Small
 * products skip the packing (unpacked_max). */
typedef struct ct_gemm_blocking {
  int32_t mr, nr;
  int32_t mc, kc, nc;
  /* Products whose A and B hold at most this many elements (m·k + k·n, per batch entry) run
   * the unpacked micro-kernels, reading A and B in place (0: never; nonzero only in sets that
   * have them). */
  int32_t unpacked_max;
} ct_gemm_blocking;

/* One instruction set's micro-kernels. */
typedef struct ct_gemm_ukernels {
  const char* isa; /* "generic", "avx2" or "avx512" */
  ct_gemm_blocking f32_blocking;
  ct_gemm_ukernel_f32 f32;
  ct_gemm_unpacked_f32 f32_unpacked[2]; /* NR / 2 and NR columns wide; NULL: none in this set */
  ct_gemm_blocking f64_blocking;
  ct_gemm_ukernel_f64 f64;
  ct_gemm_unpacked_f64 f64_unpacked[2];
} ct_gemm_ukernels;

/* The largest tile any set uses, for the driver's scratch tile. */
#define CT_GEMM_MAX_TILE 512

CT_INTERNAL extern const ct_gemm_ukernels ct_gemm_ukernels_generic;
#ifdef CT_HAVE_GEMM_AVX2
CT_INTERNAL extern const ct_gemm_ukernels ct_gemm_ukernels_avx2;
#endif
#ifdef CT_HAVE_GEMM_AVX512
CT_INTERNAL extern const ct_gemm_ukernels ct_gemm_ukernels_avx512;
#endif

/* The set in use (chosen once, thread-safe). */
CT_INTERNAL const ct_gemm_ukernels* ct_gemm_ukernels_get(void);

#endif /* CTENSOR_CPU_GEMM_UKERNEL_H_ */
