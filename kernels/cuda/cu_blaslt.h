/* cu_blaslt.h - GEMMs through cuBLASLt (opened at run time, cu_vendor.h): one entry, ct_cu_gemm,
 * that takes a batch of strided products D = A B (+ bias) in byte strides, maps each operand onto
 * a cuBLASLt layout (column-major, a row-major operand as its transpose), folds what it can into
 * one strided-batched call and loops over the rest on the call's stream. One cuBLASLt handle per
 * device, created on first use; the descriptors, layouts and algorithm of each problem are kept
 * in a bounded cache, so that a repeated problem skips cublasLtMatmulAlgoGetHeuristic. Nothing
 * is destroyed at exit: the plugin lives as long as the process. */
#ifndef CTENSOR_CU_BLASLT_H_
#define CTENSOR_CU_BLASLT_H_

#include <stdint.h>

#include "cu_call.h"
#include "plugin_layout.h"

/* D[z] = sum over s of A[z, s] B[z, s] (+ bias) for each z of `batch` and s of `summed`:
 * A is m x k, B k x n, D m x n, each with byte strides of its rows and columns (any value for
 * an extent of 1). */
struct ct_cu_gemm_args {
  ct_pl_type tag; /* CT_PL_F16, CT_PL_F32 or CT_PL_F64 */
  int64_t m, n, k;
  char* d;
  const char* a;
  const char* b;
  int64_t d_m, d_n, a_m, a_k, b_k, b_n;
  /* The output matrices: operands (D, A, B), byte strides; 0-D (one element) for one product. */
  ct_pl_layout batch;
  /* The products summed into each output matrix: operands (A, B), byte strides; 0-D for none. */
  ct_pl_layout summed;
  /* Optional: bias[j * bias_n] added to column j of every D (linear's bias), before rounding. */
  const char* bias;
  int64_t bias_n;
};

/* Runs `g` through cuBLASLt on exec's stream with `workspace` (`workspace_size` bytes, may be 0):
 * float16 in and out with float accumulation (partial sums of split-K kept in float), float32
 * without TF32, float64. `*ran` is false, with CT_OK and nothing launched, when cuBLASLt cannot
 * take the problem: another dtype, k of 0, an operand without a unit stride in its matrix dims
 * or with a leading dimension cuBLASLt refuses (negative, zero or overlapping), byte strides or
 * addresses that are not whole elements, float16 products summed across matrices (the
 * hand-written kernel keeps one float accumulator), a bias that the BIAS epilogue cannot take,
 * or no algorithm from the heuristic for these sizes, strides and alignments. The caller then
 * runs its own kernel. */
int ct_cu_gemm(const ct_cu_exec& exec, const ct_cu_gemm_args& g, void* workspace,
               uint64_t workspace_size, bool* ran);

/* The workspace cuBLASLt is given on `device_id`: NVIDIA's recommended size (32 MiB on Hopper
 * and later, 4 MiB before), aligned to CT_CU_GEMM_WORKSPACE_ALIGNMENT. */
uint64_t ct_cu_gemm_workspace(int32_t device_id);

#define CT_CU_GEMM_WORKSPACE_ALIGNMENT 256

#endif /* CTENSOR_CU_BLASLT_H_ */
