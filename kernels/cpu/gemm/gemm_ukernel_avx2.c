/* gemm_ukernel_avx2.c - AVX2 + FMA micro-kernels (compiled with -mavx2 -mfma; run only where
 * the CPU has both). 16 ymm registers: a 6 × 16 float tile (6 × 8 doubles) takes 12
 * accumulators, 2 vectors of B and 1 broadcast of A, and does 12 FMAs per 2 loads of B and 6
 * broadcasts, enough to keep both FMA pipes busy. Blocking for a 32 KB L1d and a 512 KB L2: a KC
 * of 512 halves the passes over C against 256; an MC of 96 (a 192 KB A block) cuts M into fewer
 * row blocks than 72, so that B streams from L3 fewer times. */
#include <immintrin.h>

#include "gemm/gemm_ukernel.h"

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
#define CT_UK_MASK_T __m256i
#define CT_UK_MASK(n) \
  _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))
#define CT_UK_LOAD_MASK(p, m) _mm256_maskload_ps(p, m)
#define CT_UK_STORE_MASK(p, m, v) _mm256_maskstore_ps(p, m, v)
#define CT_UK_UNPACKED_NAME ct_gemm_unpacked_avx2_f32_half
#define CT_UK_UNPACKED_NV 1
#include "gemm/gemm_unpacked_impl.h"
#define CT_UK_UNPACKED_NAME ct_gemm_unpacked_avx2_f32
#define CT_UK_UNPACKED_NV CT_UK_NV
#include "gemm/gemm_unpacked_impl.h"
#include "gemm/gemm_ukernel_impl.h"

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
#define CT_UK_MASK_T __m256i
#define CT_UK_MASK(n) _mm256_cmpgt_epi64(_mm256_set1_epi64x(n), _mm256_setr_epi64x(0, 1, 2, 3))
#define CT_UK_LOAD_MASK(p, m) _mm256_maskload_pd(p, m)
#define CT_UK_STORE_MASK(p, m, v) _mm256_maskstore_pd(p, m, v)
#define CT_UK_UNPACKED_NAME ct_gemm_unpacked_avx2_f64_half
#define CT_UK_UNPACKED_NV 1
#include "gemm/gemm_unpacked_impl.h"
#define CT_UK_UNPACKED_NAME ct_gemm_unpacked_avx2_f64
#define CT_UK_UNPACKED_NV CT_UK_NV
#include "gemm/gemm_unpacked_impl.h"
#include "gemm/gemm_ukernel_impl.h"

const ct_gemm_ukernels ct_gemm_ukernels_avx2 = {
    .isa = "avx2",
    /* Unpacked only when tiny: 6 × 16 tiles do 12 multiply-adds per 8 loads from A and B in
     * place, and masked loads cost on AMD; packing pays from about 64^3. */
    .f32_blocking = {.mr = 6, .nr = 16, .mc = 96, .kc = 512, .nc = 3072, .unpacked_max = 3 * 1024},
    .f32 = ct_gemm_ukernel_avx2_f32,
    .f32_unpacked = {ct_gemm_unpacked_avx2_f32_half, ct_gemm_unpacked_avx2_f32},
    .f64_blocking = {.mr = 6, .nr = 8, .mc = 48, .kc = 512, .nc = 2048, .unpacked_max = 3 * 1024},
    .f64 = ct_gemm_ukernel_avx2_f64,
    .f64_unpacked = {ct_gemm_unpacked_avx2_f64_half, ct_gemm_unpacked_avx2_f64},
};
