/* gemm.h - the CPU backend's matrix multiply: C = A·B, or C + A·B, over strided and batched
 * operands, one named function per instance (input dtype, output dtype, accumulator).
 *
 * Two paths behind one entry point. The floating-point instances run a blocked, packed GEMM with
 * register-tiled micro-kernels picked for the CPU at run time (gemm_packed.c, gemm_ukernel.h)
 * when the descriptor carries a workspace of at least ct_gemm_workspace_<NAME>(d) bytes: the
 * kernels never allocate, so the packing buffers come from the caller (matmul, conv2d and the
 * other GEMM users are workspace-requesting ops for this reason). Without a workspace, for the
 * integer and bool instances, and for products the packed path does not pay for (m or n == 1,
 * k == 0), the simple path below runs.
 *
 * Operands are described in ELEMENTS: A is m×k, B is k×n, C is m×n, each with a row and a
 * column stride of any sign (zero allowed on A and B: broadcast). Batch dimensions, if any, give
 * each operand one more stride per dimension (zero where it broadcasts). Every element of C is
 * accumulated over the whole of k in the accumulator type and stored once, so low-precision
 * outputs round once. The functions split C into tiles and run them on OpenMP threads when the
 * problem is large; in the simple path each tile is computed by a serial, cache-blocked kernel
 * that packs panels of A and B into small stack buffers. They never allocate and never fail: the
 * caller validated the views.
 * k == 0 gives zeros (or leaves C as is when accumulating); A and B are then never read and may
 * be NULL. */
#ifndef CTENSOR_CPU_GEMM_H_
#define CTENSOR_CPU_GEMM_H_

#include <stdbool.h>
#include <stdint.h>

#include "engine/cpu_dtypes.h"

/* An implicit B operand (conv2d reads its input as the im2col matrix without building it):
 * writes B[k0 : k0 + kc, j0 : j0 + nb] of batch entry `batch` (the flat index over
 * batch_shape), converted to the accumulator type (float, or double for f64), into `dst` as
 * micro-panels of nr columns: dst[(j / nr) · kc · nr + p · nr + j % nr] = B[k0 + p, j0 + j],
 * with zeros in the columns of the last panel past nb. kc may be 0. */
typedef void (*ct_gemm_pack_b_fn)(const void* context, int64_t batch, int64_t k0, int64_t kc,
                                  int64_t j0, int64_t nb, int64_t nr, void* dst);

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
  /* Scratch for the packed path: at least ct_gemm_workspace_<NAME>(d) bytes (any alignment),
   * or NULL for the simple path. Less than asked runs on fewer threads, or the simple path. */
  void* workspace;
  uint64_t workspace_size;
  /* Optional implicit B (floating-point instances only; b and b_rs, b_cs, b_bs are then
   * unused). Requires the workspace. */
  ct_gemm_pack_b_fn pack_b;
  const void* pack_b_context;
  /* Optional prepacked B (floating-point instances; requires the workspace): B is already laid
   * out as the packed path's panels (ct_gemm_prepacked_b_layout_<NAME>), in the accumulator
   * type, so no B panel is packed. b is batch entry 0's start and b_bs the entries' strides, in
   * accumulator elements; b_rs and b_cs are unused. */
  bool b_prepacked;
  /* Optional prepacked A, likewise (ct_gemm_prepacked_a_layout_<NAME>): a is batch entry 0's
   * start and a_bs the entries' strides, in accumulator elements; a_rs and a_cs are unused. */
  bool a_prepacked;
} ct_gemm_desc;

/* The instances: X(NAME, TIN, TOUT, ACC) computes TOUT C from TIN A and B, accumulating in ACC.
 *   - b8: bool, or of ands;
 *   - integers: wrap modulo 2^bits (computed in uint32_t, or uint64_t for 64-bit types);
 *   - f16/bf16: load to float, accumulate in float, store once; f32 in float; f64 in double;
 *   - f32_f16/f32_bf16: float A and B (e.g. an im2col buffer), float16/bfloat16 C;
 *   - c64/c128: complex in its own precision with NumPy's plain complex product; c64_conj and
 *     c128_conj multiply by conj(A) (vecdot conjugates its first operand).
 * The simple instances run the tiled loop below; the packed ones the blocked, packed GEMM. */
#define CT_GEMM_INSTANCES(X) CT_GEMM_SIMPLE_INSTANCES(X) CT_GEMM_PACKED_INSTANCES(X)
#define CT_GEMM_SIMPLE_INSTANCES(X)                     \
  X(b8, uint8_t, uint8_t, uint8_t)                      \
  X(i8, int8_t, int8_t, uint32_t)                       \
  X(i16, int16_t, int16_t, uint32_t)                    \
  X(i32, int32_t, int32_t, uint32_t)                    \
  X(i64, int64_t, int64_t, uint64_t)                    \
  X(u8, uint8_t, uint8_t, uint32_t)                     \
  X(u16, uint16_t, uint16_t, uint32_t)                  \
  X(u32, uint32_t, uint32_t, uint32_t)                  \
  X(u64, uint64_t, uint64_t, uint64_t)                  \
  X(c64, ct_complex64, ct_complex64, ct_complex64)      \
  X(c128, ct_complex128, ct_complex128, ct_complex128)  \
  X(c64_conj, ct_complex64, ct_complex64, ct_complex64) \
  X(c128_conj, ct_complex128, ct_complex128, ct_complex128)
#define CT_GEMM_PACKED_INSTANCES(X)  \
  X(f16, uint16_t, uint16_t, float)  \
  X(bf16, uint16_t, uint16_t, float) \
  X(f32, float, float, float)        \
  X(f64, double, double, double)     \
  X(f32_f16, float, uint16_t, float) \
  X(f32_bf16, float, uint16_t, float)

/* ct_gemm_<NAME>(d) computes the product; ct_gemm_workspace_<NAME>(d) is the workspace (in
 * bytes, for the thread count now set) that lets it take the packed path: 0 where it would not,
 * so callers can always ask. */
#define CT_GEMM_DECLARE(NAME, TIN, TOUT, ACC)             \
  CT_INTERNAL void ct_gemm_##NAME(const ct_gemm_desc* d); \
  CT_INTERNAL uint64_t ct_gemm_workspace_##NAME(const ct_gemm_desc* d);
CT_GEMM_INSTANCES(CT_GEMM_DECLARE)
#undef CT_GEMM_DECLARE

/* The packed path of the floating-point instances (gemm_packed.c): false where it did not run
 * (no or too small a workspace, or a product it leaves to the simple path).
 *
 * ct_gemm_prepacked_b_layout_<NAME>(k, &kc, &nr) gives the layout of a prepacked B of depth k
 * (ct_gemm_desc.b_prepacked) for the micro-kernels in use: the depth is cut into blocks of kc
 * rows (the last one k - pc rows when shorter), and the block starting at row pc holds the
 * columns as micro-panels of nr, padded with zero columns to n_padded = n rounded up to nr:
 *   B[pc + p][j] at pc · n_padded + (j / nr) · kcb · nr + p · nr + j % nr,  kcb = min(kc, k - pc)
 * (k · n_padded elements a batch entry).
 * ct_gemm_prepacked_a_layout_<NAME>(k, &kc, &mr) likewise for a prepacked A (ct_gemm_desc.
 * a_prepacked) of m rows: micro-panels of mr rows, padded to m_padded = m rounded up to mr:
 *   A[i][pc + p] at pc · m_padded + (i / mr) · kcb · mr + p · mr + i % mr. */
#define CT_GEMM_DECLARE_PACKED(NAME, TIN, TOUT, ACC)                                       \
  CT_INTERNAL bool ct_gemm_packed_##NAME(const ct_gemm_desc* d);                           \
  CT_INTERNAL uint64_t ct_gemm_packed_workspace_##NAME(const ct_gemm_desc* d);             \
  CT_INTERNAL void ct_gemm_prepacked_b_layout_##NAME(int64_t k, int64_t* kc, int64_t* nr); \
  CT_INTERNAL void ct_gemm_prepacked_a_layout_##NAME(int64_t k, int64_t* kc, int64_t* mr);
CT_GEMM_PACKED_INSTANCES(CT_GEMM_DECLARE_PACKED)
#undef CT_GEMM_DECLARE_PACKED

/* The workspace alignment the GEMM's callers should ask for (the packed path aligns itself, but
 * an aligned workspace wastes no bytes). */
#define CT_GEMM_WORKSPACE_ALIGNMENT 64

#endif /* CTENSOR_CPU_GEMM_H_ */
