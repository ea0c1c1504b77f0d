/* gemm_ukernel_avx512.c - AVX-512F micro-kernels (compiled with -mavx512f -mfma; run only where
 * the CPU has AVX-512F). 32 zmm registers: a 12 × 32 float tile (12 × 16 doubles) takes 24
 * accumulators, 2 vectors of B and 1 broadcast of A (27 registers), 24 FMAs per 2 loads of B
 * and 12 broadcasts. 14 rows would fill 31 registers, but 12 divides the common channel counts
 * (48, 96, 192, ...) with less waste in edge tiles. */
#include <immintrin.h>

#include "gemm/gemm_ukernel.h"

#define CT_UK_NAME ct_gemm_ukernel_avx512_f32
#define CT_UK_T float
#define CT_UK_V __m512
#define CT_UK_LANES 16
#define CT_UK_MR 12
#define CT_UK_NV 2
#define CT_UK_ZERO() _mm512_setzero_ps()
#define CT_UK_LOAD(p) _mm512_load_ps(p)
#define CT_UK_LOADU(p) _mm512_loadu_ps(p)
#define CT_UK_STOREU(p, v) _mm512_storeu_ps(p, v)
#define CT_UK_BCAST(p) _mm512_set1_ps(*(p))
#define CT_UK_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define CT_UK_ADD(a, b) _mm512_add_ps(a, b)
#define CT_UK_MASK_T __mmask16
#define CT_UK_MASK(n) ((__mmask16)((1u << (n)) - 1u))
#define CT_UK_LOAD_MASK(p, m) _mm512_maskz_loadu_ps(m, p)
#define CT_UK_STORE_MASK(p, m, v) _mm512_mask_storeu_ps(p, m, v)
#define CT_UK_UNPACKED_NAME ct_gemm_unpacked_avx512_f32_half
#define CT_UK_UNPACKED_NV 1
#include "gemm/gemm_unpacked_impl.h"
#define CT_UK_UNPACKED_NAME ct_gemm_unpacked_avx512_f32
#define CT_UK_UNPACKED_NV CT_UK_NV
#include "gemm/gemm_unpacked_impl.h"
#include "gemm/gemm_ukernel_impl.h"

#define CT_UK_NAME ct_gemm_ukernel_avx512_f64
#define CT_UK_T double
#define CT_UK_V __m512d
#define CT_UK_LANES 8
#define CT_UK_MR 12
#define CT_UK_NV 2
#define CT_UK_ZERO() _mm512_setzero_pd()
#define CT_UK_LOAD(p) _mm512_load_pd(p)
#define CT_UK_LOADU(p) _mm512_loadu_pd(p)
#define CT_UK_STOREU(p, v) _mm512_storeu_pd(p, v)
#define CT_UK_BCAST(p) _mm512_set1_pd(*(p))
#define CT_UK_FMA(a, b, c) _mm512_fmadd_pd(a, b, c)
#define CT_UK_ADD(a, b) _mm512_add_pd(a, b)
#define CT_UK_MASK_T __mmask8
#define CT_UK_MASK(n) ((__mmask8)((1u << (n)) - 1u))
#define CT_UK_LOAD_MASK(p, m) _mm512_maskz_loadu_pd(m, p)
#define CT_UK_STORE_MASK(p, m, v) _mm512_mask_storeu_pd(p, m, v)
#define CT_UK_UNPACKED_NAME ct_gemm_unpacked_avx512_f64_half
#define CT_UK_UNPACKED_NV 1
#include "gemm/gemm_unpacked_impl.h"
#define CT_UK_UNPACKED_NAME ct_gemm_unpacked_avx512_f64
#define CT_UK_UNPACKED_NV CT_UK_NV
#include "gemm/gemm_unpacked_impl.h"
#include "gemm/gemm_ukernel_impl.h"

const ct_gemm_ukernels ct_gemm_ukernels_avx512 = {
    .isa = "avx512",
    /* kc = 1024 makes a 128 KB B micro-panel, which streams from L2 (the micro-kernel hides
     * that), and with mc = 96 a 384 KB A block, inside every AVX-512 core's L2 of 1 MB or more:
     * a quarter of the passes over C that kc = 256 makes. */
    /* Unpacked up to 256^3: below that, packing costs more than the unpacked kernel loses. */
    .f32_blocking =
        {.mr = 12, .nr = 32, .mc = 96, .kc = 1024, .nc = 3072, .unpacked_max = 128 * 1024},
    .f32 = ct_gemm_ukernel_avx512_f32,
    .f32_unpacked = {ct_gemm_unpacked_avx512_f32_half, ct_gemm_unpacked_avx512_f32},
    .f64_blocking =
        {.mr = 12, .nr = 16, .mc = 96, .kc = 256, .nc = 2048, .unpacked_max = 64 * 1024},
    .f64 = ct_gemm_ukernel_avx512_f64,
    .f64_unpacked = {ct_gemm_unpacked_avx512_f64_half, ct_gemm_unpacked_avx512_f64},
};
