/* gemm_unpacked_impl.h - the body of a micro-kernel that reads A and B where they lie (contract
 * in gemm_ukernel.h), for products too small to repay packing. Written once and included by
 * each instruction set's file, before gemm_ukernel_impl.h, with that file's macros and:
 *   CT_UK_UNPACKED_NAME        function name
 *   CT_UK_UNPACKED_NV          vectors per tile row (the tile is MR × NV · LANES)
 *   CT_UK_MASK_T               a lane mask; CT_UK_MASK(n) masks the first n lanes (0 <= n <= LANES)
 *   CT_UK_LOAD_MASK(p, m)      an unaligned load of the masked lanes (the others read as zero and
 *                              are never touched, so they may lie past the end of an array)
 *   CT_UK_STORE_MASK(p, m, v)  an unaligned store of the masked lanes
 * Rows past `rows` compute a copy of the last row (their A pointers are clamped to it) and are
 * never stored; columns past `cols` are masked out of every load and store. The two names above
 * are undefined at the end; gemm_ukernel_impl.h undefines the rest. */

/* acc += A[rows, 0:k] · B[0:k, tile columns], B's vectors loaded by LOAD_B(p, mask). */
#define CT_UK_UNPACKED_STEPS(LOAD_B)                                        \
  for (int64_t p = 0; p < k; ++p, b += ldb) {                               \
    CT_UK_V bv[CT_UK_UNPACKED_NV];                                          \
    _Pragma("GCC unroll 4") for (int v = 0; v < CT_UK_UNPACKED_NV; ++v) {   \
      bv[v] = LOAD_B(b + v * CT_UK_LANES, mask[v]);                         \
    }                                                                       \
    _Pragma("GCC unroll 32") for (int i = 0; i < CT_UK_MR; ++i) {           \
      const CT_UK_V ai = CT_UK_BCAST(row[i] + p);                           \
      _Pragma("GCC unroll 4") for (int v = 0; v < CT_UK_UNPACKED_NV; ++v) { \
        acc[i][v] = CT_UK_FMA(ai, bv[v], acc[i][v]);                        \
      }                                                                     \
    }                                                                       \
  }
#define CT_UK_UNPACKED_LOAD_WHOLE(p, m) CT_UK_LOADU(p)

static void CT_UK_UNPACKED_NAME(int64_t k, const CT_UK_T* restrict a, int64_t lda,
                                const CT_UK_T* restrict b, int64_t ldb, CT_UK_T* restrict c,
                                int64_t ldc, int64_t rows, int64_t cols, int accumulate) {
  const CT_UK_T* row[CT_UK_MR];
#pragma GCC unroll 32
  for (int i = 0; i < CT_UK_MR; ++i) row[i] = a + (i < rows ? i : rows - 1) * lda;
  CT_UK_MASK_T mask[CT_UK_UNPACKED_NV];
#pragma GCC unroll 4
  for (int v = 0; v < CT_UK_UNPACKED_NV; ++v) {
    const int64_t left = cols - v * CT_UK_LANES;
    mask[v] = CT_UK_MASK(left <= 0 ? 0 : (left >= CT_UK_LANES ? CT_UK_LANES : (int)left));
  }
  CT_UK_V acc[CT_UK_MR][CT_UK_UNPACKED_NV];
#pragma GCC unroll 32
  for (int i = 0; i < CT_UK_MR; ++i) {
#pragma GCC unroll 4
    for (int v = 0; v < CT_UK_UNPACKED_NV; ++v) acc[i][v] = CT_UK_ZERO();
  }
  /* Tiles as wide as the kernel load B whole: plain loads, not the masked loads the narrower
   * tiles need, which are slower in the loop. */
  if (cols == CT_UK_UNPACKED_NV * CT_UK_LANES) {
    CT_UK_UNPACKED_STEPS(CT_UK_UNPACKED_LOAD_WHOLE);
  } else {
    CT_UK_UNPACKED_STEPS(CT_UK_LOAD_MASK);
  }
#pragma GCC unroll 32
  for (int i = 0; i < CT_UK_MR; ++i) {
    if (i >= rows) break;
    CT_UK_T* ci = c + i * ldc;
#pragma GCC unroll 4
    for (int v = 0; v < CT_UK_UNPACKED_NV; ++v) {
      CT_UK_V r = acc[i][v];
      if (accumulate) r = CT_UK_ADD(r, CT_UK_LOAD_MASK(ci + v * CT_UK_LANES, mask[v]));
      CT_UK_STORE_MASK(ci + v * CT_UK_LANES, mask[v], r);
    }
  }
}

#undef CT_UK_UNPACKED_STEPS
#undef CT_UK_UNPACKED_LOAD_WHOLE
#undef CT_UK_UNPACKED_NAME
#undef CT_UK_UNPACKED_NV
