/* gemm_ukernel_generic.c - portable micro-kernels (plain C, the build's baseline flags), for
 * CPUs without AVX2 and for other architectures. A 4 × 8 float tile (4 × 4 doubles) of
 * accumulators that the compiler keeps in vector registers of the baseline (SSE2 on x86-64). */
#include "gemm/gemm_ukernel.h"

#define CT_GEMM_GENERIC_UKERNEL(NAME, T, MR, NR)                                        \
  static void NAME(int64_t kc, const T* restrict a, const T* restrict b, T* restrict c, \
                   int64_t ldc, int accumulate) {                                       \
    T acc[MR][NR] = {{0}};                                                              \
    for (int64_t p = 0; p < kc; ++p) {                                                  \
      for (int i = 0; i < MR; ++i) {                                                    \
        const T ai = a[i];                                                              \
        for (int j = 0; j < NR; ++j) acc[i][j] += ai * b[j];                            \
      }                                                                                 \
      a += MR;                                                                          \
      b += NR;                                                                          \
    }                                                                                   \
    for (int i = 0; i < MR; ++i) {                                                      \
      T* ci = c + i * ldc;                                                              \
      if (accumulate) {                                                                 \
        for (int j = 0; j < NR; ++j) ci[j] += acc[i][j];                                \
      } else {                                                                          \
        for (int j = 0; j < NR; ++j) ci[j] = acc[i][j];                                 \
      }                                                                                 \
    }                                                                                   \
  }

CT_GEMM_GENERIC_UKERNEL(ct_gemm_ukernel_generic_f32, float, 4, 8)
CT_GEMM_GENERIC_UKERNEL(ct_gemm_ukernel_generic_f64, double, 4, 4)

const ct_gemm_ukernels ct_gemm_ukernels_generic = {
    .isa = "generic",
    .f32_blocking = {.mr = 4, .nr = 8, .mc = 128, .kc = 256, .nc = 2048},
    .f32 = ct_gemm_ukernel_generic_f32,
    .f64_blocking = {.mr = 4, .nr = 4, .mc = 64, .kc = 256, .nc = 2048},
    .f64 = ct_gemm_ukernel_generic_f64,
};
