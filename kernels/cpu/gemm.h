/* gemm.h - the CPU backend's matrix multiply: C = A·B, or C + A·B, over strided and batched
 * operands, one named function per instance (input dtype, output dtype, accumulator).
 *
 * Operands are described in ELEMENTS: A is m×k, B is k×n, C is m×n, each with a row and a
 * column stride of any sign (zero allowed on A and B: broadcast). Batch dimensions, if any, give
 * each operand one more stride per dimension (zero where it broadcasts). Every element of C is
 * accumulated over the whole of k in the accumulator type and stored once, so low-precision
 * outputs round once. The functions split C into tiles and run them on OpenMP threads when the
 * problem is large (ct_cpu_parallel_for); each tile is computed by a serial, cache-blocked kernel
 * that packs panels of A and B into small stack buffers (a register-tiled kernel can replace it
 * behind this interface). They never allocate and never fail: the caller validated the views.
 * k == 0 gives zeros (or leaves C as is when accumulating); A and B are then never read and may
 * be NULL. */
#ifndef CTENSOR_CPU_GEMM_H_
#define CTENSOR_CPU_GEMM_H_

#include <stdbool.h>
#include <stdint.h>

#include "cpu_dtypes.h"

typedef struct ct_gemm_desc {
  int64_t m, n, k;
  const void* a; /* address of A[0, 0] (of batch 0) */
  int64_t a_rs, a_cs;
  const void* b; /* address of B[0, 0] */
  int64_t b_rs, b_cs;
  void* c; /* address of C[0, 0] */
  int64_t c_rs, c_cs;
  bool accumulate;            /* C = C + A·B (C read once per element, in the accumulator type) */
  int32_t batch_ndim;         /* 0 for a single product */
  const int64_t* batch_shape; /* batch_ndim extents */
  const int64_t* a_bs;        /* batch_ndim strides of A, in elements (0: broadcast) */
  const int64_t* b_bs;        /* of B */
  const int64_t* c_bs;        /* of C */
} ct_gemm_desc;

/* The instances: X(NAME, TIN, TOUT, ACC) computes TOUT C from TIN A and B, accumulating in ACC.
 *   - b8: bool, or of ands;
 *   - integers: wrap modulo 2^bits (computed in uint32_t, or uint64_t for 64-bit types);
 *   - f16/bf16: load to float, accumulate in float, store once; f32 in float; f64 in double;
 *   - f32_f16/f32_bf16: float A and B (e.g. an im2col buffer), float16/bfloat16 C;
 *   - c64/c128: complex in its own precision with NumPy's plain complex product; c64_conj and
 *     c128_conj multiply by conj(A) (vecdot conjugates its first operand). */
#define CT_GEMM_INSTANCES(X)                            \
  X(b8, uint8_t, uint8_t, uint8_t)                      \
  X(i8, int8_t, int8_t, uint32_t)                       \
  X(i16, int16_t, int16_t, uint32_t)                    \
  X(i32, int32_t, int32_t, uint32_t)                    \
  X(i64, int64_t, int64_t, uint64_t)                    \
  X(u8, uint8_t, uint8_t, uint32_t)                     \
  X(u16, uint16_t, uint16_t, uint32_t)                  \
  X(u32, uint32_t, uint32_t, uint32_t)                  \
  X(u64, uint64_t, uint64_t, uint64_t)                  \
  X(f16, uint16_t, uint16_t, float)                     \
  X(bf16, uint16_t, uint16_t, float)                    \
  X(f32, float, float, float)                           \
  X(f64, double, double, double)                        \
  X(f32_f16, float, uint16_t, float)                    \
  X(f32_bf16, float, uint16_t, float)                   \
  X(c64, ct_complex64, ct_complex64, ct_complex64)      \
  X(c128, ct_complex128, ct_complex128, ct_complex128)  \
  X(c64_conj, ct_complex64, ct_complex64, ct_complex64) \
  X(c128_conj, ct_complex128, ct_complex128, ct_complex128)

#define CT_GEMM_DECLARE(NAME, TIN, TOUT, ACC) \
  CT_INTERNAL void ct_gemm_##NAME(const ct_gemm_desc* d);
CT_GEMM_INSTANCES(CT_GEMM_DECLARE)
#undef CT_GEMM_DECLARE

#endif /* CTENSOR_CPU_GEMM_H_ */
