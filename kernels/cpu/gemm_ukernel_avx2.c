/* gemm_ukernel_avx2.c - AVX2 + FMA micro-kernels (compiled with -mavx2 -mfma; run only where
 * the CPU has both). 16 ymm registers: a 6 × 16 float tile (6 × 8 doubles) takes 12
 * accumulators, 2 vectors of B and 1 broadcast of A, and does 12 FMAs per 2 loads of B and 6
 * broadcasts, enough to keep both FMA pipes busy. Blocking measured on Zen 3 (32 KB L1d, 512 KB
 * L2): a KC of 512 halves the passes over C against 256 and beat MC/KC of 144/256, 96/384 and
 * 120/320 on 1024 and 2048 squares; with KC 512, an MC of 96 (a 192 KB A block) ran 512 squares
 * on 2 threads 3-5% faster than 72 (6 row blocks instead of 8: B streams from L3 fewer times)
 * and left 1024 and 2048 unchanged. */
#include <immintrin.h>

#include "gemm_ukernel.h"

#define CT_UK_NAME ct_gemm_ukernel_avx2_f32
#define CT_UK_T float
#define CT_UK_V __m256
#define CT_UK_LANES 8
#define CT_UK_MR 6
#define CT_UK_NV 2
#define CT_UK_ZERO() _mm256_setzero_ps()
#define CT_UK_LOAD(p) _mm256_load_ps(p)
#define CT_UK_LOADU(p) _mm256_loadu_ps(p)
#define CT_UK_STOREU(p, v) _mm256_storeu_ps(p, v)
#define CT_UK_BCAST(p) _mm256_broadcast_ss(p)
#define CT_UK_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define CT_UK_ADD(a, b) _mm256_add_ps(a, b)
#include "gemm_ukernel_impl.h"

#define CT_UK_NAME ct_gemm_ukernel_avx2_f64
#define CT_UK_T double
#define CT_UK_V __m256d
#define CT_UK_LANES 4
#define CT_UK_MR 6
#define CT_UK_NV 2
#define CT_UK_ZERO() _mm256_setzero_pd()
#define CT_UK_LOAD(p) _mm256_load_pd(p)
#define CT_UK_LOADU(p) _mm256_loadu_pd(p)
#define CT_UK_STOREU(p, v) _mm256_storeu_pd(p, v)
#define CT_UK_BCAST(p) _mm256_broadcast_sd(p)
#define CT_UK_FMA(a, b, c) _mm256_fmadd_pd(a, b, c)
#define CT_UK_ADD(a, b) _mm256_add_pd(a, b)
#include "gemm_ukernel_impl.h"

const ct_gemm_ukernels ct_gemm_ukernels_avx2 = {
    .isa = "avx2",
    .f32_blocking = {.mr = 6, .nr = 16, .mc = 96, .kc = 512, .nc = 3072},
    .f32 = ct_gemm_ukernel_avx2_f32,
    .f64_blocking = {.mr = 6, .nr = 8, .mc = 48, .kc = 512, .nc = 2048},
    .f64 = ct_gemm_ukernel_avx2_f64,
};
